"""The wire between the checker (trusted) and the sandbox (untrusted): JSON messages and shared tensors.

Messages are length-prefixed JSON over a Unix socket pair, never pickle: the checker parses what the
sandbox sends as data, so a candidate cannot make it run code. Tensors do not travel in messages:
- CPU: a memfd (anonymous shared memory) passed with the message (SCM_RIGHTS). Outputs the sandbox hands
  back are sealed against writes (F_SEAL_WRITE) before they are sent, and the checker refuses an unsealed
  one, so an output cannot change after it was handed over. fd passing works across user ids, which the
  sandbox may run under.
- CUDA: an IPC handle of the sandbox's allocation (torch's own CUDA IPC), described field by field; the
  checker rebuilds it with a fixed function and copies it into its own memory before reading it.
All tensor transfers go from the sandbox to the checker (the sandbox allocates even its input buffers,
which the checker then fills), so only the checker ever opens a handle made by the other process.

Imports only torch and the standard library.
"""

from __future__ import annotations

import base64
import errno
import fcntl
import json
import mmap
import os
import socket
import struct
import time
from dataclasses import dataclass, field
from typing import Any

MAX_MESSAGE = 64 << 20  # bytes of JSON in one message; more is a protocol violation
MAX_REPLY = 4 << 20  # what the checker accepts from the sandbox: tensors travel as fds, not in the JSON
MAX_DEPTH = 64  # nesting of a decoded message; deeper is a violation (json's recursion is not our limit)
MAX_FDS = 64
_HEADER = struct.Struct("!I")
DTYPES = ("float32", "float64", "float16", "bfloat16", "int8", "int16", "int32", "int64", "uint8", "bool",
          "complex64", "complex128")
_SEALS = getattr(fcntl, "F_SEAL_WRITE", 8) | getattr(fcntl, "F_SEAL_SHRINK", 2) | getattr(fcntl, "F_SEAL_GROW", 4)


class SandboxTimeout(RuntimeError):
    """A request (or a build the sandbox asked for) ran past its phase's limit: the evaluation is a timeout.

    Here, on the wire both sides share, so the builder's `BuildTimeout` is one without importing the checker.
    """


class ProtocolError(RuntimeError):
    """The other side sent something malformed (from the sandbox: treated as the candidate's fault)."""


@dataclass
class Message:
    body: dict[str, Any]
    fds: list[int] = field(default_factory=list)


def send(sock: socket.socket, body: dict[str, Any], fds: list[int] | None = None) -> None:
    data = json.dumps(body, allow_nan=True, default=_json_default).encode()
    if len(data) > MAX_MESSAGE:
        raise ProtocolError(f"message of {len(data)} bytes exceeds {MAX_MESSAGE}")
    payload = _HEADER.pack(len(data)) + data
    first = socket.send_fds(sock, [payload[:65536]], fds) if fds else sock.send(payload[:65536])
    if first < min(len(payload), 65536):
        sock.sendall(payload[first:65536])
    if len(payload) > 65536:
        sock.sendall(payload[65536:])


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes):
        return base64.b64encode(obj).decode()
    return str(obj)


def recv(sock: socket.socket, limit: int = MAX_MESSAGE) -> Message:
    """One message; EOFError when the other side is gone, ProtocolError for anything malformed: oversized,
    not JSON, nested deeper than MAX_DEPTH, not an object."""
    head, fds, _flags, _addr = socket.recv_fds(sock, _HEADER.size, MAX_FDS)
    if not head:
        _close_all(fds)
        raise EOFError("the other side closed the connection")
    while len(head) < _HEADER.size:
        more = sock.recv(_HEADER.size - len(head))
        if not more:
            raise EOFError("connection closed inside a message header")
        head += more
    (n,) = _HEADER.unpack(head)
    if n > limit:
        _close_all(fds)
        raise ProtocolError(f"announced message of {n} bytes exceeds {limit}")
    chunks, got = [], 0
    while got < n:
        chunk = sock.recv(min(n - got, 1 << 20))
        if not chunk:
            _close_all(fds)
            raise EOFError("connection closed inside a message")
        chunks.append(chunk)
        got += len(chunk)
    data = b"".join(chunks)
    try:
        if _nesting(data) > MAX_DEPTH:
            raise ProtocolError(f"message nested deeper than {MAX_DEPTH} levels")
        body = json.loads(data)
    except (ValueError, RecursionError, ProtocolError) as exc:
        _close_all(fds)
        raise ProtocolError(f"malformed message: {str(exc)[:200]}") from exc
    if not isinstance(body, dict):
        _close_all(fds)
        raise ProtocolError("a message must be a JSON object")
    return Message(body, list(fds))


