"""Run the KernelBench-targeted cheats and honest candidates through the evaluator and check every verdict.

    htam kernelbench-checks KB_DIR --out OUTDIR [--backend cuda] [--only SUBSTR] [--jobs N]
        [--size default|small|alt] [--tier default|thorough] [--baselines eager[,compile]]
        [--candidates-dir DIR] [--dry-run] [--judge-only]

(or `python benchmarks/kernelbench_checks.py ...`; both parse in `htam_agent.cli.kernelbench_checks`.)

Candidates are every `*.py` under tests/cheats/kernelbench/{honest,cheats} (or --candidates-dir); the
script passes that folder, this module only reads what it is given. A file holding the fast CUDA launcher
as its marker line (htam_agent.bench.launcher_marker, e.g. tests/cheats/kernelbench/fast/) is evaluated as
its expanded copy, OUTDIR/candidates/<group>/<file>.
Each starts with a docstring holding, one per line:

    kernelbench: level1/19_ReLU.py      the KernelBench problem, relative to the folder holding level1/
    expect: turned_down                 accepted | turned_down | missed | not_faster_than <twin file stem>
    pattern: 12                         the row of EVALUATION.md's cheat table (required for a cheat)
    caught_by: other_shape:values, ...  optional: the checks predicted to catch it (a note when another did)
    missing: <the check that would>     required with `expect: missed`

`turned_down` means the status is one of incorrect / rejected / invalid_candidate; `missed` is a cheat the
evaluator is known not to catch yet (it must be accepted; once caught the header must change);
`not_faster_than STEM` is the side-stream cheat, neutralised rather than rejected: turned down, or accepted
with a median time at least half of its honest twin's.

KB_DIR is the folder holding level1/, level2/, ... or the KernelBench checkout above it. The runner writes
OUTDIR/pairs.json (the format `python -m htam_agent.evaluation batch --pairs` reads), runs that batch with
`--no-store` (its output streamed), reads OUTDIR/verdicts.jsonl, prints one row per candidate and a summary,
and writes OUTDIR/summary.json. Exit status 1 on any mismatch (or a failed batch), 2 on bad arguments or
headers.
`--dry-run` writes pairs.json and prints the plan; `--judge-only` judges an existing OUTDIR/verdicts.jsonl.

Cost: at KernelBench's own shapes a level-1 activation is 4096 x 393216 floats (6.4 GB per tensor; one
evaluation of an NVRTC ReLU took about 20 s on an H200, ~98 GB peak GPU memory). `--size small` evaluates
at the shapes derived from the size globals (2048 x 1536 there; the second shape is the same either way),
and `--only` splits the run. Only the eager baseline is timed unless --baselines says otherwise.

Imports only the standard library, the launcher's text (htam_agent.coder.exemplar.fast_cuda) and the
verdict's reader (htam_agent.evaluation.parent.readout), both stdlib only: it runs on a GPU host with torch and
numpy next to our package. Its command line is `htam_agent.cli.kernelbench_checks` (argparse, stdlib too);
this module is the checks, `run(args)` for parsed options.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from htam_agent import threadsafe
from htam_agent.bench import launcher_marker
from htam_agent.evaluation.parent.readout import Readout

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder holding htam_agent/: the batch imports it from here
GROUPS = ("honest", "cheats")
NOT_ACCEPTED = ("incorrect", "rejected", "invalid_candidate")  # as tests/cheats/cheat_catalogue.py
EXPECTS = ("accepted", "turned_down", "missed", "not_faster_than")
FIELDS = ("kernelbench", "expect", "pattern", "caught_by", "missing")
SIDE_STREAM_MIN_RATIO = 0.5  # as tests/cheats/test_cheats_gpu.py: the cheat's median >= 0.5 x its twin's
_FIELD_LINE = re.compile(r"^\s*(" + "|".join(FIELDS) + r")\s*:\s*(.*?)\s*$")
_KB_PATH = re.compile(r"level\d+/[^/\s]+\.py")
_LEVEL = re.compile(r"level\d+")


class HeaderError(ValueError):
    """A candidate's header is missing a field or holds a bad value; the message names the file."""


