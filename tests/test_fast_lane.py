"""The fast lane (`python -m pytest -m "not slow"`) still tests every package of htam_agent.

Read from the test files' text, no collection: a test counts as fast when neither its module (`pytestmark`)
nor its function carries the `slow` mark, and it tests a package when its file imports from it. A package
whose every test is slow would go unchecked between edits; mark fewer of its tests slow, or add a cheap one.
"""

from __future__ import annotations

import ast
from pathlib import Path

import htam_agent

TESTS = Path(__file__).resolve().parent
PACKAGE = Path(htam_agent.__file__).resolve().parent


def _marks(node: ast.expr) -> set[str]:
    """Mark names in `pytest.mark.slow`, `[pytest.mark.slow, ...]` or a decorator call of one."""
    found = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Attribute) and sub.value.attr == "mark":
            found.add(sub.attr)
    return found


def _fast_tests_and_imports(path: Path) -> tuple[int, set[str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    module_marks: set[str] = set()
    imported: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            module_marks |= _marks(node.value)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        imported |= {n.split(".")[1] for n in names if n.startswith("htam_agent.") and n.count(".") >= 1}
    if "slow" in module_marks:
        return 0, imported
    fast = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            if not any("slow" in _marks(d) for d in node.decorator_list):
                fast += 1
    return fast, imported


def _packages() -> set[str]:
    return {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}


# Packages known to have no fast test yet, each with why; an entry that gets a fast test fails the check below
# until it is removed here (like a strict xfail).
KNOWN_GAPS: dict[str, str] = {
    "ui": "issue 22: the page's one test drives Chromium and is marked slow (tests/ui/test_page.py)",
}


def test_every_package_has_a_fast_test():
    covered: set[str] = set()
    for path in TESTS.rglob("test_*.py"):
        fast, imported = _fast_tests_and_imports(path)
        if fast:
            covered |= imported
    missing = sorted(_packages() - covered - set(KNOWN_GAPS))
    assert not missing, (f"no test outside the slow mark imports htam_agent.{{{', '.join(missing)}}}: the fast "
                         "lane (-m 'not slow') would not check them; add a cheap test or unmark one")
    closed = sorted(set(KNOWN_GAPS) & covered)
    assert not closed, f"{closed} have a fast test now: remove them from KNOWN_GAPS"


def test_the_reader_sees_marks():
    """The check above would pass vacuously if it misread marks: it must see this repository's slow files."""
    slow_files = [p for p in TESTS.rglob("test_*.py") if _fast_tests_and_imports(p)[0] == 0]
    assert TESTS / "cheats" / "test_cheats_cpp.py" in slow_files
    assert TESTS / "cheats" / "test_cheat_catalogue.py" not in slow_files
    assert {"evaluation", "memory", "coder"} <= _packages()


def test_the_default_run_leaves_the_exhaustive_sweeps_to_their_lane():
    """`python -m pytest` runs each sweep's representative sample; `-m exhaustive` the rest (README, Tests)."""
    import types

    from support.lanes import exhaustive_but_not_slow

    pyproject = (TESTS.parent / "pyproject.toml").read_text()  # read as text: tomllib is Python 3.11+
    assert 'addopts = "-m \'not gpu and not exhaustive\'' in pyproject
    assert '\n  "exhaustive: ' in pyproject
    assert "-m exhaustive" in (TESTS.parent / "README.md").read_text()

    def item(nodeid: str, *marks: str):
        return types.SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: name if name in marks else None)

    items = [item("a", "exhaustive", "slow"), item("b", "exhaustive"), item("c", "slow"), item("d")]
    assert exhaustive_but_not_slow(items) == ["b"]
