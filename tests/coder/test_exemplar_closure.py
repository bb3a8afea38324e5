"""The exemplar coder never writes a candidate outside its enumerated space, whatever the memory asks.

That is what lets a GPU host evaluate the whole space once and every search replay it: a candidate missing
from the enumeration would have no verdict.
"""

from __future__ import annotations

import json

import pytest
from exemplar_helpers import knob_sample, task_source

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.coder.base import CodeRequest, StrategyBrief, UnsupportedTask
from htam_agent.coder.exemplar import ExemplarCoder, enumerate_candidates
from htam_agent.coder.exemplar.coder import plan
from htam_agent.coder.exemplar.families import family_module

DIRECTIONS = ["memory_access", "data_reuse", "parallel_mapping", "instruction_throughput", "fusion_restructuring",
              "boundary_correctness", "launch_overhead", "occupancy_tuning"]


def _covered(backend: str) -> dict[str, list]:
    """Each suite task the backend covers, with its enumerated space (enumerated once: it traces the task)."""
    out = {}
    for p in sorted(SUITE_DIR.glob("*.py")):
        try:
            out[p.stem] = enumerate_candidates(p.read_text(), backend, p.stem)
        except UnsupportedTask:
            continue
    return out


def _moves_stay_enumerated(backend: str, sampled: bool) -> None:
    """Every move (direction x strategy) from the variants of exemplar_helpers.knob_sample (each task's first and
    every knob value of its family) by default, from every other variant in the `exhaustive` lane."""
    coder = ExemplarCoder()
    starts = 0
    for stem, cands in _covered(backend).items():
        src = task_source(stem)
        space = {code for _, _, code in cands}
        pattern = plan(CodeRequest(task_name=stem, task_source=src, backend=backend)).pattern
        sample = knob_sample([(stem, pattern.family, vid, knobs) for vid, knobs, _ in cands])
        strategy_ids = sorted(family_module(pattern.family).moves(backend)) + ["bc_tail_masking"]
        picked = {code for vid, _, code in cands if (stem, vid) in sample}  # variants may share their code
        for best in sorted(picked if sampled else space - picked):
            starts += 1
            for direction in DIRECTIONS:
                for sid in [None, *strategy_ids]:
                    req = CodeRequest(task_name=stem, task_source=src, backend=backend, direction=direction,
                                      strategies=(StrategyBrief(id=sid, title=sid),) if sid else (),
                                      best_code=best)
                    code = coder.propose(req).code
                    assert code in space, (stem, backend, direction, sid, json.dumps(plan(req).knobs))
    assert starts, f"no {backend} variant to start from in this lane"


@pytest.mark.parametrize("backend", [pytest.param("cuda", marks=pytest.mark.slow), "triton", "cpp"])
def test_every_move_from_a_sample_of_variants_stays_enumerated(backend: str) -> None:
    _moves_stay_enumerated(backend, sampled=True)  # of the distinct codes: cuda 2/3, cpp 1/3, triton 3/4


@pytest.mark.slow
@pytest.mark.exhaustive
@pytest.mark.parametrize("backend", ["cuda", "triton", "cpp"])
def test_every_move_from_every_other_variant_stays_enumerated(backend: str) -> None:
    _moves_stay_enumerated(backend, sampled=False)
