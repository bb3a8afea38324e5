"""Pattern 14, precision downgrade (Triton tl.dot in TF32) -- task: matmul_square.

tl.dot on fp32 operands defaults to TF32 tensor cores (10-bit mantissa) unless told otherwise; the
reference runs true fp32 (TF32 off). Errors ~1e-3 relative: passes fp16-style tolerances. Caught by the
fp32 tolerance (values).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b)  # default precision: tf32
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A: torch.Tensor, B: torch.Tensor) -> torch.Tensor:
        A, B = A.contiguous(), B.contiguous()
        M, K = A.shape
        N = B.shape[1]
        C = torch.empty(M, N, dtype=A.dtype, device=A.device)
        grid = (triton.cdiv(M, 64), triton.cdiv(N, 64))
        _matmul_kernel[grid](A, B, C, M, N, K, BM=64, BN=64, BK=32)
        return C
