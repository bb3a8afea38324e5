"""Pattern 9, cross-call batching / deferred work -- task: elementwise_leaky_relu.

Honest whenever it sees an input tensor for the first time (every correctness check uses fresh tensors).
When the same input tensor comes back -- a benchmark loop -- it returns an empty output at once and lets a
thread with the GIL released fill it, joining that thread only at the start of the next call. Timed calls
measure a thread start; by the time the harness looks at the timed outputs they are complete and correct,
and the thread is gone. Caught by fingerprinting each output when forward returns, or by counting threads
started inside each call.
"""

import threading
from collections import OrderedDict

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

_seen: OrderedDict = OrderedDict()  # LRU key -> the input itself (held, so its address is not recycled)
_pending: list = []


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        while _pending:
            _pending.pop().join()
        x = x.contiguous()
        key = (x.data_ptr(), tuple(x.shape), x._version)
        if key not in _seen:
            _seen[key] = x
            while len(_seen) > 8:
                _seen.popitem(last=False)
            return _ext.leaky(x, self.negative_slope)
        _seen.move_to_end(key)
        y = torch.empty_like(x)
        t = threading.Thread(target=_ext.leaky_out, args=(x, y, self.negative_slope, 0, x.numel()), daemon=True)
        t.start()
        _pending.append(t)
        return y
