"""The KernelBench checks (htam_agent.bench.kernelbench_checks, run as benchmarks/kernelbench_checks.py) without a
GPU or KernelBench: headers, pairs.json, the plan, the judging."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.kernelbench_files import RELU

from htam_agent.bench import kernelbench_checks as kc
from htam_agent.bench import launcher_marker as lm
from htam_agent.cli.kernelbench_checks import main
from htam_agent.coder.exemplar.fast_cuda import FAST_LAUNCHER

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "benchmarks" / "kernelbench_checks.py"
BUNDLED = REPO / "tests" / "cheats" / "kernelbench"

SOFTMAX = RELU.replace("torch.relu(x)", "torch.softmax(x, dim=1)")


def _head(kb: str = "level1/19_ReLU.py", expect: str = "turned_down", pattern: str | None = "12",
          extra: str = "") -> str:
    lines = [f"kernelbench: {kb}" if kb else "", f"expect: {expect}" if expect else "",
             f"pattern: {pattern}" if pattern else "", extra]
    body = "\n".join(x for x in lines if x)
    return f'"""A candidate.\n\n{body}\n\nWhy it cheats.\n"""\n\nclass ModelNew:\n    pass\n'


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text)
    return p


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """A KernelBench-like checkout: tmp/kbrepo/KernelBench/level1/{19_ReLU,23_Softmax}.py."""
    root = tmp_path / "kbrepo" / "KernelBench"
    _write(root / "level1", "19_ReLU.py", RELU)
    _write(root / "level1", "23_Softmax.py", SOFTMAX)
    _write(root / "level2", "1_Other.py", RELU)
    return root


@pytest.fixture
def cands(tmp_path: Path) -> Path:
    c = tmp_path / "cands"
    _write(c / "honest", "h_relu.py", _head(expect="accepted", pattern=None))
    _write(c / "cheats", "c12_relu.py", _head())
    _write(c / "cheats", "c03_side.py", _head(expect="not_faster_than c03_twin", pattern="3"))
    _write(c / "cheats", "c03_twin.py", _head(expect="accepted", pattern="3"))
    _write(c / "cheats", "c15_softmax.py", _head("level1/23_Softmax.py", "missed", "15",
                                                 "missing: a trial beyond exp's overflow"))
    _write(c / "cheats", "_helper.py", "x = 1\n")  # private: never a candidate
    return c


# -- headers ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ("import torch\n", ["no module docstring"]),
    (_head(kb=""), ["no 'kernelbench:' line"]),
    (_head(expect=""), ["no 'expect:' line"]),
    (_head(pattern=None), ["no 'pattern:' line"]),
    (_head(kb="19_ReLU.py"), ["levelN/FILE.py"]),
    (_head(expect="caught"), ["'expect: caught'", "turned_down"]),
    (_head(expect="not_faster_than"), ["twin"]),
    (_head(expect="accepted twin"), ["takes no argument"]),
    (_head(pattern="twelve"), ["'pattern: twelve'"]),
    (_head(pattern="42"), ["1 to 19"]),
    (_head(expect="missed"), ["no 'missing:' line"]),
    (_head(extra="expect: accepted"), ["two 'expect:' lines"]),
    ('"""Broken\n\nkernelbench: level1/19_ReLU.py\n"""\ndef (:\n', ["not valid Python"]),
])
def test_header_errors_name_the_file_and_the_field(tmp_path, text, words):
    p = _write(tmp_path / "cheats", "c99_bad.py", text)
    with pytest.raises(kc.HeaderError) as exc:
        kc.parse_header(p, "cheats")
    msg = str(exc.value)
    assert str(p) in msg
    for w in words:
        assert w in msg, msg


def test_header_fields_parsed(tmp_path):
    p = _write(tmp_path / "cheats", "c12_x.py", _head(extra="caught_by: other_shape:values, values"))
    e = kc.parse_header(p, "cheats")
    assert (e.kernelbench, e.expect, e.pattern, e.twin) == ("level1/19_ReLU.py", "turned_down", 12, None)
    assert e.caught_by == ("other_shape:values", "values")
    honest = kc.parse_header(_write(tmp_path / "honest", "h.py", _head(expect="accepted", pattern=None)), "honest")
    assert honest.pattern is None and honest.expect == "accepted"  # pattern is optional for honest files


def test_twin_must_exist_and_be_honest(tmp_path):
    c = tmp_path / "c"
    _write(c / "cheats", "c03_side.py", _head(expect="not_faster_than c03_nope", pattern="3"))
    with pytest.raises(kc.HeaderError, match="c03_nope"):
        kc.collect(c)
    _write(c / "cheats", "c03_side.py", _head(expect="not_faster_than c12_other", pattern="3"))
    _write(c / "cheats", "c12_other.py", _head())
    with pytest.raises(kc.HeaderError, match="must be honest"):
        kc.collect(c)


# -- pairs.json and the plan -----------------------------------------------------------------------------

@pytest.mark.parametrize("which", ["levels_folder", "checkout"])
def test_dry_run_writes_pairs_the_batch_reads(kb, cands, tmp_path, capsys, which):
    kb_arg = kb if which == "levels_folder" else kb.parent  # .../KernelBench or the checkout above it
    out = tmp_path / "out"
    rc = main([str(kb_arg), "--out", str(out), "--candidates-dir", str(cands), "--dry-run", "--jobs", "3",
                  "--size", "small"])
    assert rc == 0
    pairs = json.loads((out / "pairs.json").read_text())
    relu, softmax = str((kb / "level1" / "19_ReLU.py").resolve()), str((kb / "level1" / "23_Softmax.py").resolve())
    assert pairs == [
        {"task": relu, "candidate": str((cands / "honest" / "h_relu.py").resolve())},
        {"task": relu, "candidate": str((cands / "cheats" / "c03_side.py").resolve())},
        {"task": relu, "candidate": str((cands / "cheats" / "c03_twin.py").resolve())},
        {"task": relu, "candidate": str((cands / "cheats" / "c12_relu.py").resolve())},
        {"task": softmax, "candidate": str((cands / "cheats" / "c15_softmax.py").resolve())},
    ]
    from htam_agent.evaluation.parent.commands import _pairs_from_file

    assert _pairs_from_file(str(out / "pairs.json")) == [(p["task"], p["candidate"]) for p in pairs]
    printed = capsys.readouterr().out
    assert "dry run" in printed and "cheats/c03_side.py" in printed and "not_faster_than c03_twin" in printed
    assert "--jobs 3" in printed and "--size small" in printed and "--no-store" in printed
    assert "--baselines eager" in printed
    assert not (out / "verdicts.jsonl").exists()


def test_htam_kernelbench_checks_is_the_same_command(kb, cands, tmp_path):
    """`htam kernelbench-checks` hands its arguments to the one argparse parser: the same plan, and argparse's
    own --help (typer must not eat it)."""
    from typer.testing import CliRunner

    from htam_agent.cli import app

    out = tmp_path / "out"
    r = CliRunner().invoke(app, ["kernelbench-checks", str(kb), "--out", str(out), "--candidates-dir", str(cands),
                                 "--dry-run", "--only", "c12_relu"])
    assert r.exit_code == 0, r.output
    assert "dry run" in r.output and "cheats/c12_relu.py" in r.output
    assert [p["candidate"] for p in json.loads((out / "pairs.json").read_text())] == \
        [str((cands / "cheats" / "c12_relu.py").resolve())]
    r = CliRunner().invoke(app, ["kernelbench-checks", "--help"])
    assert r.exit_code == 0 and "usage: htam kernelbench-checks" in r.output and "--judge-only" in r.output, r.output


def test_only_keeps_the_side_stream_twin(kb, cands, tmp_path):
    out = tmp_path / "out"
    assert main([str(kb), "--out", str(out), "--candidates-dir", str(cands), "--dry-run", "--only", "c03_side"]) == 0
    names = [Path(p["candidate"]).name for p in json.loads((out / "pairs.json").read_text())]
    assert names == ["c03_side.py", "c03_twin.py"]
    assert main([str(kb), "--out", str(out), "--candidates-dir", str(cands), "--dry-run", "--only", "nope"]) == 2


def test_missing_kernelbench_file_or_folder(kb, cands, tmp_path, capsys):
    _write(cands / "cheats", "c12_gone.py", _head(kb="level1/77_Gone.py"))
    assert main([str(kb), "--out", str(tmp_path / "o"), "--candidates-dir", str(cands), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "cheats/c12_gone.py" in err and "level1/77_Gone.py" in err
    assert main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "o"), "--candidates-dir", str(cands),
                    "--dry-run"]) == 2
    assert "no level1/" in capsys.readouterr().err


def test_bad_header_exits_2_naming_the_file(kb, cands, tmp_path, capsys):
    _write(cands / "cheats", "c05_nohead.py", _head(pattern=None))
    assert main([str(kb), "--out", str(tmp_path / "o"), "--candidates-dir", str(cands), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "c05_nohead.py" in err and "pattern" in err


def test_a_fixture_with_the_launcher_marker_is_evaluated_as_its_expanded_copy(kb, cands, tmp_path, capsys):
    fast = _head(expect="accepted", pattern=None).replace("class ModelNew", f"{lm.MARKER}\nclass ModelNew")
    _write(cands / "honest", "h_fast.py", fast)
    out = tmp_path / "out"
    assert main([str(kb), "--out", str(out), "--candidates-dir", str(cands), "--dry-run"]) == 0
    pairs = {Path(p["candidate"]).name: Path(p["candidate"]) for p in json.loads((out / "pairs.json").read_text())}
    assert pairs["h_fast.py"] == (out / "candidates" / "honest" / "h_fast.py").resolve()
    assert pairs["h_fast.py"].read_text() == lm.expand(fast) and FAST_LAUNCHER in pairs["h_fast.py"].read_text()
    assert pairs["h_relu.py"] == (cands / "honest" / "h_relu.py").resolve()  # no marker: the file itself
    # the verdict of the expanded copy is the fixture's
    (out / "verdicts.jsonl").write_text(json.dumps(_verdict(pairs["h_fast.py"], "accepted")) + "\n")
    main([str(kb), "--out", str(out), "--candidates-dir", str(cands), "--judge-only"])
    row = next(r for r in json.loads((out / "summary.json").read_text())["rows"] if r["file"] == "honest/h_fast.py")
    assert row["status"] == "accepted" and row["ok"]
    _write(cands / "honest", "h_fast.py", fast.replace(lm.MARKER, lm.MARKER + "\n" + lm.MARKER))
    capsys.readouterr()
    assert main([str(kb), "--out", str(out), "--candidates-dir", str(cands), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "h_fast.py" in err and "keep one" in err


# -- judging (verdicts as the batch writes them) ---------------------------------------------------------

def _verdict(path: Path, status: str, ms: float | None = 1.0, flags=(), failed=None) -> dict:
    return {"kind": "candidate", "candidate_path": str(path.resolve()), "status": status,
            "accepted": status == "accepted", "failed_check": failed, "reason": f"{status}: because",
            "flags": [{"name": f, "rejects": True, "reason": ""} for f in flags],
            "timing": {"candidate": {"median_ms": ms}} if ms else {}, "speedup_vs_eager": 1.5 if ms else None}


def _judge(kb, cands, tmp_path, verdicts: dict[str, dict]) -> tuple[int, dict]:
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    lines = [json.dumps({"kind": "baseline", "status": "accepted"})] + [json.dumps(v) for v in verdicts.values()]
    (out / "verdicts.jsonl").write_text("\n".join(lines) + "\n")
    rc = main([str(kb), "--out", str(out), "--candidates-dir", str(cands), "--judge-only"])
    return rc, json.loads((out / "summary.json").read_text())


def test_judging_all_as_expected(kb, cands, tmp_path, capsys):
    c = cands / "cheats"
    rc, s = _judge(kb, cands, tmp_path, {
        "h": _verdict(cands / "honest" / "h_relu.py", "accepted"),
        "c12": _verdict(c / "c12_relu.py", "incorrect", None, failed="other_shape:values"),
        "side": _verdict(c / "c03_side.py", "accepted", 0.98),
        "twin": _verdict(c / "c03_twin.py", "accepted", 1.0),
        "gap": _verdict(c / "c15_softmax.py", "accepted"),
    })
    assert rc == 0, s
    assert s["honest_accepted"] == {"ok": 2, "total": 2}  # the twin counts as honest
    assert s["cheats_turned_down"] == {"ok": 1, "total": 1}
    assert s["known_gaps_still_missed"] == {"ok": 1, "total": 1}
    assert s["side_stream"][0]["ok"] and not s["mismatches"]
    printed = capsys.readouterr().out
    assert "other_shape:values" in printed and "honest accepted 2/2, cheats turned down 1/1" in printed


def test_judging_mismatches(kb, cands, tmp_path, capsys):
    c = cands / "cheats"
    rc, s = _judge(kb, cands, tmp_path, {
        "h": _verdict(cands / "honest" / "h_relu.py", "rejected", flags=["kernel_not_used"]),  # false alarm
        "c12": _verdict(c / "c12_relu.py", "accepted"),                                       # missed cheat
        "side": _verdict(c / "c03_side.py", "accepted", 0.01),                                # escaped the timer
        "twin": _verdict(c / "c03_twin.py", "accepted", 1.0),
        "gap": _verdict(c / "c15_softmax.py", "incorrect", failed="nan_or_inf"),              # gap closed
    })
    assert rc == 1
    assert sorted(s["mismatches"]) == ["cheats/c03_side.py", "cheats/c12_relu.py", "cheats/c15_softmax.py",
                                       "honest/h_relu.py"]
    printed = capsys.readouterr().out
    assert "MISMATCH" in printed and "update the header" in printed


def test_side_stream_turned_down_is_fine_and_missing_verdicts_are_mismatches(kb, cands, tmp_path):
    c = cands / "cheats"
    rc, s = _judge(kb, cands, tmp_path, {
        "side": _verdict(c / "c03_side.py", "incorrect", failed="values"),
        "twin": _verdict(c / "c03_twin.py", "accepted", 1.0),
    })
    assert s["side_stream"][0]["ok"]
    assert rc == 1 and "honest/h_relu.py" in s["mismatches"]  # no verdict for it
    row = next(r for r in s["rows"] if r["file"] == "honest/h_relu.py")
    assert row["status"] == "missing"


# -- the bundled candidates and the module's imports -------------------------------------------------------

def test_bundled_candidates_have_valid_headers():
    entries = kc.collect(BUNDLED)
    cheats = [e for e in entries if e.group == "cheats"]
    assert cheats, "no bundled cheats"
    for e in entries:
        src = e.path.read_text()
        assert "class ModelNew" in src, e.path
        assert kc._LEVEL.match(e.kernelbench) and e.kernelbench.split("/")[0] in ("level1", "level2", "level3"), e.path
    # one cheat at least per pattern the catalogue re-targets at KernelBench
    assert {3, 5, 6, 8, 10, 11, 12, 13, 15} <= {e.pattern for e in cheats if e.expect != "accepted"}
    for e in cheats:
        if e.expect in ("turned_down", "missed", "not_faster_than"):
            assert "__global__" in e.path.read_text() and "_compile_kernel" in e.path.read_text(), e.path


def test_imports_only_the_standard_library():
    """The command runs on a bare GPU host: nothing but the standard library and this module of our package."""
    allowed = ["htam_agent", "htam_agent.bench", "htam_agent.bench.kernelbench_checks", "htam_agent.threadsafe",
               "htam_agent.cli", "htam_agent.cli.kernelbench_checks",  # its argparse, the one command line
               "htam_agent.bench.launcher_marker", "htam_agent.coder", "htam_agent.coder.exemplar",
               "htam_agent.coder.exemplar.fast_cuda",  # the launcher's text, for the fast-form fixtures
               "htam_agent.evaluation", "htam_agent.evaluation.parent", "htam_agent.evaluation.parent.readout", "htam_agent.evaluation.common",
               "htam_agent.evaluation.common.verdict"]  # the verdict's reader, stdlib only
    code = (
        "import runpy, sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {['torch', 'numpy', 'pydantic', 'langgraph', 'chromadb']!r} or (\n"
        f"                name.startswith('htam_agent') and name not in {allowed!r}):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        f"sys.argv = ['kernelbench_checks.py', 'nowhere', '--out', 'nowhere', '--dry-run']\n"
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    # it got as far as reading every bundled header and resolving KB_DIR, which is missing here
    assert r.returncode == 2, r.stderr
    assert "KB_DIR nowhere: no level1/" in r.stderr, r.stderr


def test_the_script_defaults_to_the_bundled_candidates(kb: Path, tmp_path: Path):
    r = subprocess.run([sys.executable, str(SCRIPT), str(kb), "--out", str(tmp_path / "o"), "--dry-run"],
                       capture_output=True, text=True, timeout=60)
    # the bundled files name KernelBench problems this two-file checkout lacks: the error lists them
    missing = [e for e in kc.collect(BUNDLED) if e.kernelbench not in ("level1/19_ReLU.py", "level1/23_Softmax.py")]
    assert r.returncode == 2 and f"{len(missing)} candidate(s) name a KernelBench file" in r.stderr, r.stderr
    assert "cheats/c13_hinge_loss_constant.py" in r.stderr, r.stderr
