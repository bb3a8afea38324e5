"""The checker's clock of record and the wire's limits, on data (no processes): what a forged in-process
clock can still gain, what no honest process can report, and what the decoder refuses."""

from __future__ import annotations

import ctypes
import errno
import fcntl
import json
import mmap
import os
import socket

import pytest

from htam_agent.evaluation.checker import judge
from htam_agent.evaluation.common import protocol
from htam_agent.evaluation.common.verdict import VerdictBuilder


def _stats(median: float) -> dict:
    return {"median_ms": median, "spread_pct": 1.0}


@pytest.mark.parametrize("device, slack", [("cpu", 0.10), ("cuda", 0.05)])
def test_a_forged_clock_gains_at_most_the_slack(device, slack):
    cal = [1.0] * 25  # the no-op request: flush, hand-over, round trip
    walls = [4.0] * 30  # the checker sees 3 ms of call in each request
    for claimed in (2.9, 2.0, 0.3):  # the candidate's process says less and less
        out = judge.WallClock(cal, walls, [claimed] * 30).settle(_stats(claimed), device)
        assert out["in_process_median_ms"] == claimed
        assert out["median_ms"] == pytest.approx(max(claimed, (1 - slack) * 3.0))
        assert out["median_ms"] >= (1 - slack) * 3.0 - 1e-9  # the gain is bounded, however large the lie
        assert out["clock"] == ("checker" if claimed < (1 - slack) * 3.0 else "in_process")


def test_an_honest_clock_is_the_figure_of_record():
    cal = [1.0, 1.1, 0.9, 1.05, 0.95] * 5
    walls = [3.0 + 0.01 * (i % 3) for i in range(30)]
    out = judge.WallClock(cal, walls, [2.0] * 30).settle(_stats(2.0), "cpu")
    assert out["clock"] == "in_process" and out["median_ms"] == 2.0
    assert out["checker_ms"] == pytest.approx(2.01, abs=0.02)


def test_noise_in_the_calibration_loosens_the_bound_instead_of_penalising():
    noisy = [0.5, 1.5] * 13  # IQR 1 ms over 26 requests: the median is known to about 0.18 ms
    clock = judge.WallClock(noisy, [3.0] * 30, [1.2] * 30)
    assert clock.noise_ms() == pytest.approx(0.93 / 26 ** 0.5)
    out = clock.settle(_stats(1.2), "cpu")
    assert out["median_ms"] == pytest.approx(max(1.2, 0.9 * (clock.checker_ms() - clock.noise_ms())), abs=1e-4)
    assert out["median_ms"] < 0.9 * clock.checker_ms()


def test_a_reported_call_longer_than_the_checkers_request_is_impossible():
    v = VerdictBuilder("t", "cpp")
    judge.WallClock([0.1] * 25, [0.15] * 30, [0.74] * 30).judge(v, "cpu")
    names = {f["name"] for f in v.get("flags")}
    assert "clock_below_reported" in names
    assert all(f["rejects"] for f in v.get("flags") if f["name"] == "clock_below_reported")
    honest = VerdictBuilder("t", "cpp")
    judge.WallClock([0.1] * 25, [0.8] * 30, [0.74] * 30).judge(honest, "cpu")
    assert "clock_below_reported" not in {f["name"] for f in honest.get("flags")}


def _pair():
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    a.settimeout(5)
    b.settimeout(5)
    return a, b


def _raw(sock, data: bytes) -> None:
    sock.sendall(protocol._HEADER.pack(len(data)) + data)