def _nesting(data: bytes) -> int:
    """Upper bound of the JSON nesting depth, from brackets outside strings, before json.loads recurses.

    Brackets inside strings are skipped by removing string literals first (escaped quotes included), so a
    long string of brackets is not mistaken for depth."""
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return 0
    import re

    bare = re.sub(rb'"(?:[^"\\]|\\.)*"', b'""', data)
    depth = deepest = 0
    for ch in bare.translate(None, delete=bytes(c for c in range(256) if c not in b"[]{}")):
        depth += 1 if ch in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _close_all(fds: list[int]) -> None:
    for fd in fds:
        try:
            os.close(fd)
        except OSError:
            pass


# --------------------------------------------------------------------------------------------------------
# Tensors, sandbox side: describe a tensor so the checker can map it


def _torch() -> Any:
    import torch

    return torch


def dtype_name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _byte_view(t: Any) -> Any:
    """A uint8 view of a contiguous tensor's bytes (bool and bfloat16 have no numpy type)."""
    torch = _torch()
    t = t.contiguous()
    return t.view(torch.uint8) if t.element_size() == 1 else t.view(-1).view(torch.uint8)


SEAL_ATTEMPTS = 4  # fresh memfds tried when the kernel refuses a seal because the file's pages are pinned


def export_cpu_sealed(t: Any, fds: list[int]) -> dict[str, Any]:
    """Copy a CPU tensor into a fresh memfd, seal it against writes and register the fd to send.

    F_SEAL_WRITE fails with EBUSY when some page of the file holds an extra reference for ~150 ms (the
    kernel's own wait): a pin (vmsplice, O_DIRECT, RDMA) or the kernel's passing work on the page. It
    happened once in a CI run, before any candidate code was loaded, so it is retried on a fresh file with
    fresh pages, a little later each time; only a file that stays busy through every attempt fails.
    """
    t = t.detach()
    nbytes = t.numel() * t.element_size()
    for attempt in range(SEAL_ATTEMPTS):
        try:
            fd = _sealed_copy(t, nbytes)
            break
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            if attempt == SEAL_ATTEMPTS - 1:
                raise OSError(errno.EBUSY, f"an output of {nbytes} bytes could not be sealed against writes: its "
                              f"pages stayed pinned through {SEAL_ATTEMPTS} fresh copies") from exc
            time.sleep(0.02 * 2**attempt)
    fds.append(fd)
    return {"kind": "cpu_sealed", "fd": len(fds) - 1, "dtype": dtype_name(t.dtype), "shape": list(t.shape),
            "nbytes": nbytes}


def _sealed_copy(t: Any, nbytes: int) -> int:
    fd = os.memfd_create("htam-out", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        if nbytes:
            os.ftruncate(fd, nbytes)
            with mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE) as m:
                torch = _torch()
                dst = torch.frombuffer(m, dtype=torch.uint8, count=nbytes)
                dst.copy_(_byte_view(t).reshape(-1))
                del dst
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except BaseException:
        os.close(fd)
        raise
    return fd


