"""Pattern 9, cross-call batching -- task: norm_softmax.

Honest on inputs it has not seen. Once inputs start repeating (a benchmark rotating over a few input sets),
it computes the softmax of every input it has seen in ONE kernel call over their concatenation and answers
the following calls from that batch (slices of one output). Each timed call but one per round is free;
the values are right for every call. Caught by a speed floor (faster_than_roofline) or by outputs of timed
calls that share memory; robustly, by timing single calls on fresh inputs.
"""

from collections import OrderedDict

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._seen: OrderedDict = OrderedDict()  # LRU key -> input tensor
        self._batch: dict = {}  # key -> slice of the last batched output

    @staticmethod
    def _key(x: torch.Tensor) -> tuple:
        return (x.data_ptr(), tuple(x.shape), x._version)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.contiguous()
        k = self._key(x)
        if k not in self._seen:
            self._seen[k] = x
            while len(self._seen) > 3:
                self._seen.popitem(last=False)
            return _ext.softmax(x)
        self._seen.move_to_end(k)
        if k not in self._batch:  # a repeat: batch everything we know in one launch
            keys = list(self._seen)
            out = _ext.softmax(torch.cat([self._seen[j] for j in keys]))
            self._batch = dict(zip(keys, out.split(x.shape[0]), strict=True))
        return self._batch.pop(k)
