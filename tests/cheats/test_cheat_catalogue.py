"""Fast checks on the cheat catalogue itself (no compilation, no workers): runs in CI by default.

Every candidate file is in a table and every table entry exists; each file says which pattern and task it
targets; the cpp files get the one shared extension from a marker line (so a test session builds it once); and
each candidate passes its backend's static checks, so a cheat is never turned down merely for being an
invalid file.
"""

from __future__ import annotations

import ast
import re

import pytest
import sync_extension
from cheat_catalogue import (
    CLOCK_BOUNDED,
    CPP_CHEATS,
    EVALUATED_ELSEWHERE,
    GPU_CHEATS,
    GPU_HONEST,
    HERE,
    HONEST,
    KERNELBENCH,
    NEUTRALISED,
    SIDE_STREAM,
    default_honest_sample,
    default_sample,
    task_path,
)

from htam_agent.evaluation.backends import get_backend
from htam_agent.evaluation.tasks import load_task

ALL_CHEATS = [*CPP_CHEATS, *GPU_CHEATS, SIDE_STREAM, *NEUTRALISED, *CLOCK_BOUNDED]
ALL_HONEST = [*HONEST, *GPU_HONEST]


def test_every_file_is_in_a_table_and_every_entry_exists():
    listed = {e.file for e in ALL_CHEATS + ALL_HONEST}
    on_disk = {str(p.relative_to(HERE)) for d in ("cpp", "cuda", "triton", "honest") for p in (HERE / d).glob("*.py")}
    assert on_disk - listed == set(), "candidate files missing from cheat_catalogue.py"
    assert listed - on_disk == set(), "table entries without a file"
    assert len(listed) == len(ALL_CHEATS) + len(ALL_HONEST), "a file is listed twice"


def test_cpp_cheats_cover_every_cpu_pattern():
    cpu_patterns = set(range(1, 20)) - {3}  # 3 (side streams) exists only on a GPU
    assert cpu_patterns <= {c.pattern for c in CPP_CHEATS}


def test_the_default_lanes_sample_covers_every_pattern_and_every_check():
    """The default run evaluates a sample of the cpp catalogue (test_cheats_cpp.py); the rest is `exhaustive`.
    The sample must keep one cheat of every pattern and, for every check that turns some cheat down, a cheat
    that check catches among as few alternatives as any cheat has, or a lane without the sweep loses a check."""
    sample = default_sample(CPP_CHEATS)
    pool = [c for c in CPP_CHEATS if c.id not in EVALUATED_ELSEWHERE]
    assert len(pool) == len(CPP_CHEATS) - len(EVALUATED_ELSEWHERE), "an attacker of a boundary test was renamed"
    assert {c.pattern for c in sample} == {c.pattern for c in pool}
    for check in set().union(*(c.caught_by or frozenset() for c in pool)):
        fewest = min(len(c.caught_by) for c in pool if c.caught_by and check in c.caught_by)
        assert any(c.caught_by and check in c.caught_by and len(c.caught_by) <= fewest for c in sample), check
    assert not {c.id for c in sample} & EVALUATED_ELSEWHERE
    boundary = "".join(p.read_text() for p in HERE.glob("test_boundary_*.py"))
    assert all(name in boundary for name in EVALUATED_ELSEWHERE), "an attacker left out is evaluated nowhere"
    assert len(sample) < len(pool), "the sample is the whole catalogue: nothing is left for the exhaustive lane"
    assert {h.task for h in default_honest_sample(HONEST)} == {h.task for h in HONEST}


@pytest.mark.parametrize("entry", ALL_CHEATS + ALL_HONEST, ids=lambda e: e.id)
def test_candidate_file_is_a_valid_candidate(entry):
    source = entry.source
    tree = ast.parse(source)
    doc = ast.get_docstring(tree) or ""
    assert "task:" in doc, f"{entry.file}: the docstring must name the task it targets"
    if entry in ALL_CHEATS:
        m = re.match(r"Pattern (\d+)", doc)
        assert m and int(m.group(1)) == entry.pattern, f"{entry.file}: docstring must start 'Pattern {entry.pattern}'"
    else:
        assert doc.startswith("Honest look-alike"), entry.file
    assert task_path(entry.task).is_file(), entry.task
    assert get_backend(entry.backend).static_problems(source) == [], entry.file


@pytest.mark.parametrize("path", sync_extension.candidate_files(), ids=lambda p: p.stem)
def test_shared_extension_is_in_sync(path):
    """Identical load_inline arguments everywhere: one build per session."""
    text = path.read_text()
    markers = [k for k, m in sync_extension.MARKERS.items() if m in text]
    embedded = "BEGIN shared catalogue extension" in text
    assert len(markers) + embedded == 1, (
        f"{path.name}: needs exactly one '# <<SHARED_EXTENSION>>' (or '# <<SHARED_SOURCE>>') line, found "
        f"{markers} and {'an' if embedded else 'no'} embedded block")
    if embedded:
        kind = "source" if "(source;" in text else "full"
        assert sync_extension.block(kind) in text, (
            f"{path.name}: stale embedded extension; replace the block with its marker line "
            "(python tests/cheats/sync_extension.py --collapse)")
    expanded = sync_extension.source_of(path)
    assert expanded.count("# ---- BEGIN shared catalogue extension") == 1
    assert sync_extension.collapse(expanded) == sync_extension.collapse(text)


def test_every_shared_build_has_the_same_arguments():
    """The lazy candidates call load_inline themselves: with the full block's arguments, or they build twice."""
    full = sync_extension.block("full")
    call = full[full.index("_ext = load_inline(") + len("_ext = "):full.index(")\n# ---- END") + 1]
    args = re.sub(r"\s+", "", call)
    for path in sync_extension.candidate_files():
        text = sync_extension.source_of(path)
        if sync_extension.MARKERS["source"] in path.read_text() or "(source;" in text:
            calls = re.findall(r"load_inline\((.*?)\)", text, re.S)
            assert calls and all(re.sub(r"\s+", "", f"load_inline({c})") == args for c in calls), path.name


@pytest.mark.parametrize("entry", KERNELBENCH, ids=lambda e: f"kernelbench-{e.stem}")
def test_kernelbench_candidate_is_a_valid_candidate(entry):
    """The KernelBench files: header and docstring agree, and the cuda backend's static checks pass."""
    source = entry.path.read_text()
    doc = ast.get_docstring(ast.parse(source)) or ""
    if entry.group == "cheats" and entry.expect != "accepted":
        m = re.match(r"Pattern (\d+)", doc)
        assert m and int(m.group(1)) == entry.pattern, f"{entry.name}: docstring must start 'Pattern {entry.pattern}'"
    assert entry.kernelbench in doc.splitlines()[0] or entry.group == "honest", (
        f"{entry.name}: the first line names the problem ({entry.kernelbench})")
    assert get_backend("cuda").static_problems(source) == [], entry.name


def test_local_tasks_load():
    for path in (HERE / "tasks").glob("*.py"):
        for size in ("small", "alt"):
            task = load_task(path, size=size)
            assert task.get_inputs()
