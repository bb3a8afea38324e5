"""What a forged or slowed clock still gains: each clock-bounded cheat of the catalogue against its honest
twin (the same kernel, honest clock), alternating, on the cpp backend.

    python benchmarks/clock_gain.py [--rounds 3] [--paired | --baseline]

Printed: a JSON line per evaluation (candidate, time of record, in-process median, which clock was of
record), then per cheat the median ratio twin / cheat of the time of record (what the cheat gains; the
budget of issue 25 is at most 1.10 on the CPU) and of the in-process medians (what it would have gained if
the in-process clock were believed). With --paired, each candidate is timed beside the eager baseline (the
CPU's default in `htam eval`; the clock judged by `judge.settle_pair`), and the gains are ratios of the
speedups over that paired eager figure. With --baseline, each candidate is timed alone with the eager baseline
measured on its own in the job (the GPU's default), and with neither, alone with no baseline; both are
judged against the checker's no-op calibration (`WallClock.settle`). Measure alone: CPU timings on a busy 2-core machine are noise.
Reads the cheats from tests/cheats (the catalogue's fixtures) through its own sync_extension.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import tempfile
from pathlib import Path

from htam_agent.evaluation.parent.candidate import Candidate
from htam_agent.evaluation.parent.evaluator import Evaluator
from htam_agent.evaluation.parent.options import EvalOptions

CHEATS = Path(__file__).resolve().parents[1] / "tests" / "cheats"
NAMES = ["cpp/p19_slow_clock_below_bound.py", "cpp/p19_flush_shadow.py", "cpp/p19_lazy_output_pages.py"]
TWIN = "honest/h19_leaky_plain.py"
TASK = Path(__file__).resolve().parents[1] / "htam_agent" / "bundled_tasks" / "suite" / "elementwise_leaky_relu.py"


def _source_of():
    spec = importlib.util.spec_from_file_location("sync_extension", CHEATS / "sync_extension.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.source_of


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--build-root", default=None)
    how = ap.add_mutually_exclusive_group()
    how.add_argument("--paired", action="store_true", help="time each candidate beside the eager baseline")
    how.add_argument("--baseline", action="store_true",
                     help="time each candidate alone, with the eager baseline measured on its own")
    args = ap.parse_args()
    source_of = _source_of()
    with_eager = args.paired or args.baseline
    ev = Evaluator(EvalOptions(backend="cpp", baselines=("eager",) if with_eager else (), paired_eager=args.paired,
                               build_root=args.build_root or tempfile.mkdtemp()), store=None)
    times: dict[str, list[tuple[float, float]]] = {n: [] for n in [TWIN, *NAMES]}
    for r in range(args.rounds):
        for name in [TWIN, *NAMES]:
            v = ev.evaluate(Candidate(task_path=str(TASK), source=source_of(CHEATS / name)), use_store=False)
            cand = v["timing"].get("candidate") or {}
            rec = (cand.get("median_ms"), cand.get("in_process_median_ms", cand.get("median_ms")))
            eager = (v["timing"].get("eager") or {}).get("median_ms")
            if args.paired and eager and rec[0] and rec[1]:  # per eager ms: a time, normalised by the pair
                rec = (rec[0] / eager, rec[1] / eager)
            print(json.dumps({"round": r, "candidate": name, "status": v["status"], "record_ms": rec[0],
                              "in_process_ms": rec[1], "clock": cand.get("clock"),
                              "flags": [f["name"] for f in v["flags"]],
                              **({} if v["accepted"] else {"reason": str(v.get("reason", ""))[:400]})}), flush=True)
            if v["accepted"]:
                times[name].append(rec)
    twin = times[TWIN]
    for name in NAMES:
        pairs = list(zip(twin, times[name], strict=False))
        if not pairs:
            print(json.dumps({"cheat": name, "accepted_rounds": 0}))
            continue
        gain = [t[0] / c[0] for t, c in pairs]
        would = [t[1] / c[1] for t, c in pairs]
        print(json.dumps({"cheat": name, "machine": platform.node(), "rounds": len(pairs),
                          "gain_of_record_median": round(statistics.median(gain), 3),
                          "gain_of_record_min_max": [round(min(gain), 3), round(max(gain), 3)],
                          "gain_if_in_process_believed": round(statistics.median(would), 3)}))


if __name__ == "__main__":
    main()
