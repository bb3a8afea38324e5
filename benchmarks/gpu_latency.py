"""Issue 36's GPU latency figures, each with the launcher (checkers and sandboxes forked from one pre-imported
process, CUDA initialised only after a job arrives) and without it (`HTAM_LAUNCHER=0`: fresh interpreters, the
GPU path before issue 36), on the same machine in one run.

    python benchmarks/gpu_latency.py [--backend cuda] [--n 16] [--repeats 2] [--batch-modes launcher] [--out F]

Imports torch, numpy and the standard library only (a bare GPU host). A shared build root and verdict store
in a fresh temporary folder; first (not timed) one `eval` builds the candidate and stores the task's baseline
(a GPU's baselines are stored and replayed). Then, per mode, each in processes of its own:

- eval_wall: `python -m htam_agent.evaluation eval TASK CAND --store S` of the built candidate, the whole
  command's wall (its own imports included); the candidate made new to the store by a Python comment, so its
  verdict is measured again while its build and the baseline are reused. Budget <= 10 s.
- built_to_verdict: in one process, the built candidate evaluated again (full checks and timing, store not
  read), after one evaluation that warms the process: the wall of each. Budget <= 3 s.
- batch: N new candidates of the task (the CUDA source made distinct by a comment, so every build is cold)
  with `evaluate_batch`, the baseline stored already. Budget <= 60 s for 16. Only the modes of --batch-modes.

Printed: one JSON line per measurement as it comes, then a summary (medians) per mode; --out writes it all.
Each verdict's `checker_imports_s` (the checker's start-up as it records it) says whether it was forked
(hundredths of a second) or started fresh (seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "htam_agent" / "bundled_tasks" / "suite"
CANDS = ROOT / "htam_agent" / "bundled_tasks" / "candidates"
DEFAULT = {"cuda": ("elementwise_leaky_relu", "cuda_fast.py"), "cpp": ("elementwise_leaky_relu", "cpp_naive.py")}

PROBE = r'''
import json, os, time
t = time.perf_counter()
from htam_agent.evaluation.common import gpu
facts = {"nvml_count": gpu.device_count(), "nvml_name": gpu.device_name(0), "nvml_free_gib": None,
         "nvml_s": None}
free = gpu.free_bytes(0)
facts["nvml_free_gib"] = None if free is None else round(free / 2**30, 2)
facts["nvml_s"] = round(time.perf_counter() - t, 3)
import torch, torch._dynamo  # what the launcher imports (Triton through dynamo), then its warm-up
from htam_agent.evaluation.checker import job  # noqa: F401
from htam_agent.evaluation.launcher.__main__ import _warm
_warm()
facts["blocker_after_imports"] = gpu.fork_blocker()
facts["threads_after_imports"] = len(os.listdir("/proc/self/task"))
facts["torch"] = torch.__version__
facts["torch_free_gib"] = round(torch.cuda.mem_get_info(0)[0] / 2**30, 2) if torch.cuda.is_available() else None
facts["blocker_after_cuda"] = gpu.fork_blocker()  # must name the initialised driver
print("RESULT" + json.dumps(facts))
'''

IN_PROCESS = r'''
import json, sys, time
from pathlib import Path
from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import VerdictStore
what, backend, task, store, repeats = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
sources = json.loads(Path(sys.argv[6]).read_text())
baselines = tuple(b for b in sys.argv[7].split(",") if b)
ev = Evaluator(EvalOptions(backend=backend, baselines=baselines), store=VerdictStore(store))
def facts(v, wall):
    ph = v.get("phase_seconds") or {}
    return {"status": v["status"], "wall_s": round(wall, 3), "verdict_wall_s": v.get("wall_seconds"),
            "checker_imports_s": ph.get("imports"), "sandbox_imports_s": ph.get("sandbox_imports"),
            "reason": str(v.get("reason"))[:160]}
out = []
if what == "built_to_verdict":
    cand = Candidate(task_path=task, source=sources[0])
    ev.evaluate(cand, use_store=False)  # warms this process (its spares, the baseline read from the store)
    for _ in range(repeats):
        t = time.perf_counter()
        v = ev.evaluate(cand, use_store=False)
        out.append(facts(v, time.perf_counter() - t))
else:
    cands = [Candidate(task_path=task, source=s) for s in sources]
    if baselines:
        ev.baseline(cands[0])  # from the store: the batch's figure excludes it, as a run measures it once per task
    t = time.perf_counter()
    vs = ev.evaluate_batch(cands)
    wall = time.perf_counter() - t
    out.append({"wall_s": round(wall, 3), "n": len(vs), "statuses": [v["status"] for v in vs],
                "verdict_wall_s": [v.get("wall_seconds") for v in vs],
                "checker_imports_s": [(v.get("phase_seconds") or {}).get("imports") for v in vs]})
print("RESULT" + json.dumps(out))
'''


def env_for(mode: str, work: Path) -> dict[str, str]:
    env = dict(os.environ, HTAM_BUILD_DIR=str(work / "builds"), PYTHONPATH=str(ROOT))
    env["HTAM_LAUNCHER"] = "0" if mode == "fresh" else "1"
    return env


def eval_once(mode: str, work: Path, task: Path, cand: Path, baselines: str, timeout: float) -> dict:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "htam_agent.evaluation", "eval", str(task), str(cand),
                          "--store", str(work / "store"), "--json", "--baselines", baselines], env=env_for(mode, work), cwd=ROOT,
                         capture_output=True, text=True, timeout=timeout)
    wall = time.perf_counter() - t
    try:
        v = json.loads(out.stdout)
    except ValueError:
        return {"error": f"rc {out.returncode}: {out.stderr[-1500:]}", "wall_s": round(wall, 3)}
    ph = v.get("phase_seconds") or {}
    return {"status": v["status"], "wall_s": round(wall, 3), "verdict_wall_s": v.get("wall_seconds"),
            "checker_imports_s": ph.get("imports"), "sandbox_imports_s": ph.get("sandbox_imports"),
            "phase_seconds": ph, "launcher_refused": "has CUDA initialised" in out.stderr,
            "reason": str(v.get("reason"))[:160]}


def in_process(what: str, mode: str, work: Path, backend: str, task: Path, sources: list[str], repeats: int,
               baselines: str, timeout: float) -> list[dict]:
    src = work / f"{what}-{mode}.json"
    src.write_text(json.dumps(sources))
    out = subprocess.run([sys.executable, "-c", IN_PROCESS, what, backend, str(task), str(work / "store"),
                          str(repeats), str(src), baselines], env=env_for(mode, work), cwd=ROOT, capture_output=True,
                         text=True, timeout=timeout)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT")]
    if not lines:
        return [{"error": f"rc {out.returncode}: {out.stderr[-1500:]}"}]
    return json.loads(lines[-1][len("RESULT"):])


def distinct_kernel(source: str, tag: str) -> str:
    """The same candidate with a comment in its device source: a different build, the same work."""
    for anchor in ('_SOURCE_TEMPLATE = r"""', "#include"):
        if anchor in source:
            return source.replace(anchor, f"{anchor}\n// {tag}\n" if anchor.endswith('"""') else f"// {tag}\n{anchor}", 1)
    raise SystemExit("no place for a comment in the candidate's device source")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda", choices=sorted(DEFAULT))
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", default="launcher,fresh")
    ap.add_argument("--batch-modes", default="launcher")
    ap.add_argument("--baselines", default="eager,compile", help="as eval's --baselines; empty for none")
    ap.add_argument("--out")
    args = ap.parse_args()
    modes = [m for m in args.modes.split(",") if m]
    bad = [m for m in modes + args.batch_modes.split(",") if m and m not in ("launcher", "fresh")]
    if bad:
        raise SystemExit(f"--modes/--batch-modes: {bad} are not launcher or fresh")
    name, file = DEFAULT[args.backend]
    task, cand = SUITE / f"{name}.py", CANDS / name / file
    work = Path(tempfile.mkdtemp(prefix="htam-latency-"))
    from htam_agent.evaluation.common import gpu

    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "host": platform.node(), "cores": os.cpu_count(),
                 "device": gpu.device_name(0) if args.backend != "cpp" else platform.processor(),
                 "task": name, "candidate": file, "runs": []}
    print(json.dumps({k: v for k, v in res.items() if k != "runs"}), flush=True)

    def record(entry: dict) -> None:
        res["runs"].append(entry)
        print(json.dumps(entry), flush=True)
        if args.out:  # written as it comes: a run cut short keeps what it measured
            Path(args.out).write_text(json.dumps(res, indent=1))

    probe = subprocess.run([sys.executable, "-c", PROBE], env=env_for("launcher", work), cwd=ROOT,
                           capture_output=True, text=True, timeout=300)
    found = [ln for ln in probe.stdout.splitlines() if ln.startswith("RESULT")]
    record({"what": "probe (NVML, the launcher's imports, fork_blocker before and after CUDA)",
            **(json.loads(found[-1][6:]) if found else {"error": probe.stderr[-1500:]})})
    t = time.perf_counter()
    first = eval_once("launcher", work, task, cand, args.baselines, 600)  # builds the candidate, stores the baseline
    record({"what": "prepare (build + baseline, not a figure)", **first, "wall_s": round(time.perf_counter() - t, 2)})
    source = cand.read_text()
    for i in range(args.repeats):
        for mode in modes:
            variant = work / f"{cand.stem}_{mode}{i}.py"
            variant.write_text(source + f"\n# eval_wall {mode} {i}\n")  # a new verdict, the same build
            record({"what": "eval_wall", "mode": mode, **eval_once(mode, work, task, variant, args.baselines, 600)})
    for mode in modes:
        for r in in_process("built_to_verdict", mode, work, args.backend, task,
                            [source + f"\n# built_to_verdict {mode}\n"], args.repeats + 1, args.baselines, 600):
            record({"what": "built_to_verdict", "mode": mode, **r})
    tag = f"latency{int(time.time())}"
    for mode in [m for m in args.batch_modes.split(",") if m]:
        sources = [distinct_kernel(source, f"{tag} {mode} variant {k}") for k in range(args.n)]
        for r in in_process("batch", mode, work, args.backend, task, sources, 1, args.baselines, 1200):
            record({"what": f"batch of {args.n}", "mode": mode, **r})

    summary: dict = {}
    for entry in res["runs"]:
        if "mode" in entry and isinstance(entry.get("wall_s"), float):
            summary.setdefault(f"{entry['what']} [{entry['mode']}]", []).append(entry["wall_s"])
    res["summary_median_s"] = {k: round(statistics.median(v), 2) for k, v in summary.items()}
    for k, v in res["summary_median_s"].items():
        print(f"{k:<40} {v:8.2f} s   (n={len(summary[k])})", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    sys.exit(main())
