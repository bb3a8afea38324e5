"""A checker-side `Run` over a real sandbox process, for tests of single phases without a C++ build.

The candidate is plain Python (a `ModelNew` without a kernel): the static checks are skipped, everything
else (the sandbox process, the protocol, shared memory, the checker's judgements) is the real thing.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from htam_agent.evaluation.backends import get_backend
from htam_agent.evaluation.checker import phases as checker
from htam_agent.evaluation.checker.sandbox_client import SandboxClient
from htam_agent.evaluation.checker.state import Events, Run
from htam_agent.evaluation.common.verdict import VerdictBuilder


@contextlib.contextmanager
def python_candidate_run(source: str, task: Any, tmp_path: Path, slot: str = "main") -> Iterator[Run]:
    sandbox = SandboxClient(env=dict(os.environ))
    build_root = str(tmp_path / "build")
    if sandbox.dropped:  # a uid of its own writes only to a folder of its group (as the checker gives it)
        build_root = sandbox.build_folder(build_root)
    job = {"backend": "cpp", "build_root": build_root, "mode": "evaluate", "candidate_source": source,
           "size": task.size, "run_timeout_s": 60, "compile_timeout_s": 60}
    run = Run(job=job, verdict=VerdictBuilder(task.name, "cpp"), events=Events(None), sandbox=sandbox, seed=1234)
    try:
        run.backend = get_backend("cpp")
        run.device = run.backend.device(0)
        run.task = task
        run.enter("compile")
        sandbox.ask("prepare", run.left(), backend="cpp", build_root=job["build_root"], threads=None,
                    fast_build=True, device_index=0, probe=True, landlock=True)
        sandbox.ask("load", run.left(), source=source)
        run.ref, init = checker.build_reference(task, run.device)
        checker.build_candidate(run, slot, run.ref, init)
        run.enter("test")
        yield run
    finally:
        sandbox.kill()
        sandbox.cleanup()
