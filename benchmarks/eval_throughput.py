"""Evaluator throughput: the naive path (one cold load_inline after another) against ours, in one run.

    python benchmarks/eval_throughput.py --backend cuda [--n 16] [--naive-sample 16] [--out FILE.json]
    python benchmarks/eval_throughput.py --backend cpp --n 4            # on a CPU machine

Imports only torch and the standard library (plus triton for the do_bench comparison, when present), so it
runs on a bare GPU host. What it measures, each figure printed and written to --out:

- batch: N distinct candidates (the bundled load_inline candidates, each copy made distinct by a comment in
  its C++ source, so every build is really cold), evaluated (a) naively: one worker after another, torch's
  default build (fresh folder, no PCH, every visible arch), (b) ours: a cold build root, parallel compile
  on all cores, content cache, per-flag PCH, device arch only, pre-started workers. Both run the same
  checks and timing; baselines are timed once beforehand and excluded from both. With --naive-sample K < N
  the naive path runs K candidates and its batch time is K's mean times N: printed as an extrapolation.
- single: cold time-to-verdict of one load_inline candidate (new source, PCH present).
- cached: re-evaluation of a built candidate (build cache hit, full checks), and a verdict-store hit.
- nvrtc: the first-call (compile + launch) time of the NVRTC candidates.
- stability: the same kernel timed 5 times by our protocol, and by triton.testing.do_bench.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions
from htam_agent.evaluation.parent.store import VerdictStore

ROOT = Path(__file__).resolve().parents[1]

SUITE = ROOT / "htam_agent" / "bundled_tasks" / "suite"
CANDS = ROOT / "htam_agent" / "bundled_tasks" / "candidates"


def bundled(backend: str) -> list[tuple[Path, Path]]:
    pairs = []
    for folder in sorted(CANDS.iterdir()):
        for c in sorted(folder.glob(f"{backend}_*.py")):
            src = c.read_text()
            if "load_inline" in src and "_compile_kernel" not in src:
                pairs.append((SUITE / f"{folder.name}.py", c))
    return pairs


def distinct(source: str, k: int, tag: str) -> str:
    """The same candidate with a comment in its C++ source: a different build, the same work."""
    return re.sub(r"#include", f"// {tag} variant {k}\n#include", source, count=1)


def batch_of(backend: str, n: int, tag: str) -> list[Candidate]:
    pairs = bundled(backend)
    if not pairs:
        sys.exit(f"no bundled load_inline candidates for backend {backend}")
    return [Candidate(task_path=str(t), source=distinct(c.read_text(), i, tag), name=t.stem)
            for i, (t, c) in enumerate(pairs[i % len(pairs)] for i in range(n))]


def opts(backend: str, build_root: str, **kw) -> EvalOptions:
    return EvalOptions(backend=backend, baselines=(), build_root=build_root, **kw)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cuda", choices=("cuda", "cpp"))
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--naive-sample", type=int, default=None)
    ap.add_argument("--singles", type=int, default=2)
    ap.add_argument("--out")
    ap.add_argument("--skip", default="", help="comma list of sections to skip: naive,ours,single,cached,nvrtc,stability")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    tag = f"bench{int(time.time())}"
    work = Path(tempfile.mkdtemp(prefix="htam-bench-"))
    res: dict = {"date": time.strftime("%Y-%m-%d %H:%M"), "host": platform.node(), "cores": os.cpu_count(),
                 "backend": args.backend, "n": args.n}
    try:
        import torch

        res["torch"] = torch.__version__
        res["device"] = torch.cuda.get_device_name() if args.backend == "cuda" else platform.processor()
    except Exception:  # noqa: BLE001 - informational only
        pass
    print(json.dumps(res), flush=True)
    cands = batch_of(args.backend, args.n, tag)

    def show(label: str, value: float, unit: str = "s") -> None:
        print(f"{label:<58} {value:10.2f} {unit}", flush=True)
        res[label] = round(value, 3)

    # -- naive ----------------------------------------------------------------------------------------
    if "naive" not in skip:
        k = min(args.naive_sample or args.n, args.n)
        t0 = time.time()
        naive = []
        for i, c in enumerate(cands[:k]):
            ev = Evaluator(opts(args.backend, str(work / f"naive{i}"), fast_build=False, prestart=False))
            v = ev.evaluate(c, use_store=False)
            naive.append(v)
            print(f"  naive {i + 1}/{k}: {v['status']} {v['wall_seconds']:.1f}s {v.get('phase_seconds')}", flush=True)
        wall = time.time() - t0
        res["naive_statuses"] = [v["status"] for v in naive]
        show(f"naive: {k} candidates, sequential cold builds", wall)
        show("naive: mean time per candidate", wall / k)
        show(f"naive: batch of {args.n} ({'measured' if k == args.n else f'extrapolated from {k}'})", wall / k * args.n)
        res["naive_batch_s"] = wall / k * args.n

    # -- ours -----------------------------------------------------------------------------------------
    ours_root = str(work / "ours")
    if "ours" not in skip:
        ev = Evaluator(opts(args.backend, ours_root), store=VerdictStore(work / "store"))
        t0 = time.time()
        verdicts = ev.evaluate_batch(cands)
        wall = time.time() - t0
        res["ours_statuses"] = [v["status"] for v in verdicts]
        res["ours_phase_seconds"] = [v.get("phase_seconds") for v in verdicts]
        show(f"ours: batch of {args.n}, cold build root", wall)
        if "naive_batch_s" in res:
            show("throughput ratio (naive batch / ours)", res["naive_batch_s"] / wall, "x")
        print("  accepted:", sum(v["accepted"] for v in verdicts), "of", len(verdicts), flush=True)

    # -- single cold candidate (PCH present) ---------------------------------------------------------
    if "single" not in skip:
        times = []
        for i in range(args.singles):
            c = batch_of(args.backend, 1, f"{tag}-single{i}")[0]
            ev = Evaluator(opts(args.backend, ours_root))
            t0 = time.time()
            v = ev.evaluate(c, use_store=False)
            times.append(time.time() - t0)
            print(f"  single {i}: {v['status']} {times[-1]:.1f}s {v.get('phase_seconds')}", flush=True)
        show("single cold load_inline candidate: median time-to-verdict", statistics.median(times))

    # -- cached -------------------------------------------------------------------------------------------
    if "cached" not in skip:
        store = VerdictStore(work / "store2")
        ev = Evaluator(opts(args.backend, ours_root), store=store)
        ev.evaluate(cands[0])  # built already by the batch: this fills the store
        t0 = time.time()
        ev.evaluate(cands[0], use_store=False)
        show("re-evaluation, build cached (full checks and timing)", time.time() - t0)
        t0 = time.time()
        v = ev.evaluate(cands[0])
        show("re-evaluation, verdict-store hit", time.time() - t0)
        assert v.get("cached")

    # -- NVRTC --------------------------------------------------------------------------------------------
    if args.backend == "cuda" and "nvrtc" not in skip:
        firsts = []
        for folder in sorted(CANDS.iterdir()):
            for c in folder.glob("cuda_nvrtc*.py"):
                v = Evaluator(opts("cuda", ours_root)).evaluate(
                    Candidate(task_path=str(SUITE / f"{folder.name}.py"), source=c.read_text()), use_store=False)
                ps = v.get("phase_seconds") or {}
                firsts.append(ps.get("first_call", float("nan")))
                print(f"  nvrtc {folder.name}: {v['status']} first call {ps.get('first_call')}s "
                      f"time-to-verdict {v['wall_seconds']}s", flush=True)
        if firsts:
            show("nvrtc: first call (compile + launch), max over candidates", max(firsts))

    # -- timing stability -----------------------------------------------------------------------------
    if args.backend == "cuda" and "stability" not in skip:
        import subprocess

        probe = ROOT / "benchmarks" / "_timing_stability.py"
        out = subprocess.run([sys.executable, str(probe), ours_root], capture_output=True, text=True)
        print(out.stdout, out.stderr[-2000:], flush=True)
        try:
            res["stability"] = json.loads(out.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            res["stability"] = {"error": out.stderr[-500:]}

    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if not isinstance(v, list)}, indent=1))


if __name__ == "__main__":
    main()
