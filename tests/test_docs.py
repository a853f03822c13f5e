"""The user docs do what they say.

Every ``python`` block of README.md, docs/usage.md and docs/integrations.md runs as written (each file top to
bottom, in one namespace); every ``patchpose`` command they show parses with the CLI's own parser; every
relative link and anchor resolves; README.md and docs/results.md stay short. docs/lab/ is an unmaintained log and
is not checked.
"""

from __future__ import annotations

import ast
import contextlib
import io
import math
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
USER_DOCS = [README, ROOT / "CHANGELOG.md", *sorted(DOCS.glob("*.md"))]
MAX_LINES = {README: 120}
# results.md is capped in characters, and its prose wrapped, so that unwrapping lines cannot make it look shorter
MAX_CHARS = {DOCS / "results.md": 48_000}
PROSE_WIDTH = 120


def python_blocks(path: Path) -> list[str]:
    return re.findall(r"```python\n(.*?)```", path.read_text(), flags=re.S)


def skip_unless_importable(code: str, where: str) -> None:
    """Skip (never fail) when a third-party module the code imports is not installed; patchpose must import."""
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            if name.split(".")[0] != "patchpose":
                pytest.importorskip(name, reason=f"{where} imports {name}, which is not installed")


def run_blocks(path: Path) -> dict:
    """Execute every python block of ``path`` in one namespace; the namespace afterwards."""
    blocks = python_blocks(path)
    for code in blocks:
        skip_unless_importable(code, path.name)
    ns: dict = {"__name__": f"docs_{path.stem}"}
    for i, code in enumerate(blocks):
        try:
            exec(compile(code, f"{path.name}[block {i}]", "exec"), ns)
        except Exception as e:  # noqa: BLE001 - report which block broke
            raise AssertionError(f"block {i} of {path.name} failed: {type(e).__name__}: {e}\n{code}") from e
    return ns


def test_readme_example_runs(capsys):
    assert len(python_blocks(README)) == 1  # one self-contained example
    ns = run_blocks(README)
    import patchpose

    poses = [v for v in ns.values() if isinstance(v, patchpose.Poses)]
    assert poses, "the README example made no patchpose.Poses"
    for p in poses:
        assert len(p.orientation) > 0
        assert ((p.orientation >= 0) & (p.orientation < 2 * math.pi)).all()
    # what the example prints is what it did: a quarter turn clockwise found as the map (x, y) → (h − 1 − y, x),
    # one blended descriptor of 128 per SIFT keypoint kept, our keypoints one per SIFT keypoint
    m, desc, kps, ours, sift = ns["m"], ns["desc"], ns["kps"], ns["ours"], ns["sift_keypoints"]
    h = ns["image"].shape[0]
    assert m.recipe == "rectify" and m.affine is not None
    np.testing.assert_allclose(m.affine, [[0.0, -1.0, h - 1.0], [1.0, 0.0, 0.0]], atol=0.5)
    np.testing.assert_allclose(m.affine[:, :2], [[0.0, -1.0], [1.0, 0.0]], atol=0.01)
    assert desc.shape == (len(kps), 128) and len(kps) > 100 and len(ours) == len(sift)
    assert int(m.correct.sum()) > 0.5 * len(m.matches) > 50 if m.correct is not None else len(m.matches) > 50
    assert capsys.readouterr().out.strip()


def test_usage_snippets_run(capsys):
    assert len(python_blocks(DOCS / "usage.md")) >= 5  # estimator, Poses, top_k, detector_scale, border, plan
    run_blocks(DOCS / "usage.md")
    assert "refused" in capsys.readouterr().out  # border="error" refused a keypoint 5 px from the border


def test_integration_snippets_run(capsys):
    # setup, OpenCV, kornia ×2, LightGlue, hloc, COLMAP
    assert len(python_blocks(DOCS / "integrations.md")) >= 6
    run_blocks(DOCS / "integrations.md")
    out = capsys.readouterr().out
    assert "128" in out and "keypoints" in out


