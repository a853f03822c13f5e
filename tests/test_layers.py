"""The package's layers: a module imports only from its own layer or the ones below, and the module import
graph has no cycle.

Every import of a patchpose module is counted, at module level or inside a function (a function-local import
hides a cycle from Python at import time, not from a reader), read from the source with :mod:`ast`. An
import of ``patchpose.a.b`` counts as an import of that module only, not of the packages above it that Python
also runs, so that a subpackage's ``__init__`` never ties its siblings together.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Mapping
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

#: Layers, bottom (0) to top (6). A key names a module or a package (then every module under it); the
#: longest key that matches a module gives its layer. The package root ``patchpose`` matches itself only.
LAYERS: dict[str, tuple[int, str]] = {
    "patchpose.errors": (0, "the error types and the optional-dependency check that every layer raises"),
    "patchpose.conventions": (0, "the pose conventions (angles, scales, pixel centres, bins): numbers only"),
    "patchpose.histogram": (0, "histogram decoding and alignment on tensors, with no model or data"),
    "patchpose.geometry": (0, "homographies and the pose change they cause at a point"),
    "patchpose.checks": (0, "input checks of arrays, numbers and paths, for the integrations and readers"),
    "patchpose.fileio": (0, "atomic writes and keypoint files"),
    "patchpose.interop": (0, "OpenCV keypoints and kornia LAFs to and from our poses: conventions only"),
    "patchpose.accuracy": (0, "how far a relative pose is from the truth: errors and accuracies"),
    "patchpose.recipes": (0, "the recipes by name and the one table of default models"),
    "patchpose.data": (1, "images, keypoints, patches, log-polar grids, photo pools and datasets"),
    "patchpose.models": (2, "the networks, built from a config"),
    "patchpose.losses": (2, "the training losses on the networks' histograms"),
    "patchpose.inference": (3, "running a network on patches and decoding its histograms into poses"),
    "patchpose.weights": (3, "weights files and training checkpoints read into networks, and written"),
    "patchpose.onnx_backend": (3, "the network exported to, and run from, ONNX"),
    "patchpose.estimator": (3, "PatchPoseEstimator: image + keypoints -> poses, the library's reader"),
    "patchpose.shape": (
        3,
        "AffineShapeEstimator: image + keypoints -> affine frames, the shape network's reader",
    ),
    "patchpose.reading": (3, "reading poses at keypoints (the estimator's machinery)"),
    "patchpose.integrations": (4, "poses handed to OpenCV, kornia, COLMAP, hloc and LightGlue"),
    "patchpose.matching": (
        4,
        "the recipes: detect -> describe at poses -> match, one photo or two at a time",
    ),
    "patchpose.outputs": (4, "poses and matches written as files and pictures for people"),
    "patchpose": (4, "the facade: the estimator and the integrations' entry points under one name"),
    "patchpose.training": (5, "training runs and their validation"),
    "patchpose.apps": (5, "what the estimate, demo and match commands do"),
    "patchpose.evaluation": (6, "the benchmarks: rows, peers, datasets and the evaluations that run them"),
    "patchpose.cli": (7, "the command line, the one place that may import anything"),
    "patchpose.train": (7, "python -m patchpose.train: an entry point into the command line"),
}

#: what a user calls, which never reads the benchmarks: every module but these
NOT_LIBRARY = ("patchpose.evaluation", "patchpose.cli", "patchpose.train")

#: imports that break the layers while a change is under way (importer, imported): reason; empty when none
TEMPORARY_ALLOWLIST: dict[tuple[str, str], str] = {}

#: Graph: importer -> {imported module: line numbers of the imports}.
Graph = dict[str, dict[str, list[int]]]


def package_modules(src: Path, package: str) -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, whether it is a package's ``__init__``) of every module of ``package``."""
    out = {}
    for path in sorted((src / package).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _imported_names(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Absolute dotted names an import statement (or ``importlib.import_module("...")`` with a literal)
    refers to; for ``from X import y`` both ``X.y`` and ``X`` (the caller keeps the module it finds)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        if node.level:
            base = (module if is_package else module.rpartition(".")[0]).split(".")
            base = base[: len(base) - (node.level - 1)]
            prefix = ".".join(base + ([node.module] if node.module else []))
        else:
            prefix = node.module or ""
        return [f"{prefix}.{a.name}\0{prefix}" for a in node.names]
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in ("import_module", "__import__") and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def import_graph(src: Path, package: str) -> Graph:
    """Every import of a module of ``package`` by a module of ``package``, anywhere in its source."""
    modules = package_modules(src, package)
    graph: Graph = {name: {} for name in modules}
    for name, (path, is_package) in modules.items():
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            for ref in _imported_names(node, name, is_package):
                full, _, parent = ref.partition("\0")
                target = full if full in modules or not parent else parent
                if target.split(".")[0] != package:
                    continue
                while target not in modules and "." in target:  # an attribute of a module
                    target = target.rpartition(".")[0]
                if target in modules and target != name:
                    graph[name].setdefault(target, []).append(node.lineno)
    return graph


def layer_of(module: str, layers: Mapping[str, tuple[int, str]]) -> int | None:
    """The layer of the longest key of ``layers`` that is ``module`` or a package above it; a top-level
    package's key matches itself only (else it would match every module). None: not in the table."""
    keys = [k for k in layers if k == module or ("." in k and module.startswith(k + "."))]
    return layers[max(keys, key=len)][0] if keys else None


def layer_violations(
    graph: Graph,
    layers: Mapping[str, tuple[int, str]],
    allowed: Mapping[tuple[str, str], str] = {},  # noqa: B006 - read only
) -> list[str]:
    """Modules with no layer, imports from a lower layer to a higher one, and imports of the package root
    by anything but the top layer, each as one line naming the importer, its lines and the imported module.
    ``allowed`` edges are skipped."""
    top = max(layer for layer, _ in layers.values())
    out = [f"{m} is in no layer: add it to the table" for m in graph if layer_of(m, layers) is None]
    for importer, targets in sorted(graph.items()):
        lo = layer_of(importer, layers)
        for target, lines in sorted(targets.items()):
            hi = layer_of(target, layers)
            if (importer, target) in allowed or lo is None or hi is None:
                continue
            where = f"{importer}:{','.join(map(str, sorted(set(lines))))} imports {target}"
            if hi > lo:
                out.append(f"{where}: layer {lo} -> layer {hi}, upwards")
            elif "." not in target and lo != top:
                out.append(f"{where}: the package root (the facade) is for users and the command line only")
    return out


def cycles(graph: Graph, allowed: Mapping[tuple[str, str], str] = {}) -> list[list[str]]:  # noqa: B006
    """The import cycles of ``graph`` (without the ``allowed`` edges): one per strongly connected component
    of two or more modules, as a closed path ``[a, b, ..., a]``."""
    edges = {m: sorted(t for t in ts if t in graph and (m, t) not in allowed) for m, ts in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []

    def connect(v: str) -> None:  # Tarjan's algorithm
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges[v]:
            if w not in index:
                connect(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            connect(v)
    return [_closed_path(c, edges) for c in components]


def _closed_path(component: list[str], edges: dict[str, list[str]]) -> list[str]:
    """A cycle through the first module of a strongly connected component, found breadth-first."""
    start, members = component[0], set(component)
    came_from: dict[str, str] = {}
    frontier = [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in edges[v]:
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(came_from[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w in members and w not in came_from:
                    came_from[w] = v
                    nxt.append(w)
        frontier = nxt
    raise AssertionError(f"{component} is not a cycle")


# -- the package itself --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> Graph:
    return import_graph(SRC, "patchpose")


def test_imports_go_down_the_layers(graph):
    for importer, target in TEMPORARY_ALLOWLIST:
        if target not in graph.get(importer, {}):  # the pending work is done: the entry can go
            warnings.warn(f"stale TEMPORARY_ALLOWLIST entry: {importer} -> {target}", stacklevel=1)
    problems = layer_violations(graph, LAYERS, TEMPORARY_ALLOWLIST)
    assert not problems, "\n".join(problems)


def test_no_library_module_imports_the_benchmarks(graph):
    """The library (the reader, the recipes, the integrations, training) never imports ``patchpose.evaluation``:
    the benchmarks sit above it, and a user's install runs without them."""
    library = [m for m in graph if not any(m == n or m.startswith(n + ".") for n in NOT_LIBRARY)]
    assert (
        "patchpose.matching.pair" in library and "patchpose.training.trainer" in library
    )  # the check sees them
    found = [
        f"{m} imports {t}"
        for m in library
        for t in graph[m]
        if t == "patchpose.evaluation" or t.startswith("patchpose.evaluation.")
    ]
    assert not found, "\n".join(found)


def test_the_module_import_graph_has_no_cycle(graph):
    found = cycles(graph, TEMPORARY_ALLOWLIST)
    assert not found, "\n".join(" -> ".join(c) for c in found)


# -- the check itself fails where it should -------------------------------------------------------------


def _write_package(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / "pkg" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


TOY_LAYERS = {
    "pkg": (1, "facade"),
    "pkg.low": (0, "bottom"),
    "pkg.sub": (0, "bottom"),
    "pkg.high": (1, "top"),
}


def test_check_finds_an_upward_import_and_a_cycle_made_inside_functions(tmp_path):
    src = _write_package(
        tmp_path,
        {
            "__init__.py": "from .high import h\n",
            "low.py": "def f():\n    from .high import h\n    return h\n",
            "high.py": "from . import low\n\ndef h():\n    return low\n",
            "sub/__init__.py": "",
            "sub/a.py": "def g():\n    import pkg.sub.b\n",
            "sub/b.py": "from ..sub import a\n",
        },
    )
    g = import_graph(src, "pkg")
    assert g["pkg.low"] == {"pkg.high": [2]} and g["pkg.high"] == {"pkg.low": [1]}
    problems = layer_violations(g, TOY_LAYERS)
    assert len(problems) == 1 and problems[0].startswith("pkg.low:2 imports pkg.high")
    found = cycles(g)
    assert sorted(map(tuple, found)) == [
        ("pkg.high", "pkg.low", "pkg.high"),
        ("pkg.sub.a", "pkg.sub.b", "pkg.sub.a"),
    ]
    allowed = {("pkg.low", "pkg.high"): "pending", ("pkg.sub.b", "pkg.sub.a"): "pending"}
    assert layer_violations(g, TOY_LAYERS, allowed) == [] and cycles(g, allowed) == []


def test_check_finds_imports_of_the_root_and_modules_in_no_layer(tmp_path):
    src = _write_package(
        tmp_path,
        {
            "__init__.py": "",
            "low.py": "import importlib\n\ndef f():\n    return importlib.import_module('pkg.stray')\n",
            "high.py": "from pkg import low\nfrom pkg import __doc__\n",
            "stray.py": "",
        },
    )
    g = import_graph(src, "pkg")
    assert g["pkg.low"] == {"pkg.stray": [4]}
    assert g["pkg.high"] == {"pkg.low": [1], "pkg": [2]}
    problems = layer_violations(g, {**TOY_LAYERS, "pkg.top": (2, "top")})
    assert problems[0] == "pkg.stray is in no layer: add it to the table"
    assert len(problems) == 2 and problems[1].startswith("pkg.high:2 imports pkg:")
