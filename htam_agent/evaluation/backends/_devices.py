"""Device primitives shared by backends: CUDA (events, L2 flush) and CPU (perf_counter, LLC flush)."""

from __future__ import annotations

import os
import platform
import time
from typing import Any

from .base import Timer


class CudaTimer(Timer):
    """CUDA events around the call, with a device-wide synchronize before the end event.

    The synchronize makes work left on other streams or threads count (cheat patterns 3 and 4); it adds a
    few microseconds, negligible against the >= 1 ms tasks we time.
    """

    def __init__(self) -> None:
        import torch

        self._torch = torch
        self._start = torch.cuda.Event(enable_timing=True)
        self._end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        self._start.record()

    def stop(self) -> None:
        self._torch.cuda.synchronize()
        self._end.record()

    def elapsed_ms(self) -> float:
        self._end.synchronize()
        return float(self._start.elapsed_time(self._end))


class CpuTimer(Timer):
    def __init__(self) -> None:
        self._t0 = self._t1 = 0

    def start(self) -> None:
        self._t0 = time.perf_counter_ns()

    def stop(self) -> None:
        self._t1 = time.perf_counter_ns()

    def elapsed_ms(self) -> float:
        return (self._t1 - self._t0) / 1e6


class CudaDevice:
    """The GPU side shared by the cuda and triton backends."""

    def __init__(self) -> None:
        self._flush_buf: Any = None

    def device(self, index: int = 0) -> Any:
        import torch

        return torch.device("cuda", index)

    def synchronize(self) -> None:
        import torch

        torch.cuda.synchronize()

    def new_timer(self) -> Timer:
        return CudaTimer()

    def flush_cache(self) -> None:
        import torch

        if self._flush_buf is None:
            props = torch.cuda.get_device_properties(torch.cuda.current_device())
            l2 = int(getattr(props, "L2_cache_size", 0) or 64 << 20)
            self._flush_buf = torch.empty(max(2 * l2, 8 << 20) // 4, dtype=torch.int32, device="cuda")
        self._flush_buf.zero_()

    def release_flush(self) -> None:
        self._flush_buf = None

    def empty_cache(self) -> None:
        import torch

        torch.cuda.empty_cache()

    def device_info(self) -> dict[str, Any]:
        import torch

        idx = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        return {
            "type": "cuda",
            "name": props.name,
            "capability": f"{props.major}.{props.minor}",
            "memory_gb": round(props.total_memory / 2**30, 1),
            "l2_mb": round(int(getattr(props, "L2_cache_size", 0)) / 2**20, 1),
            "sms": props.multi_processor_count,
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
        }

    @staticmethod
    def arch_list() -> str:
        """TORCH_CUDA_ARCH_LIST for the visible device only: one SASS target, no PTX, the fastest build."""
        import torch

        major, minor = torch.cuda.get_device_capability()
        return f"{major}.{minor}"


def cpu_name() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


class CpuDevice:
    """The CPU side of the cpp backend: a fixed thread count, LLC flush by writing a large buffer."""

    def __init__(self) -> None:
        self._flush_buf: Any = None
        self.threads: int | None = None

    def set_threads(self, threads: int | None) -> None:
        import torch

        self.threads = threads or os.cpu_count() or 1
        torch.set_num_threads(self.threads)
        os.environ["OMP_NUM_THREADS"] = str(self.threads)

    def device(self, index: int = 0) -> Any:
        import torch

        return torch.device("cpu")

    def synchronize(self) -> None:
        """CPU kernels are synchronous; threads left running are caught by the thread-count check."""

    def new_timer(self) -> Timer:
        return CpuTimer()

    def flush_cache(self) -> None:
        import torch

        if self._flush_buf is None:
            self._flush_buf = torch.empty((64 << 20) // 4, dtype=torch.int32)
        self._flush_buf.fill_(1)

    def release_flush(self) -> None:
        self._flush_buf = None  # 64 MB the untimed phases after timing have no use for (issue 36)

    def device_info(self) -> dict[str, Any]:
        import torch

        return {
            "type": "cpu",
            "name": cpu_name(),
            "cores": os.cpu_count(),
            "threads": self.threads or torch.get_num_threads(),
            "torch": torch.__version__,
        }
