"""Peak memory of one cpp verdict (every process of the evaluation) against the task's own footprint (issue 36).

    python benchmarks/verdict_memory.py [--set bundled|kb|relu|all] [--kb /tmp/kb/KernelBench] [--jsonl OUT]

Each case runs in a fresh process of its own: an `Evaluator` with the options `htam eval` uses on the cpp backend
(eager baseline timed beside the candidate, default tier), the candidate evaluated once without the store. A thread
samples, every 50 ms, the proportional set size (PSS, `/proc/PID/smaps_rollup`) of that process and of all its
descendants (launcher, checker, both sandboxes, build children) and keeps the largest sum, with and without the
compiler's processes (the build's memory, 1-2 GiB for a torch extension whatever the task); the footprint is the
task's inputs + parameters + one output counted on the meta device (`tasks/footprint.py`). The budget of issue 36:
peak <= 2.5 x footprint + 1 GiB. Printed per case: one JSON line (status, seconds to verdict, peak PSS sum and its
parts, footprint, budget, for timed verdicts what a timed request cost beyond the call against the call, and the
phase times and costs: CPU per process, full-size buffers made, refilled, sealed and read).

Sets: `bundled`, each bundled task's cpp candidates at the cpp default size (small); `kb`, KernelBench problems at a
size that fits a 24 GiB machine (a copy of the file with one size global changed, made under a temporary folder:
KernelBench's files are never copied into this repository), with this folder's honest OpenMP candidates;
`relu`, the 1 GiB ReLU of issue 36 alone (19_ReLU at 4096 x 65536 float, `--size default`); `gpu` (on a GPU host),
KernelBench level-1 activations and norms at their own sizes with the fast-form honest candidates of
tests/cheats/kernelbench/fast/honest, the peak being the device's used memory (nvidia-smi) above its idle.
KernelBench: `mkdir -p /tmp/kb && git --git-dir=<mirror>/repo archive HEAD KernelBench | tar -x -C /tmp/kb`.
Measure alone: the samples and the timings are the machine's, and other work moves both.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
GiB = 1 << 30

# KernelBench problems at a size that fits 24 GiB: (file, global to change, its value, our honest candidate)
KB_CASES = [
    ("level1/19_ReLU.py", "dim", 65536, "relu_omp.py"),  # 4096 x 65536 float: 1 GiB in, 1 GiB out
    ("level1/23_Softmax.py", "dim", 65536, "softmax_omp.py"),
]


def _children() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree(root: int) -> list[int]:
    kids, out, todo = _children(), [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, []))
    return out


def pss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def _name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


BUILD_TOOLS = ("cc1plus", "cc1", "as", "ld", "collect2", "g++", "gcc", "c++", "ninja", "nvcc", "cicc", "ptxas", "sh")


def gpu_used_mib(index: int = 0) -> int:
    """The GPU's used memory (all processes), MiB, from nvidia-smi; 0 where it cannot be read."""
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i",
                              str(index)], capture_output=True, text=True, timeout=5).stdout
        return int(out.strip().splitlines()[0])
    except (OSError, ValueError, IndexError, subprocess.SubprocessError):
        return 0


class Sampler(threading.Thread):
    """The largest PSS sum over a process and its descendants, sampled every `period` seconds: all of them, and
    the evaluator's own (the compiler's processes left out: a torch extension's compile takes 1-2 GiB whatever
    the task's size, and is the build's, not the verdict's)."""

    def __init__(self, root: int, period: float = 0.05, gpu: bool = False) -> None:
        super().__init__(daemon=True)
        self.root, self.period, self.stop_at, self.gpu = root, period, threading.Event(), gpu
        self.peak_kib, self.peak_own_kib, self.peak_parts, self.samples = 0, 0, {}, 0
        self.peak_gpu_mib = 0

    def run(self) -> None:
        while not self.stop_at.is_set():
            if self.gpu:
                self.peak_gpu_mib = max(self.peak_gpu_mib, gpu_used_mib())
            parts = {pid: (_name(pid), pss_kib(pid)) for pid in tree(self.root)}
            total = sum(kib for _, kib in parts.values())
            own = sum(kib for name, kib in parts.values() if name not in BUILD_TOOLS)
            self.samples += 1
            self.peak_kib = max(self.peak_kib, total)
            if own > self.peak_own_kib:
                self.peak_own_kib = own
                self.peak_parts = {f"{pid}:{name}": kib for pid, (name, kib) in parts.items()
                                   if kib > 1024 and name not in BUILD_TOOLS}
            self.stop_at.wait(self.period)


