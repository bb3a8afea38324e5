"""ExemplarCoder: the Coder protocol, strategies that change the code, best-code knobs, repairs, determinism."""

from __future__ import annotations

import pytest
from exemplar_helpers import task_source

from htam_agent.coder.base import Coder, CodeRequest, StrategyBrief, UnsupportedTask
from htam_agent.coder.exemplar import ExemplarCoder
from htam_agent.coder.exemplar.common import parse_header


def _req(stem: str, backend: str = "cuda", strategies: tuple[str, ...] = (), **kw) -> CodeRequest:
    return CodeRequest(task_name=stem, task_source=task_source(stem), backend=backend,
                       strategies=tuple(StrategyBrief(id=s, title=s) for s in strategies), **kw)


def _knobs(code: str) -> dict:
    parsed = parse_header(code)
    assert parsed is not None, "no exemplar header"
    return parsed[2]


def test_implements_the_coder_protocol():
    coder = ExemplarCoder()
    assert isinstance(coder, Coder)
    assert coder.name == "exemplar" and coder.uses_llm is False


@pytest.mark.parametrize("backend", ["cuda", "triton", "cpp"])
def test_proposal_fields_and_notice(backend: str):
    p = ExemplarCoder().propose(_req("elementwise_swish", backend))
    assert p.code and "class ModelNew(nn.Module)" in p.code
    assert p.coder == "exemplar" and p.uses_llm is False and p.llm_calls == 0 and p.error == ""
    assert "no LLM was used" in p.code.splitlines()[1]
    assert parse_header(p.code)[:2] == ("elementwise", backend)


def test_strategy_changes_the_candidate_and_is_reported():
    coder = ExemplarCoder()
    plain = coder.propose(_req("elementwise_swish"))
    vec = coder.propose(_req("elementwise_swish", strategies=("ma_vectorized_loads",)))
    assert vec.strategy_ids == ["ma_vectorized_loads"] and plain.strategy_ids == []
    assert _knobs(plain.code)["vec"] == 1 and _knobs(vec.code)["vec"] == 4
    assert "float4" in vec.code and "float4" not in plain.code


@pytest.mark.parametrize("stem,backend,strategy,knob,value", [
    ("norm_softmax", "cuda", "fr_online_softmax", "passes", "online"),
    ("norm_softmax", "cuda", "pm_warp_per_row", "mapping", "warp"),
    ("norm_layernorm", "triton", "fr_welford_norm", "passes", "online"),
    ("norm_layernorm", "triton", "ma_avoid_redundant_loads", "cache", True),
    ("fused_gemm_bias_gelu", "cpp", "fr_epilogue_fusion", "bias", "epilogue"),
    ("matmul_square", "cuda", "dr_register_blocking", "tile", "64x64x16t4"),
    ("matmul_square", "triton", "dr_double_buffering", "stages", 3),
])
def test_each_family_has_strategy_moves(stem, backend, strategy, knob, value):
    coder = ExemplarCoder()
    base = coder.propose(_req(stem, backend))
    moved = coder.propose(_req(stem, backend, (strategy,)))
    assert moved.strategy_ids == [strategy]
    assert _knobs(moved.code)[knob] == value != _knobs(base.code)[knob]
    assert moved.code != base.code


def test_epilogue_fusion_moves_the_bias_into_the_kernel():
    coder = ExemplarCoder()
    gemm = coder.propose(_req("fused_gemm_bias_gelu", "cpp"))
    fused = coder.propose(_req("fused_gemm_bias_gelu", "cpp", ("fr_epilogue_fusion",)))
    assert "F.linear(x, self.linear.weight, self.linear.bias)" in gemm.code
    assert "F.linear(x, self.linear.weight, None)" in fused.code and "self.linear.bias]" in fused.code


def test_starts_from_the_best_codes_knobs():
    coder = ExemplarCoder()
    best = coder.propose(_req("norm_softmax", strategies=("ma_vectorized_loads",))).code
    nxt = coder.propose(_req("norm_softmax", strategies=("fr_online_softmax",), best_code=best))
    k = _knobs(nxt.code)
    assert k["vec"] == 4 and k["passes"] == "online", "the best code's vec=4 was lost or the move not applied"


def test_first_applicable_strategy_wins_and_variant_picks_the_next():
    coder = ExemplarCoder()
    strategies = ("dr_smem_tiling_gemm", "ma_vectorized_loads", "fr_online_softmax", "oc_block_size")
    first = coder.propose(_req("norm_softmax", "cuda", strategies))  # dr_smem_tiling_gemm does not apply
    assert first.strategy_ids == ["ma_vectorized_loads"]
    second = coder.propose(_req("norm_softmax", "cuda", strategies, variant=1))
    assert second.strategy_ids == ["fr_online_softmax"]


def test_direction_move_when_no_strategy_applies():
    p = ExemplarCoder().propose(_req("elementwise_swish", "cuda", ("dr_conv_implicit_gemm",),
                                     direction="parallel_mapping"))
    assert p.strategy_ids == [] and _knobs(p.code)["grid"] == "stride"


