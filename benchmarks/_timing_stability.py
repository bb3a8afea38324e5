"""Helper of eval_throughput.py: the same kernel timed 5x by our protocol and 5x by triton's do_bench.

    python benchmarks/_timing_stability.py BUILD_ROOT [TASK_STEM CANDIDATE_FILE]
Prints one JSON line last.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

from htam_agent.evaluation.backends import get_backend
from htam_agent.evaluation.checker import timing
from htam_agent.evaluation.checker.inputs import make_inputs
from htam_agent.evaluation.checker.phases import build_reference
from htam_agent.evaluation.sandbox import build_cache
from htam_agent.evaluation.tasks import load_task

ROOT = Path(__file__).resolve().parents[1]


def import_candidate(source: str, folder: str):
    """The candidate imported in this process: a timing benchmark, not an evaluation (no checker here)."""
    import importlib.util

    path = Path(folder) / "candidate.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("htam_candidate", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    build_root = sys.argv[1]
    stem = sys.argv[2] if len(sys.argv) > 2 else "norm_softmax"
    cand_file = Path(sys.argv[3]) if len(sys.argv) > 3 else sorted((ROOT / "htam_agent/bundled_tasks/candidates" / stem).glob("cuda_*.py"))[0]
    backend = get_backend("cuda")
    backend.prepare(build_root, None)
    build_cache.install(build_root)
    task = load_task(ROOT / "htam_agent/bundled_tasks/suite" / f"{stem}.py")
    import tempfile

    module = import_candidate(cand_file.read_text(), tempfile.mkdtemp())
    device = torch.device("cuda")
    ref, init = build_reference(task, device)
    torch.manual_seed(0)
    with torch.device(device):
        model = module.ModelNew(*init).to(device)
    model.load_state_dict(ref.state_dict())
    x = make_inputs(task, device, 100, "task")

    def call(_i: int = 0):
        with torch.no_grad():
            return model(*x)

    ours = [timing.time_calls(call, backend, timing.TimingPlan()).median_ms for _ in range(5)]
    import triton.testing

    theirs = [triton.testing.do_bench(call, warmup=100, rep=500, return_mode="median") for _ in range(5)]
    mo, mt = statistics.median(ours), statistics.median(theirs)
    res = {
        "candidate": f"{stem}/{cand_file.name}",
        "ours_medians_ms": [round(v, 4) for v in ours],
        "do_bench_medians_ms": [round(v, 4) for v in theirs],
        "ours_spread_pct": round(100 * (max(ours) - min(ours)) / mo, 2),
        "ours_vs_do_bench_pct": round(100 * (mo - mt) / mt, 2),
    }
    print(json.dumps(res))


if __name__ == "__main__":
    main()
