"""The GPU seen without initialising CUDA here, and whether this process may still fork (issue 36).

A process that forks must not have initialised the CUDA driver: the child of such a fork cannot use CUDA
(NVIDIA documents fork after `cuInit` as unsupported; torch marks it a "bad fork"). The evaluator forks
checkers from its launcher and sandboxes from each checker, before any job arrives, so nothing before those
forks may initialise the driver: `torch.cuda.is_available()` calls `cudaGetDeviceCount` (which runs
`cuInit`), `get_device_name`/`get_device_properties`/`mem_get_info` initialise torch's CUDA state. What the
parent needs to know about the GPU (is there one, its name, its free memory) comes from NVML instead
(`libnvidia-ml`, through ctypes: what `nvidia-smi` reads, no CUDA context, no device memory), and
`fork_blocker()` tells a process about to fork whether the driver is initialised in it.

Test hooks (read when called, never at import): `HTAM_TEST_GPU_VISIBLE=1` makes `visible()` true on a host
without a GPU; `HTAM_TEST_CUDA_TRIPWIRE=FILE` makes `install_tripwire()` wrap torch.cuda's driver-initialising
functions (they still run) so that every call is appended to FILE with the process's role and whether its
job had arrived, and counts as an initialised driver for `fork_blocker()`.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
import traceback
from functools import cache
from pathlib import Path
from typing import Any

#: torch.cuda's functions that initialise the driver (cudaGetDeviceCount) or torch's CUDA state
DRIVER_FUNCTIONS = ("is_available", "device_count", "get_device_name", "get_device_properties",
                    "get_device_capability", "mem_get_info", "current_device", "set_device", "synchronize",
                    "init", "_lazy_init", "empty_cache", "is_bf16_supported", "get_arch_list")
CUDA_ERROR_NOT_INITIALIZED = 3

_role = "unknown"
_job_arrived = False
_tripped: list[str] = []


def visible() -> bool:
    """A GPU device node is present and not hidden by CUDA_VISIBLE_DEVICES (no driver call)."""
    if os.environ.get("HTAM_TEST_GPU_VISIBLE") == "1":
        return True
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


# -- NVML: what the parent asks about the GPU ---------------------------------------------------------------
class _Memory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


@cache
def _nvml() -> Any:
    """libnvidia-ml, initialised once per process; None where it is missing or fails."""
    try:
        lib = ctypes.CDLL("libnvidia-ml.so.1")
        return lib if lib.nvmlInit_v2() == 0 else None
    except (OSError, AttributeError):
        return None


def _handle(index: int) -> Any:
    """NVML's handle of CUDA's device `index` (counted among CUDA_VISIBLE_DEVICES, as torch counts)."""
    lib = _nvml()
    if lib is None:
        return None
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    entries = [e.strip() for e in listed.split(",")] if listed is not None else None
    handle = ctypes.c_void_p()
    if entries is None:
        physical = index
    elif index >= len(entries) or not entries[index]:
        return None
    elif entries[index].isdigit():
        physical = int(entries[index])
    elif entries[index].startswith("GPU-"):  # a UUID, or a unique prefix of one (as CUDA accepts)
        return _by_uuid(lib, entries[index])
    else:  # MIG instances and other forms: not mapped
        return None
    if lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(physical), ctypes.byref(handle)) != 0:
        return None
    return handle


def _by_uuid(lib: Any, prefix: str) -> Any:
    count = ctypes.c_uint()
    if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        return None
    for i in range(count.value):
        handle, buf = ctypes.c_void_p(), ctypes.create_string_buffer(96)
        if (lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(i), ctypes.byref(handle)) == 0
                and lib.nvmlDeviceGetUUID(handle, buf, 96) == 0 and buf.value.decode().startswith(prefix)):
            return handle
    return None


def device_count() -> int | None:
    """GPUs CUDA would see (CUDA_VISIBLE_DEVICES applied), from NVML; None where NVML cannot tell."""
    lib = _nvml()
    if lib is None:
        return None
    count = ctypes.c_uint()
    if lib.nvmlDeviceGetCount_v2(ctypes.byref(count)) != 0:
        return None
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is None:
        return count.value
    n = 0
    for i, _ in enumerate(listed.split(",")):
        if _handle(i) is None:
            break  # CUDA stops at the first entry it cannot use
        n += 1
    return n


def device_name(index: int = 0) -> str | None:
    """The device's name as nvidia-smi prints it (NVML's), None where NVML cannot tell."""
    handle = _handle(index)
    if handle is None:
        return None
    buf = ctypes.create_string_buffer(96)
    return buf.value.decode() if _nvml().nvmlDeviceGetName(handle, buf, 96) == 0 else None


def free_bytes(index: int = 0) -> int | None:
    """The device's free memory as NVML counts it, None where NVML cannot tell."""
    handle = _handle(index)
    if handle is None:
        return None
    mem = _Memory()
    return int(mem.free) if _nvml().nvmlDeviceGetMemoryInfo(handle, ctypes.byref(mem)) == 0 else None