def test_a_deeply_nested_reply_is_a_protocol_error_not_a_recursion_error():
    a, b = _pair()
    with a, b:
        _raw(a, b'{"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}")
        with pytest.raises(protocol.ProtocolError, match="nested deeper"):
            protocol.recv(b)


def test_brackets_inside_strings_are_not_depth():
    a, b = _pair()
    with a, b:
        body = {"ok": True, "text": "[" * 5000 + "{" * 5000, "nested": [[[1]]]}
        protocol.send(a, body)
        assert protocol.recv(b).body == body


def test_a_reply_over_the_limit_is_refused_before_it_is_read():
    a, b = _pair()
    with a, b:
        a.sendall(protocol._HEADER.pack(protocol.MAX_REPLY + 1))
        with pytest.raises(protocol.ProtocolError, match="exceeds"):
            protocol.recv(b, limit=protocol.MAX_REPLY)


def test_not_json_and_not_an_object_are_protocol_errors():
    for data in (b"\xff\xfe not json", json.dumps([1, 2]).encode()):
        a, b = _pair()
        with a, b:
            _raw(a, data)
            with pytest.raises(protocol.ProtocolError):
                protocol.recv(b)


def test_a_slow_round_trip_after_the_last_call_is_not_work_after_return():
    """A loaded machine: every request takes ~5 ms beyond the call, so a 5.2 ms synchronize is a round trip."""
    loaded = [5.0, 5.1, 4.9, 5.2, 5.0] * 5
    v = VerdictBuilder("t", "cpp")
    judge.WallClock(loaded, [7.0] * 30, [2.0] * 30, drain_ms=5.21).judge(v, "cpu")
    assert "work_after_return" not in {f["name"] for f in v.get("flags")}
    busy = VerdictBuilder("t", "cpp")
    judge.WallClock(loaded, [7.0] * 30, [2.0] * 30, drain_ms=40.0).judge(busy, "cpu")
    assert "work_after_return" in {f["name"] for f in busy.get("flags")}


# -- sealing an output while the kernel holds its pages -----------------------------------------------------


class _iovec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]


def _pin_pages(fd: int, nbytes: int) -> int:
    """Pin a memfd's pages the way the kernel's own users do (vmsplice into a pipe nobody reads): until the
    pipe is drained, F_SEAL_WRITE on that file fails with EBUSY. Returns the pipe's read end."""
    r, w = os.pipe()
    m = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    buf = (ctypes.c_char * nbytes).from_buffer(m)
    iov = _iovec(ctypes.addressof(buf), min(nbytes, 4096))
    assert ctypes.CDLL(None, use_errno=True).vmsplice(w, ctypes.byref(iov), 1, 0) > 0
    del buf
    m.close()
    os.close(w)
    return r


class _PinningFcntl:
    """protocol's `fcntl`, except that the first `pins` seals find the file's pages pinned (for real)."""

    def __init__(self, pins: int) -> None:
        self.pins, self.pipes, self.seals = pins, [], 0

    def __getattr__(self, name: str):
        return getattr(fcntl, name)

    def fcntl(self, fd: int, cmd: int, arg: int = 0):
        if cmd == fcntl.F_ADD_SEALS:
            self.seals += 1
            if self.seals <= self.pins:
                self.pipes.append(_pin_pages(fd, os.fstat(fd).st_size))
        return fcntl.fcntl(fd, cmd, arg)


def _open_fds() -> int:
    """This process's descriptors of output memfds (other tests' threads may open other files meanwhile)."""
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            n += os.readlink(f"/proc/self/fd/{fd}").startswith("/memfd:htam-out")
        except OSError:
            pass
    return n


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd is Linux-only")
def test_an_output_whose_pages_are_briefly_pinned_is_sealed_on_a_fresh_copy(monkeypatch):
    torch = pytest.importorskip("torch")
    fake = _PinningFcntl(pins=1)
    monkeypatch.setattr(protocol, "fcntl", fake)
    before, fds = _open_fds(), []
    t = torch.arange(3000, dtype=torch.float32)
    desc = protocol.export_cpu_sealed(t, fds)
    for r in fake.pipes:
        os.close(r)
    assert fake.seals == 2 and len(fds) == 1  # the kernel refused the first file, the second was sealed
    got, m = protocol.map_cpu(desc, fds, writable=False)
    assert torch.equal(got, t)
    del got
    m.close()
    os.close(fds[0])
    assert _open_fds() == before  # the refused file was closed


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="memfd is Linux-only")
def test_an_output_that_stays_pinned_fails_with_a_clear_error_and_leaks_nothing(monkeypatch):
    torch = pytest.importorskip("torch")
    fake = _PinningFcntl(pins=protocol.SEAL_ATTEMPTS)
    monkeypatch.setattr(protocol, "fcntl", fake)
    before, fds = _open_fds(), []
    with pytest.raises(OSError, match="stayed pinned through") as info:
        protocol.export_cpu_sealed(torch.ones(100), fds)
    for r in fake.pipes:
        os.close(r)
    assert info.value.errno == errno.EBUSY and fds == [] and fake.seals == protocol.SEAL_ATTEMPTS
    assert _open_fds() == before
