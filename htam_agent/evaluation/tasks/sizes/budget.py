"""What a small size must fit: the cost model's budget and constants, and the errors of size derivation."""

from __future__ import annotations

VERSION = 3
SIZE_DICTS = {"small": "SMALL_SIZES", "alt": "ALT_SIZES"}
TARGET_MS = 50.0  # a small eager forward on a 2-core CPU should stay under this
BUDGET_MS = 20.0  # what the cost model aims at: a margin under TARGET_MS for a model that errs low
MAX_INPUT_BYTES = 16 << 20
FLOOR, BATCH_FLOOR = 8, 2
# Cost model of an eager forward on 2 cores of the development machine, set conservatively so that a forward
# the model calls BUDGET_MS really runs in under TARGET_MS. Measured there (uncontended, fastest of 20): a
# 128x1024 GEMM + BatchNorm, 268 MFLOP, 2.2 ms (~120 GFLOP/s); a conv + GroupNorm chain, 73 MFLOP, 1.5 ms;
# an elementwise op ~4-10 GB/s; a few microseconds per op, tens per nn.Module call.
FLOPS_PER_MS = 5e7
BYTES_PER_MS = 5e6
MS_PER_OP = 0.01
# Ops the FLOP and byte counts miss, measured there with one thread (KernelBench level 1): pooling does one
# compare or add per output element and kernel tap, ~5e5 per ms (MaxPool2d 4x4 over 32x32x64x64: 112 ms);
# argmax/argmin over a middle dimension ~2.5e5 input elements per ms (128x128x255: 17 ms).
WINDOW_TAPS_PER_MS = 5e5
ARG_REDUCE_ELEMS_PER_MS = 2.5e5
# Past these, a 'small' size would not be small: the file needs a SMALL_SIZES dict (or size globals) instead.
HARD_MS = 500 * BUDGET_MS
HARD_INPUT_BYTES = 256 << 20
CPU_PROBE_MAX_BYTES = 256 << 20
# A forward of more ops than this costs 10x the budget in op overhead alone: a probe stops counting there
# (an LSTM's 512 decomposed steps take ~80k ops and half a minute on meta) and the size shrinks on.
OP_CAP = int(10 * BUDGET_MS / MS_PER_OP)  # a model meta cannot run is run on the CPU only below this (inputs + weights)
MAX_PROBES = 400

_ROOTS = ("get_inputs", "get_init_inputs", "Model")
_NOT_SIZE_TOKENS = frozenset({"kernel", "stride", "strides", "pad", "padding", "dilation", "patch", "window",
                              "layers", "stages", "ratio", "factor"})
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME", "LOAD_FROM_DICT_OR_GLOBALS"})


class SizeError(ValueError):
    """Sizes cannot be derived; the message names the file, the global and the fix."""


class _TooManyOps(BaseException):
    """Raised inside a probe's forward past OP_CAP ops (a BaseException, so a model's `except Exception`
    does not swallow it)."""
