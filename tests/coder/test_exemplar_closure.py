"""The exemplar coder never writes a candidate outside its enumerated space, whatever the memory asks.

That is what lets a GPU host evaluate the whole space once and every search replay it: a candidate missing
from the enumeration would have no verdict.
"""

from __future__ import annotations

import json

import pytest
from exemplar_helpers import task_source

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.coder.base import CodeRequest, StrategyBrief, UnsupportedTask
from htam_agent.coder.exemplar import ExemplarCoder, enumerate_candidates
from htam_agent.coder.exemplar.coder import plan
from htam_agent.coder.exemplar.families import family_module

DIRECTIONS = ["memory_access", "data_reuse", "parallel_mapping", "instruction_throughput", "fusion_restructuring",
              "boundary_correctness", "launch_overhead", "occupancy_tuning"]


def _covered(backend: str) -> list[str]:
    out = []
    for p in sorted(SUITE_DIR.glob("*.py")):
        try:
            enumerate_candidates(p.read_text(), backend, p.stem)
        except UnsupportedTask:
            continue
        out.append(p.stem)
    return out


@pytest.mark.parametrize("backend", [pytest.param("cuda", marks=pytest.mark.slow), "triton", "cpp"])  # cuda: ~50 s
def test_every_move_from_every_variant_stays_enumerated(backend: str) -> None:
    coder = ExemplarCoder()
    for stem in _covered(backend):
        src = task_source(stem)
        space = {code for _, _, code in enumerate_candidates(src, backend, stem)}
        pattern = plan(CodeRequest(task_name=stem, task_source=src, backend=backend)).pattern
        strategy_ids = sorted(family_module(pattern.family).moves(backend)) + ["bc_tail_masking"]
        for best in sorted(space):
            for direction in DIRECTIONS:
                for sid in [None, *strategy_ids]:
                    req = CodeRequest(task_name=stem, task_source=src, backend=backend, direction=direction,
                                      strategies=(StrategyBrief(id=sid, title=sid),) if sid else (),
                                      best_code=best)
                    code = coder.propose(req).code
                    assert code in space, (stem, backend, direction, sid, json.dumps(plan(req).knobs))
