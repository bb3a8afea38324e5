"""Every way a candidate can fail is a verdict with a reason, and the caller goes on.

Real worker processes, real C++ compilation (cpp backend). Every fault candidate loads the extension of the
bundled naive LeakyReLU candidate exactly as that candidate builds it (name, source, flags) and chooses its
fault in Python: the content-addressed build cache compiles it once per session, and the default run builds
it anyway (test_baseline_record, test_paired_timing, test_gpu_fork, the honest candidates). This file's own
extension, with -O2, cost the run a build and a second precompiled torch header (made once per flag
signature) for nothing these tests check.
"""

from __future__ import annotations

import subprocess
import time

import pytest

from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.slow

NAIVE = CANDIDATES_DIR / "elementwise_leaky_relu" / "cpp_naive.py"
EXT = NAIVE.read_text().split("\nclass ModelNew")[0] + '''
class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        FAULT
        return _ext.leaky_relu_forward(x.contiguous(), float(self.negative_slope))
'''
assert "_ext = load_inline(" in EXT and "return out;\n}" in EXT, f"{NAIVE} no longer builds `_ext` as this file expects"


def candidate(fault: str, task) -> Candidate:
    return Candidate(task_path=str(task), source=EXT.replace("FAULT", fault))


@pytest.fixture(scope="module")
def evaluator(build_root: str) -> Evaluator:
    opts = EvalOptions(backend="cpp", timing=False, baselines=(), build_root=build_root, run_timeout_s=20,
                       compile_timeout_s=300)
    return Evaluator(opts, store=None)


def test_honest_candidate_is_accepted(evaluator, relu_task):
    v = evaluator.evaluate(candidate("pass", relu_task))
    assert v["status"] == "accepted", v["reason"]
    assert v["correct"] is True and v["accepted"] is True
    assert len([t for t in v["trials"] if t["passed"]]) >= 6  # 5 trials + the other-shape checks


def test_wrong_result_is_incorrect_with_location(evaluator, relu_task):
    v = evaluator.evaluate(candidate("x = x * 1.001", relu_task))
    assert v["status"] == "incorrect"
    assert v["failed_check"] == "values"
    assert "worst at" in v["reason"] and "expected" in v["reason"]


def test_segfault_is_a_crash_verdict(evaluator, relu_task):
    v = evaluator.evaluate(candidate("__import__('ctypes').string_at(0)", relu_task))  # native code reads address 0
    assert v["status"] == "crashed"
    assert "SIGSEGV" in v["reason"] and "first_call" in v["reason"]


def test_hang_is_killed_as_timeout(build_root, relu_task):
    opts = EvalOptions(backend="cpp", timing=False, baselines=(), build_root=build_root, run_timeout_s=3)
    t0 = time.time()
    v = Evaluator(opts).evaluate(candidate("while True: pass", relu_task))
    assert v["status"] == "timeout"
    assert "first_call" in v["reason"]
    assert time.time() - t0 < 120


def test_sys_exit_in_forward(evaluator, relu_task):
    v = evaluator.evaluate(candidate("import sys; sys.exit(3)", relu_task))
    assert v["status"] == "crashed"
    assert "exit(3)" in v["reason"]


def test_os_exit_leaves_no_verdict_but_caller_gets_one(evaluator, relu_task):
    v = evaluator.evaluate(candidate("import os; os._exit(0)", relu_task))
    assert v["status"] == "crashed"
    assert "exited with status 0" in v["reason"]


def test_out_of_memory(evaluator, relu_task):
    v = evaluator.evaluate(candidate("torch.empty(1 << 60, dtype=torch.uint8)", relu_task))
    assert v["status"] == "out_of_memory", v["reason"]


def test_python_exception_names_the_candidate_line(evaluator, relu_task):
    v = evaluator.evaluate(candidate("raise ValueError('boom')", relu_task))
    assert v["status"] == "runtime_error"
    assert "boom" in v["reason"] and "candidate.py line" in v["reason"]


