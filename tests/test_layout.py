"""The tests mirror the source layout: a test module lives in ``tests/`` itself (root modules of the package
and tests that cut across it) or in the folder named after the part of ``src/patchpose`` it tests
(``tests/data/`` for ``patchpose.data``, ...). Test module names are unique across folders: pytest's default
import mode imports each test module by its bare name, so two ``test_x.py`` would clash."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent
PACKAGE = TESTS.parent / "src" / "patchpose"


def module_paths(tests: Path) -> list[Path]:
    """Every ``test_*.py`` under ``tests``, as paths relative to it."""
    return sorted(p.relative_to(tests) for p in tests.rglob("test_*.py"))


def misplaced(tests: Path, package: Path) -> list[str]:
    """The test modules whose folder (relative to ``tests``) is not a folder of ``package``."""
    return [
        str(rel)
        for rel in module_paths(tests)
        if rel.parent != Path(".") and not (package / rel.parent).is_dir()
    ]


def shared_names(tests: Path) -> dict[str, list[str]]:
    """Test module names used by more than one module, with the modules that use them."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for rel in module_paths(tests):
        by_name[rel.name].append(str(rel))
    return {name: paths for name, paths in by_name.items() if len(paths) > 1}


def test_every_test_module_sits_in_the_folder_of_what_it_tests():
    assert PACKAGE.is_dir()
    assert len(module_paths(TESTS)) > 20 and any(rel.parent != Path(".") for rel in module_paths(TESTS))
    assert misplaced(TESTS, PACKAGE) == [], "move these under a folder that mirrors src/patchpose"


def test_test_module_names_are_unique():
    assert shared_names(TESTS) == {}, "rename one of each pair (pytest imports test modules by bare name)"


def test_the_checks_find_a_misplaced_module_and_a_shared_name(tmp_path):
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    (package / "data").mkdir(parents=True)
    for rel in (
        "test_root.py",
        "data/test_a.py",
        "models/test_b.py",
        "data/deeper/test_c.py",
        "data/test_root.py",
    ):
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_text("")
    (tests / "data" / "helper.py").write_text("")  # not a test module
    assert misplaced(tests, package) == ["data/deeper/test_c.py", "models/test_b.py"]
    assert shared_names(tests) == {"test_root.py": ["data/test_root.py", "test_root.py"]}
