"""Pattern 19 (boundary class 3: replies out of order) -- task: elementwise_leaky_relu.

Inside a timed call it writes a forged reply onto the sandbox's socket (a tiny time, the request's own
nonce, read from the sandbox object) before it computes, and lets the real reply follow. Before replies
carried nonces and the checker looked for unasked messages, a proxy on that socket had the checker take a
forged reply and the forward run while it waited on the next, untimed request (6.9x, 20x below honest).
Now the real reply left waiting is a message nobody asked for, and a forged reply without the sealed
outputs is malformed: protocol_violation, whichever comes first.
"""

import gc
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


def _sandbox():
    for obj in gc.get_objects():
        if type(obj).__name__ == "Sandbox" and getattr(obj, "sock", None) is not None:
            return obj
    return None


def _nonce():
    f = sys._getframe(1)
    while f is not None:
        msg = f.f_locals.get("msg") if f.f_code.co_name == "serve" else None
        if msg is not None:
            return msg.body.get("nonce"), f.f_locals.get("op")
        f = f.f_back
    return None, None


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        nonce, op = _nonce()
        if op == "timed":
            sandbox = _sandbox()
            from htam_agent.evaluation.common import protocol

            protocol.send(sandbox.sock, {"ok": True, "device_ms": 0.001, "host_ms": 0.001, "threads_alive": 0,
                                         "launches": 1, "nonce": nonce})
        return _ext.leaky(x.contiguous(), self.negative_slope)
