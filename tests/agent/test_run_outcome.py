"""Headlines that say what happened: a correct kernel is not a faster one.

Each case builds a finished run the way the graph's finalize node does (`build_result` over a state whose
candidates carry verdicts of the evaluator's shape, written to the run's artifact folder as the evaluate node
writes them), then checks the three places a user reads the outcome: the headline (CLI and notebook), report.md,
and the `optimize_kernel` tool's JSON answer, and the CLI's printed headline and exit status.

The verdict numbers are H200 figures: KernelBench `26_GELU_` (eager at the HBM roofline, the agent's best 0.93x),
the suite's `elementwise_swish` (1.39x over eager, 0.61x against torch.compile at 94% of the roofline), and
`norm_softmax` (eager at half the roofline).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from htam_agent.agent.tool import compact, make_optimize_tool
from htam_agent.context import RunContext
from htam_agent.nodes.finalize import build_result
from htam_agent.run.artifacts import RunArtifacts
from htam_agent.run.report import write_report
from htam_agent.run.result import RunResult, verdict_facts

from .scripted_coder import softmax_task

H200 = {"type": "cuda", "name": "NVIDIA H200", "capability": "9.0", "memory_gb": 139.8, "l2_mb": 60.0,
        "sms": 132, "torch": "2.11.0+cu130", "cuda": "13.0"}


def _timing(median_ms: float, reps: int = 40) -> dict[str, Any]:
    return {"median_ms": median_ms, "mean_ms": median_ms * 1.004, "min_ms": median_ms * 0.99,
            "max_ms": median_ms * 1.05, "iqr_ms": median_ms * 0.01, "spread_pct": 1.0,
            "host_median_ms": median_ms * 1.01, "reps": reps, "warmup": 5}


def verdict(task: str, *, cand_ms: float | None, eager_ms: float | None = None, compile_ms: float | None = None,
            roofline: dict[str, Any] | None = None, status: str = "accepted",
            reason: str = "") -> dict[str, Any]:
    """A verdict of the evaluator's shape (the keys `htam_agent.evaluation.verdict.new_verdict` and the worker
    fill), with speedups and the roofline fraction computed as the runner and worker compute them."""
    accepted = status == "accepted"
    timing: dict[str, Any] = {}
    if cand_ms is not None:
        timing["candidate"] = _timing(cand_ms)
    if eager_ms is not None:
        timing["eager"] = _timing(eager_ms, reps=10)
    if compile_ms is not None:
        timing["compile"] = _timing(compile_ms, reps=150)
    v: dict[str, Any] = {
        "schema": 1, "evaluator_version": "0.2.0", "task": task, "backend": "cuda", "size": "default",
        "device": H200, "device_name": H200["name"], "status": status, "accepted": accepted, "compiled": True,
        "compile_seconds": 0.02, "compiler_message": "", "correct": accepted,
        "failed_check": None if accepted else "trial_outputs", "trials": [], "timing": timing,
        "speedup_vs_eager": round(eager_ms / cand_ms, 4) if accepted and cand_ms and eager_ms else None,
        "speedup_vs_compile": round(compile_ms / cand_ms, 4) if accepted and cand_ms and compile_ms else None,
        "flags": [], "reason": reason, "phase": "verify_other_shape", "wall_seconds": 3.1, "tier": "default",
        "kernel_launches": {"nvrtc:ew_fused": 8},
    }
    if roofline is not None and cand_ms:
        v["roofline"] = {**roofline, "fraction": round(roofline["floor_ms"] / cand_ms, 4)}
    if accepted and not reason:
        v["reason"] = f"accepted: correct on all trials, {v['speedup_vs_eager']}x vs eager"
    return v


GELU_ROOF = {"bytes": 12884901888, "flops": 0, "floor_ms": 3.164502, "bound": "memory", "bandwidth_GBps": 4071.7,
             "fp32_tflops": 50.67}
SWISH_ROOF = {"bytes": 1073741824, "flops": 0, "floor_ms": 0.258102, "bound": "memory", "bandwidth_GBps": 4160.2,
              "fp32_tflops": 50.67}
SOFTMAX_ROOF = {"bytes": 536870912, "flops": 0, "floor_ms": 0.12905, "bound": "memory", "bandwidth_GBps": 4160.2,
                "fp32_tflops": 50.67}

CASES: dict[str, list[dict[str, Any]]] = {
    # the step-0 kernel is slower; step 1's is the best (faster than both baselines)
    "faster_than_both": [
        verdict("fused_gemm_bias_gelu", cand_ms=3.9, eager_ms=4.0, compile_ms=3.95, roofline=GELU_ROOF),
        verdict("fused_gemm_bias_gelu", cand_ms=2.75862, eager_ms=4.0, compile_ms=3.31034, roofline=GELU_ROOF)],
    "faster_than_eager_only": [
        verdict("elementwise_swish", cand_ms=0.44944, eager_ms=0.62472, compile_ms=0.27416, roofline=SWISH_ROOF)],
    "slower_eager_at_roofline": [
        verdict("26_GELU_", cand_ms=3.4893, eager_ms=3.2451, compile_ms=3.2604, roofline=GELU_ROOF),
        verdict("26_GELU_", cand_ms=3.7000, eager_ms=3.2451, compile_ms=3.2604, roofline=GELU_ROOF)],
    "slower_no_roofline": [
        verdict("fused_gemm_relu_divide", cand_ms=1.275, eager_ms=1.02, compile_ms=None, roofline=None)],
    "no_correct_kernel": [
        verdict("norm_softmax", cand_ms=None, status="incorrect",
                reason="incorrect (trial_outputs) on trial 'task': max abs err 0.5"),
        verdict("norm_softmax", cand_ms=None, status="runtime_error", reason="runtime_error: illegal memory access")],
    "slower_eager_far_from_roofline": [
        verdict("norm_softmax", cand_ms=0.27786, eager_ms=0.25803, compile_ms=0.20072, roofline=SOFTMAX_ROOF)],
    "on_par_with_compile": [  # the suite's reduction_argmax on the H200: 1.25x over eager, 1.00x over compile
        verdict("reduction_argmax", cand_ms=0.13215, eager_ms=0.16519, compile_ms=0.13211,
                roofline={"bytes": 536879104, "flops": 0, "floor_ms": 0.131861, "bound": "memory",
                          "bandwidth_GBps": 4071.5, "fp32_tflops": 50.67})],
    "untimed": [  # baselines switched off (RunContext(baselines=())): correct, nothing to compare with
        verdict("norm_softmax", cand_ms=0.27786, roofline=SOFTMAX_ROOF)],
    "within_noise": [
        verdict("fused_gemm_relu_divide", cand_ms=2.0, eager_ms=2.02, compile_ms=2.5, roofline=GELU_ROOF)],
}


def finished_run(root: Path, name: str, *, write_verdicts: bool = True) -> tuple[RunResult, RunArtifacts, list]:
    """The run's state after its steps (one candidate per step), its verdicts in the artifact folder, and the
    result finalize builds from them."""
    verdicts = copy.deepcopy(CASES[name])
    art = RunArtifacts(root / "runs", f"run-{name}")
    cands, history, best = [], [], None
    for step, v in enumerate(verdicts):
        code = f"# candidate of step {step}\nclass ModelNew: ...\n"
        cands.append({"step": step, "variant": 0, "repair": 0, "code": code, "coder": "exemplar",
                      "uses_llm": False, "verdict": v})
        if write_verdicts:
            art.write_verdict(step, 0, 0, v)
        improved = v["accepted"] and (best is None or v["speedup_vs_eager"] > best["speedup_vs_eager"])
        if improved:
            best = {"step": step, "variant": 0, "code": code, "code_path": "", "verdict": v,
                    "speedup_vs_eager": v["speedup_vs_eager"], "speedup_vs_compile": v["speedup_vs_compile"],
                    "roofline_fraction": (v.get("roofline") or {}).get("fraction")}
        history.append({"step": step, "direction": "memory_access", "direction_reason": "", "strategies": [],
                        "status": v["status"], "accepted": v["accepted"], "failed": not v["accepted"],
                        "speedup_vs_eager": v["speedup_vs_eager"], "speedup_vs_compile": v["speedup_vs_compile"],
                        "roofline_fraction": (v.get("roofline") or {}).get("fraction"), "repairs": 0,
                        "candidates": 1, "reason": v["reason"], "improved": bool(improved)})
    state = {"run_id": art.run_id, "task_name": verdicts[0]["task"], "task_path": f"/tasks/{verdicts[0]['task']}.py",
             "candidates": cands, "best": best, "history": history, "stop_reason": "budget"}
    ctx = RunContext(backend="cuda", steps=len(verdicts), runs_dir=str(root / "runs"))
    result = build_result(state, ctx, art, 12.5)
    if best:
        art.write_best(best["code"])
    return result, art, history


def report_of(result: RunResult, art: RunArtifacts, history: list) -> str:
    write_report(art.root, result.as_dict(), history, ["memory_access"])
    return " ".join((art.root / "report.md").read_text().split())


def flat(text: str) -> str:
    return " ".join(text.split())


# ------------------------------------------------------------------------------------------------------
# the five cases the issue names
# ------------------------------------------------------------------------------------------------------
def test_faster_than_both(tmp_path: Path) -> None:
    result, art, history = finished_run(tmp_path, "faster_than_both")
    assert result.best_step == 1 and result.best_speedup_vs_eager == 1.45
    o = result.conclusion()
    assert o.kind == "faster" and o.beat_eager and o.advice == "use the kernel"
    assert result.headline() == ("fused_gemm_bias_gelu: faster than eager PyTorch: best 1.45x over eager, 1.20x "
                                 "over torch.compile; use the kernel (step 1, 2 evaluation(s), exemplar)")
    report = report_of(result, art, history)
    assert "- outcome: **faster than eager PyTorch: best 1.45x over eager, 1.20x over torch.compile**" in report
    assert "- advice: use the kernel" in report and "keep PyTorch" not in report
    answer = compact(result)
    assert answer["outcome"] == "faster" and answer["beat_eager"] is True and answer["advice"] == "use the kernel"


def test_faster_than_eager_but_not_torch_compile(tmp_path: Path) -> None:
    result, art, history = finished_run(tmp_path, "faster_than_eager_only")
    o = result.conclusion()
    assert o.kind == "faster_than_eager_only" and o.beat_eager
    assert o.compile_roofline_fraction == pytest.approx(0.258102 / 0.27416)
    head = result.headline()
    assert head.startswith("elementwise_swish: faster than eager PyTorch (1.39x) but not than torch.compile "
                           "(0.61x); use torch.compile")
    assert ("torch.compile already runs at 94% of the roofline (memory-bound, at 4160 GB/s memory bandwidth), so "
            "no kernel can be more than 1.06x faster") in head
    report = report_of(result, art, history)
    assert "- outcome: **faster than eager PyTorch (1.39x) but not than torch.compile (0.61x)**" in report
    assert "- advice: use torch.compile" in report and "- why: torch.compile already runs at 94%" in report
    assert "torch.compile 0.2742 ms (94% of the roofline)" in report
    answer = compact(result)
    assert answer["outcome"] == "faster_than_eager_only" and answer["beat_eager"] is True
    assert answer["advice"].startswith("use torch.compile") and "94% of the roofline" in answer["why"]


def test_slower_than_eager_with_eager_at_the_roofline(tmp_path: Path) -> None:
    """The KernelBench 26_GELU_ run: the agent rightly stopped; the headline must not sound like a win."""
    result, art, history = finished_run(tmp_path, "slower_eager_at_roofline")
    assert result.correct and result.best_speedup_vs_eager == 0.93
    o = result.conclusion()
    assert o.kind == "not_faster" and not o.beat_eager and o.advice == "keep PyTorch"
    assert o.eager_roofline_fraction == pytest.approx(3.164502 / 3.2451)
    head = result.headline()
    assert head == ("26_GELU_: no kernel beat eager PyTorch (best correct 0.93x, 0.93x over torch.compile); keep "
                    "PyTorch: eager PyTorch already runs at 98% of the roofline (memory-bound, at 4072 GB/s memory "
                    "bandwidth), so no kernel can be more than 1.03x faster (2 evaluation(s), exemplar)")
    assert "correct kernel was found" not in head and "faster than eager" not in head
    report = report_of(result, art, history)
    assert "a correct kernel was found" not in report
    assert "- outcome: **no kernel beat eager PyTorch (best correct 0.93x, 0.93x over torch.compile)**" in report
    assert "- advice: keep PyTorch" in report
    assert "- the best kernel: 0.93x over eager, 0.93x over torch.compile, 91% of the roofline" in report
    assert "- why: eager PyTorch already runs at 98% of the roofline (memory-bound, at 4072 GB/s" in report
    assert ("medians of the best kernel's verdict: kernel 3.489 ms; eager 3.245 ms (98% of the roofline); "
            "torch.compile 3.26 ms (97% of the roofline); roofline floor 3.165 ms, memory-bound (on NVIDIA H200)"
            ) in report
    answer = compact(result)
    assert answer["outcome"] == "not_faster" and answer["beat_eager"] is False
    assert answer["advice"] == "keep PyTorch" and answer["correct"] is True
    assert answer["why"].startswith("eager PyTorch already runs at 98% of the roofline (memory-bound")
    assert answer["eager_roofline_fraction"] == pytest.approx(0.9752, abs=1e-4)


def test_slower_than_eager_without_roofline_information(tmp_path: Path) -> None:
    result, art, history = finished_run(tmp_path, "slower_no_roofline")
    o = result.conclusion()
    assert o.kind == "not_faster" and o.why == "" and o.eager_roofline_fraction is None
    assert result.headline() == ("fused_gemm_relu_divide: no kernel beat eager PyTorch (best correct 0.80x); keep "
                                 "PyTorch (1 evaluation(s), exemplar)")
    report = report_of(result, art, history)
    assert "- outcome: **no kernel beat eager PyTorch (best correct 0.80x)**" in report
    assert "- why:" not in report and "% of the roofline" not in report
    assert "medians of the best kernel's verdict: kernel 1.275 ms; eager 1.02 ms (on NVIDIA H200)" in report
    assert "- the best kernel: 0.80x over eager, torch.compile not timed, roofline not measured" in report
    answer = compact(result)
    assert answer["outcome"] == "not_faster" and answer["why"] == "" and answer["advice"] == "keep PyTorch"


def test_no_correct_kernel(tmp_path: Path) -> None:
    result, art, history = finished_run(tmp_path, "no_correct_kernel")
    assert not result.correct and result.best_step is None
    o = result.conclusion()
    assert o.kind == "no_correct_kernel" and o.advice == "keep PyTorch" and not o.beat_eager
    assert result.headline() == "norm_softmax: no correct kernel in 2 evaluation(s) (budget); keep PyTorch"
    report = report_of(result, art, history)
    assert "- outcome: **no correct kernel in 2 evaluation(s) (budget)**" in report
    assert "- advice: keep PyTorch" in report and "- best correct kernel: `none`" in report
    answer = compact(result)
    assert answer["outcome"] == "no_correct_kernel" and answer["correct"] is False and answer["best_kernel"] == ""


# ------------------------------------------------------------------------------------------------------
# around the edges
# ------------------------------------------------------------------------------------------------------
def test_eager_far_from_the_roofline_says_more_may_be_possible(tmp_path: Path) -> None:
    result, _, _ = finished_run(tmp_path, "slower_eager_far_from_roofline")
    o = result.conclusion()
    assert o.kind == "not_faster"
    assert o.why.startswith("eager PyTorch runs at only 50% of the roofline (memory-bound")
    assert "a faster kernel may exist" in o.why and "no kernel can be" not in o.why


def test_on_par_with_torch_compile_is_not_called_a_loss(tmp_path: Path) -> None:
    result, _, _ = finished_run(tmp_path, "on_par_with_compile")
    o = result.conclusion()
    assert o.kind == "faster_than_eager_only" and o.beat_eager and o.advice == "use torch.compile or the kernel"
    assert o.summary == ("faster than eager PyTorch (1.25x), on par with torch.compile (1.00x, within timing "
                         "noise)")
    assert o.why.startswith("torch.compile already runs at 100% of the roofline (memory-bound")


def test_a_kernel_not_timed_against_eager_is_not_called_faster(tmp_path: Path) -> None:
    result, _, _ = finished_run(tmp_path, "untimed")
    o = result.conclusion()
    assert o.kind == "untimed" and not o.beat_eager and o.advice == "time the kernel before using it"
    assert result.headline() == ("norm_softmax: a correct kernel was found, but its speed was not measured "
                                 "against eager PyTorch; time the kernel before using it (step 0, 1 "
                                 "evaluation(s), exemplar)")


def test_a_speedup_within_timing_noise_is_not_a_win(tmp_path: Path) -> None:
    result, _, _ = finished_run(tmp_path, "within_noise")
    assert result.best_speedup_vs_eager == 1.01
    o = result.conclusion()
    assert o.kind == "not_faster" and o.advice == "keep PyTorch"
    assert o.summary.startswith("no kernel beat eager PyTorch by more than timing noise (best correct 1.01x")


def test_without_the_artifact_folder_the_fractions_come_from_the_result(tmp_path: Path) -> None:
    """A result that travelled as JSON (bench, Ray) without its run folder: eager's fraction of the roofline is
    the kernel's fraction over its speedup, the same number; the bound is unknown and not invented."""
    result, _, _ = finished_run(tmp_path, "slower_eager_at_roofline", write_verdicts=False)
    assert result.facts() == {}
    o = result.conclusion()
    assert o.eager_roofline_fraction == pytest.approx(0.9069 / 0.93, rel=1e-3)
    assert o.why == "eager PyTorch already runs at 98% of the roofline, so no kernel can be more than 1.03x faster"