def usable(index: int = 0) -> bool:
    """Whether this process's torch could run on the GPU, asked without initialising the driver: torch built
    with CUDA and NVML seeing a device (where NVML is missing, a visible device node)."""
    try:
        import torch
    except ImportError:
        return False
    if not torch.backends.cuda.is_built():
        return False
    n = device_count()
    return n > index if n is not None else visible()


# -- may this process fork? --------------------------------------------------------------------------------
def fork_blocker() -> str | None:
    """Why this process must not fork a process that may use CUDA (its driver is initialised), None when it
    may. Initialises nothing: torch's own flag, then the driver itself where libcuda is loaded
    (`cuDeviceGetCount` answers CUDA_ERROR_NOT_INITIALIZED until `cuInit` ran)."""
    if _tripped:
        return f"torch.cuda.{_tripped[0]}() was called in this process (test tripwire)"
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        return "torch has initialised CUDA in this process"
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return None
    lines = [ln.split()[-1] for ln in maps.splitlines() if "libcuda.so" in ln and len(ln.split()) >= 6]
    if not lines:
        return None
    try:
        lib = ctypes.CDLL(lines[0], mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        count = ctypes.c_int()
        code = int(lib.cuDeviceGetCount(ctypes.byref(count)))
    except (OSError, AttributeError) as exc:
        return f"libcuda is loaded and its state cannot be read ({exc})"
    if code == CUDA_ERROR_NOT_INITIALIZED:
        return None
    return f"the CUDA driver is initialised in this process (cuDeviceGetCount returned {code}, not {CUDA_ERROR_NOT_INITIALIZED})"


# -- test tripwire -----------------------------------------------------------------------------------------
def set_role(role: str) -> None:
    """Which evaluator process this is (parent, launcher, checker, sandbox): named in the tripwire's records."""
    global _role
    _role = role


def job_arrived() -> None:
    """From here on this process may initialise CUDA: its job (or its first request) has arrived."""
    global _job_arrived
    _job_arrived = True


def install_tripwire() -> None:
    """With HTAM_TEST_CUDA_TRIPWIRE=FILE: record every call of torch.cuda's driver-initialising functions in
    this process (and its forks) to FILE, one JSON line each. A no-op otherwise."""
    path = os.environ.get("HTAM_TEST_CUDA_TRIPWIRE")
    if not path:
        return
    import torch

    for name in DRIVER_FUNCTIONS:
        original = getattr(torch.cuda, name, None)
        if original is None or getattr(original, "_htam_tripwire", False):
            continue

        def wrapped(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            if not _job_arrived:
                _tripped.append(_name)
            record = {"pid": os.getpid(), "ppid": os.getppid(), "role": _role, "fn": _name, "after_job": _job_arrived,
                      "stack": "".join(traceback.format_stack(limit=8)[:-1])}
            try:  # a sandbox confined by Landlock can no longer write it: what it did before is recorded
                fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o666)
                try:
                    os.write(fd, (json.dumps(record) + "\n").encode())
                finally:
                    os.close(fd)
            except OSError:
                pass
            return _original(*args, **kwargs)

        wrapped._htam_tripwire = True  # type: ignore[attr-defined]
        setattr(torch.cuda, name, wrapped)
    if os.environ.get("HTAM_TEST_CUDA_TOUCH") == _role:  # a test's stand-in for code that initialises CUDA
        torch.cuda.is_available()


__all__ = ["device_count", "device_name", "fork_blocker", "free_bytes", "install_tripwire", "job_arrived",
           "set_role", "usable", "visible"]
