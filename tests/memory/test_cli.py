"""`htam memory` commands through typer's CliRunner."""

from __future__ import annotations

import json

from memory_helpers import fail, gain, state
from typer.testing import CliRunner

from htam_agent.cli.memory import app
from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory

runner = CliRunner()


def _seeded(tmp_path) -> str:
    d = tmp_path / "mem"
    with HTAMemory(MemoryConfig(d)) as m:
        for i in range(3):
            m.record(state(text=f"gemm {i}"), "data_reuse", ["dr_smem_tiling_gemm"], gain(1.4),
                     history=["memory_access"])
        m.record(state(), "instruction_throughput", ["it_tensor_core_mma"], fail("tf32 tolerance exceeded"),
                 history=["memory_access"])
        m.record(state("elementwise", "memory", backend="triton"), "memory_access", [], gain(1.2))
    return str(d)


def _run(*args: str, input: str | None = None):
    return runner.invoke(app, list(args), env={"COLUMNS": "200"}, input=input)


def test_show_lists_directions_edges_and_strategies(tmp_path):
    d = _seeded(tmp_path)
    r = _run("--dir", d, "show")
    assert r.exit_code == 0, r.output
    assert "5 recorded transitions" in r.output
    for text in ("memory_access", "data_reuse", "tf32 tolerance exceeded", "dr_smem_tiling_gemm", "x1.40"):
        assert text in r.output


def test_show_filters(tmp_path):
    d = _seeded(tmp_path)
    r = _run("--dir", d, "show", "--what", "edges", "--backend", "triton")
    assert r.exit_code == 0, r.output
    assert "Transition edges (1)" in r.output and "start" in r.output
    r = _run("--dir", d, "show", "--what", "strategies", "--direction", "launch_overhead", "--op-class", "model")
    assert r.exit_code == 0
    assert "lo_cuda_graphs" in r.output and "dr_smem_tiling_gemm" not in r.output
    r = _run("--dir", d, "show", "--what", "directions", "--op-class", "matmul")
    assert "prior (matmul)" in r.output and "0.95" in r.output
    assert _run("--dir", d, "show", "--backend", "rocm").exit_code == 2
    assert _run("--dir", d, "show", "--direction", "nope").exit_code == 2


def test_graph_writes_a_png(tmp_path):
    d = _seeded(tmp_path)
    out = tmp_path / "htg.png"
    r = _run("--dir", d, "graph", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    r = _run("--dir", d, "graph", "--out", str(tmp_path / "mm.svg"), "--op-class", "matmul")
    assert r.exit_code == 0 and "(2 edges)" in r.output


def test_export_import_and_refusal(tmp_path):
    d = _seeded(tmp_path)
    f = tmp_path / "exp.json"
    r = _run("--dir", d, "export", str(f))
    assert r.exit_code == 0 and "exported 5 transitions" in r.output
    other = str(tmp_path / "other")
    r = _run("--dir", other, "import", str(f))
    assert r.exit_code == 0 and "imported 5 new transitions" in r.output
    r = _run("--dir", other, "import", str(f))
    assert "imported 0 new transitions (5 already present)" in r.output
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"format": "htam-memory", "schema_version": 99, "events": []}))
    r = _run("--dir", other, "import", str(bad))
    assert r.exit_code == 1 and "refused" in r.output and "version 99" in r.output
    with HTAMemory(MemoryConfig(tmp_path / "other")) as m:
        assert m.transitions.count() == 5


def test_reset(tmp_path):
    d = _seeded(tmp_path)
    r = _run("--dir", d, "reset", "--yes")
    assert r.exit_code == 0 and "5 transitions forgotten" in r.output
    with HTAMemory(MemoryConfig(tmp_path / "mem")) as m:
        assert m.transitions.count() == 0
    assert _run("--dir", _seeded(tmp_path / "again"), "reset", input="n\n").exit_code == 1  # declined


def test_unreadable_memory_is_reported_and_reset_sets_it_aside(tmp_path):
    d = tmp_path / "mem"
    d.mkdir()
    (d / "transitions.sqlite3").write_bytes(b"garbage" * 1000)
    r = _run("--dir", str(d), "show")
    assert r.exit_code == 1 and "not a readable HTAM memory" in r.output
    r = _run("--dir", str(d), "reset", "--yes")
    assert r.exit_code == 0, r.output
    kept = [p for p in d.iterdir() if ".unreadable-" in p.name]
    assert len(kept) == 1 and kept[0].read_bytes() == b"garbage" * 1000
    assert _run("--dir", str(d), "show", "--what", "edges").exit_code == 0
