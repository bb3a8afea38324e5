"""One lock for torch.fx tracing in this process.

`symbolic_trace` patches `torch.nn.Module.__call__` and friends globally while it runs, so two threads tracing
at once (the bench's parallel lanes, Send branches) corrupt each other's graphs ("module is not installed as a
submodule"). Every tracer in the package takes this lock.
"""

from __future__ import annotations

import threading

FX_LOCK = threading.RLock()
