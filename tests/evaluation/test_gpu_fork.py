"""The launcher where a GPU is visible (issue 36): nothing initialises CUDA before a fork, and a process that did
refuses to fork and falls back to fresh interpreters, saying so.

No GPU here: `HTAM_TEST_GPU_VISIBLE=1` makes the evaluator take its GPU-host path (launcher on, sandbox keeping
the user, /dev/shm writable), and `HTAM_TEST_CUDA_TRIPWIRE=FILE` makes every evaluator process record each call
of torch.cuda's driver-initialising functions (they still run) with its role and whether its job had arrived.
Each test runs the real command, `python -m htam_agent.evaluation eval`, in a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from htam_agent.bundled_tasks import CANDIDATES_DIR, SUITE_DIR
from htam_agent.evaluation.common import gpu
from htam_agent.evaluation.parent import launcher_client

pytestmark = pytest.mark.skipif(not launcher_client.enabled() or gpu.visible(),
                                reason="the launcher serves on Linux only; a real GPU is tested on the GPU host")

TASK = SUITE_DIR / "elementwise_leaky_relu.py"
CANDS = CANDIDATES_DIR / "elementwise_leaky_relu"


def _eval(tmp_path: Path, candidate: Path, *extra: str, **env: str) -> tuple[dict, list[dict], str, int]:
    """(verdict, tripwire records, stderr, the parent's pid) of one `eval` on the GPU-host path."""
    trip = tmp_path / "tripwire.jsonl"
    full = {**os.environ, "HTAM_TEST_GPU_VISIBLE": "1", "HTAM_TEST_CUDA_TRIPWIRE": str(trip), **env}
    full.pop("HTAM_LAUNCHER", None)
    proc = subprocess.Popen([sys.executable, "-m", "htam_agent.evaluation", "eval", str(TASK), str(candidate),
                             "--no-store", "--json", "--no-alt", "--trials", "2", *extra],
                            env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=600)
    verdict = json.loads(out)
    records = [json.loads(line) for line in trip.read_text().splitlines()] if trip.exists() else []
    return verdict, records, err, proc.pid


def test_the_gpu_host_path_initialises_cuda_only_after_a_job_arrived(tmp_path):
    """A cuda candidate on the GPU-host path: the parent asks NVML, never torch.cuda; the launcher forks the
    checkers, and they touch torch.cuda only once their job has arrived (here CUDA is missing, so the job ends
    in the evaluator's error, after the calls the tripwire records)."""
    verdict, records, err, parent = _eval(tmp_path, CANDS / "cuda_fast.py", "--no-timing")
    assert "not compiled with CUDA" in verdict["reason"], verdict["reason"]
    assert records, f"no torch.cuda call recorded: the tripwire is not in place ({err[-500:]})"
    early = [r for r in records if not r["after_job"] or r["role"] in ("parent", "launcher", "unknown")]
    assert early == [], "torch.cuda called before a job arrived:\n" + "\n".join(
        f"{r['role']} {r['fn']}:\n{r['stack']}" for r in early)
    checkers = {r["pid"]: r["ppid"] for r in records if r["role"] == "checker"}
    assert checkers and all(ppid != parent for ppid in checkers.values()), \
        f"the checker was not forked by the launcher (its parent is the evaluating process {parent})"
    assert "has CUDA initialised" not in err


@pytest.mark.slow  # builds the honest cpp candidate (and the precompiled header, first in a run)
def test_a_launcher_with_cuda_initialised_refuses_to_fork_and_says_so(tmp_path):
    """Something in the launcher calls torch.cuda.is_available() before its first fork: it refuses, the parent
    logs why and starts the checker as a fresh interpreter, and the verdict is the same honest one."""
    verdict, records, err, parent = _eval(tmp_path, CANDS / "cpp_naive.py", "--no-timing", "--backend", "cpp",
                                          HTAM_TEST_CUDA_TOUCH="launcher")
    assert verdict["status"] == "accepted", verdict["reason"]
    assert any(r["role"] == "launcher" and r["fn"] == "is_available" for r in records), records
    assert "has CUDA initialised" in err and "fresh interpreters" in err, err[-1500:]
    assert verdict["phase_seconds"]["imports"] > 0.3, "the checker still came from the launcher"


@pytest.mark.slow  # builds the honest cpp candidate (and the precompiled header, first in a run)
def test_a_checker_with_cuda_initialised_starts_its_sandbox_fresh(tmp_path):
    """The checker itself touched CUDA before its job: its sandbox is started, not forked, and it says so."""
    verdict, records, err, parent = _eval(tmp_path, CANDS / "cpp_naive.py", "--no-timing", "--backend", "cpp",
                                          HTAM_TEST_CUDA_TOUCH="checker")
    assert verdict["status"] == "accepted", verdict["reason"]
    assert any(r["role"] == "checker" and not r["after_job"] for r in records), records
    assert "not forking the sandbox" in verdict["checker_stderr_tail"], verdict["checker_stderr_tail"][-800:]
    assert "has CUDA initialised" not in err  # the launcher itself stayed clean and kept forking


def test_no_cuda_here_blocks_no_fork():
    """In this test process (torch imported, CUDA never used) forking is allowed, as in the launcher."""
    import torch  # noqa: F401

    assert gpu.fork_blocker() is None


FAKE_NVML = r"""
#include <stdio.h>
typedef struct { unsigned long long total, free, used; } memory_t;
int nvmlInit_v2(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned int *n) { *n = 2; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h) { if (i >= 2) return 2; *h = (void *)(long)(i + 1); return 0; }
int nvmlDeviceGetName(void *h, char *buf, unsigned int n) { snprintf(buf, n, "Fake GPU %ld", (long)h - 1); return 0; }
int nvmlDeviceGetUUID(void *h, char *buf, unsigned int n) { snprintf(buf, n, "GPU-%ld1234-5678", (long)h - 1); return 0; }
int nvmlDeviceGetMemoryInfo(void *h, memory_t *m) {
    m->total = 80ULL << 30; m->free = (unsigned long long)(long)h * (10ULL << 30); m->used = m->total - m->free; return 0;
}
"""


@pytest.mark.parametrize(("visible", "count", "name", "free_gib"), [
    (None, 2, "Fake GPU 0", 10), ("1", 1, "Fake GPU 1", 20), ("GPU-1123", 1, "Fake GPU 1", 20),
    ("0,7", 1, "Fake GPU 0", 10), ("7", 0, None, None)])
def test_the_parent_reads_the_gpu_from_nvml_as_cuda_numbers_it(tmp_path, visible, count, name, free_gib):
    """NVML through ctypes, against a stand-in libnvidia-ml built here (no GPU on this host): the count, name
    and free memory of CUDA's device 0 under CUDA_VISIBLE_DEVICES, and what the parent makes of them."""
    # gcc is there wherever the suite runs (tests/system_packages.sh installs g++, which brings it): no skip that
    # could hide this test
    (tmp_path / "nvml.c").write_text(FAKE_NVML)
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(tmp_path / "libnvidia-ml.so.1"), str(tmp_path / "nvml.c")],
                   check=True)
    code = ("import json; from htam_agent.evaluation.common import gpu; from htam_agent.evaluation.parent import fit, "
            "store; print(json.dumps([gpu.device_count(), gpu.device_name(0), gpu.free_bytes(0), "
            "fit.free_bytes('cuda'), store.device_name('cuda'), gpu.fork_blocker()]))")
    env = {**os.environ, "LD_LIBRARY_PATH": str(tmp_path)}
    env.pop("CUDA_VISIBLE_DEVICES", None)
    env.pop("HTAM_DEVICE_NAME", None)
    if visible is not None:
        env["CUDA_VISIBLE_DEVICES"] = visible
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    n, got_name, free, fit_free, store_name, blocker = json.loads(out.stdout)
    assert (n, got_name) == (count, name)
    assert free == fit_free == (None if free_gib is None else free_gib << 30)
    if name is not None:
        assert store_name == name  # the verdict store's key names the device CUDA will use
    assert blocker is None  # NVML initialises no CUDA: the process may still fork


def test_a_launcher_started_early_and_never_asked_is_killed_at_exit():
    """`eval` starts the launcher before it knows whether the store answers; when nothing asks it for a
    checker, the exit kills it (forked nothing, perhaps still importing) instead of waiting for its imports."""
    import signal

    from htam_agent.evaluation.parent import pool

    launcher_client.shutdown()
    pool.start_early()
    started = launcher_client._current
    assert started is not None and started.proc.poll() is None
    launcher_client.shutdown()
    assert started.proc.returncode == -signal.SIGKILL
    assert not started.folder.exists()
