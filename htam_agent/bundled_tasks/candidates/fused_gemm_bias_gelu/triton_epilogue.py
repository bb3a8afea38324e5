"""Linear + exact GELU in Triton: the GEMM (x @ W^T, no bias) stays in PyTorch/cuBLAS; a Triton kernel
over 2-D (row-block, col-block) tiles fuses the bias add and the erf GELU."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _bias_gelu_kernel(y_ptr, b_ptr, out_ptr, rows, cols, BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr):
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    offs_r = (pid_r * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    mask_c = offs_c < cols
    mask = (offs_r[:, None] < rows) & mask_c[None, :]
    idx = offs_r[:, None] * cols + offs_c[None, :]
    b = tl.load(b_ptr + offs_c, mask=mask_c, other=0.0)
    v = tl.load(y_ptr + idx, mask=mask, other=0.0) + b[None, :]
    g = 0.5 * v * (1.0 + tl.math.erf(v * 0.7071067811865476))
    tl.store(out_ptr + idx, g, mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.matmul(x, self.linear.weight.t()).contiguous()  # GEMM without bias
        out = torch.empty_like(y, memory_format=torch.contiguous_format)
        if y.numel() == 0:
            return out
        cols = y.shape[-1]
        rows = y.numel() // cols
        BLOCK_R, BLOCK_C = 8, 512
        grid = (triton.cdiv(rows, BLOCK_R), triton.cdiv(cols, BLOCK_C))
        _bias_gelu_kernel[grid](y, self.linear.bias.contiguous(), out, rows, cols, BLOCK_R=BLOCK_R, BLOCK_C=BLOCK_C, num_warps=4)
        return out
