"""Large seeded CPU draws on every core (checker/draws.py): the same numbers for the same seed, others for
another, the task's distribution kept, and small draws left to torch number for number."""

from __future__ import annotations

import torch

from htam_agent.evaluation.checker import draws
from htam_agent.evaluation.checker import inputs as inp


class _Task:
    path = "<task>"

    def __init__(self, *shape: int, normal: bool = False) -> None:
        self.shape, self.normal = shape, normal

    def get_inputs(self):
        return [torch.randn(*self.shape) if self.normal else torch.rand(self.shape), 3]


BIG = (1024, 8192)  # 32 MiB of float32 (PARALLEL_BYTES): drawn in 2 chunks of 16 MB


def test_a_large_task_draw_is_seeded_parallel_and_keeps_its_distribution(monkeypatch):
    calls = []
    real = draws.fill
    monkeypatch.setattr(draws, "fill", lambda x, dist, seed: calls.append(dist) or real(x, dist, seed))
    cpu = torch.device("cpu")
    for normal in (False, True):
        a, n = inp.make_inputs(_Task(*BIG, normal=normal), cpu, 7, "task")
        b, _ = inp.make_inputs(_Task(*BIG, normal=normal), cpu, 7, "task")
        c, _ = inp.make_inputs(_Task(*BIG, normal=normal), cpu, 8, "task")
        assert n == 3 and a.shape == BIG and a.dtype == torch.float32 and not a.requires_grad
        assert torch.equal(a, b) and not torch.equal(a, c)
        # every chunk drawn: no chunk left empty or repeating its neighbour
        chunks = a.view(-1).split(draws.CHUNK_ELEMENTS)
        assert len(chunks) == 2 and len({float(ch[:8].sum()) for ch in chunks}) == 2
        if normal:
            assert abs(float(a.mean())) < 0.01 and abs(float(a.std()) - 1) < 0.01
        else:
            assert float(a.min()) >= 0 and float(a.max()) < 1 and abs(float(a.mean()) - 0.5) < 0.01
    assert calls == ["uniform", "uniform", "uniform", "normal", "normal", "normal"]


def test_redrawn_trials_of_a_large_input_are_parallel_and_as_before_in_law():
    like = torch.empty(BIG, device="meta")
    for dist, lo, hi in (("normal", -8, 8), ("signed_uniform", -1, 1), ("ties", -2, 2)):
        torch.manual_seed(5)
        x = inp._redraw(like, torch.device("cpu"), dist)
        torch.manual_seed(5)
        assert torch.equal(x, inp._redraw(like, torch.device("cpu"), dist))
        assert lo <= float(x.min()) and float(x.max()) <= hi
    assert set(torch.unique(x).tolist()) == {v / 2 for v in range(-4, 5)}  # ties: multiples of 0.5


def test_small_draws_are_torchs_own_numbers():
    torch.manual_seed(11)
    want = torch.rand(64, 64)
    got, _ = inp.make_inputs(_Task(64, 64), torch.device("cpu"), 11, "task")
    assert torch.equal(got, want)
    torch.manual_seed(3)
    want = torch.empty(64, 64).normal_()
    torch.manual_seed(3)
    assert torch.equal(inp._redraw(torch.empty(64, 64, device="meta"), torch.device("cpu"), "normal"), want)