def new_cpu_shared(shape: list[int], dtype: Any, fds: list[int]) -> tuple[Any, dict[str, Any], Any]:
    """A CPU tensor in a fresh memfd that both sides map read-write (the sandbox's input buffers)."""
    torch = _torch()
    n = 1
    for d in shape:
        n *= int(d)
    nbytes = n * torch.empty((), dtype=dtype).element_size()
    fd = os.memfd_create("htam-in", os.MFD_CLOEXEC)
    os.ftruncate(fd, max(nbytes, 1))
    m = mmap.mmap(fd, max(nbytes, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    t = torch.frombuffer(m, dtype=dtype, count=n).view(shape) if n else torch.empty(shape, dtype=dtype)
    fds.append(fd)
    return t, {"kind": "cpu_shared", "fd": len(fds) - 1, "dtype": dtype_name(dtype), "shape": list(shape),
               "nbytes": nbytes}, m


def export_cuda(t: Any) -> dict[str, Any]:
    """torch's CUDA IPC description of `t`, as plain JSON fields."""
    from torch.multiprocessing.reductions import reduce_tensor

    _fn, args = reduce_tensor(t.detach())
    (_cls, size, stride, offset, _scls, dtype, device, handle, size_bytes, offset_bytes, _grad, ref_handle,
     ref_offset, event_handle, event_sync) = args
    return {"kind": "cuda_ipc", "dtype": dtype_name(dtype), "shape": list(size), "stride": list(stride),
            "offset": int(offset), "device": int(device), "handle": _b64(handle), "size_bytes": int(size_bytes),
            "offset_bytes": int(offset_bytes), "ref_handle": _b64(ref_handle), "ref_offset": int(ref_offset),
            "event_handle": _b64(event_handle), "event_sync": bool(event_sync)}


def _b64(v: Any) -> str | None:
    return None if v is None else base64.b64encode(bytes(v)).decode()


# --------------------------------------------------------------------------------------------------------
# Tensors, checker side: validate a description and map it


def _check_desc(desc: Any, kinds: tuple[str, ...]) -> tuple[Any, list[int]]:
    torch = _torch()
    if not isinstance(desc, dict) or desc.get("kind") not in kinds:
        raise ProtocolError(f"expected a tensor description of kind {kinds}, got {str(desc)[:200]}")
    if desc.get("dtype") not in DTYPES:
        raise ProtocolError(f"unknown dtype {desc.get('dtype')!r}")
    shape = desc.get("shape")
    if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape) or len(shape) > 16:
        raise ProtocolError(f"bad shape {shape!r}")
    return getattr(torch, desc["dtype"]), shape


def _numel(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def map_cpu(desc: dict[str, Any], fds: list[int], writable: bool) -> tuple[Any, Any]:
    """A tensor over the memfd a description names, and the mapping (kept alive with the tensor).

    writable=False (outputs): the memfd must be sealed against writes, so what the checker reads is what
    the sandbox handed over, whatever it does afterwards.
    """
    torch = _torch()
    dtype, shape = _check_desc(desc, ("cpu_shared",) if writable else ("cpu_sealed",))
    idx = desc.get("fd")
    if type(idx) is not int or not 0 <= idx < len(fds):
        raise ProtocolError(f"bad fd index {idx!r}")
    fd = fds[idx]
    nbytes = _numel(shape) * torch.empty((), dtype=dtype).element_size()
    if desc.get("nbytes") != nbytes or os.fstat(fd).st_size < nbytes:
        raise ProtocolError(f"shared memory of {os.fstat(fd).st_size} bytes for {nbytes} bytes of data")
    if not writable:
        seals = fcntl.fcntl(fd, getattr(fcntl, "F_GET_SEALS", 1034))
        if seals & _SEALS != _SEALS:
            raise ProtocolError("an output's shared memory is not sealed against writes")
    if nbytes == 0:
        return torch.empty(shape, dtype=dtype), None
    prot = mmap.PROT_READ | (mmap.PROT_WRITE if writable else 0)
    m = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, prot)
    if writable:
        t = torch.frombuffer(m, dtype=dtype, count=_numel(shape)).view(shape)
    else:
        # torch.frombuffer needs a writable buffer; a private copy-on-write mapping of the sealed file is
        # one, and its pages only diverge from the file if the checker itself writes to them.
        m.close()
        m = mmap.mmap(fd, nbytes, mmap.MAP_PRIVATE, mmap.PROT_READ | mmap.PROT_WRITE)
        t = torch.frombuffer(m, dtype=dtype, count=_numel(shape)).view(shape)
    return t, m


def check_addr(desc: Any) -> tuple[Any, list[int], int, int]:
    """(dtype, shape, address, bytes) of an output described where it lies in the sandbox's memory (`cpu_addr`,
    read there by the checker: checker/remote_memory.py), validated."""
    torch = _torch()
    dtype, shape = _check_desc(desc, ("cpu_addr",))
    nbytes = _numel(shape) * torch.empty((), dtype=dtype).element_size()
    addr = desc.get("addr")
    if type(addr) is not int or addr <= 0 or addr + nbytes >= 1 << 64 or desc.get("nbytes") != nbytes:
        raise ProtocolError(f"bad address or length in an output description: {str(desc)[:200]}")
    return dtype, shape, addr, nbytes


def map_cuda(desc: dict[str, Any]) -> Any:
    """Open a CUDA IPC description (validated field by field; rebuilt by torch's fixed function)."""
    torch = _torch()
    from torch.multiprocessing.reductions import rebuild_cuda_tensor

    dtype, shape = _check_desc(desc, ("cuda_ipc",))
    ints = ("offset", "device", "size_bytes", "offset_bytes", "ref_offset")
    if not all(type(desc.get(k)) is int and desc[k] >= 0 for k in ints):
        raise ProtocolError("bad integer field in a CUDA IPC description")
    stride = desc.get("stride")
    if not isinstance(stride, list) or len(stride) != len(shape) or not all(type(s) is int for s in stride):
        raise ProtocolError("bad stride in a CUDA IPC description")

    def raw(key: str) -> bytes | None:
        v = desc.get(key)
        if v is None:
            return None
        if not isinstance(v, str) or len(v) > 4096:
            raise ProtocolError(f"bad {key} in a CUDA IPC description")
        return base64.b64decode(v)

    return rebuild_cuda_tensor(torch.Tensor, torch.Size(shape), tuple(stride), desc["offset"],
                               torch.UntypedStorage, dtype, desc["device"], raw("handle"), desc["size_bytes"],
                               desc["offset_bytes"], False, raw("ref_handle"), desc["ref_offset"],
                               raw("event_handle"), bool(desc.get("event_sync")))


# --------------------------------------------------------------------------------------------------------
# Values: tensors and plain Python data in one JSON-able structure


def encode_value(value: Any, export: Any) -> Any:
    """Replace every tensor in nested lists/tuples/dicts by `export(tensor)`; other leaves must be JSON."""
    torch = _torch()
    if isinstance(value, torch.Tensor):
        return {"__tensor__": export(value)}
    if isinstance(value, (list, tuple)):
        return {"__seq__": type(value).__name__, "items": [encode_value(v, export) for v in value]}
    if isinstance(value, dict):
        return {"__dict__": [[str(k), encode_value(v, export)] for k, v in value.items()]}
    if value is None or isinstance(value, (bool, int, float, str)):
        return {"__value__": value}
    raise ProtocolError(f"cannot send a {type(value).__name__} between the checker and the sandbox")


def decode_value(data: Any, open_tensor: Any, depth: int = 0) -> Any:
    if depth > 32 or not isinstance(data, dict):
        raise ProtocolError("malformed value")
    if "__tensor__" in data:
        return open_tensor(data["__tensor__"])
    if "__seq__" in data:
        items = [decode_value(v, open_tensor, depth + 1) for v in data.get("items", [])]
        return tuple(items) if data["__seq__"] == "tuple" else items
    if "__dict__" in data:
        return {str(k): decode_value(v, open_tensor, depth + 1) for k, v in data["__dict__"]}
    if "__value__" in data:
        v = data["__value__"]
        if v is not None and not isinstance(v, (bool, int, float, str)):
            raise ProtocolError("malformed scalar")
        return v
    raise ProtocolError("malformed value")
