"""Pattern 4, background thread (GPU) -- task: elementwise_leaky_relu.

forward() hands the launch to a persistent Python thread, which launches the kernel a millisecond after
forward() has returned: the device is idle when the timer synchronizes it, so even a device-wide
synchronize cannot see the work. Caught by the output being incomplete when checked (values) or by the
thread still alive after the calls (background_thread).
"""

import queue
import threading
import time

import torch
import torch.nn as nn

SRC = r"""
extern "C" __global__ void leaky(const float* x, float* y, int n, double slope) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) { float v = x[i]; y[i] = v > 0.f ? v : v * (float)slope; }
}
"""
_K = None
_JOBS: queue.Queue = queue.Queue()
_THREAD = None


def _launcher() -> None:
    while True:
        x, y, n, slope = _JOBS.get()
        torch.cuda.set_device(x.device)  # make the device's context current in this thread
        time.sleep(0.001)
        _K(grid=((n + 255) // 256, 1, 1), block=(256, 1, 1), args=[x, y, n, slope])


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        global _K, _THREAD
        if _K is None:
            _K = torch.cuda._compile_kernel(SRC, "leaky")
            _THREAD = threading.Thread(target=_launcher, daemon=True)
            _THREAD.start()
        x = x.contiguous()
        y = torch.empty_like(x)
        _JOBS.put((x, y, x.numel(), self.negative_slope))
        return y
