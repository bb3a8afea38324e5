"""Shared expectations for the exemplar coder tests: which suite task belongs to which family."""

from __future__ import annotations

COVERED = {
    "elementwise_add_mul": "elementwise",
    "elementwise_hardtanh_scale": "elementwise",
    "elementwise_leaky_relu": "elementwise",
    "elementwise_swish": "elementwise",
    "fused_conv2d_bias_relu": "elementwise",
    "fused_gemm_bias_gelu": "elementwise",
    "fused_gemm_relu_divide": "elementwise",
    "fused_matmul_scale_residual": "elementwise",
    "fused_gemm_layernorm_gelu": "rowwise",
    "norm_layernorm": "rowwise",
    "norm_log_softmax": "rowwise",
    "norm_rmsnorm": "rowwise",
    "norm_softmax": "rowwise",
    "reduction_argmax": "rowwise",
    "reduction_row_sum": "rowwise",
    "matmul_batched": "matmul",
    "matmul_square": "matmul",
    "matmul_tall_skinny": "matmul",
    "fused_conv2d_gelu_groupnorm": "staged",
    "fused_conv2d_maxpool_hardswish": "staged",
    "pool_avgpool2d": "staged",
    "pool_maxpool2d": "staged",
    "reduction_cumsum": "staged",
    "reduction_mean_dim": "staged",
}

UNSUPPORTED = (
    "attention_sdpa",
    "conv_conv2d",
    "conv_depthwise_conv2d",
    "loss_cross_entropy",
    "model_mlp",
    "model_small_cnn",
)

BACKENDS = ("cuda", "triton", "cpp")


def backends_for(stem: str) -> tuple[str, ...]:
    """Staged programs (reductions, norms, pools, scans over any dims) are written for cuda and cpp only."""
    return ("cuda", "cpp") if COVERED.get(stem) == "staged" else BACKENDS


def task_source(stem: str) -> str:
    from htam_agent.bundled_tasks import SUITE_DIR

    return (SUITE_DIR / f"{stem}.py").read_text()


def knob_sample(variants: list[tuple[str, str, str, dict]]) -> set[tuple[str, str]]:
    """(task, variant id) pairs a default-lane sweep checks, from [(task, family, variant id, knobs)] in order.

    Each task's first variant (the one the coder submits first), and any later one that shows a knob value its
    family has not shown yet: every template path and every knob value is compiled or evaluated by default,
    while the variants that only recombine values already seen are left to the `exhaustive` lane.
    """
    seen: set[tuple[str, str, str]] = set()
    picked: set[tuple[str, str]] = set()
    first: set[str] = set()
    for task, family, vid, knobs in variants:
        values = {(family, k, repr(v)) for k, v in knobs.items()}
        if task not in first or values - seen:
            picked.add((task, vid))
            first.add(task)
            seen |= values
    return picked
