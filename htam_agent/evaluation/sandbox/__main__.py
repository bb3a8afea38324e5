"""The sandbox process: `python -m htam_agent.evaluation.sandbox --fd N` (started by the checker, never by hand),
or run by name the same way in a fork of a checker that the launcher made (launcher/)."""

from __future__ import annotations

import socket
import sys

from ..common import gpu
from .server import Sandbox, _warm_profiler


def serve(fd: int) -> None:
    """Serve the checker on socket `fd`."""
    sock = socket.socket(fileno=fd)
    gpu.set_role("sandbox")
    gpu.install_tripwire()  # tests only (HTAM_TEST_CUDA_TRIPWIRE); a forked sandbox has its checker's already
    _warm_profiler()
    try:  # when memory runs out, the kernel's OOM killer takes this process, not the checker
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("1000")
    except OSError:
        pass
    Sandbox(sock).serve()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "--fd":
        print("usage: python -m htam_agent.evaluation.sandbox --fd N (started by the checker)", file=sys.stderr)
        return 2
    serve(int(argv[1]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
