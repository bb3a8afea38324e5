"""The verdict table (issue 35): every variant the offline coder writes for every KernelBench problem it covers,
evaluated by the real evaluator, one slim record per variant (htam_agent/bench/table.py).

    python benchmarks/verdict_table.py KB_DIR --backend cpp --out benchmarks/tables/cpp_kb_small.jsonl \
        [--levels 1,2] [--rounds 2] [--only REGEX] [--max-problems N] [--work DIR] [--no-compile-baseline]

KB_DIR is a KernelBench checkout's `KernelBench` folder. Resumable: a killed run continues where it stopped
(a record is appended and fsynced as soon as its variant is done; a variant with a record of enough timings is
not evaluated again while the coder still writes the same code for it: each record keeps its code's hash). Problems go in level and id order, variants in the coder's curated order, so a partial
table is a useful one.

Per problem, the first round is the agent's own verdict (every check, the second shape, eager and
torch.compile baselines, the eager baseline timed beside the candidate on the CPU); each accepted variant is
then timed again (`--rounds` in all, more up to `--max-rounds` while the rounds' ratios spread wider than
`--spread`) with correctness trials only (`bare` tier), each round in fresh processes, because one CPU
verdict's ratio carries a per-process effect of up to +-20% (benchmarks/process_pairs.py) that only
independent processes average out. The record keeps the geometric mean of the rounds' ratios and their range
(`ratio_lo`, `ratio_hi`); a resumed run times again a record whose range is still wider than `--spread` and
that has fewer than `--max-rounds` rounds (its first verdict comes back from the verdict store).

On the cpp backend, variants that differ only in launch knobs share one build (coder/exemplar/cpp_launch.py):
a problem costs a build per compile-time setting. The same command makes the cuda table on a GPU host
(`--backend cuda`); it imports only the evaluator, the coder and the standard library there.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _problems(kb: Path, levels: list[int], only: str | None) -> list[tuple[int, Path]]:
    out = []
    for lv in levels:
        folder = kb / f"level{lv}"
        if not folder.is_dir():
            raise SystemExit(f"{folder}: no such folder (pass the checkout's KernelBench folder, the one holding "
                             "level1/, level2/, ...)")
        files = sorted((p for p in folder.glob("*.py") if p.name[0].isdigit()),
                       key=lambda p: int(p.name.split("_")[0]))
        out += [(lv, p) for p in files if not only or re.search(only, f"level{lv}/{p.stem}")]
    return out


def _gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def main(argv: list[str] | None = None) -> int:
    from htam_agent.backend_registry import BACKENDS

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("kb_dir", type=Path)
    ap.add_argument("--backend", default="cpp", choices=BACKENDS)
    ap.add_argument("--out", type=Path, required=True, help="the table (.jsonl), appended to")
    ap.add_argument("--levels", default="1,2")
    ap.add_argument("--rounds", type=int, default=2, help="timed verdicts per accepted variant (default 2)")
    ap.add_argument("--max-rounds", type=int, default=4,
                    help="more rounds, up to this many, while the rounds' ratios spread wider than --spread")
    ap.add_argument("--spread", type=float, default=1.10,
                    help="the widest max/min of a variant's ratios taken as known (1.10: about +-5%%)")
    ap.add_argument("--only", help="regex over 'levelN/stem': only these problems")
    ap.add_argument("--max-problems", type=int, default=0, help="stop after measuring this many problems in this run (finished ones are not counted; 0: all)")
    ap.add_argument("--max-variants", type=int, default=0,
                    help="only the first N curated variants of each problem (0: all; for trials of the job)")
    ap.add_argument("--retime-wide", action="store_true",
                    help="also time again records that reached --max-rounds with a range still wider than --spread "
                         "(made on a loaded machine): timed again; the first round may come back from the verdict store")
    ap.add_argument("--size", default=None, help="the evaluator's size (default: small on cpp, else default)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/htam_verdict_table"),
                    help="where candidate files are written (default /tmp/htam_verdict_table)")
    ap.add_argument("--build-root", default=None, help="build cache folder (default: the evaluator's)")
    ap.add_argument("--no-compile-baseline", action="store_true",
                    help="time the first round against eager only: the records have no speedup_compile (a cold "
                         "torch.compile of each reference costs tens of seconds on a CPU; for trials of the job)")
    ap.add_argument("--prune", action="store_true",
                    help="first drop the records of the selected problems whose variant the coder no longer writes "
                         "(a knob renamed or removed): no run asks for them, and the oracle must not pick them")
    args = ap.parse_args(argv)
    if args.rounds < 1 or args.max_rounds < args.rounds:
        ap.error("--rounds must be at least 1 and --max-rounds at least --rounds")

    from htam_agent.bench import table as tbl
    from htam_agent.coder.base import UnsupportedTask
    from htam_agent.coder.exemplar.enumerate import variants
    from htam_agent.coder.exemplar.patterns import recognize
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions

    levels = [int(x) for x in args.levels.split(",") if x]
    problems = _problems(args.kb_dir, levels, args.only)
    done: dict[tuple[str, str, str], tbl.VariantRecord] = {}
    if args.prune and args.out.exists():
        written: dict[str, set[str]] = {}
        for lv, path in problems:
            try:
                written[f"level{lv}/{path.stem}"] = {v for v, _, _ in variants(recognize(path.read_text(), path.stem),
                                                                               args.backend)}
            except UnsupportedTask:
                continue
        gone = tbl.prune_records(args.out, lambda r: r.backend == args.backend and r.problem in written
                                 and r.variant not in written[r.problem])
        print(f"pruned {gone} record(s) of variants the coder no longer writes from {args.out}", flush=True)
    if args.out.exists():
        done = {r.key: r for r in tbl.load_table(args.out).records}
    size = args.size or ("small" if args.backend == "cpp" else "default")
    tbl.add_provenance(args.out, tbl.provenance_entry(
        command="python " + " ".join(shlex.quote(a) for a in sys.argv), size=size, backend=args.backend,
        notes=f"rounds={args.rounds} max_rounds={args.max_rounds} spread={args.spread}"
              + ("; no compile baseline" if args.no_compile_baseline else "") + "; load average at start "
              + " ".join(f"{x:.1f}" for x in os.getloadavg())))
    full = Evaluator(EvalOptions(backend=args.backend, size=args.size, build_root=args.build_root,
                                 baselines=("eager",) if args.no_compile_baseline else ("eager", "compile")))
    retime = Evaluator(EvalOptions(backend=args.backend, size=args.size, build_root=args.build_root,
                                   tier="bare", trials=1, alt_size=None, baselines=("eager",)))
    t0, n_done, n_problems = time.monotonic(), 0, 0
    print(f"{len(problems)} problems, {len(done)} records already in {args.out}", flush=True)
    for lv, path in problems:
        if args.max_problems and n_problems >= args.max_problems:
            break
        problem = f"level{lv}/{path.stem}"
        source = path.read_text()
        try:
            pattern = recognize(source, path.stem)  # the reference read once: its class and its variants
            cands = variants(pattern, args.backend)
            if args.max_variants:
                cands = cands[:args.max_variants]
        except UnsupportedTask:
            continue

        def finished(vid: str, code: str) -> bool:
            rec = done.get((problem, args.backend, vid))  # noqa: B023 - used within this iteration
            if rec is None or rec.code_sha != tbl.code_sha(code):  # not measured, or the coder writes other code
                return False
            narrow = bool(rec.ratio_lo) and rec.ratio_hi / rec.ratio_lo <= args.spread
            return not rec.accepted or (rec.n_timings >= args.rounds and narrow) or (
                rec.n_timings >= args.max_rounds and not args.retime_wide)

        todo = [(v, k, c) for v, k, c in cands if not finished(v, c)]
        if not todo:
            continue
        n_problems += 1  # problems measured in this run: the finished ones do not count
        op_class = pattern.op_class  # coder.opclass's, as the analyze node classifies it
        folder = args.work / f"level{lv}_{path.stem}"
        folder.mkdir(parents=True, exist_ok=True)
        for vid, _knobs, code in todo:  # kept for a person to read; the evaluator takes the source itself
            (folder / f"{args.backend}_{vid}.py").write_text(code)
        print(f"[{time.monotonic() - t0:8.0f}s] {problem}: {len(todo)} of {len(cands)} variants ({op_class})",
              flush=True)
        batch = [Candidate(task_path=str(path), source=code) for _, _, code in todo]
        firsts = full.evaluate_batch(batch)
        for (vid, knobs, code), cand, first in zip(todo, batch, firsts, strict=True):
            speedups = [first["speedup_vs_eager"]] if first.get("speedup_vs_eager") else []
            seed = first.get("seed")
            if first.get("status") == "accepted" and speedups:
                for r in range(1, args.max_rounds):
                    if r >= args.rounds and max(speedups) / min(speedups) <= args.spread:
                        break
                    again = retime.evaluate(cand, use_store=False)
                    if again.get("status") == "accepted" and again.get("speedup_vs_eager"):
                        speedups.append(again["speedup_vs_eager"])
            directions, strategies = tbl.variant_annotations(pattern, args.backend, knobs)
            summary = {}
            if speedups:
                g = _gmean(speedups)
                summary = dict(speedup_eager=round(g, 4), ratio_lo=min(speedups), ratio_hi=max(speedups),
                               n_timings=len(speedups))
                sc = first.get("speedup_vs_compile")
                if sc and first.get("speedup_vs_eager"):  # the compile baseline measured once: scale by the rounds
                    summary["speedup_compile"] = round(sc * g / first["speedup_vs_eager"], 4)
            rec = tbl.record_from_verdict(first, problem=problem, level=lv, op_class=op_class,
                                          family=pattern.family, knobs=knobs, directions=directions,
                                          strategies=strategies, variant=vid, size=first.get("size") or size,
                                          seed=seed if isinstance(seed, int) else None, code=code,
                                          **summary)
            tbl.write_record(args.out, rec)
            n_done += 1
            spread = (f" [{rec.ratio_lo:.2f}-{rec.ratio_hi:.2f}]" if rec.ratio_lo is not None
                      and rec.n_timings > 1 else "")
            sp = f"{rec.speedup_eager:.3f}x" if rec.speedup_eager is not None else "-"
            print(f"[{time.monotonic() - t0:8.0f}s]   {vid}: {rec.status} {sp}{spread}", flush=True)
    print(f"{n_done} variants evaluated in {time.monotonic() - t0:.0f} s; table: {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
