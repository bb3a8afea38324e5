"""The checker's C heap, given back as it goes (issue 36).

Every evaluation process starts with glibc's thresholds fixed (`parent/pool.scrubbed_env`: blocks up to 32 MB
from the heap, which keeps up to 1 GiB it no longer uses), so that a timed forward's temporaries stay mapped
between calls and the sandbox's timings stay steady. The checker inherits them, and a checker judging a 16-31 MB
task held 250-515 MB at its worst: every tensor came from that heap, which kept what it had grown to, holes
included. The checker's own timings do not need them: what it clocks is the sandbox's work, and inside a timed
request's window it allocates nothing large (it writes a few input elements in shared memory, sends and reads
the request's JSON and touches sampled output pages through a 1 KiB buffer; its 64 MB flush buffer is written
before the clock starts); the roofline's ceilings are timed on 128 MiB buffers, mappings of their own either
way, and on a 4 MB matmul result, best of three after a warm-up call. So the checker alone gives memory back:
`give_back_freely` once its sandboxes are forked (they keep the steady settings; a fork inherits what was set
before it), `trim` at every phase change.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from functools import cache
from typing import Any

M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameters
TRIM_THRESHOLD = 16 << 20  # free memory at the heap's top beyond this goes back at once
MMAP_THRESHOLD = 1 << 20  # blocks from this size up are mappings of their own, unmapped when freed


@cache
def _libc() -> Any:
    """glibc, or None where malloc is another's (musl, macOS): nothing to tune there."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt.argtypes, libc.mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        libc.malloc_trim.argtypes, libc.malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
    except (OSError, AttributeError):
        return None
    return libc


def give_back_freely() -> bool:
    """This process's thresholds lowered (TRIM_THRESHOLD, MMAP_THRESHOLD; processes forked after it inherit
    them: call it once the sandboxes are forked). False where there is no glibc."""
    libc = _libc()
    return bool(libc is not None and libc.mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD) == 1
                and libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1)


def trim() -> None:
    """Every free page of the heap back to the kernel, the holes in its middle included (what a lower
    threshold alone never returns)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
