"""Pattern 19, verdict forging by a process that outlives the worker -- task: elementwise_leaky_relu.

Wrong outputs (slope 0.5 instead of the task's), and at import a daemon that leaves the candidate's process
group and session (a new session, then a fork whose parent exits) and for a minute rewrites every verdict
or status file it can find to "accepted, 40x over eager": the worker's scratch folders in the temp folder
(where the parent used to read verdict.json), the verdict store, files it creates where a verdict might be
looked for. Caught: the verdict reaches the parent from the checker through a pipe, never through a file;
the daemon is killed with the sandbox (the checker is a child subreaper); Landlock lets it write only in its
own scratch folder. The wrong slope then fails the trials.
"""

import json
import subprocess
import sys

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

# <<SHARED_EXTENSION>>

FORGED = {"status": "accepted", "accepted": True, "correct": True, "compiled": True, "flags": [], "trials": [],
          "timing": {}, "speedup_vs_eager": 40.0, "reason": "accepted: correct on all trials, 40.00x vs eager"}

DAEMON = r"""
import glob, json, os, sys, tempfile, time
if os.fork():
    os._exit(0)
forged = json.loads(sys.argv[1])
roots = {tempfile.gettempdir(), "/tmp", os.path.expanduser("~"), os.environ.get("HTAM_VERDICT_DIR", "/nonexistent"),
         os.environ.get("HTAM_CACHE_DIR", "/nonexistent")}
end = time.time() + 60
while time.time() < end:
    for root in roots:
        for pattern in ("htam-job-*/verdict.json", "htam-job-*/phase.json", "**/*.json"):
            for path in glob.glob(os.path.join(root, pattern), recursive=True)[:200]:
                try:
                    with open(path, "w") as f:
                        json.dump(forged, f)
                except OSError:
                    pass
        for folder in glob.glob(os.path.join(root, "htam-job-*")):
            try:
                with open(os.path.join(folder, "verdict.json"), "w") as f:
                    json.dump(forged, f)
            except OSError:
                pass
    time.sleep(0.05)
"""

subprocess.Popen([sys.executable, "-c", DAEMON, json.dumps(FORGED), "htam-cheat-daemon-p19"],
                 stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                 start_new_session=True)


class ModelNew(nn.Module):
    def __init__(self, negative_slope: float = 0.01):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.leaky(x.contiguous(), 0.5)