def test_a_direction_without_moves_here_explores_the_next_variant_and_says_what_it_did():
    """On cpp a thread-mapping direction changes no knob: the coder writes the next curated variant instead of
    the same candidate again, and declares the direction its change belongs to (what the memory records)."""
    from htam_agent.coder.exemplar import enumerate_candidates
    from htam_agent.coder.exemplar.families import rowwise

    curated = [k for _, k, _ in enumerate_candidates(task_source("norm_rmsnorm"), "cpp", "norm_rmsnorm")]

    def owner(a: dict, b: dict) -> str:
        changed = {k for k in b if a.get(k) != b.get(k)}
        return next(d for d, mv in rowwise.DIRECTION_MOVES.items() if changed & set(mv))

    coder = ExemplarCoder()
    first = coder.propose(_req("norm_rmsnorm", "cpp", ("pm_warp_per_row",), direction="parallel_mapping"))
    assert _knobs(first.code) == curated[1]
    assert first.declared and first.direction == owner(curated[0], curated[1]) != "parallel_mapping"
    second = coder.propose(_req("norm_rmsnorm", "cpp", ("pm_warp_per_row",), direction="parallel_mapping",
                                best_code=first.code))
    assert _knobs(second.code) == curated[2] and second.direction == owner(curated[1], curated[2])
    own = coder.propose(_req("norm_rmsnorm", "cpp", (), direction="memory_access"))
    assert _knobs(own.code)["vec"] == 8 and not own.declared  # its own move applies: nothing to declare


def test_repair_falls_back_to_the_safest_variant():
    coder = ExemplarCoder()
    fancy = coder.propose(_req("norm_softmax", "cuda", ("fr_online_softmax",))).code
    fixed = coder.propose(_req("norm_softmax", "cuda", ("fr_online_softmax",), repair=1, failed_code=fancy,
                               feedback="incorrect"))
    assert fixed.strategy_ids == [] and _knobs(fixed.code)["passes"] == "two_pass"
    assert _knobs(fixed.code)["vec"] == 1


def test_deterministic():
    coder = ExemplarCoder()
    req = _req("fused_conv2d_bias_relu", "triton", ("oc_block_size", "ma_streaming_stores"), direction="memory_access")
    assert coder.propose(req).code == ExemplarCoder().propose(req).code


def test_unsupported_task_raises():
    with pytest.raises(UnsupportedTask, match="OPENAI_API_KEY"):
        ExemplarCoder().propose(_req("attention_sdpa"))
    with pytest.raises(UnsupportedTask, match="unknown backend"):
        ExemplarCoder().propose(_req("norm_softmax", "metal"))


def test_without_guidance_it_sweeps_the_curated_space_in_order():
    from htam_agent.coder.exemplar import enumerate_candidates

    stem = "norm_softmax"
    space = [code for _, _, code in enumerate_candidates(task_source(stem), "cuda", stem)]
    coder = ExemplarCoder()
    codes = [coder.propose(_req(stem, direction=None, step=k)).code for k in range(3)]
    assert codes == space[:3] and len(set(codes)) == 3
    assert coder.propose(_req(stem, direction=None, step=1, variant=1)).code == space[2]


def _tried(*codes: str):
    from htam_agent.coder.base import TriedCandidate

    return tuple(TriedCandidate(step=i, direction=None, accepted=True, speedup_vs_eager=1.0, outcome="accepted",
                                code=c) for i, c in enumerate(codes))


def test_never_writes_a_candidate_the_task_already_measured():
    """The same request (same best, same direction, nothing new retrieved) used to give the same candidate at
    every step (the bench saw one MSELoss variant measured four times in a row): with the task's measured
    candidates in the request, each step writes a variant not measured yet, until the space is used up."""
    from htam_agent.coder.exemplar import enumerate_candidates

    stem = "norm_rmsnorm"
    space = {code for _, _, code in enumerate_candidates(task_source(stem), "cuda", stem)}
    coder = ExemplarCoder()
    best = coder.propose(_req(stem, "cuda")).code
    seen = [best]
    for step in range(1, len(space)):
        p = coder.propose(_req(stem, "cuda", ("pm_warp_per_row",), direction="memory_access", best_code=best,
                               step=step, tried=_tried(*seen)))
        assert p.code not in seen, f"step {step} wrote a measured candidate again: {p.reply}"
        assert p.code in space  # still inside the enumerated space (its verdicts exist)
        seen.append(p.code)
    assert set(seen) == space
    # a space used up is said, not hidden behind an earlier candidate submitted again: with guidance or without
    from htam_agent.coder.base import SpaceExhausted

    with pytest.raises(SpaceExhausted, match="measured already"):
        coder.propose(_req(stem, "cuda", direction="memory_access", best_code=best, tried=_tried(*seen)))
    with pytest.raises(SpaceExhausted, match="measured already"):
        coder.propose(_req(stem, "cuda", step=len(space), tried=_tried(*seen)))


def test_a_move_onto_a_measured_variant_takes_the_nearest_untried_one():
    coder = ExemplarCoder()
    moved = coder.propose(_req("elementwise_swish", "cuda", ("ma_vectorized_loads",))).code
    assert _knobs(moved)["vec"] == 4
    again = coder.propose(_req("elementwise_swish", "cuda", ("ma_vectorized_loads",), tried=_tried(moved)))
    k = _knobs(again.code)
    assert again.code != moved and k["vec"] == 4, "the move's own knob (vec=4) should be kept"
    assert again.strategy_ids == ["ma_vectorized_loads"]


def test_the_sweep_skips_measured_variants():
    from htam_agent.coder.exemplar import enumerate_candidates

    stem = "norm_softmax"
    space = [code for _, _, code in enumerate_candidates(task_source(stem), "cuda", stem)]
    p = ExemplarCoder().propose(_req(stem, direction=None, step=1, tried=_tried(space[0], space[1])))
    assert p.code == space[2]