def test_secrets_do_not_reach_the_worker(evaluator, relu_task, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-candidates")
    monkeypatch.setenv("LANGSMITH_API_KEY", "ls-not-for-candidates")
    leak = "if any('KEY' in k for k in __import__('os').environ): x = x + 1"
    v = evaluator.evaluate(candidate(leak, relu_task))
    assert v["status"] == "accepted", v["reason"]


def test_every_evaluation_process_runs_with_fixed_malloc_thresholds(evaluator, relu_task, monkeypatch):
    """glibc's moving thresholds made eager timings bimodal (1.5 vs 4-5 ms on norm_rmsnorm): the sandbox runs
    with fixed ones, and a user's own setting wins."""
    from htam_agent.evaluation.parent.pool import MALLOC_MMAP_THRESHOLD, scrubbed_env

    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    want = str(MALLOC_MMAP_THRESHOLD)
    probe = f"if __import__('os').environ.get('MALLOC_MMAP_THRESHOLD_') != '{want}': x = x + 1"
    v = evaluator.evaluate(candidate(probe, relu_task))
    assert v["status"] == "accepted", v["reason"]
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")
    assert scrubbed_env()["MALLOC_MMAP_THRESHOLD_"] == "65536"
    assert scrubbed_env()["MALLOC_TRIM_THRESHOLD_"] == str(1 << 30)


def test_compile_error_carries_compiler_message(evaluator, relu_task):
    src = EXT.replace("FAULT", "pass").replace("return out;\n}", "undefined_symbol_xyz();\n    return out;\n}")
    v = evaluator.evaluate(Candidate(task_path=str(relu_task), source=src))
    assert v["status"] == "compile_error"
    assert v["compiled"] is False
    assert "undefined_symbol_xyz" in v["compiler_message"]
    assert "undefined_symbol_xyz" in v["reason"]


def test_compile_that_never_ends_is_killed(build_root, relu_task):
    endless = r'''
import torch.nn as nn
from torch.utils.cpp_extension import load_inline
SRC = """
#include <torch/extension.h>
constexpr long spin() { long s = 0; for (long i = 0; i < (1L << 62); ++i) s += i & 1; return s; }
static_assert(spin() >= 0, "never reached");
torch::Tensor f(torch::Tensor x) { return x; }
"""
ext = load_inline(name="htam_endless", cpp_sources=SRC, functions=["f"],
                  extra_cflags=["-fconstexpr-loop-limit=2147483647", "-fconstexpr-ops-limit=9223372036854775807"])
class ModelNew(nn.Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
    def forward(self, x):
        return ext.f(x)
'''
    opts = EvalOptions(backend="cpp", timing=False, baselines=(), build_root=build_root, compile_timeout_s=15)
    t0 = time.time()
    v = Evaluator(opts).evaluate(Candidate(task_path=str(relu_task), source=endless))
    assert v["status"] == "timeout"
    assert "compiling" in v["reason"]
    assert time.time() - t0 < 90
    time.sleep(1)
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert "htam_endless" not in ps, "the compiler was left running after the timeout"


def test_invalid_candidate_without_kernel(evaluator, relu_task):
    src = "import torch.nn as nn\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return x.clamp_min(0)\n"
    v = evaluator.evaluate(Candidate(task_path=str(relu_task), source=src))
    assert v["status"] == "invalid_candidate"
    assert "load_inline" in v["reason"]


def test_timing_and_eager_baseline_are_reported(build_root, relu_task, tmp_path):
    from htam_agent.evaluation.parent.evaluator import storable
    from htam_agent.evaluation.parent.store import VerdictStore

    store = VerdictStore(tmp_path / "verdicts")
    opts = EvalOptions(backend="cpp", baselines=("eager",), build_root=build_root,
                       timing_plan={"target_s": 0.2, "min_reps": 5, "max_reps": 30})
    ev = Evaluator(opts, store=store)
    v = ev.evaluate(candidate("pass", relu_task))
    assert v["status"] == "accepted", v["reason"]
    cand, eager = v["timing"]["candidate"], v["timing"]["eager"]
    assert cand["reps"] >= 5 and cand["median_ms"] > 0 and eager["median_ms"] > 0
    # the verdict keeps 4 decimals (VerdictBuilder.attach_baseline): half a unit of the last one is the tolerance that a
    # slow candidate's small ratio needs (0.0324 for 0.032355, seen in CI), 1e-3 relative the one a large one does
    assert v["speedup_vs_eager"] == pytest.approx(eager["median_ms"] / cand["median_ms"], rel=1e-3, abs=5e-5)
    # A steady timing is replayed from the store; one a busy machine made unreliable is measured again.
    again = ev.evaluate(candidate("pass", relu_task))
    assert again["key"] == v["key"]
    assert bool(again.get("cached")) is storable(v)
    # stored if either measurement was steady (a re-measured one that was steady is stored under the same key)
    assert (v["key"] in store) is (storable(v) or storable(again))


def test_verdict_without_timing_is_replayed_from_the_store(build_root, relu_task, tmp_path):
    from htam_agent.evaluation.parent.store import VerdictStore

    store = VerdictStore(tmp_path / "verdicts")
    opts = EvalOptions(backend="cpp", timing=False, baselines=(), build_root=build_root, run_timeout_s=20)
    ev = Evaluator(opts, store=store)
    wrong = candidate("x = x * 2", relu_task)
    v = ev.evaluate(wrong)
    assert v["status"] == "incorrect" and v["key"] in store
    t0 = time.time()
    again = ev.evaluate(wrong)
    assert again.get("cached") is True and again["key"] == v["key"] and again["status"] == "incorrect"
    assert time.time() - t0 < 2, "a stored verdict must not start a new checker"


def test_only_steady_verdicts_are_stored():
    from htam_agent.evaluation.parent.evaluator import storable

    flag = {"name": "timing_unreliable", "reason": "spread 40%", "rejects": False}
    assert storable({"status": "accepted", "flags": []})
    assert storable({"status": "incorrect", "flags": []})
    assert not storable({"status": "accepted", "flags": [flag]})
    assert not storable({"status": "error", "flags": []})
