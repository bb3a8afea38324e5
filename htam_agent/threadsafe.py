"""Process-wide locks around two things that are not thread-safe, for every layer (standard library only: the
evaluator imports this on bare GPU hosts).

- `parse`: `ast.parse` behind a lock. CPython 3.11 can raise "SystemError: AST constructor recursion depth
  mismatch" when several threads build Python ASTs at once (python/cpython#106905). The agent parses task and
  candidate sources on parallel graph branches and bench lanes (a bench run on 3.11.7 hit it once in 1200 runs).
- `FX_LOCK`: torch.fx's `symbolic_trace` patches `torch.nn.Module.__call__` and friends globally while it runs,
  so two threads tracing at once (the bench's parallel lanes, Send branches) corrupt each other's graphs
  ("module is not installed as a submodule"). Every tracer in the package takes this lock.
"""

from __future__ import annotations

import ast
import threading

_PARSE_LOCK = threading.Lock()
FX_LOCK = threading.RLock()


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _PARSE_LOCK:
        return ast.parse(source, filename)