@pytest.mark.parametrize("path", sorted(MAX_LINES), ids=lambda p: p.name)
def test_docs_stay_short(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_LINES[path], f"{path.name} has {n} lines, at most {MAX_LINES[path]}"


def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of the lines outside code blocks and tables."""
    out, code = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            code = not code
        elif not code and not line.startswith("|"):
            out.append((i, line))
    return out


@pytest.mark.parametrize("path", sorted(MAX_CHARS), ids=lambda p: p.name)
def test_results_stay_short(path):
    text = path.read_text()
    assert len(text) <= MAX_CHARS[path], (
        f"{path.name} has {len(text):,} characters, at most {MAX_CHARS[path]:,}"
    )
    long = [f"line {i}: {len(line)}" for i, line in prose_lines(text) if len(line) > PROSE_WIDTH]
    assert not long, f"{path.name}: prose lines over {PROSE_WIDTH} characters: {long}"


def test_prose_lines_are_found():
    """The helper above skips code blocks and table rows, and keeps what lies between them."""
    text = "a\n```bash\n" + "x" * 200 + "\n```\n| " + "y" * 200 + " |\nb"
    assert prose_lines(text) == [(1, "a"), (6, "b")]


def test_readme_keeps_the_two_setup_commands():
    text = README.read_text()
    assert "pip install torch==2.13.0 && pip install -e . && patchpose demo" in text
    tests = 'pip install torch==2.13.0 && pip install -e ".[test]" && python -m pytest -q'
    assert tests in text
    assert tests in (ROOT / ".ci" / "run").read_text()  # CI runs the README's command


def shell_commands(text: str, full_prose: bool = False) -> list[str]:
    """The shell lines of every ``bash`` block (continuation lines joined), and the code spans that start with
    ``patchpose `` in table rows (the README's table gives each number's command there) and, with ``full_prose``
    (results.md, whose prose gives each number's command), in prose, where a span may run over a line break."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        lines += block.replace("\\\n", " ").splitlines()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for row in (line for line in prose.splitlines() if line.startswith("|")):
        lines += re.findall(r"`(patchpose [^`]+)`", row)
    if full_prose:
        paragraphs = "\n".join(line for line in prose.splitlines() if not line.startswith("|")).split("\n\n")
        for para in paragraphs:
            lines += [" ".join(span.split()) for span in re.findall(r"`(patchpose [^`]+)`", para)]
    return lines


def test_shell_commands_are_found_in_blocks_tables_and_prose():
    """A prose span that runs over a line break is joined; prose counts only where asked (results.md)."""
    text = "Run `patchpose eval hpatches --root\ndata/x --rows a` now.\n\n| `patchpose demo` |\n```bash\npatchpose bench\n```\n"
    assert shell_commands(text) == ["patchpose bench", "patchpose demo"]
    assert shell_commands(text, full_prose=True) == [
        "patchpose bench",
        "patchpose demo",
        "patchpose eval hpatches --root data/x --rows a",
    ]


def patchpose_argvs(line: str) -> list[list[str]]:
    """The arguments of each ``patchpose ...`` (or ``... -m patchpose.train ...``) command on a shell line.
    Shell variables (``$s`` of a ``for`` loop) stand for ``1``."""
    lex = shlex.shlex(line, posix=True, punctuation_chars=";&|")
    lex.whitespace_split = True
    segments: list[list[str]] = [[]]
    for tok in lex:
        if tok in {";", "&&", "||", "|", "&"}:
            segments.append([])
        else:
            segments[-1].append(re.sub(r"\$\{?\w+\}?", "1", tok))
    argvs = []
    for seg in segments:
        while seg and seg[0] in {"do", "then", "else"}:
            seg = seg[1:]
        if seg and seg[0] == "patchpose":
            argvs.append(seg[1:])
        elif "patchpose.train" in seg:
            argvs.append(["train", *seg[seg.index("patchpose.train") + 1 :]])
    return argvs


def test_documented_commands_parse():
    from patchpose.cli.main import build_parser

    checked, failed = 0, []
    for path in USER_DOCS:
        for line in shell_commands(path.read_text(), full_prose=path == DOCS / "results.md"):
            for argv in patchpose_argvs(line):
                err = io.StringIO()
                try:
                    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                        build_parser().parse_args(argv)
                except SystemExit:
                    msg = err.getvalue().strip().splitlines()
                    failed.append(f"{path.name}: patchpose {shlex.join(argv)}\n    {msg[-1] if msg else ''}")
                checked += 1
    assert checked >= 40, f"only {checked} commands found in the docs"
    assert not failed, "commands in the docs that the CLI refuses:\n" + "\n".join(failed)


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    return {github_anchor(h) for h in re.findall(r"^#+\s+(.*)$", text, flags=re.M)}


def test_relative_links_resolve():
    broken = []
    for path in USER_DOCS:
        text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto
            file, _, anchor = target.partition("#")
            dest = (path.parent / file).resolve() if file else path
            if not dest.exists():
                broken.append(f"{path.name}: {target} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                broken.append(f"{path.name}: {target} (no such heading)")
    assert not broken, "broken links:\n" + "\n".join(broken)


def test_the_lab_log_gives_no_reason_for_a_default():
    """The experiment log (docs/lab/) is history: the user docs that recommend (README, usage, integrations, model
    card, training) link it only as the lab log, never for a number or a default, and the library's docstrings
    never send a reader there."""
    lab = re.compile(r"\]\(((?:\.\./)*(?:docs/)?lab/[^)]*|[^)]*peers\.md[^)]*)\)")
    for path in [
        README,
        *(DOCS / n for n in ("usage.md", "integrations.md", "model_card.md", "training.md")),
    ]:
        text = path.read_text()
        links = lab.findall(text)
        allowed = ["docs/lab/README.md"] if path == README else []
        assert links == allowed, f"{path.name} links the lab log: {links}"
        assert "peers.md" not in text, f"{path.name} sends readers to the runs' log"
    src = ROOT / "src" / "patchpose"
    cited = [
        str(p.relative_to(src)) for p in src.rglob("*.py") if re.search(r"peers\.md|docs/lab", p.read_text())
    ]
    assert not cited, f"docstrings that send readers to the lab log: {cited}"


LAB_TAG = re.compile(r"lab-[a-z0-9-]*?20\d\d-\d\d-\d\d")
TAGS = DOCS / "lab" / "tags.txt"


def _tag_table() -> dict[str, str]:
    rows = [
        line.split() for line in TAGS.read_text().splitlines() if line.strip() and not line.startswith("#")
    ]
    return {row[0]: row[1] for row in rows}


def test_every_cited_lab_tag_has_its_commit_listed():
    """Tags do not travel with every clone, so each tag the docs cite is listed with its commit in docs/lab/tags.txt."""
    cited = set()
    for path in [*USER_DOCS, *sorted((DOCS / "lab").glob("*.md"))]:
        cited |= set(LAB_TAG.findall(path.read_text()))
    table = _tag_table()
    assert cited, "no lab tag found: the pattern is wrong"
    assert sorted(cited - set(table)) == []
    assert all(re.fullmatch(r"[0-9a-f]{7,40}|-", c) for c in table.values()), table


def test_the_listed_lab_commits_exist():
    """Each commit of docs/lab/tags.txt is in this clone's history (skipped where the clone has no full history)."""
    import shutil
    import subprocess

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)

    if shutil.which("git") is None or git("rev-parse", "--is-shallow-repository").stdout.strip() != "false":
        pytest.skip("not a git clone with its full history")
    missing = [
        t for t, c in _tag_table().items() if c != "-" and git("cat-file", "-e", f"{c}^{{commit}}").returncode
    ]
    assert missing == []
    # a tag this clone has points at the commit listed
    elsewhere = []
    for tag, commit in _tag_table().items():
        here = git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}").stdout.strip()
        if (
            here
            and commit != "-"
            and not here.startswith(git("rev-parse", f"{commit}^{{commit}}").stdout.strip())
        ):
            elsewhere.append(tag)
    assert elsewhere == []
