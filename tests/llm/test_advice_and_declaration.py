"""Issue 17, coder side: the prompt presents the memory's ranked directions as advice with evidence and asks for
one `APPLIED:` line; the reply's line is parsed leniently, and the proposal reports what the code applied (through
the real ChatOpenAI client against the scripted server)."""

from __future__ import annotations

import pytest
from llm_samples import CUDA_NVRTC, TASK, fenced

from htam_agent.coder.base import CodeRequest, DirectionAdvice, StrategyBrief
from htam_agent.coder.extract import parse_declaration
from htam_agent.coder.prompting import render_request
from htam_agent.memory.catalog import load_catalog

CAT = load_catalog()
DIRECTIONS = {d.id: d.name for d in CAT.directions}
STRATS = {s.id: s.title for s in CAT.strategies}
ADVICE = (
    DirectionAdvice("memory_access", "Memory access", "seed prior high for elementwise; in elementwise tasks on "
                    "cuda: 5 tries, 4 improved, 0 rejected, typical gain x1.42", 2.1),
    DirectionAdvice("launch_overhead", "Launch overhead", "no record yet in elementwise tasks on cuda", 1.3),
    DirectionAdvice("parallel_mapping", "Parallel mapping", "in this task: step 0 rejected", 1.1),
)
BRIEFS = (StrategyBrief("ma_vectorized_loads", "Vectorized 16-byte loads", summary="float4 where aligned."),)


def request(**kw) -> CodeRequest:
    base = dict(task_name="elementwise_leaky_relu", task_source=TASK, backend="cuda", op_class="elementwise",
                direction="memory_access", strategies=BRIEFS, step=1, advice=ADVICE)
    base.update(kw)
    return CodeRequest(**base)


@pytest.mark.parametrize("backend", ["cuda", "triton", "cpp"])
def test_prompt_gives_ranked_directions_with_evidence_as_advice(backend):
    user = render_request(request(backend=backend)).user
    assert "Suggested for this candidate: **Memory access** (`memory_access`)" in user
    pos = [user.index(f"**{a.name}** (`{a.id}`)") for a in ADVICE[1:]]
    assert pos == sorted(pos)  # ranked order
    assert "4 improved, 0 rejected, typical gain x1.42" in user and "in this task: step 0 rejected" in user
    assert "advice, not an order" in user
    assert "APPLIED: direction=<direction id>; strategies=" in user
    assert "`ma_vectorized_loads`" in user and "`occupancy_tuning`" in user  # ids offered, all directions listed
    assert user.rstrip().endswith("if you used them).")
    second = render_request(request(backend=backend, variant=1, direction="launch_overhead")).user
    assert "Suggested for this candidate: **Launch overhead** (`launch_overhead`)" in second
    assert "other candidates of this step explore other directions" in second
    assert "take a different approach from the obvious one" not in second  # the portfolio replaces that text


def test_prompt_without_memory_asks_for_no_declaration():
    user = render_request(request(direction=None, advice=(), strategies=())).user
    assert "APPLIED:" not in user and "use your judgement" in user


@pytest.mark.parametrize("line, direction, strategies", [
    ("APPLIED: direction=memory_access; strategies=ma_vectorized_loads, bc_tail_masking",
     "memory_access", ("ma_vectorized_loads", "bc_tail_masking")),
    ("**Applied**: Memory access (ma_vectorized_loads)", "memory_access", ("ma_vectorized_loads",)),
    ('# APPLIED: {"direction": "parallel_mapping", "strategies": ["pm_warp_per_row"]}', "parallel_mapping",
     ("pm_warp_per_row",)),
    ("Applied: direction: Parallel mapping | strategies: none", "parallel_mapping", ()),
    ("applied: direction = `instruction_throughput`, strategies = `it_fast_math_intrinsics`",
     "instruction_throughput", ("it_fast_math_intrinsics",)),
    ("APPLIED: memory_access; ma_vectorized_loads + ma_streaming_stores", "memory_access",
     ("ma_vectorized_loads", "ma_streaming_stores")),
    ("APPLIED: direction=fusion; strategies=Vectorized 16-byte loads", "fusion_restructuring", ()),
    ("APPLIED: direction=warp magic; strategies=pm_warp_per_row", None, ("pm_warp_per_row",)),
])
def test_declaration_is_parsed_leniently(line, direction, strategies):
    reply = f"Plan: fuse the passes.\n\n{fenced(CUDA_NVRTC)}\n\n{line}\n"
    strategies_known = STRATS | {"ma_vectorized_loads": "Vectorized 16-byte loads"}
    got = parse_declaration(reply, DIRECTIONS, strategies_known)
    assert got is not None and got.direction == direction
    if "16-byte" in line:  # a title instead of an id
        assert got.strategies == ("ma_vectorized_loads",)
    else:
        assert got.strategies == strategies


def test_no_declaration_and_the_last_one_wins():
    assert parse_declaration("no line here\n" + fenced(CUDA_NVRTC), DIRECTIONS, STRATS) is None
    two = "APPLIED: direction=data_reuse\n<think>APPLIED: direction=launch_overhead</think>\nAPPLIED: memory access"
    assert parse_declaration(two, DIRECTIONS, STRATS).direction == "memory_access"
    assert parse_declaration("<think>APPLIED: direction=data_reuse</think>", DIRECTIONS, STRATS) is None


def test_llm_coder_reports_what_the_reply_declares(scripted_coder, openai_server):
    reply = ("The loads are not coalesced across rows; a grid-stride loop with float4 loads fixes that.\n\n"
             f"{fenced(CUDA_NVRTC)}\n\nAPPLIED: direction=parallel_mapping; strategies=pm_grid_stride_loop, "
             "Vectorized 16-byte loads")
    coder = scripted_coder(reply)
    proposal = coder.propose(request())
    assert proposal.code is not None and proposal.declared
    assert proposal.direction == "parallel_mapping"  # not the memory_access it was asked for
    assert proposal.strategy_ids == ["pm_grid_stride_loop", "ma_vectorized_loads"]
    assert proposal.plan.startswith("The loads are not coalesced") and "APPLIED" not in proposal.plan
    (sent,) = openai_server.chat_requests
    assert "Suggested for this candidate: **Memory access**" in sent.messages[1]["content"]
    assert "APPLIED:" in sent.messages[0]["content"]  # the system prompt explains the line


def test_llm_coder_without_a_declaration_keeps_what_was_asked(scripted_coder):
    coder = scripted_coder("Straightforward.\n\n" + fenced(CUDA_NVRTC))
    proposal = coder.propose(request())
    assert not proposal.declared and proposal.direction is None
    assert proposal.strategy_ids == ["ma_vectorized_loads"]


def test_declaration_in_an_earlier_reply_counts_when_the_code_came_after_an_ask(scripted_coder):
    coder = scripted_coder("I will vectorize.\nAPPLIED: direction=memory_access; strategies=none",
                           fenced(CUDA_NVRTC))
    proposal = coder.propose(request())
    assert proposal.code is not None and proposal.llm_calls == 2
    assert proposal.declared and proposal.direction == "memory_access" and proposal.strategy_ids == []
