"""Reading a timed output where it lies, in the sandbox's memory (`process_vm_readv`), instead of a sealed copy.

Why: sealing a timed output meant copying it into a fresh memfd inside the timed request. For a 1 GiB output on
the 2-core VM that copy (page faults included) cost more than the call it followed (eager ReLU: 403 ms per call,
577 ms more per request; issue 36), and each copy was one more full-size buffer alive. What the seal gave a timed
call that is not re-checked is that every page of its output is touched inside the checker's clock, so an output
computed lazily on first touch (`p19_lazy_output_pages`) is computed there. `touch` gives the same from the
checker's side: inside the clock it reads one byte of a few thousand pages drawn from its own secret generator
(a page fault the candidate's process must serve now, while the clock runs); a page it cannot read (mapped
without access, as the lazy cheat does) makes the request fall back to the sealed copy, inside the clock. A
re-checked call's output is copied whole by `read_into` right after the clock stops, with the sandbox frozen, so
what is compared is what the output held at return.

Linux only, stdlib (ctypes); the checker is the only user. Where the call is refused (no ptrace access to the
sandbox: another user without CAP_SYS_PTRACE, Yama's `ptrace_scope` 2-3), callers fall back to sealed copies.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
from typing import Any

IOV_MAX = 1024
PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
TOUCH_PAGES = 2048  # pages touched per output; all of them when it has fewer


class _Iovec(ctypes.Structure):
    _fields_ = [("iov_base", ctypes.c_void_p), ("iov_len", ctypes.c_size_t)]


_libc: Any = None


def _vm_readv() -> Any:
    global _libc
    if _libc is None:
        lib = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        fn = lib.process_vm_readv
        fn.restype = ctypes.c_ssize_t
        fn.argtypes = [ctypes.c_int, ctypes.POINTER(_Iovec), ctypes.c_ulong, ctypes.POINTER(_Iovec),
                       ctypes.c_ulong, ctypes.c_ulong]
        _libc = fn
    return _libc


def _readv(pid: int, local: list[tuple[int, int]], remote: list[tuple[int, int]]) -> int:
    fn = _vm_readv()
    liov = (_Iovec * len(local))(*[_Iovec(a, n) for a, n in local])
    riov = (_Iovec * len(remote))(*[_Iovec(a, n) for a, n in remote])
    got = fn(pid, liov, len(local), riov, len(remote), 0)
    if got < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"process_vm_readv of process {pid}: {os.strerror(err)}")
    return int(got)


def available() -> bool:
    """Whether this kernel and C library offer process_vm_readv (reading our own memory as a probe)."""
    try:
        buf = ctypes.create_string_buffer(8)
        src = ctypes.create_string_buffer(b"htam", 8)
        return _readv(os.getpid(), [(ctypes.addressof(buf), 4)], [(ctypes.addressof(src), 4)]) == 4
    except (OSError, AttributeError):
        return False


def touch(pid: int, addr: int, nbytes: int, pages: list[int]) -> None:
    """Read one byte of each of `pages` (page indices from the region's first page) of [addr, addr + nbytes) in
    process `pid`: every one is faulted in there if it was not yet. OSError when any cannot be read."""
    if nbytes <= 0 or not pages:
        return
    first = addr // PAGE
    spots = sorted({min(max((first + p) * PAGE, addr), addr + nbytes - 1) for p in pages})
    sink = ctypes.create_string_buffer(IOV_MAX)
    for k in range(0, len(spots), IOV_MAX):
        batch = spots[k:k + IOV_MAX]
        got = _readv(pid, [(ctypes.addressof(sink), len(batch))], [(a, 1) for a in batch])
        if got != len(batch):
            raise OSError(errno.EFAULT, f"only {got} of {len(batch)} pages of an output could be read")


def page_count(addr: int, nbytes: int) -> int:
    return 0 if nbytes <= 0 else (addr + nbytes - 1) // PAGE - addr // PAGE + 1


def read_into(pid: int, addr: int, nbytes: int, dest: int, chunk: int = 256 << 20) -> None:
    """Copy [addr, addr + nbytes) of process `pid` to our address `dest`; OSError when any of it cannot be read."""
    done = 0
    while done < nbytes:
        n = min(chunk, nbytes - done)
        got = _readv(pid, [(dest + done, n)], [(addr + done, n)])
        if got <= 0:
            raise OSError(errno.EFAULT, f"an output could be read only up to byte {done} of {nbytes}")
        done += got


__all__ = ["TOUCH_PAGES", "available", "page_count", "read_into", "touch"]
