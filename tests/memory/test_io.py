"""Export / import: a versioned file, merged counts, refusal of bad files with the memory left as it was."""

from __future__ import annotations

import gzip
import json

import pytest
from memory_helpers import fail, gain, state

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.io import EXPORT_VERSION, FORMAT, MemoryFormatError
from htam_agent.memory.schema import Strategy


def _open(tmp_path, name) -> HTAMemory:
    return HTAMemory(MemoryConfig(tmp_path / name))


def _fill(m: HTAMemory, n_good: int, n_bad: int, task: str) -> None:
    for i in range(n_good):
        m.record(state(text=f"{task} {i}"), "data_reuse", ["dr_smem_tiling_gemm"], gain(1.3), history=["memory_access"],
                 task_id=task)
    for i in range(n_bad):
        m.record(state(text=f"{task} {i}"), "instruction_throughput", [], fail("tf32 tolerance"),
                 history=["memory_access"], task_id=task)


def _edge(m: HTAMemory, src: str, dst: str):
    return next(e.stats for e in m.edges() if (e.source, e.target) == (src, dst))


def _snapshot(m: HTAMemory):
    return [e.to_dict() for _, e in m.transitions.events()], m.transitions.learned_strategies()


def test_export_import_round_trip_merges_counts(tmp_path):
    a, b = _open(tmp_path, "a"), _open(tmp_path, "b")
    _fill(a, 3, 2, "task_a")
    _fill(b, 4, 1, "task_b")
    learned = Strategy(**{**a.catalog.strategies[0].model_dump(), "id": "learned_x", "title": "learned trick"})
    a.add_strategies([learned])
    info = a.export(tmp_path / "a.json")
    assert info == {"events": 5, "learned_strategies": 1}
    doc = json.loads((tmp_path / "a.json").read_text())
    assert doc["format"] == FORMAT and doc["schema_version"] == EXPORT_VERSION

    rep = b.import_file(tmp_path / "a.json")
    assert (rep.events_added, rep.events_already_present, rep.learned_strategies) == (5, 0, 1)
    assert b.transitions.count() == 10
    assert _edge(b, "memory_access", "data_reuse").n == 7  # 3 + 4: counts merged
    assert _edge(b, "memory_access", "instruction_throughput").failed == 3
    assert "learned_x" in b.strategies()
    strat = {r.strategy.id: r.stats for r in b.strategy_rows()}["dr_smem_tiling_gemm"]
    assert strat.n == 7

    again = b.import_file(tmp_path / "a.json")  # idempotent: events are keyed by uid
    assert (again.events_added, again.events_already_present) == (0, 5)
    assert b.transitions.count() == 10

    # a fresh memory importing an export gets the same events
    c = _open(tmp_path, "c")
    b.export(tmp_path / "b.json.gz")
    c.import_file(tmp_path / "b.json.gz")
    assert sorted(e["uid"] for e in _snapshot(c)[0]) == sorted(e["uid"] for e in _snapshot(b)[0])
    for m in (a, b, c):
        m.close()


def _corruptions(good: dict):
    yield "truncated", json.dumps(good)[: len(json.dumps(good)) // 2]
    yield "not json", "\x00\x01garbage"
    yield "other format", json.dumps({**good, "format": "something-else"})
    yield "newer version", json.dumps({**good, "schema_version": EXPORT_VERSION + 1})
    bad_event = {**good["events"][0], "op_class": "quantum"}
    yield "bad vocabulary", json.dumps({**good, "events": good["events"] + [bad_event]})
    bad_num = {**good["events"][0], "uid": "x1", "gain": "fast"}
    yield "bad number", json.dumps({**good, "events": good["events"] + [bad_num]})
    bad_dir = {**good["events"][0], "uid": "x2", "direction": "warp_magic"}
    yield "unknown direction", json.dumps({**good, "events": [bad_dir] + good["events"]})


def test_bad_files_are_refused_and_memory_is_unchanged(tmp_path):
    src, dst = _open(tmp_path, "src"), _open(tmp_path, "dst")
    _fill(src, 2, 1, "s")
    _fill(dst, 1, 1, "d")
    src.export(tmp_path / "good.json")
    good = json.loads((tmp_path / "good.json").read_text())
    before = _snapshot(dst)
    for name, text in _corruptions(good):
        path = tmp_path / f"bad_{name.replace(' ', '_')}.json"
        path.write_text(text)
        with pytest.raises(MemoryFormatError) as err:
            dst.import_file(path)
        assert "nothing was imported" in str(err.value), name
        assert _snapshot(dst) == before, f"{name}: memory changed"
    (tmp_path / "bad.json.gz").write_bytes(gzip.compress(b"{")[:-3])
    with pytest.raises(MemoryFormatError):
        dst.import_file(tmp_path / "bad.json.gz")
    with pytest.raises(MemoryFormatError, match="no such file"):
        dst.import_file(tmp_path / "missing.json")
    assert _snapshot(dst) == before
    src.close()
    dst.close()


def test_export_is_atomic_and_leaves_no_temp_files(tmp_path):
    m = _open(tmp_path, "m")
    _fill(m, 2, 0, "t")
    m.export(tmp_path / "out" / "x.json")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["x.json"]
    m.close()
