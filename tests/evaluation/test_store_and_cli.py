"""Verdict store (import, export, refusal of bad files), the evaluator's import hygiene, and `htam eval`."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from htam_agent.bundled_tasks import CANDIDATES_DIR, SUITE_DIR
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import StoreError, VerdictStore, candidate_key


def test_key_changes_with_every_input():
    base = ("src", "task", "small", "cpp", "cpu:x", {"trials": 5})
    keys = {candidate_key(*base)}
    for i in range(5):
        changed = list(base)
        changed[i] = changed[i] + "!"
        keys.add(candidate_key(*changed))
    keys.add(candidate_key(*base[:5], {"trials": 3}))
    assert len(keys) == 7


def test_export_import_round_trip_and_bad_files_import_nothing(tmp_path):
    a = VerdictStore(tmp_path / "a")
    a.put("k1", {"schema": 1, "status": "accepted", "task": "t"})
    a.put("k2", {"schema": 1, "status": "incorrect", "task": "t"})
    assert a.export_jsonl(tmp_path / "v.jsonl") == 2
    b = VerdictStore(tmp_path / "b")
    assert b.import_jsonl(tmp_path / "v.jsonl") == 2
    assert b.get("k2")["status"] == "incorrect"

    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"schema": 1, "key": "k3"}) + "\n{not json\n")
    c = VerdictStore(tmp_path / "c")
    with pytest.raises(StoreError, match="bad.jsonl:2: not JSON"):
        c.import_jsonl(bad)
    assert len(c) == 0, "a bad file must import nothing"
    bad.write_text(json.dumps({"schema": 99, "key": "k"}) + "\n")
    with pytest.raises(StoreError, match="schema"):
        c.import_jsonl(bad)


def test_replay_on_another_machine_uses_imported_gpu_verdicts(tmp_path, monkeypatch):
    """A verdict made 'on the GPU host' answers an evaluation here, without any worker or GPU."""
    task = SUITE_DIR / "norm_softmax.py"
    src = (CANDIDATES_DIR / "norm_softmax" / "cuda_online.py").read_text()
    monkeypatch.setenv("HTAM_DEVICE_NAME", "NVIDIA H200")
    ev = Evaluator(EvalOptions(backend="cuda"), store=VerdictStore(tmp_path / "gpu"))
    key = ev.key(Candidate(task_path=str(task), source=src))
    made_there = {"schema": 1, "key": key, "status": "accepted", "accepted": True, "speedup_vs_eager": 1.31}
    (tmp_path / "v.jsonl").write_text(json.dumps(made_there) + "\n")
    here = VerdictStore(tmp_path / "here")
    here.import_jsonl(tmp_path / "v.jsonl")
    v = Evaluator(EvalOptions(backend="cuda"), store=here).evaluate(Candidate(task_path=str(task), source=src))
    assert v["cached"] is True and v["speedup_vs_eager"] == 1.31


def test_evaluation_package_imports_only_torch_numpy_stdlib():
    """The worker must run on a bare GPU host: no module of the package (every one, walked) imports pydantic,
    langchain, chromadb, typer, rich..."""
    code = (
        "import importlib, pkgutil, sys\n"
        "import htam_agent.evaluation as ev\n"
        "names = [m.name for m in pkgutil.walk_packages(ev.__path__, 'htam_agent.evaluation.')]\n"
        "assert {'htam_agent.evaluation.checker.job', 'htam_agent.evaluation.sandbox.server',\n"
        "        'htam_agent.evaluation.tasks.sizes.search', 'htam_agent.evaluation.parent.gateway'} <= set(names), names\n"
        "for name in names: importlib.import_module(name)\n"
        "bad = sorted({m.split('.')[0] for m in sys.modules} & {'pydantic', 'langchain', 'langchain_core', "
        "'langgraph', 'chromadb', 'typer', 'rich', 'sentence_transformers', 'tenacity', 'openai'})\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_import_htam_agent_is_cheap():
    code = "import sys, htam_agent; print(len([m for m in sys.modules if m.startswith(('torch', 'chromadb', 'langgraph'))]))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "0"


def test_cli_eval_bad_input_exits_2_with_message(tmp_path):
    bad = tmp_path / "task.py"
    bad.write_text("def f(:\n")
    cand = tmp_path / "cand.py"
    cand.write_text("x = 1\n")
    out = subprocess.run([sys.executable, "-m", "htam_agent", "eval", str(bad), str(cand)], capture_output=True,
                         text=True)
    assert out.returncode == 2
    assert "syntax error" in out.stderr
    out = subprocess.run([sys.executable, "-m", "htam_agent", "eval", str(SUITE_DIR / "norm_softmax.py"), str(cand)],
                         capture_output=True, text=True)
    assert out.returncode == 2 and "cannot tell the backend" in out.stderr


@pytest.mark.slow
def test_cli_eval_honest_cpp_candidate_exit_0(tmp_path, build_root):
    env_dir = tmp_path / "cache"
    out = subprocess.run(
        [sys.executable, "-m", "htam_agent", "eval", str(SUITE_DIR / "norm_rmsnorm.py"),
         str(CANDIDATES_DIR / "norm_rmsnorm" / "cpp_omp.py"), "--backend", "cpp", "--baselines", "eager", "--json"],
        capture_output=True, text=True, env={**__import__("os").environ, "HTAM_CACHE_DIR": str(env_dir), "HTAM_BUILD_DIR": build_root},
    )
    assert out.returncode == 0, out.stderr[-2000:]
    verdict = json.loads(out.stdout)
    assert verdict["status"] == "accepted" and verdict["speedup_vs_eager"] > 0


def test_htam_eval_and_the_bare_cli_share_one_option_definition(tmp_path, monkeypatch):
    """`htam eval` (typer) and `python -m htam_agent.evaluation` (argparse) are both built from
    evaluation/options.py: the same flags, defaults, help and choices, and the same argv gives the same
    EvalOptions and verdict store."""
    import argparse
    from enum import Enum

    import typer.main
    from typer.testing import CliRunner

    import htam_agent.evaluation.parent.evaluator as evaluator_mod
    import htam_agent.evaluation.parent.gateway as gateway_mod
    from htam_agent.cli import app
    from htam_agent.evaluation.parent.options import EVAL_OPTIONS, add_arguments, eval_options, verdict_store

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    defaults = parser.parse_args([])
    params = {p.name: p for p in typer.main.get_command(app).commands["eval"].params}
    for o in EVAL_OPTIONS:
        p = params[o.dest]
        default = p.default.value if isinstance(p.default, Enum) else p.default
        assert (p.opts, p.help, default, getattr(defaults, o.dest)) == ([o.flag], o.help, o.default, o.default), o

    seen = {}

    class FakeEvaluator:
        def __init__(self, options, store):
            seen["options"], seen["store"] = options, store

    class FakeGateway:
        def __init__(self, evaluator, mode):
            assert mode == "local"

        def benchmark(self, cand):
            return {"status": "accepted", "accepted": True}

    monkeypatch.setattr(evaluator_mod, "Evaluator", FakeEvaluator)
    monkeypatch.setattr(gateway_mod, "EvaluationGateway", FakeGateway)
    task, cand = SUITE_DIR / "norm_rmsnorm.py", CANDIDATES_DIR / "norm_rmsnorm" / "cpp_omp.py"
    for o in EVAL_OPTIONS:  # both refuse a value outside the choices, before evaluating anything
        if o.choices:
            assert CliRunner().invoke(app, ["eval", str(task), str(cand), o.flag, "nope"]).exit_code == 2
            with pytest.raises(SystemExit):
                parser.parse_args([o.flag, "nope"])
    for argv in (["--backend", "cpp", "--size", "small", "--trials", "2", "--tier", "bare", "--no-alt",
                  "--baselines", "eager", "--threads", "3", "--compile-timeout", "5", "--run-timeout", "7",
                  "--store", str(tmp_path / "store"), "--pairing", "off"],
                 ["--no-timing", "--no-store", "--baselines", ""],
                 []):
        result = CliRunner().invoke(app, ["eval", str(task), str(cand), "--json", *argv])
        assert result.exit_code == 0, result.output
        args = parser.parse_args(argv)
        assert seen["options"] == eval_options(args, "cpp")  # the backend detected from the source: cpp
        assert seen["options"].paired_eager is (False if "--pairing" in argv else None)
        store = verdict_store(args)
        assert (seen["store"] is None) == (store is None)
        if store is not None:
            assert seen["store"].root == store.root