def child(case: dict) -> dict:
    """One evaluation in this process, sampled; the result as a dict."""
    sys.path.insert(0, str(ROOT))
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions
    gpu = case.get("backend", "cpp") == "cuda"
    opts = EvalOptions(backend=case.get("backend", "cpp"), size=case.get("size"), build_root=case["build_root"],
                       fit=not case.get("no_fit", False))
    ev = Evaluator(opts, store=None)
    source = Path(case["candidate"]).read_text()
    if gpu:
        from htam_agent.bench import launcher_marker

        source = launcher_marker.expand(source, case["candidate"])
    cand = Candidate(task_path=case["task"], source=source)
    # the parent's own facts (found in a process of their own: this one, as `htam eval`'s, holds no torch)
    size = ev.fit(cand).size
    footprint = ev.facts(cand).footprint_bytes.get(size)
    if footprint is None:
        raise SystemExit(f"{case['task']}: no footprint at size {size!r} (does the task load?)")
    idle = sum(pss_kib(p) for p in tree(os.getpid()))
    idle_gpu = gpu_used_mib() if gpu else 0
    sampler = Sampler(os.getpid(), period=0.1 if gpu else 0.05, gpu=gpu)
    sampler.start()
    t0 = time.perf_counter()
    verdict = ev.evaluate(cand, use_store=False)
    wall = time.perf_counter() - t0
    sampler.stop_at.set()
    sampler.join()
    timing = (verdict.get("timing") or {}).get("candidate") or {}
    wc = verdict.get("wall_clock") or {}
    eager = (verdict.get("timing") or {}).get("eager") or {}
    budget = 2.5 * footprint + GiB
    peak = (sampler.peak_gpu_mib - idle_gpu) << 20 if gpu else sampler.peak_own_kib * 1024
    return {
        "case": case["name"], "size": verdict.get("size", size), "status": verdict.get("status"),
        "reason": str(verdict.get("reason"))[:200], "verdict_s": round(wall, 1),
        "backend": opts.backend, "footprint_GiB": round(footprint / GiB, 3),
        "peak_pss_GiB": round(sampler.peak_own_kib * 1024 / GiB, 3),
        "peak_device_GiB": round(peak / GiB, 3) if gpu else None,
        "peak_with_build_GiB": round(sampler.peak_kib * 1024 / GiB, 3),
        "idle_pss_GiB": round(idle * 1024 / GiB, 3), "budget_GiB": round(budget / GiB, 3),
        "peak_over_footprint": round(peak / max(footprint, 1), 2),
        "within_budget": peak <= budget, "samples": sampler.samples,
        "peak_parts_MiB": {k: v // 1024 for k, v in sorted(sampler.peak_parts.items(), key=lambda kv: -kv[1])},
        "call_ms": timing.get("median_ms"), "beyond_call_ms": wc.get("beyond_call_ms"),
        "eager_call_ms": eager.get("median_ms"),
        "eager_beyond_call_ms": (eager.get("wall_clock") or {}).get("beyond_call_ms"),
        "phase_seconds": verdict.get("phase_seconds"),
        # per phase: CPU s (user, sys) of the checker, the candidate's sandbox and the reference's, and the
        # full-size buffers made, refilled, sealed and read (MiB)
        "phase_costs": verdict.get("phase_costs"),
    }


def kb_case(kb: Path, rel: str, name: str, value: int, cand: str, tmp: Path) -> dict:
    """A copy of a KernelBench file with one size global set (under `tmp`, never in this repository)."""
    src = (kb / rel).read_text()
    new, n = re.subn(rf"^{name}\s*=\s*\d+", f"{name} = {value}", src, count=1, flags=re.M)
    if n != 1:
        raise SystemExit(f"{kb / rel}: no global `{name} = <int>` to set; update KB_CASES in {__file__}")
    stem = Path(rel).stem + f"_{name}{value}"
    path = tmp / f"{stem}.py"
    path.write_text(new)
    return {"name": f"kb:{stem}", "task": str(path), "candidate": str(HERE / "verdict_memory_candidates" / cand),
            "size": "default", "no_fit": True}  # measured at the size asked, never a smaller one that fits


# The GPU issue's set: KernelBench level-1 problems at their own sizes, with the fast-form honest candidates
GPU_CASES = [("level1/19_ReLU.py", "l1_19_relu.py"), ("level1/20_LeakyReLU.py", "l1_20_leakyrelu.py"),
             ("level1/23_Softmax.py", "l1_23_softmax.py"), ("level1/26_GELU_.py", "l1_26_gelu.py"),
             ("level1/32_HardTanh.py", "l1_32_hardtanh.py"), ("level1/36_RMSNorm_.py", "l1_36_rmsnorm.py")]


def cases(which: str, kb: Path, tmp: Path) -> list[dict]:
    sys.path.insert(0, str(ROOT))  # as the child does: this checkout, installed or not
    from htam_agent.bundled_tasks import candidate_files, suite_files

    out: list[dict] = []
    if which == "gpu":  # peak device memory at KernelBench's own sizes (--no-fit: never a smaller size)
        honest = ROOT / "tests" / "cheats" / "kernelbench" / "fast" / "honest"
        return [{"name": f"gpu:{Path(rel).stem}", "task": str(kb / rel), "candidate": str(honest / cand),
                 "size": "default", "backend": "cuda", "no_fit": True}
                for rel, cand in GPU_CASES if (honest / cand).exists()]
    if which in ("bundled", "all"):
        for task in suite_files():
            for cand in candidate_files(task.stem, "cpp"):
                out.append({"name": f"bundled:{task.stem}/{cand.stem}", "task": str(task), "candidate": str(cand)})
    if which in ("kb", "all", "relu"):
        if not kb.is_dir():
            raise SystemExit(f"{kb}: no KernelBench checkout; see this file's docstring (--kb)")
        picked = KB_CASES[:1] if which == "relu" else KB_CASES
        out += [kb_case(kb, rel, name, value, cand, tmp) for rel, name, value, cand in picked]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", default="all", choices=("bundled", "kb", "relu", "all", "gpu"))
    ap.add_argument("--kb", default="/tmp/kb/KernelBench", type=Path)
    ap.add_argument("--only", default="", help="run the cases whose name contains this text")
    ap.add_argument("--jsonl", default="", help="also append each case's JSON line to this file")
    ap.add_argument("--build-root", default="", help="build folder to reuse (builds are keyed by content)")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(json.loads(args.child))), flush=True)
        return
    build_root = args.build_root or tempfile.mkdtemp(prefix="htam-vm-build-")
    with tempfile.TemporaryDirectory(prefix="htam-vm-kb-") as tmp:
        rows = []
        for case in cases(args.set, args.kb, Path(tmp)):
            if args.only and args.only not in case["name"]:
                continue
            case["build_root"] = build_root
            proc = subprocess.run([sys.executable, __file__, "--child", json.dumps(case)], capture_output=True,
                                  text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)))
            if proc.returncode != 0:
                row = {"case": case["name"], "error": proc.stderr[-2000:]}
            else:
                row = json.loads(proc.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(json.dumps(row), flush=True)
            if args.jsonl:
                with open(args.jsonl, "a") as f:
                    f.write(json.dumps(row) + "\n")
    over = [r["case"] for r in rows if r.get("within_budget") is False]
    print(f"{len(rows)} cases, {len(over)} over the budget (2.5 x footprint + 1 GiB): {over}")


if __name__ == "__main__":
    main()
