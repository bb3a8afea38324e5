"""LayerNorm over the last dimension in Triton: one program per row with the whole row in registers
(BLOCK = next_power_of_2(cols)), exact two-pass mean/variance, fused affine."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _layernorm_kernel(x_ptr, w_ptr, b_ptr, y_ptr, cols, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    mask = offs < cols
    x = tl.load(x_ptr + row * cols + offs, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / cols
    d = tl.where(mask, x - mean, 0.0)
    var = tl.sum(d * d, axis=0) / cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + row * cols + offs, d * rstd * w + b, mask=mask)


class _LayerNormParams(nn.Module):
    """Holds `weight` and `bias` under the same names as nn.LayerNorm (state_dict keys ln.weight, ln.bias)."""

    def __init__(self, dim: int, eps: float):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim))


class ModelNew(nn.Module):
    def __init__(self, dim: int):
        super().__init__()
        self.ln = _LayerNormParams(dim, 1e-5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        out = torch.empty_like(x, memory_format=torch.contiguous_format)
        if x.numel() == 0:
            return out
        cols = x.shape[-1]
        rows = x.numel() // cols
        BLOCK = triton.next_power_of_2(cols)
        num_warps = 16 if BLOCK >= 8192 else (8 if BLOCK >= 2048 else 4)
        _layernorm_kernel[(rows,)](
            x, self.ln.weight.contiguous(), self.ln.bias.contiguous(), out, cols, float(self.ln.eps),
            BLOCK=BLOCK, num_warps=num_warps,
        )
        return out
