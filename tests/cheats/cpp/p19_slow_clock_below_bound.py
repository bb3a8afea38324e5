"""Pattern 19 (boundary class 4: a slowed clock, below the bound) -- task: elementwise_leaky_relu.

Honest numbers, forged time: it shadows `new_timer` on the sandbox's backend instance (found through `gc`)
with a timer whose clock runs at a third of the real speed, so every timed call reports a third of what it
took. A third stays above the checker's gross bound on the CPU (0.5x the checker's clock minus 5 ms), as the
held-out attack (clock_gettime's GOT slots in libpython rewritten from C++) did with 1.29x reported, 4.3x
below honest. Now the checker's clock is the figure of record: the in-process time is believed only down
to 0.9x of the checker's own estimate, so the forgery gains at most that (tests/cheats/test_boundary_protocol.py).
"""

import gc

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class _Slow:
    def __init__(self, real):
        self.real = real

    def start(self):
        self.real.start()

    def stop(self):
        self.real.stop()

    def elapsed_ms(self):
        return self.real.elapsed_ms() / 3.0


def _slow_down() -> bool:
    for obj in gc.get_objects():
        backend = getattr(obj, "backend", None) if type(obj).__name__ == "Sandbox" else None
        if backend is not None:
            make = type(backend).new_timer
            backend.new_timer = lambda _b=backend, _m=make: _Slow(_m(_b))
            return True
    return False


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope
        self.slowed = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.slowed:
            self.slowed = _slow_down()
        return _ext.leaky(x.contiguous(), self.negative_slope)
