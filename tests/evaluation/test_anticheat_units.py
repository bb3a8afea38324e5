"""Fast, build-free tests of the behavioural anti-cheat pieces: changing timed inputs, snapshots at return,
threads that outlive their call, the identity sabotage, other init arguments, the ties/shifted trials.

The timing checks run for real: a checker-side `Run` drives a real sandbox process that imports each model
below as a (Python-only) candidate; only the C++ build is skipped."""

from __future__ import annotations

import pytest
import torch
from sandbox_harness import python_candidate_run

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.evaluation.checker import inputs as inp
from htam_agent.evaluation.checker import phases as checker
from htam_agent.evaluation.checker import timing
from htam_agent.evaluation.sandbox import probe as anticheat
from htam_agent.evaluation.tasks import load_task

PLAN = timing.TimingPlan(target_s=0.02, min_reps=6, max_reps=8, warmup_s=0.0, min_warmup=2)


@pytest.fixture(scope="module")
def softmax_task():
    return load_task(SUITE_DIR / "norm_softmax.py", size="alt")


PRELUDE = """
import threading
import torch


class Ref(torch.nn.Module):
    def forward(self, x):
        return torch.softmax(x, dim=-1)
"""


MODELS = PRELUDE + '''
class SampledCache(torch.nn.Module):
    """Caches by address, version and 16 sampled values; returns a fresh clone."""

    def __init__(self):
        super().__init__()
        self.cache = {}

    def forward(self, x):
        flat = x.reshape(-1)
        key = (x.data_ptr(), x._version, tuple(flat[:: max(1, flat.numel() // 16)][:16].tolist()))
        if key not in self.cache:
            self.cache[key] = torch.softmax(x, dim=-1)
        return self.cache[key].clone()


class Deferred(torch.nn.Module):
    """Returns at once; a thread fills the output and is joined at the next call."""

    def __init__(self):
        super().__init__()
        self.pending = []

    def forward(self, x):
        while self.pending:
            self.pending.pop().join()
        y = torch.full_like(x, float("nan"))

        def work():
            threading.Event().wait(0.01)
            y.copy_(torch.softmax(x, dim=-1))

        t = threading.Thread(target=work, daemon=True)
        t.start()
        self.pending.append(t)
        return y


class JoinedThreads(torch.nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)

        def work():
            y.copy_(torch.softmax(x, dim=-1))

        t = threading.Thread(target=work)
        t.start()
        t.join()
        return y


'''


def _flags(model: str, task, tmp_path) -> set[str]:
    with python_candidate_run(MODELS + f"\nModelNew = {model}\n", task, tmp_path) as run:
        _, problems, _ = checker.time_candidate(run, PLAN, recheck=True, calibration=[0.0])
    return {flag for flag, _ in problems}


def test_honest_models_raise_nothing(softmax_task, tmp_path):
    assert _flags("Ref", softmax_task, tmp_path) == set()
    assert _flags("JoinedThreads", softmax_task, tmp_path) == set()


def test_sampled_content_cache_is_a_timed_output_mismatch(softmax_task, tmp_path):
    assert "timed_output_mismatch" in _flags("SampledCache", softmax_task, tmp_path)


def test_deferred_thread_is_work_after_return(softmax_task, tmp_path):
    assert "work_after_return" in _flags("Deferred", softmax_task, tmp_path)


def test_perturb_keeps_address_version_and_domain():
    x = torch.rand(64, 64) + 1.0  # a positive domain
    ptr, version, before = x.data_ptr(), x._version, x.clone()
    inp.apply_perturbation([x], inp.perturbation([x], torch.Generator().manual_seed(0), k=4))
    assert x.data_ptr() == ptr and x._version == version
    changed = (x != before).sum().item()
    assert 1 <= changed <= 4
    assert set(x[x != before].tolist()) <= set(before.reshape(-1).tolist())


def test_other_init_scales_floats_only():
    assert inp.other_init([-1.5, 1.0, 2.5]) == pytest.approx([-1.5 * 1.37, 1.37, 2.5 * 1.37])
    assert inp.other_init([128, 0.0, True]) is None
    assert inp.other_init([64, (0.5, 3)]) == [64, (0.5 * 1.37, 3)]


def test_ties_and_shifted_inputs(softmax_task):
    ties = inp.make_inputs(softmax_task, torch.device("cpu"), 5, "ties")[0]
    assert torch.equal(ties * 2, (ties * 2).round()) and ties.unique().numel() <= 9
    task = inp.make_inputs(softmax_task, torch.device("cpu"), 6, "task")[0]
    shifted = inp.make_inputs(softmax_task, torch.device("cpu"), 6, "shifted")[0]
    assert torch.allclose(shifted - task, torch.full_like(task, 16 * float(task.std())), atol=1e-3)


def test_identity_sabotage_replaces_results_by_inputs():
    probe = anticheat.KernelProbe()
    copy = probe._wrap("ext.copy", lambda x: x.clone())
    double = probe._wrap("ext.double", lambda x: x * 2)

    def out_param(x, y):
        y.copy_(x * 3)

    write = probe._wrap("ext.write", out_param)
    x = torch.randn(8)
    probe.mode = "identity"
    assert torch.equal(copy(x), x)
    assert torch.equal(double(x), x)  # the identity: a kernel that computes no longer does
    y = torch.zeros(8)
    write(x, y)
    assert torch.equal(y, x)
    probe.mode = None
    assert probe.replaced == 3
    assert torch.equal(double(x), x * 2)


def test_identity_sabotage_sees_writes_into_a_buffer_that_already_held_the_result():
    """A kernel writing into memory that already holds exactly its result looks as if it wrote nothing (why the
    sandbox holds the normal call's outputs through the sabotaged call: their memory cannot come back to it);
    the same write into other memory is seen and replaced."""
    probe = anticheat.KernelProbe()

    def out_param(x, y):
        y.copy_(x * 3)

    write = probe._wrap("ext.write", out_param)
    x = torch.randn(8)
    y = torch.empty(8)
    write(x, y)  # the normal call
    probe.mode = "identity"
    write(x, y)  # same inputs, same buffer: content unchanged, the write goes unseen
    assert probe.replaced == 0 and torch.equal(y, x * 3)
    other = torch.full((8,), float("nan"))
    write(x, other)
    assert probe.replaced == 1 and torch.equal(other, x)  # seen and replaced by the copy of its input
