"""How far apart two identical processes time the same forward, with no harness at all: the floor under any
single paired verdict on this machine.

    python benchmarks/process_pairs.py [--pairs 8] [--threads 2] [--flush] [--batch 512 --dim 4096]

Two fresh interpreters each build the same RMSNorm (eager PyTorch ops, the same seed) and wait; this
process hands them blocks of 8 calls in turn (A B B A ..., 13 blocks each, as `checker/timed_calls.py`
pairs a candidate with its reference) and each times its own calls. With `--flush` this process writes a
64 MB buffer before every block, as the checker does before every call. Printed: a JSON line per pair (the
two medians, their ratio, and the spread of the per-block ratios), then the ratios' median, min and max.
The environment is passed on as it is, so the evaluator's settings can be tried, e.g.
`MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=1073741824 OMP_WAIT_POLICY=PASSIVE` (what
`parent/pool.scrubbed_env` sets) or `THP_MEM_ALLOC_ENABLE=1`. Measure alone.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys

CHILD = r'''
import sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
torch.manual_seed(0)
x, w = torch.randn(int(sys.argv[2]), int(sys.argv[3])), torch.randn(int(sys.argv[3]))
def forward(x):
    return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + 1e-6) * w
for _ in range(20):
    forward(x)
print("ready", flush=True)
for line in sys.stdin:
    ts = []
    for _ in range(int(line)):
        t = time.perf_counter_ns(); y = forward(x); ts.append((time.perf_counter_ns() - t) / 1e6); del y
    print(" ".join(f"{v:.5f}" for v in ts), flush=True)
'''

BLOCK, BLOCKS = 8, 13


def one_pair(args: argparse.Namespace, flush: object) -> dict[str, object]:
    argv = [sys.executable, "-c", CHILD, str(args.threads), str(args.batch), str(args.dim)]
    procs = [subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    try:
        for p in procs:
            if p.stdout.readline().strip() != "ready":
                raise SystemExit("a timing process did not start")
        times: list[list[list[float]]] = [[], []]
        for b in range(BLOCKS):
            for side in ((0, 1) if b % 2 == 0 else (1, 0)):
                if flush is not None:
                    flush.fill_(1)
                procs[side].stdin.write(f"{BLOCK}\n")
                procs[side].stdin.flush()
                times[side].append([float(v) for v in procs[side].stdout.readline().split()])
    finally:
        for p in procs:
            p.stdin.close()
            p.wait()
    a, b = ([t for blk in side for t in blk] for side in times)
    blocks = [statistics.median(x) / statistics.median(y) for x, y in zip(times[0], times[1], strict=True)]
    return {"a_ms": round(statistics.median(a), 4), "b_ms": round(statistics.median(b), 4),
            "ratio": round(statistics.median(a) / statistics.median(b), 4),
            "block_ratio_iqr": round(statistics.quantiles(blocks, n=4)[2] - statistics.quantiles(blocks, n=4)[0], 4)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=8)
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--batch", type=int, default=512)
    ap.add_argument("--dim", type=int, default=4096)
    ap.add_argument("--flush", action="store_true", help="write 64 MB here before every block")
    args = ap.parse_args()
    flush = None
    if args.flush:
        import torch

        flush = torch.empty((64 << 20) // 4, dtype=torch.int32)
    ratios = []
    for i in range(args.pairs):
        row = one_pair(args, flush)
        ratios.append(row["ratio"])
        print(json.dumps({"pair": i, **row}), flush=True)
    env = {k: v for k, v in os.environ.items() if k.startswith(("MALLOC_", "THP_", "OMP_", "GLIBC_TUNABLES"))}
    print(json.dumps({"machine": platform.node(), "threads": args.threads, "shape": [args.batch, args.dim],
                      "flush": args.flush, "env": env, "pairs": len(ratios),
                      "median_ratio": round(statistics.median(ratios), 4), "min_ratio": min(ratios),
                      "max_ratio": max(ratios)}))


if __name__ == "__main__":
    main()