def test_facts_carried_in_the_result_win_and_survive_json(tmp_path: Path) -> None:
    result, _, _ = finished_run(tmp_path, "slower_eager_at_roofline", write_verdicts=False)
    result.best_facts = verdict_facts(CASES["slower_eager_at_roofline"][0])
    again = RunResult.from_dict(json.loads(json.dumps(result.as_dict())))
    assert again.best_facts["bound"] == "memory" and again.best_facts["eager_ms"] == 3.2451
    assert "(memory-bound, at 4072 GB/s memory bandwidth)" in again.headline()


def test_an_older_result_json_without_best_facts_still_loads(tmp_path: Path) -> None:
    result, art, _ = finished_run(tmp_path, "slower_eager_at_roofline")
    data = result.as_dict()
    del data["best_facts"]
    old = RunResult.from_dict(data)
    assert old.conclusion().kind == "not_faster" and "memory-bound" in old.headline()  # read from the run folder


# ------------------------------------------------------------------------------------------------------
# what the tool and the command really answer
# ------------------------------------------------------------------------------------------------------
def test_the_tool_answer_says_keep_pytorch(agent_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    result, _, _ = finished_run(agent_env, "slower_eager_at_roofline")
    monkeypatch.setattr("htam_agent.agent.run_optimization", lambda *a, **k: result)
    tool = make_optimize_tool(RunContext.from_env(backend="cpp", steps=1))
    answer = json.loads(tool.invoke({"task": str(softmax_task())}))
    assert answer["headline"] == result.headline()
    assert answer["outcome"] == "not_faster" and answer["beat_eager"] is False and answer["advice"] == "keep PyTorch"
    assert "98% of the roofline" in answer["why"] and answer["correct"] is True
    assert "keep PyTorch" in tool.description and "beat_eager" in tool.description


@pytest.mark.parametrize("case, exit_code, says", [
    ("slower_eager_at_roofline", 0, "no kernel beat eager PyTorch (best correct 0.93x"),
    ("faster_than_eager_only", 0, "but not than torch.compile (0.61x); use torch.compile"),
    ("no_correct_kernel", 1, "no correct kernel in 2 evaluation(s) (budget); keep PyTorch"),
])
def test_the_command_prints_the_outcome_and_keeps_its_exit_status(agent_env: Path, monkeypatch: pytest.MonkeyPatch,
                                                                  case: str, exit_code: int, says: str) -> None:
    from htam_agent.cli import app

    result, _, _ = finished_run(agent_env, case)
    monkeypatch.setattr("htam_agent.agent.run_optimization", lambda *a, **k: result)
    res = CliRunner().invoke(app, ["optimize", str(softmax_task()), "--backend", "cpp", "--steps", "1"])
    assert res.exit_code == exit_code, res.output
    assert says in flat(res.output)
    assert "a correct kernel was found" not in res.output
