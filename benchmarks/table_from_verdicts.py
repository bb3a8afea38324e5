"""A verdict table (htam_agent/bench/table.py) from verdicts already stored: each candidate verdict of the offline
coder becomes one slim record, annotated with its directions and strategies as the coder sees that variant now.

    python benchmarks/table_from_verdicts.py VERDICTS.jsonl --kb KB/KernelBench --out TABLE.jsonl [--gzip]

VERDICTS is a JSON-lines file of evaluator verdicts (benchmarks/results/h200_kb_exemplar_cuda_verdicts.jsonl:
``kind`` candidate or baseline, ``task_id`` level1/19_ReLU, ``candidate_path`` ending in ``_ex<NN>_<variant>.py``);
KB the folder holding the problems' files (KB/<task_id>.py). The table's provenance (TABLE.provenance.json) records
this command, the commit, the verdicts' file and the commit that stored it (whose date is the measurement's
``measured`` date) and the device the verdicts name. Variants the coder no longer writes are skipped and counted;
variants whose code the coder now writes differently are kept without a ``code_sha`` and counted (the verdict is
of the code it had then). Used for the cuda dev table the shipped memory was first trained on; the GPU issue's
table comes from benchmarks/verdict_table.py on a GPU host.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_VARIANT = re.compile(r"_ex\d+_(.+)$")


def _git(*args: str) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip() if out.returncode == 0 else ""


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("verdicts", type=Path)
    ap.add_argument("--kb", required=True, type=Path, help="folder with the problems' files, KB/<task_id>.py")
    ap.add_argument("--out", required=True, type=Path, help="the table to write (.jsonl; replaced)")
    ap.add_argument("--gzip", action="store_true", help="also write TABLE.jsonl.gz (the frozen form) and remove "
                                                        "the .jsonl")
    args = ap.parse_args(argv)

    from htam_agent.bench.table import (
        add_provenance,
        load_table,
        provenance_entry,
        provenance_path,
        record_from_verdict,
        variant_annotations,
        write_record,
    )
    from htam_agent.coder.exemplar.enumerate import variants
    from htam_agent.coder.exemplar.patterns import recognize

    verdicts = []
    for i, raw in enumerate(args.verdicts.read_text().splitlines(), 1):
        if raw.strip():
            try:
                verdicts.append(json.loads(raw))
            except ValueError as exc:
                sys.exit(f"{args.verdicts}:{i}: not JSON ({exc})")
    cands = [v for v in verdicts if v.get("kind") == "candidate"]
    if not cands:
        sys.exit(f"{args.verdicts}: no verdict of kind 'candidate'")
    backends = {v.get("backend") for v in cands}
    if len(backends) != 1:
        sys.exit(f"{args.verdicts}: verdicts of several backends {sorted(map(str, backends))}; one table per backend")
    backend = str(backends.pop())
    out: Path = args.out
    if out.name.endswith(".gz"):
        sys.exit(f"{out}: write the .jsonl (and pass --gzip for the frozen .jsonl.gz)")
    out.unlink(missing_ok=True)
    provenance_path(out).unlink(missing_ok=True)

    per_problem: dict[str, tuple] = {}
    skipped: list[str] = []
    changed = 0
    t0 = time.time()
    for v in cands:
        problem = str(v["task_id"]).removesuffix(".py")
        path = args.kb / f"{problem}.py"
        if problem not in per_problem:
            if not path.is_file():
                sys.exit(f"{path}: no such problem file (field task_id {problem!r}); --kb names KernelBench's "
                         "KernelBench folder")
            src = path.read_text()
            pattern = recognize(src, path.stem)  # the reference read once: its class (the analyze node's) and code
            codes = {vid: (knobs, code) for vid, knobs, code in variants(pattern, backend)}
            per_problem[problem] = (pattern, codes, pattern.op_class)
        pattern, codes, op_class = per_problem[problem]
        m = _VARIANT.search(Path(str(v.get("candidate_path") or "")).stem)
        vid = m.group(1) if m else ""
        if vid not in codes:
            skipped.append(f"{problem} {vid or v.get('candidate_path')}")
            continue
        knobs, code = codes[vid]
        same = hashlib.sha256(code.encode()).hexdigest() == v.get("candidate_sha256")
        changed += not same
        directions, strategies = variant_annotations(pattern, backend, knobs)
        level = int(lm.group(1)) if (lm := re.match(r"level(\d+)/", problem)) else None
        rec = record_from_verdict(v, problem=problem, level=level, op_class=op_class, family=pattern.family,
                                  knobs=knobs, directions=directions, strategies=strategies, variant=vid,
                                  code=code if same else None)
        write_record(out, rec)

    rel = args.verdicts.resolve()
    try:
        rel = rel.relative_to(ROOT)
    except ValueError:
        pass
    stored = _git("log", "-1", "--format=%H %cI", "--", str(rel))
    stored_commit, _, stored_date = stored.partition(" ")
    devices = sorted({str(v.get("device_name") or (v.get("device") or {}).get("name") or "") for v in cands} - {""})
    entry = provenance_entry(
        command=shlex.join(["python", "benchmarks/table_from_verdicts.py", *(sys.argv[1:] if argv is None else argv)]),
        size=next(iter(load_table(out))).size, backend=backend, device=", ".join(devices) or None,
        notes=(f"converted from stored verdicts {rel} (stored at commit {stored_commit or '?'}); "
               f"{len(skipped)} verdict(s) of variants the coder no longer writes skipped, {changed} kept whose "
               "code the coder now writes differently (no code_sha)"))
    entry["measured"] = stored_date or None
    entry["source_verdicts"] = {"file": str(rel), "commit": stored_commit or None, "candidates": len(cands)}
    add_provenance(out, entry)
    table = load_table(out)
    if args.gzip:
        gz = out.with_name(out.name + ".gz")
        with open(out, "rb") as src, gzip.GzipFile(gz, "wb", mtime=0) as dst:
            shutil.copyfileobj(src, dst)
        out.unlink()
        out = gz
    for s in skipped:
        print(f"skipped (the coder no longer writes it): {s}")
    print(f"{out}: {len(table)} records, {len(table.problems)} problems, {len(skipped)} skipped, {changed} with "
          f"changed code; {time.time() - t0:.1f} s; provenance {provenance_path(out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
