"""The verdict table: records made from real H200 verdicts of the offline coder, crash-safe appends, strict
reading with errors that name file, line and field, gzip, provenance."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from htam_agent.bench.table import (
    Table,
    TableError,
    VariantRecord,
    add_provenance,
    load_table,
    provenance_entry,
    provenance_path,
    prune_records,
    read_provenance,
    record_from_verdict,
    variant_annotations,
    write_record,
)
from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.coder.exemplar.common import variant_id
from htam_agent.coder.exemplar.enumerate import enumerate_candidates
from htam_agent.coder.exemplar.patterns import recognize
from htam_agent.evaluation.common.verdict import VerdictBuilder

ROOT = Path(__file__).resolve().parents[2]
VERDICTS = ROOT / "benchmarks" / "results" / "h200_exemplar_cuda_verdicts.jsonl"
TASK = "elementwise_leaky_relu"


def _verdicts(task: str) -> dict[str, dict]:
    """variant id -> the H200 verdict of that candidate (the id is in the candidate's file name)."""
    out = {}
    for line in VERDICTS.read_text().splitlines():
        v = json.loads(line)
        if v["task"] == task and v.get("kind") == "candidate":
            out[Path(v["candidate_path"]).stem.split("_", 2)[2]] = v
    return out


def _records(task: str = TASK) -> list[VariantRecord]:
    src = (SUITE_DIR / f"{task}.py").read_text()
    pattern = recognize(src, task)
    verdicts = _verdicts(task)
    out = []
    for vid, knobs, _code in enumerate_candidates(src, "cuda", task):
        d, s = variant_annotations(pattern, "cuda", knobs)
        out.append(record_from_verdict(verdicts[vid], problem=task, level=None, op_class=pattern.op_class,
                                       family=pattern.family, knobs=knobs, directions=d, strategies=s))
    return out


def test_record_from_a_real_verdict_keeps_what_the_graph_reads():
    verdicts = _verdicts(TASK)
    recs = _records()
    assert len(recs) == len(verdicts) == 11
    for rec in recs:
        v = verdicts[rec.variant]
        assert rec.variant == variant_id(rec.knobs)
        assert rec.status == v["status"] == "accepted" and rec.backend == "cuda" and rec.size == v["size"]
        assert rec.speedup_eager == v["speedup_vs_eager"] and rec.speedup_compile == v["speedup_vs_compile"]
        assert rec.time_ms == v["timing"]["candidate"]["median_ms"]
        assert rec.eager_ms == v["timing"]["eager"]["median_ms"]
        assert rec.roofline_fraction == v["roofline"]["fraction"] and rec.bound == v["roofline"]["bound"]
        assert rec.seed == v.get("seed") and rec.n_timings == 1 and rec.ratio_lo is None
        assert rec.reason == v["reason"] and "\n" not in rec.reason
        assert rec.flags == [f["name"] for f in v["flags"]]
    # the default changes nothing; a float4 variant is a memory-access move that vectorized loads realize
    default = recs[0]
    assert default.directions == [] and default.strategies == []
    vec4 = next(r for r in recs if r.knobs["vec"] == 4 and sum(r.knobs[k] != default.knobs[k] for k in r.knobs) == 1)
    assert vec4.directions == ["memory_access"] and "ma_vectorized_loads" in vec4.strategies
    assert "oc_block_size" not in vec4.strategies  # it leaves the block size alone
    other_block = next(r for r in recs if r.knobs["block"] != default.knobs["block"])
    assert "occupancy_tuning" in other_block.directions and "oc_block_size" in other_block.strategies


def test_a_failed_verdict_is_recorded_with_its_status_and_no_speedup():
    v = VerdictBuilder(TASK, "cpp")
    v.set_status("compile_error", "compile_error: error: 'x' was not declared in this scope\n  at line 3")
    verdict = dict(v.finalize())
    rec = record_from_verdict(verdict, problem="level1/19_ReLU", level=1, op_class="elementwise",
                              family="elementwise", knobs={"vec": 8}, directions=["memory_access"], strategies=[],
                              size="small")
    assert rec.status == "compile_error" and not rec.accepted and rec.speedup_eager is None
    assert rec.n_timings == 0 and rec.time_ms is None and rec.reason.endswith("at line 3")
    with pytest.raises(TableError, match="level"):
        record_from_verdict(verdict, problem="level2/12_Gemm", level=1, op_class="fused", family="matmul",
                            knobs={}, directions=[], strategies=[])


def test_roundtrip_latest_wins_and_gzip(tmp_path):
    recs = _records()
    path = tmp_path / "t.jsonl"
    for rec in recs:
        write_record(path, rec)
    again = VariantRecord(**{**recs[0].__dict__, "speedup_eager": 9.0, "n_timings": 3, "ratio_lo": 8.5,
                             "ratio_hi": 9.4})
    write_record(path, again)  # a re-timed variant is appended again
    table = load_table(path)
    assert len(table) == len(recs) and table.torn == 0 and len(table.records) == len(recs) + 1
    assert table.get(TASK, recs[0].variant) == again and table.get(TASK, recs[0].variant, "cuda") == again
    assert table.get(TASK, "no-such-variant") is None
    assert table.best(TASK) == again and table.problems == [TASK]
    assert (TASK, "cuda", recs[1].variant) in table.done_keys()
    gz = tmp_path / "t.jsonl.gz"
    gz.write_bytes(gzip.compress(path.read_bytes()))
    assert [r.to_json() for r in load_table(gz)] == [r.to_json() for r in table]
    with pytest.raises(TableError, match="gzip"):
        write_record(gz, recs[0])


def test_prune_drops_named_records_atomically_and_keeps_the_rest(tmp_path):
    """Variants the coder no longer writes (a knob renamed) leave the table; the rest, re-timings included, stay
    in file order, and a torn last line goes with them."""
    recs = _records()
    path = tmp_path / "t.jsonl"
    for rec in recs:
        write_record(path, rec)
    again = VariantRecord(**{**recs[2].__dict__, "speedup_eager": 7.0})
    write_record(path, again)
    with open(path, "ab") as fh:
        fh.write(recs[1].to_json().encode()[:40])  # a killed writer's fragment
    stale = {recs[0].variant, recs[1].variant}
    assert prune_records(path, lambda r: r.variant in stale) == 2
    table = load_table(path)
    assert table.torn == 0 and [r.variant for r in table.records] == [r.variant for r in recs[2:]] + [again.variant]
    assert table.get(TASK, recs[2].variant) == again and table.get(TASK, recs[0].variant) is None
    assert prune_records(path, lambda r: False) == 0 and load_table(path).records == table.records
    assert not list(tmp_path.glob(".*prune"))


def test_a_writer_waiting_on_a_prune_appends_to_the_new_file(tmp_path):
    """A record written while a prune holds the lock is not lost in the replaced file: the writer sees the inode
    change once it gets the lock and appends to the new table."""
    import threading
    import time

    recs = _records()
    path = tmp_path / "t.jsonl"
    write_record(path, recs[0])
    writer = threading.Thread(target=write_record, args=(path, recs[1]))

    def drop(r: VariantRecord) -> bool:
        if not writer.is_alive():
            writer.start()
            time.sleep(0.3)  # the writer is now blocked on the prune's lock
        return False

    with open(path, "ab") as fh:
        fh.write(b'{"torn')  # so the prune rewrites the file even though it drops nothing
    assert prune_records(path, drop) == 0
    writer.join(10)
    assert [r.variant for r in load_table(path).records] == [recs[0].variant, recs[1].variant]


def test_a_killed_writer_loses_only_its_line(tmp_path):
    """A real process killed mid-line: the reader skips the fragment and the next append starts afresh."""
    recs = _records()
    path = tmp_path / "t.jsonl"
    write_record(path, recs[0])
    line = recs[1].to_json().encode()
    code = ("import os, sys, signal\n"
            f"fd = os.open({str(path)!r}, os.O_WRONLY | os.O_APPEND)\n"
            f"os.write(fd, {line[: len(line) // 2]!r})\n"
            "os.kill(os.getpid(), signal.SIGKILL)\n")
    proc = subprocess.run([sys.executable, "-c", code])
    assert proc.returncode == -9
    table = load_table(path)
    assert len(table) == 1 and table.torn == 1
    write_record(path, recs[2])
    write_record(path, recs[3])
    table = load_table(path)
    assert [r.variant for r in table] == [recs[0].variant, recs[2].variant, recs[3].variant] and table.torn == 1


def test_malformed_records_name_file_line_and_field(tmp_path):
    rec = _records()[0]
    good = json.loads(rec.to_json())
    path = tmp_path / "bad.jsonl"

    def load_with(line2: str) -> str:
        path.write_text(rec.to_json() + "\n" + line2 + "\n" + rec.to_json() + "\n")
        with pytest.raises(TableError) as exc:
            load_table(path)
        return str(exc.value)

    assert load_with("not json at all").startswith(f"{path}:2: not JSON")
    msg = load_with(json.dumps({k: v for k, v in good.items() if k != "status"}))
    assert msg.startswith(f"{path}:2:") and "status" in msg
    msg = load_with(json.dumps({**good, "speedup_eager": "fast"}))
    assert f"{path}:2:" in msg and "'speedup_eager'" in msg
    msg = load_with(json.dumps({**good, "speedup": 1.0}))
    assert "unknown field" in msg and "speedup" in msg
    msg = load_with(json.dumps({**good, "status": "great"}))
    assert "'status'" in msg and "accepted" in msg
    msg = load_with(json.dumps({**good, "speedup_eager": None}))
    assert "accepted variant" in msg
    msg = load_with(json.dumps({**good, "ratio_lo": 1.2}))
    assert "ratio_lo" in msg
    msg = load_with(json.dumps({**good, "variant": "other", "size": "small"}))
    assert "sizes" in msg and TASK in msg
    with pytest.raises(TableError, match="no such table"):
        load_table(tmp_path / "missing.jsonl")


def test_provenance_beside_the_table(tmp_path):
    table = tmp_path / "cpp_small.jsonl"
    assert provenance_path(table) == tmp_path / "cpp_small.provenance.json"
    assert provenance_path(tmp_path / "cpp_small.jsonl.gz") == tmp_path / "cpp_small.provenance.json"
    assert read_provenance(table)["runs"] == []
    entry = provenance_entry(command="python benchmarks/x.py --resume", size="small", backend="cpp")
    assert len(entry["commit"]) == 40 and entry["machine"]["cores"] == os.cpu_count()
    assert entry["torch"] and entry["evaluator_version"] and entry["date"].endswith("Z")
    add_provenance(table, entry)
    add_provenance(table, {**entry, "command": "python benchmarks/x.py --resume (after a kill)"})
    data = read_provenance(table)
    assert [r["command"] for r in data["runs"]][-1].endswith("(after a kill)") and len(data["runs"]) == 2
    provenance_path(table).write_text("[]")
    with pytest.raises(TableError, match="runs"):
        read_provenance(table)


def test_an_empty_table_is_a_table(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    t = load_table(path)
    assert isinstance(t, Table) and len(t) == 0 and t.problems == [] and t.best("x") is None
