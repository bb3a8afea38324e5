"""Fast checks on the cheat catalogue itself (no compilation, no workers): runs in CI by default.

Every candidate file is in a table and every table entry exists; each file says which pattern and task it
targets; the cpp files embed the one shared extension unchanged (so a test session builds it once); and
each candidate passes its backend's static checks, so a cheat is never turned down merely for being an
invalid file.
"""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import sync_extension  # noqa: E402
from cheat_catalogue import (  # noqa: E402
    CPP_CHEATS,
    GPU_CHEATS,
    GPU_HONEST,
    HERE,
    HONEST,
    NEUTRALISED,
    SIDE_STREAM,
    task_path,
)

from htam_agent.evaluation.backends import get_backend  # noqa: E402
from htam_agent.evaluation.tasks import load_task  # noqa: E402

ALL_CHEATS = [*CPP_CHEATS, *GPU_CHEATS, SIDE_STREAM, *NEUTRALISED]
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


@pytest.mark.parametrize("entry", ALL_CHEATS + ALL_HONEST, ids=lambda e: e.id)
def test_candidate_file_is_a_valid_candidate(entry):
    source = entry.path.read_text()
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
    """Identical load_inline arguments everywhere: one build per session (run sync_extension.py if this fails)."""
    text = path.read_text()
    assert "BEGIN shared catalogue extension" in text, f"{path.name}: no shared extension block"
    kind = "source" if "(source;" in text else "full"
    assert sync_extension.block(kind) in text, f"{path.name}: stale extension block; run tests/cheats/sync_extension.py"


def test_local_tasks_load():
    for path in (HERE / "tasks").glob("*.py"):
        for size in ("small", "alt"):
            task = load_task(path, size=size)
            assert task.get_inputs()
