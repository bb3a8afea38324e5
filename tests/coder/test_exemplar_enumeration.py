"""The candidate space: finite, deterministic, well-formed files, and `write` output the evaluator's batch reads."""

from __future__ import annotations

import argparse
import ast
import json
from pathlib import Path

import pytest
from exemplar_helpers import COVERED, backends_for, task_source
from typer.testing import CliRunner

from htam_agent.cli.exemplar import app
from htam_agent.coder.exemplar import cpp_launch, enumerate_candidates
from htam_agent.coder.exemplar.common import MAX_VARIANTS, parse_header
from htam_agent.evaluation.backends import detect_backend, get_backend


@pytest.mark.parametrize("stem", sorted(COVERED))
def test_enumeration_is_finite_deterministic_and_well_formed(stem: str):
    src = task_source(stem)
    for backend in backends_for(stem):
        cands = enumerate_candidates(src, backend, stem)
        assert 2 <= len(cands) <= MAX_VARIANTS
        assert cands == enumerate_candidates(src, backend, stem), "not deterministic"
        ids = [v for v, _, _ in cands]
        assert len(set(ids)) == len(ids), "duplicate variant ids"
        assert len({c for _, _, c in cands}) == len(cands), "two variants render the same code"
        for vid, knobs, code in cands:
            family, be, parsed = parse_header(code)
            assert (family, be, parsed) == (COVERED[stem], backend, knobs), vid
            assert "no LLM was used" in code
            ast.parse(code)
            assert detect_backend(code) == backend
            assert get_backend(backend).static_problems(code) == [], vid


def test_cli_list_and_write_feed_the_batch(tmp_path: Path):
    runner = CliRunner()
    r = runner.invoke(app, ["list", "norm_softmax", "--backend", "cpp"])
    assert r.exit_code == 0 and "family rowwise" in r.output and "cpp    ex00" in r.output
    r = runner.invoke(app, ["list", "attention_sdpa"])
    assert r.exit_code == 2 and "HTAM_MODEL" in r.output
    out = tmp_path / "ex"
    r = runner.invoke(app, ["write", "norm_softmax", "matmul_square", "attention_sdpa", "--backend", "cpp,triton",
                            "--out", str(out)])
    assert r.exit_code == 0, r.output
    assert "skipped attention_sdpa" in r.output
    manifest = [json.loads(line) for line in (out / "manifest.jsonl").read_text().splitlines()]
    n = sum(len(enumerate_candidates(task_source(s), b, s)) for s in ("norm_softmax", "matmul_square")
            for b in ("cpp", "triton"))
    assert len(manifest) == n
    for m in manifest:
        assert set(m) >= {"task", "backend", "variant", "knobs", "file"}
        assert parse_header(Path(m["file"]).read_text())[2] == m["knobs"]
    from htam_agent.evaluation.parent.commands import _pairs

    pairs = _pairs(argparse.Namespace(pairs=str(out / "pairs.json")))
    assert sorted(c for _, c in pairs) == sorted(m["file"] for m in manifest)
    by_folder = _pairs(argparse.Namespace(pairs=None, tasks=str(Path(manifest[0]["task"]).parent),
                                          candidates=str(out), backend="cpp"))
    assert len(by_folder) == sum(m["backend"] == "cpp" for m in manifest)


def _ext_source(code: str) -> str:
    """What a cpp candidate builds: its C++ source and flags (the extension's name hashes exactly these)."""
    return code.split('name="', 1)[1].split('"', 1)[0]


@pytest.mark.parametrize("name", ["kb_sum_dim_scale", "kb_conv_groupnorm_swish", "kb_log_softmax_dim1"])
def test_cpp_launch_knobs_share_one_build(name: str):
    """Variants that differ only in launch knobs must build one extension (the table's cost rests on it), and
    their `_CFG` lines must differ: the knobs reach the kernel at call time, not through the source."""
    from kb_style_tasks import source

    cands = enumerate_candidates(source(name), "cpp", name)
    assert len(cands) >= 16, [v for v, _, _ in cands]
    by_build: dict[tuple, list] = {}
    for _vid, knobs, code in cands:
        static = tuple(sorted((k, v) for k, v in knobs.items() if k not in cpp_launch.RUNTIME_KNOBS))
        by_build.setdefault(static, []).append((knobs, code))
    for group in by_build.values():
        assert len({_ext_source(code) for _, code in group}) == 1, "launch knobs changed the C++ source"
        cfgs = [code.split("\n_CFG = ", 1)[1].split("  #", 1)[0] for _, code in group]
        assert cfgs == [repr(cpp_launch.cfg(k)) for k, _ in group]
        assert len(set(cfgs)) == len(group), "two variants of one build pass the same launch knobs"
    assert len(by_build) <= len(cands) // 2, "most variants should reuse a build"


def test_cpp_cfg_vector_order_matches_the_kernel_reader():
    """cpp_cfg.cpp.tmpl reads _CFG as threads, schedule, simd, accumulators, loop order, block."""
    assert cpp_launch.cfg({}) == [0, 0, 0, 1, 0, 0]
    assert cpp_launch.cfg({"threads": "one", "sched": "guided", "simd": True, "acc": 4, "order": "tile",
                           "block": 4096}) == [1, 2, 1, 4, 1, 4096]
    assert cpp_launch.cfg({"vec": 8})[2] == 1
