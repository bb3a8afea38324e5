"""Conv2d + bias + ReLU in Triton: the convolution (no bias) stays in PyTorch/cuDNN; a Triton kernel over
(channel plane, spatial block) tiles fuses both bias adds and the ReLU, loading each plane's two bias values
once as scalars."""

import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _bias_relu_kernel(y_ptr, b1_ptr, b2_ptr, out_ptr, C, HW, BLOCK: tl.constexpr):
    plane = tl.program_id(0).to(tl.int64)  # n * C + c
    pid_s = tl.program_id(1)
    c = plane % C
    b1 = tl.load(b1_ptr + c)
    b2 = tl.load(b2_ptr + c)
    offs = pid_s * BLOCK + tl.arange(0, BLOCK)
    mask = offs < HW
    base = plane * HW
    v = (tl.load(y_ptr + base + offs, mask=mask, other=0.0) + b1) + b2
    tl.store(out_ptr + base + offs, tl.where(v < 0.0, 0.0, v), mask=mask)


class ModelNew(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, bias_shape: tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)
        self.bias = nn.Parameter(torch.randn(bias_shape) * 0.02)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = self.conv
        y = F.conv2d(x, c.weight, None, c.stride, c.padding, c.dilation, c.groups).contiguous()  # no bias
        out = torch.empty_like(y, memory_format=torch.contiguous_format)
        if y.numel() == 0:
            return out
        N, C, H, W = y.shape
        HW = H * W
        BLOCK = min(triton.next_power_of_2(HW), 4096)
        grid = (N * C, triton.cdiv(HW, BLOCK))
        _bias_relu_kernel[grid](
            y, c.bias.contiguous(), self.bias.contiguous().view(-1), out, C, HW, BLOCK=BLOCK, num_warps=8 if BLOCK >= 2048 else 4
        )
        return out
