"""Eager PyTorch forward time of every bundled suite problem at its default (GPU) size.

Run on a GPU host; needs only torch and the standard library (the task files are loaded with importlib,
not through the htam_agent package):

    python benchmarks/archive/suite_eager_times.py                 # every file in htam_agent/bundled_tasks/suite
    python benchmarks/archive/suite_eager_times.py conv_conv2d ... # only these task stems
    python benchmarks/archive/suite_eager_times.py --tf32          # allow TF32 in matmul/cuDNN (default: off)

One line per task: median forward time (torch.cuda.Event, `--reps` timed calls after `--warmup` calls),
input + output size in GB and peak allocated memory; then a summary of tasks outside the target range.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
import traceback
from pathlib import Path

import torch

SUITE_DIR = Path(__file__).resolve().parents[2] / "htam_agent" / "bundled_tasks" / "suite"
TARGET_MS = (2.0, 10.0)
MAX_GB = 12.0


def load_module(path: Path):
    spec = importlib.util.spec_from_file_location(f"suite_task_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def tensors(value) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors(v)]
    return []


def nbytes(value) -> int:
    return sum(t.numel() * t.element_size() for t in tensors(value))


def time_task(path: Path, warmup: int, reps: int) -> dict:
    module = load_module(path)
    torch.manual_seed(0)
    with torch.device("cuda"):
        init = module.get_init_inputs() if hasattr(module, "get_init_inputs") else []
        model = module.Model(*init)
        inputs = module.get_inputs()
    model = model.cuda().eval()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    with torch.no_grad():
        out = None
        for _ in range(warmup):
            out = model(*inputs)
        torch.cuda.synchronize()
        times = []
        for _ in range(reps):
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            start.record()
            out = model(*inputs)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
    result = {
        "ms": statistics.median(times),
        "min_ms": min(times),
        "gb": (nbytes(inputs) + nbytes(out)) / 1e9,
        "peak_gb": torch.cuda.max_memory_allocated() / 1e9,
    }
    del model, inputs, out
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("names", nargs="*", help="task stems to run (default: all)")
    parser.add_argument("--suite", type=Path, default=SUITE_DIR, help="folder of task files")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--tf32", action="store_true", help="allow TF32 in matmul and cuDNN (default: off)")
    args = parser.parse_args(argv)

    if not torch.cuda.is_available():
        print("CUDA is not available; run this on a GPU host.", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = args.tf32
    torch.backends.cudnn.allow_tf32 = args.tf32

    files = sorted(p for p in args.suite.glob("*.py") if not p.name.startswith("_"))
    if args.names:
        files = [p for p in files if p.stem in set(args.names)]
        unknown = set(args.names) - {p.stem for p in files}
        if unknown:
            print(f"unknown task(s): {', '.join(sorted(unknown))}", file=sys.stderr)
            return 2
    print(
        f"# torch {torch.__version__}, {torch.cuda.get_device_name()}, tf32={args.tf32}, "
        f"warmup={args.warmup}, reps={args.reps}"
    )
    print(f"{'task':40s} {'median_ms':>10s} {'min_ms':>8s} {'in+out_GB':>10s} {'peak_GB':>8s}  note")

    results, failed = {}, {}
    t0 = time.perf_counter()
    for path in files:
        try:
            r = time_task(path, args.warmup, args.reps)
        except Exception as exc:  # report and go on: one bad task must not hide the others
            failed[path.stem] = f"{type(exc).__name__}: {exc}"
            print(f"{path.stem:40s} FAILED {failed[path.stem]}")
            traceback.print_exc(limit=2, file=sys.stderr)
        else:
            results[path.stem] = r
            note = []
            if r["ms"] < TARGET_MS[0]:
                note.append("fast")
            elif r["ms"] > TARGET_MS[1]:
                note.append("slow")
            if r["gb"] > MAX_GB:
                note.append("big")
            print(
                f"{path.stem:40s} {r['ms']:10.3f} {r['min_ms']:8.3f} {r['gb']:10.3f} {r['peak_gb']:8.2f}  "
                f"{' '.join(note)}"
            )
        torch.cuda.empty_cache()

    print()
    print(f"# {len(results)} timed, {len(failed)} failed, {time.perf_counter() - t0:.1f} s wall")
    if results:
        ms = sorted(r["ms"] for r in results.values())
        print(
            f"# median {statistics.median(ms):.3f} ms, range {ms[0]:.3f}-{ms[-1]:.3f} ms, "
            f"total {sum(ms):.1f} ms per pass over the suite"
        )
        fast = [k for k, r in results.items() if r["ms"] < TARGET_MS[0]]
        slow = [k for k, r in results.items() if r["ms"] > TARGET_MS[1]]
        big = [k for k, r in results.items() if r["gb"] > MAX_GB]
        print(f"# below {TARGET_MS[0]} ms: {', '.join(fast) or '-'}")
        print(f"# above {TARGET_MS[1]} ms: {', '.join(slow) or '-'}")
        print(f"# over {MAX_GB} GB in+out: {', '.join(big) or '-'}")
    for k, msg in failed.items():
        print(f"# FAILED {k}: {msg}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