class SetupError(ValueError):
    """KB_DIR, the candidates folder or --only do not give anything to run."""


@dataclass
class Entry:
    path: Path
    group: str                      # "honest" or "cheats"
    kernelbench: str                # level1/19_ReLU.py
    expect: str                     # one of EXPECTS
    twin: str | None = None         # for not_faster_than: the twin's file stem
    pattern: int | None = None
    caught_by: tuple[str, ...] = ()
    missing: str | None = None
    task: Path | None = None        # the resolved KernelBench file
    expanded: Path | None = None    # for a file with the launcher's marker line: its expanded copy (write_pairs)

    @property
    def stem(self) -> str:
        return self.path.stem

    @property
    def candidate(self) -> Path:
        """The file the batch evaluates: the expanded copy of a marker fixture, else the file itself."""
        return (self.expanded or self.path).resolve()

    @property
    def name(self) -> str:
        return f"{self.group}/{self.path.name}"

    @property
    def expect_text(self) -> str:
        return f"not_faster_than {self.twin}" if self.expect == "not_faster_than" else self.expect


# -- headers ---------------------------------------------------------------------------------------------

def parse_header(path: Path, group: str) -> Entry:
    """The header fields of one candidate file (see the module docstring)."""
    try:
        tree = threadsafe.parse(path.read_text(), filename=str(path))
    except SyntaxError as exc:
        raise HeaderError(f"{path}: not valid Python ({exc.msg}, line {exc.lineno})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise HeaderError(f"{path}: cannot read ({exc})") from None
    doc = ast.get_docstring(tree, clean=True)
    if not doc:
        raise HeaderError(f"{path}: no module docstring; the file must start with one holding the lines "
                          "'kernelbench: levelN/FILE.py' and 'expect: ...' (and 'pattern: N' for a cheat)")
    fields: dict[str, str] = {}
    for line in doc.splitlines():
        m = _FIELD_LINE.match(line)
        if m:
            key, value = m.groups()
            if key in fields:
                raise HeaderError(f"{path}: the header has two '{key}:' lines")
            fields[key] = value

    def need(key: str, example: str) -> str:
        if not fields.get(key):
            raise HeaderError(f"{path}: the header has no '{key}:' line (expected e.g. '{key}: {example}' "
                              "in the module docstring)")
        return fields[key]

    kb = need("kernelbench", "level1/19_ReLU.py")
    if not _KB_PATH.fullmatch(kb):
        raise HeaderError(f"{path}: 'kernelbench: {kb}' is not a KernelBench file as levelN/FILE.py "
                          "(e.g. 'kernelbench: level1/19_ReLU.py')")
    words = need("expect", "turned_down").split()
    expect, twin = words[0], None
    if expect not in EXPECTS:
        raise HeaderError(f"{path}: 'expect: {fields['expect']}' is none of {', '.join(EXPECTS)}")
    if expect == "not_faster_than":
        if len(words) != 2:
            raise HeaderError(f"{path}: 'expect: not_faster_than' needs the honest twin's file stem, e.g. "
                              "'expect: not_faster_than c03_twin_leaky_relu_same_stream'")
        twin = words[1].removesuffix(".py")
    elif len(words) != 1:
        raise HeaderError(f"{path}: 'expect: {fields['expect']}' takes no argument (only not_faster_than does)")
    pattern = None
    if "pattern" in fields or group == "cheats":
        text = need("pattern", "12")
        if not text.isdigit() or not 1 <= int(text) <= 19:
            raise HeaderError(f"{path}: 'pattern: {text}' is not a row of EVALUATION.md's cheat table (1 to 19)")
        pattern = int(text)
    missing = fields.get("missing") or None
    if expect == "missed" and not missing:
        need("missing", "a trial with inputs beyond exp's overflow")
    caught = tuple(c.strip() for c in fields.get("caught_by", "").split(",") if c.strip())
    return Entry(path=path, group=group, kernelbench=kb, expect=expect, twin=twin, pattern=pattern,
                 caught_by=caught, missing=missing)


def collect(cands_dir: Path) -> list[Entry]:
    """Every candidate of cands_dir/{honest,cheats} with its header; twins checked."""
    if not cands_dir.is_dir():
        raise SetupError(f"--candidates-dir {cands_dir}: no such folder")
    entries = []
    for group in GROUPS:
        folder = cands_dir / group
        if folder.is_dir():
            entries += [parse_header(p, group) for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")]
    if not entries:
        raise SetupError(f"{cands_dir}: no candidate files in {' or '.join(str(cands_dir / g) for g in GROUPS)}")
    stems: dict[str, Entry] = {}
    for e in entries:
        if e.stem in stems:
            raise HeaderError(f"{e.path}: same file name as {stems[e.stem].path}; stems name twins, keep them unique")
        stems[e.stem] = e
    for e in entries:
        if e.twin is not None:
            twin = stems.get(e.twin)
            if twin is None:
                raise HeaderError(f"{e.path}: 'expect: not_faster_than {e.twin}': no candidate file {e.twin}.py "
                                  f"under {cands_dir}")
            if twin.expect != "accepted":
                raise HeaderError(f"{e.path}: its twin {twin.path} must be honest ('expect: accepted'), "
                                  f"not 'expect: {twin.expect_text}'")
    return entries


def kb_root(kb_dir: Path) -> Path:
    """The folder holding level1/, level2/, ...: KB_DIR itself or KB_DIR/KernelBench."""
    for base in (kb_dir, kb_dir / "KernelBench"):
        if base.is_dir() and any(p.is_dir() and _LEVEL.fullmatch(p.name) for p in base.iterdir()):
            return base
    raise SetupError(f"KB_DIR {kb_dir}: no level1/, level2/, ... folder in it or in {kb_dir / 'KernelBench'}; "
                     "pass KernelBench's folder of levels or the checkout above it")


def resolve(entries: list[Entry], kb_dir: Path) -> None:
    root = kb_root(kb_dir)
    missing = []
    for e in entries:
        e.task = (root / e.kernelbench).resolve()
        if not e.task.is_file():
            missing.append(f"{e.name} -> {root / e.kernelbench}")
    if missing:
        raise SetupError(f"{len(missing)} candidate(s) name a KernelBench file that is not in {root}: "
                         + "; ".join(missing))


def select(entries: list[Entry], only: str | None) -> list[Entry]:
    """Entries whose file or KernelBench problem contains `only`, plus the twins the kept ones need."""
    if not only:
        return entries
    kept = [e for e in entries if only in e.name or only in e.kernelbench]
    if not kept:
        raise SetupError(f"--only {only!r}: matches no candidate file or KernelBench problem")
    twins = {e.twin for e in kept if e.twin}
    kept += [e for e in entries if e.stem in twins and e not in kept]
    return kept


def write_pairs(entries: list[Entry], out: Path) -> Path:
    """OUT/pairs.json for the batch; a fixture with the launcher's marker line goes in as its expanded copy
    (OUT/candidates/<group>/<file>), since the evaluator is given a self-contained file."""
    out.mkdir(parents=True, exist_ok=True)
    for e in entries:
        text = e.path.read_text()
        if launcher_marker.has_marker(text):
            e.expanded = out / "candidates" / e.group / e.path.name
            e.expanded.parent.mkdir(parents=True, exist_ok=True)
            try:
                e.expanded.write_text(launcher_marker.expand(text, where=str(e.path)))
            except ValueError as exc:  # two marker lines
                raise HeaderError(str(exc)) from None
    pairs = out / "pairs.json"
    pairs.write_text(json.dumps([{"task": str(e.task), "candidate": str(e.candidate)} for e in entries],
                                indent=1) + "\n")
    return pairs


# -- running ---------------------------------------------------------------------------------------------

def batch_command(args: argparse.Namespace, pairs: Path, verdicts: Path) -> list[str]:
    cmd = [sys.executable, "-m", "htam_agent.evaluation", "batch", "--pairs", str(pairs), "--out", str(verdicts),
           "--backend", args.backend, "--no-store"]
    if args.jobs:
        cmd += ["--jobs", str(args.jobs)]
    if args.size:
        cmd += ["--size", args.size]
    if args.tier:
        cmd += ["--tier", args.tier]
    return cmd + ["--baselines", args.baselines]


def run_batch(cmd: list[str]) -> int:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(PACKAGE_ROOT)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    print("$ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env).returncode  # inherits stdout/stderr: the batch's progress streams


def read_verdicts(path: Path) -> dict[str, dict]:
    """Candidate verdicts by resolved candidate path (baseline lines skipped)."""
    out: dict[str, dict] = {}
    if not path.is_file():
        return out
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            v = json.loads(line)
        except ValueError:
            print(f"warning: {path}:{n} is not JSON; skipped", file=sys.stderr)
            continue
        read = Readout(v if isinstance(v, dict) else None)
        if read.recorded and read.kind != "baseline" and read.candidate_path:
            out[str(Path(read.candidate_path).resolve())] = v
    return out


# -- judging ---------------------------------------------------------------------------------------------

def _median_ms(v: dict | None) -> float | None:
    return Readout(v).median_ms()


def judge(entries: list[Entry], verdicts: dict[str, dict]) -> list[dict]:
    """One row per entry: what was expected, what happened, OK or not, and a note."""
    by_stem = {e.stem: verdicts.get(str(e.candidate)) for e in entries}
    rows = []
    for e in entries:
        v = by_stem[e.stem]
        read = Readout(v)
        status = (read.status if read.status != "unknown" else "?") if v else "missing"
        caught = read.flags_that_reject() + ([read.failed_check] if read.failed_check else [])
        warnings = read.flags_that_reject(False)
        turned_down = status in NOT_ACCEPTED
        note = ""
        if v is None:
            ok, note = False, "no verdict (the batch stopped early, or refused the pairs)"
        elif e.expect == "accepted":
            ok = status == "accepted"
            if not ok:
                note = read.reason[:160]
        elif e.expect == "turned_down":
            ok = turned_down
            if not ok:
                note = read.reason[:160]
            elif e.caught_by and not set(caught) & set(e.caught_by):
                note = f"caught by {', '.join(caught) or '?'}, predicted {', '.join(e.caught_by)}"
        elif e.expect == "missed":
            ok = status == "accepted"
            if ok:
                note = f"known gap: {e.missing}"
            elif turned_down:
                note = f"now caught ({', '.join(caught) or status}): update the header to 'expect: turned_down'"
            else:
                note = read.reason[:160]
        else:  # not_faster_than: the side-stream cheat
            twin_v = by_stem.get(e.twin or "")
            cheat_ms, twin_ms = _median_ms(v), _median_ms(twin_v)
            if turned_down:
                ok, note = True, f"turned down ({', '.join(caught)})"
            elif status != "accepted":
                ok, note = False, read.reason[:160]
            elif not twin_v or Readout(twin_v).status != "accepted" or not twin_ms or cheat_ms is None:
                ok, note = False, f"cannot compare: twin {e.twin} not accepted or untimed, or no time for the cheat"
            else:
                ratio = cheat_ms / twin_ms
                ok = ratio >= SIDE_STREAM_MIN_RATIO
                note = (f"{cheat_ms:.4g} ms vs twin {twin_ms:.4g} ms ({ratio:.2f}x the twin's time"
                        + ("" if ok else f"; below {SIDE_STREAM_MIN_RATIO}: work on the side stream escapes the timer")
                        + ")")
        rows.append({
            "file": e.name, "kernelbench": e.kernelbench, "group": e.group, "pattern": e.pattern,
            "expect": e.expect_text, "status": status, "caught": caught, "warnings": warnings,
            "speedup_vs_eager": read.speedup_vs_eager, "median_ms": _median_ms(v),
            "ok": ok, "note": note, "reason": read.reason,
        })
    return rows


def summarize(entries: list[Entry], rows: list[dict]) -> dict:
    def count(expect: str, good) -> dict:
        sel = [r for e, r in zip(entries, rows, strict=True) if e.expect == expect]
        return {"ok": sum(bool(good(r)) for r in sel), "total": len(sel)}

    side = [{"file": r["file"], "ok": r["ok"], "status": r["status"], "note": r["note"]}
            for e, r in zip(entries, rows, strict=True) if e.expect == "not_faster_than"]
    return {
        "honest_accepted": count("accepted", lambda r: r["status"] == "accepted"),
        "cheats_turned_down": count("turned_down", lambda r: r["status"] in NOT_ACCEPTED),
        "known_gaps_still_missed": count("missed", lambda r: r["status"] == "accepted"),
        "side_stream": side,
        "mismatches": [r["file"] for r in rows if not r["ok"]],
    }


def _cell(r: dict) -> str:
    if r["caught"]:
        return ", ".join(r["caught"])
    return f"(warn: {', '.join(r['warnings'])})" if r["warnings"] else "-"


def print_table(rows: list[dict]) -> None:
    head = ("file", "KB problem", "expected", "status", "failed_check/flags", "vs eager", "result")
    body = [(r["file"], r["kernelbench"], r["expect"], r["status"], _cell(r),
             "-" if r["speedup_vs_eager"] is None else f"{r['speedup_vs_eager']:.2f}x",
             "OK" if r["ok"] else "MISMATCH") for r in rows]
    widths = [min(max(len(str(x[i])) for x in [head, *body]), 48) for i in range(len(head))]
    for line in [head, *body]:
        print("  ".join(str(c)[:w].ljust(w) for c, w in zip(line, widths, strict=True)).rstrip())
    for r in rows:
        if r["note"]:
            print(f"  {r['file']}: {r['note']}")


def summary_line(s: dict) -> str:
    h, c, g = s["honest_accepted"], s["cheats_turned_down"], s["known_gaps_still_missed"]
    side = "; ".join(f"{'ok' if x['ok'] else 'MISMATCH'}: {x['note']}" for x in s["side_stream"]) or "not run"
    line = f"honest accepted {h['ok']}/{h['total']}, cheats turned down {c['ok']}/{c['total']}, side stream: {side}"
    if g["total"]:
        line += f", known gaps still missed {g['ok']}/{g['total']}"
    n = len(s["mismatches"])
    return line + (f"; {n} MISMATCH(ES): {', '.join(s['mismatches'])}" if n else "; no mismatch")


# -- run -------------------------------------------------------------------------------------------------

def run(args: argparse.Namespace) -> int:
    """The checks, for the options `htam_agent.cli.kernelbench_checks` parsed; returns the exit status."""
    try:
        entries = select(collect(args.candidates_dir), args.only)
        resolve(entries, args.kb_dir)
        pairs = write_pairs(entries, args.out)
    except (HeaderError, SetupError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    verdicts = args.out / "verdicts.jsonl"
    print(f"{len(entries)} candidate(s) on {len({e.task for e in entries})} KernelBench problem(s); pairs in {pairs}")
    for e in entries:
        print(f"  {e.name:58} {e.kernelbench:48} expect {e.expect_text}")
    cmd = batch_command(args, pairs, verdicts)
    if args.dry_run:
        print("dry run; would run: " + " ".join(cmd))
        return 0
    rc = 0
    if not args.judge_only:
        verdicts.unlink(missing_ok=True)
        rc = run_batch(cmd)
        if rc:
            print(f"warning: the batch exited with status {rc}", file=sys.stderr)
    rows = judge(entries, read_verdicts(verdicts))
    summary = summarize(entries, rows)
    print()
    print_table(rows)
    print(summary_line(summary))
    summary.update({"kb_dir": str(args.kb_dir), "candidates_dir": str(args.candidates_dir),
                    "backend": args.backend, "size": args.size, "tier": args.tier, "batch_returncode": rc,
                    "rows": rows})
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1, default=str) + "\n")
    return 1 if summary["mismatches"] or rc else 0
