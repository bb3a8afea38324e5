"""The checker process: `python -m htam_agent.evaluation.checker --result-fd N` (started by parent/pool.py;
job JSON on stdin).

It becomes a child subreaper and starts its sandbox before it imports torch itself, so that the two imports
run side by side (on two cores: the slower of them, not their sum) while the job is on its way (or, forked by
the launcher with both imported already, forks its sandbox); then it runs
the job (`job.run_job`: the phases of `phases.py` over the state of `state.py`), adds what it learns once the sandbox is gone (its stderr, processes that
outlived it) and the job's baseline and identity, finalizes the verdict once, and writes it on the pipe
only it holds.
"""

from __future__ import annotations

import json
import os
import sys
import time

_T_START = time.perf_counter()
from ..common import gpu  # noqa: E402
from ..common.containment import process_tree  # noqa: E402
from .sandbox_client import SandboxClient  # noqa: E402 (the standard library only: no torch yet)


def main(argv: list[str] | None = None, forked: bool = False, started: float | None = None) -> int:
    """`forked` and `started` where the launcher forked this checker: its sandboxes are then forks of this
    process too (SandboxClient), and its start-up counts from the fork, not from the launcher's imports."""
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or argv[0] != "--result-fd":
        print("usage: python -m htam_agent.evaluation.checker --result-fd N (job JSON on stdin)", file=sys.stderr)
        return 2
    result_fd = int(argv[1])
    gpu.set_role("checker")
    gpu.install_tripwire()  # tests only (HTAM_TEST_CUDA_TRIPWIRE)
    process_tree.become_subreaper()
    process_tree.make_undumpable()
    # Starts now: its imports overlap ours and the wait for the job. Forked, a second sandbox costs a few
    # milliseconds: one waits for the reference, should the job time the eager baseline beside the
    # candidate (phases.pairs). Both are forked before any job is read, and before any thread starts here.
    sandbox = SandboxClient(env=dict(os.environ), forked=forked, watch=not forked)
    reference = SandboxClient(env=dict(os.environ), forked=True, watch=False) if forked else None
    boxes = [b for b in (sandbox, reference) if b is not None]
    for box in boxes:
        box.start_watch()
    try:
        from .job import run_job  # imports torch, beside the sandbox's own import of it
        from .state import Events
    except BaseException:  # a broken install: the sandbox must not outlive this process
        for box in boxes:
            box.kill()
            box.cleanup()
        raise

    imports = round(time.perf_counter() - (_T_START if started is None else started), 3)
    events = Events(result_fd)
    try:
        # Who to sweep if this checker is killed from outside (the parent's limit): the sandbox's uid and pid.
        events.emit({"event": "sandbox", "pid": sandbox.proc.pid,
                     "uid": sandbox.identity.uid if sandbox.identity else None})
        if reference is not None:
            events.emit({"event": "reference_sandbox", "pid": reference.proc.pid,
                         "uid": reference.identity.uid if reference.identity else None})
        line = sys.stdin.readline()
    except OSError:  # the parent is gone (killed while this spare was still importing): as with no job
        line = ""
    if not line.strip():  # no job (the parent is done): nothing of ours may stay, the parent's folder neither
        for box in boxes:
            box.kill()
            box.cleanup()
        process_tree.kill_tree(None)
        if os.path.basename(os.getcwd()).startswith("htam-job-"):
            import shutil

            shutil.rmtree(os.getcwd(), ignore_errors=True)
        os._exit(0)
    job = json.loads(line)
    gpu.job_arrived()  # CUDA is initialised from here on (job.py), never before: its sandboxes are forks of it
    keep = bool(job.get("keep_scratch")) and job["mode"] != "baseline"
    verdict = run_job(job, events, sandbox, reference)
    verdict.time_phase("imports", imports)
    verdict.record(sandbox_stderr_tail=sandbox.stderr_tail(2000))
    sandbox.kill()
    if keep:
        verdict.record(scratch=str(sandbox.scratch))
    process_tree.kill_tree(None)
    left = sandbox.leftovers()  # after every kill: none, or the verdict says so and is never stored
    sandbox.cleanup(keep=keep)
    if left:
        verdict.record(leftover_processes=len(left))
        verdict.add_flag("processes_outlived", f"{len(left)} process(es) the candidate started were still "
                         "alive after the evaluation (the next evaluations' timings may be affected)")
    events.emit({"event": "verdict", "verdict": verdict.finalize_job(job)})
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
