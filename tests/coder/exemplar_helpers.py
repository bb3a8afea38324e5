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
}

UNSUPPORTED = (
    "attention_sdpa",
    "conv_conv2d",
    "conv_depthwise_conv2d",
    "fused_conv2d_gelu_groupnorm",
    "fused_conv2d_maxpool_hardswish",
    "loss_cross_entropy",
    "model_mlp",
    "model_small_cnn",
    "pool_avgpool2d",
    "pool_maxpool2d",
    "reduction_cumsum",
    "reduction_mean_dim",
)

BACKENDS = ("cuda", "triton", "cpp")


def task_source(stem: str) -> str:
    from htam_agent.tasks import SUITE_DIR

    return (SUITE_DIR / f"{stem}.py").read_text()
