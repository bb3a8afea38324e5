"""The outlier and ordering scenarios of issue 17, on the memory alone (no agent, no GPU): what each task's step 0
gets on a memory shared with tasks of other classes.

    python benchmarks/archive/transfer_scenario.py [--orders 50]
    PYTHONPATH=/path/to/an/older/checkout python benchmarks/archive/transfer_scenario.py   # the same on older code

1. Outlier: LayerNorm gains x32 under parallel_mapping at step 0; then the step-0 direction and strategies of
   GELU (elementwise), a max-pool, conv+ReLU+HardSwish and conv+GroupNorm (both "fused"), a row sum and a GEMM.
   A strategy counts as misplaced when it is written for row reductions and norms only and the op has none.
2. Ordering: 24 tasks of 6 classes run one after another on one memory, in random orders; each task's step 0
   takes the policy's top direction and gets the outcome of a fixed per-class table (one class has a x32
   outlier). Reported: the share of step-0 choices that are the class's best direction, over all orders, and
   the share that are parallel_mapping outside the classes where it is best.
Uses only the public HTAMemory API, so it runs on the code before and after the issue.
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.schema import MemoryState, Outcome, StateKey

REDUCTION_ONLY = {"pm_two_pass_reduction", "pm_warp_per_row", "pm_block_reduce_shuffle", "fr_welford_norm",
                  "fr_online_softmax", "pm_multi_row_per_block"}
NEEDS_ROWS = {"normalization", "reduction"}


def state(op: str, features: tuple[str, ...], text: str) -> MemoryState:
    key = StateKey(op, "compute" if op == "matmul" else "memory", "none", "cuda")
    try:
        return MemoryState(key, text, None, frozenset(features))  # type: ignore[call-arg]
    except TypeError:  # code before issue 17: no features
        return MemoryState(key, text, None)


TASKS = {
    "88_MinGPTNewGelu": ("elementwise", ("elementwise",), "Reference ops: mul, pow, add, tanh"),
    "42_Max_Pooling_2D": ("pooling", ("pooling",), "Reference ops: max_pool2d"),
    "57_Conv2d_ReLU_HardSwish": ("fused", ("convolution", "elementwise"), "Reference ops: conv2d, relu, hardswish"),
    "21_Conv2d_GroupNorm": ("fused", ("convolution", "normalization"), "Reference ops: conv2d, group_norm"),
    "47_Sum_reduction": ("reduction", ("reduction",), "Reference ops: sum"),
    "1_Square_matmul": ("matmul", ("matmul",), "Reference ops: matmul"),
}

# Ordering scenario: per class, the gain each direction gets at step 0 (unlisted: x1.0, no gain). One LayerNorm
# task gains x32 under parallel_mapping (the outlier); the other norms gain x1.6 under it.
TRUTH = {
    "elementwise": {"memory_access": 1.5, "launch_overhead": 1.1},
    "pooling": {"memory_access": 1.4, "data_reuse": 1.2},
    "normalization": {"parallel_mapping": 1.6, "memory_access": 1.2},
    "reduction": {"parallel_mapping": 1.5, "memory_access": 1.2},
    "fused": {"fusion_restructuring": 1.3},
    "matmul": {"data_reuse": 1.3},
}
FEATURES = {"elementwise": ("elementwise",), "pooling": ("pooling",), "normalization": ("normalization",),
            "reduction": ("reduction",), "fused": ("convolution", "elementwise"), "matmul": ("matmul",)}


def outlier(tmp: Path) -> list[tuple[str, str, list[str], int]]:
    mem = HTAMemory(MemoryConfig(tmp / "outlier"))
    mem.record(state("normalization", ("normalization",), "LayerNorm over 4096 features"), "parallel_mapping",
               ["pm_warp_per_row"], Outcome(True, "correct_slow", 32.0), task_id="40_LayerNorm")
    rows = []
    for name, (op, feats, text) in TASKS.items():
        top = mem.select_directions(state(op, feats, text))[0].id
        got = [r.strategy.id for r in mem.retrieve_strategies(top, state(op, feats, text), k=3)]
        misplaced = 0 if set(feats) & NEEDS_ROWS else len(set(got) & REDUCTION_ONLY)
        rows.append((name, top, got, misplaced))
    mem.close()
    return rows


def ordering(tmp: Path, orders: int) -> tuple[float, float, int]:
    classes = [c for c in TRUTH for _ in range(4)]
    best = {c: max(t, key=t.get) for c, t in TRUTH.items()}
    hits = pm_wrong = total = 0
    for o in range(orders):
        mem = HTAMemory(MemoryConfig(tmp / f"order{o}"))
        seq = classes[:]
        random.Random(o).shuffle(seq)
        outlier_done = False
        for i, c in enumerate(seq):
            s = state(c, FEATURES[c], f"{c} task {i}")
            d = mem.select_directions(s, seed=i)[0].id
            g = TRUTH[c].get(d, 1.0)
            if c == "normalization" and d == "parallel_mapping" and not outlier_done:
                g, outlier_done = 32.0, True
            mem.record(s, d, [], Outcome(True, "correct_slow", g), task_id=f"{c}{i}", uid=f"{o}:{i}")
            hits += d == best[c]
            pm_wrong += d == "parallel_mapping" and best[c] != "parallel_mapping"
            total += 1
        mem.close()
    return hits / total, pm_wrong / total, total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--orders", type=int, default=50)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        print("outlier: LayerNorm x32 under parallel_mapping, then step 0 of:")
        print("| task | step-0 direction | strategies offered | misplaced reduction strategies |")
        print("|---|---|---|---|")
        for name, top, got, mis in outlier(tmp):
            print(f"| {name} | {top} | {', '.join(got) or '-'} | {mis} |")
        share, pm_wrong, total = ordering(tmp, args.orders)
        print(f"\nordering: {args.orders} random orders of 24 tasks ({total} step-0 choices): "
              f"{share:.1%} took the class's best direction; {pm_wrong:.1%} took parallel_mapping where it is "
              f"not the best")


if __name__ == "__main__":
    main()
