"""GPU faults (cuda backend, NVRTC kernels so nothing waits on a 30 s build): each is a verdict.

Runs on the device host: `python -m pytest -m gpu tests/evaluation/test_gpu_faults.py`, or, where pytest
is missing, `python tests/evaluation/test_gpu_faults.py`.
"""

from __future__ import annotations

import sys

import pytest

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

pytestmark = pytest.mark.gpu
TASK = str(SUITE_DIR / "elementwise_leaky_relu.py")

NVRTC = r'''
import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void leaky(const float* x, float* y, int n, int mode, double slope) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (mode == 1 && i == 0) { y[-(1LL << 40)] = 1.0f; }          // illegal address
  if (mode == 2) { while (true) { __nanosleep(1000); } }           // never finishes
  if (i < n) { float v = x[i]; y[i] = v > 0.f ? v : (float)slope * v; }
}
"""
_k = None


class ModelNew(nn.Module):
    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        global _k
        if _k is None:
            _k = torch.cuda._compile_kernel(SRC, "leaky")
        PRE
        y = torch.empty_like(x)
        n = x.numel()
        _k(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[x, y, n, MODE, float(self.negative_slope)])
        return y
'''


def cand(mode: int, pre: str = "pass") -> Candidate:
    return Candidate(task_path=TASK, source=NVRTC.replace("MODE", str(mode)).replace("PRE", pre))


def ev(run_timeout: float = 60) -> Evaluator:
    return Evaluator(EvalOptions(backend="cuda", baselines=(), timing=False, run_timeout_s=run_timeout))


def test_honest_nvrtc_accepted():
    v = ev().evaluate(cand(0))
    assert v["status"] == "accepted", v["reason"]


def test_illegal_memory_access_is_a_verdict():
    v = ev().evaluate(cand(1))
    assert v["status"] in ("runtime_error", "crashed"), v["reason"]
    assert "illegal" in (v["reason"] + v.get("error", "")).lower()


def test_kernel_that_never_finishes_is_killed():
    v = ev(run_timeout=15).evaluate(cand(2))
    assert v["status"] == "timeout", v["reason"]


def test_gpu_out_of_memory():
    v = ev().evaluate(cand(0, pre="torch.empty(1 << 40, dtype=torch.float32, device=x.device)"))
    assert v["status"] == "out_of_memory", v["reason"]


def test_timed_at_default_size_holds_one_output_at_a_time():
    """Every timed request (calibration's no-op included) leaves a device copy of its output in the sandbox until
    the checker releases it: calibration used to keep all 25, so an honest kernel at this task's default size
    (4 GiB in, 4 GiB out) was a harness out_of_memory on an 80 GB H100 (2026-12-06). Timed, at the default size."""
    v = Evaluator(EvalOptions(backend="cuda", baselines=(), size="default", run_timeout_s=300)).evaluate(cand(0))
    assert v["status"] == "accepted", v["reason"]
    assert v.get("size") == "default", v.get("size")


def test_evaluator_goes_on_after_faults():
    """After the faults above, a fresh worker on the same GPU still gives a clean verdict."""
    v = ev().evaluate(cand(0, pre="x = x + 0"))
    assert v["status"] == "accepted", v["reason"]


if __name__ == "__main__":
    failed = 0
    for name, fn in list(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print(f"PASS {name}", flush=True)
            except AssertionError as exc:
                failed += 1
                print(f"FAIL {name}: {exc}", flush=True)
    sys.exit(1 if failed else 0)
