"""A spare checker whose parent died while it was still starting (the parent killed -9, a Ray worker gone)
leaves nothing behind: not its sandbox, not the parent's `htam-job-*` folder it runs in.

The scenario runs in a small process of its own that is a child subreaper, so that the sandbox, re-parented
when the checker exits, is still seen (and reaped) there; this test process stays as it was."""

from __future__ import annotations

import json
import subprocess
import sys

SCENARIO = r'''
import json, os, subprocess, sys, tempfile, time
from htam_agent.evaluation.common.containment import process_tree
from htam_agent.evaluation.parent.pool import scrubbed_env

process_tree.become_subreaper()
scratch = tempfile.mkdtemp(prefix="htam-job-")
r, w = os.pipe()
os.close(r)  # the parent's end of the verdict pipe is gone before the spare's first event
proc = subprocess.Popen([sys.executable, "-m", "htam_agent.evaluation.checker", "--result-fd", str(w)],
                        cwd=scratch, env=scrubbed_env(), stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, pass_fds=(w,), start_new_session=True)  # as pool.Spare
os.close(w)
_, err = proc.communicate(timeout=120)
end = time.monotonic() + 10
while process_tree.descendants() and time.monotonic() < end:
    try:
        os.waitpid(-1, os.WNOHANG)
    except ChildProcessError:
        pass
    time.sleep(0.1)
left = sorted(process_tree.descendants())
process_tree.kill_tree(None)
print(json.dumps({"rc": proc.returncode, "stderr": err.decode(errors="replace")[-1500:],
                  "folder_left": os.path.exists(scratch), "alive": left}))
'''


def test_a_spare_whose_parent_is_gone_removes_its_sandbox_and_folder():
    out = subprocess.run([sys.executable, "-c", SCENARIO], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["rc"] == 0 and "Traceback" not in got["stderr"], got["stderr"]
    assert not got["folder_left"], "the parent's htam-job folder was left behind"
    assert got["alive"] == [], f"processes the spare started are still alive: {got['alive']}"
