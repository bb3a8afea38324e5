"""The verdict table: every variant of the offline coder's space for each problem it covers, evaluated once and
kept as one slim JSON line per variant, so a method can be replayed against it without a build or a sandbox.

Why slim: a full verdict is ~6 KB (trials, sandbox, phase times); the table keeps only what the agent's graph
reads back (status, speedups, times, roofline fraction and bound, flags, reason) and what the protocol reports
(directions, strategies, timing interval), so ~120 problems x ~20 variants stay well under a few MB.

Files: ``NAME.jsonl`` (or ``NAME.jsonl.gz`` once frozen) holds the records; ``NAME.provenance.json`` beside it
holds one entry per invocation of the job that wrote them (commit, machine, date, command, torch, size).

Writing is crash-safe: `write_record` appends one whole line with one ``write`` on an ``O_APPEND`` descriptor,
then ``fsync``; a run killed mid-write leaves at most a torn last line, which `load_table` skips (and reports in
``Table.torn``) and the next append starts on a fresh line. The latest record of a (problem, backend, variant)
wins, so a re-timed variant is simply appended again. Standard library and the evaluator's verdict (its STATUSES
are a record's) and Readout only (the job also runs on bare GPU hosts); `variant_annotations` imports the
exemplar coder when called.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_agent.evaluation.common.verdict import STATUSES

TABLE_FORMAT = "htam-verdict-table"
TABLE_VERSION = 1
_PROBLEM_RE = re.compile(r"^[^/\s]+(/[^/\s]+)?$")
_LEVEL_RE = re.compile(r"^level(\d+)/")


class TableError(ValueError):
    """A malformed table or record; the message names the file, the line and the field."""


@dataclass(frozen=True)
class VariantRecord:
    """One variant of one problem, as measured. Field names are the JSON keys."""

    problem: str                      # the bench task id: "level1/19_ReLU" (KernelBench), "norm_softmax" (bundled)
    level: int | None                 # KernelBench's level (1 for "level1/..."); None outside KernelBench
    op_class: str                     # the analyze node's class (coder.opclass.classify)
    family: str                       # the exemplar family (elementwise, rowwise, matmul, staged)
    backend: str
    size: str                         # the size the evaluator timed ("small", "default", ...)
    variant: str                      # coder.exemplar.common.variant_id(knobs)
    knobs: dict[str, Any]
    directions: list[str]             # HTG directions of the knobs that differ from the family default
    strategies: list[str]             # strategy ids whose move from the family default this variant realizes
    status: str                       # the verdict's status
    speedup_eager: float | None
    speedup_compile: float | None
    time_ms: float | None             # the candidate's median
    eager_ms: float | None
    compile_ms: float | None
    ratio_lo: float | None            # the interval of speedup_eager achieved (None: unknown)
    ratio_hi: float | None
    roofline_fraction: float | None
    reason: str                       # the verdict's one line
    seed: int | None                  # the verdict's input seed (of the verdict the figures come from)
    n_timings: int                    # how many timed verdicts the figures summarize
    bound: str | None = None          # the roofline's bound (memory, compute): the analyze node reads it
    flags: list[str] = field(default_factory=list)  # the verdict's flag names (e.g. timing_unreliable)
    # sha256 (first 16 hex) of the candidate's code: the variant id names knobs, and the same knobs render other
    # code once the coder changes, so the job re-evaluates a record whose code the coder no longer writes
    code_sha: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.problem, self.backend, self.variant)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], where: str = "record") -> VariantRecord:
        """Checked construction: every error names `where` (file:line) and the field."""
        if not isinstance(data, Mapping):
            raise TableError(f"{where}: a record must be a JSON object, got {type(data).__name__}")
        names = {f.name for f in dataclasses.fields(cls)}
        required = {f.name for f in dataclasses.fields(cls)
                    if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
        missing = sorted(required - set(data))
        if missing:
            raise TableError(f"{where}: missing field(s) {', '.join(missing)}; every record needs "
                             f"{', '.join(sorted(required))}")
        unknown = sorted(set(data) - names)
        if unknown:
            raise TableError(f"{where}: unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(names))}")
        rec = cls(**{k: data[k] for k in names if k in data})
        rec._check(where)
        return rec

    def _check(self, where: str) -> None:
        def bad(name: str, want: str) -> TableError:
            return TableError(f"{where}: field {name!r} = {getattr(self, name)!r}: expected {want}")

        for name in ("problem", "op_class", "family", "backend", "size", "variant", "status", "reason"):
            if not isinstance(getattr(self, name), str):
                raise bad(name, "a string")
        if not _PROBLEM_RE.match(self.problem):
            raise bad("problem", "the bench task id: 'level1/19_ReLU' for KernelBench, a file stem otherwise")
        m = _LEVEL_RE.match(self.problem)
        want = int(m.group(1)) if m else None
        if (self.level is not None and (isinstance(self.level, bool) or not isinstance(self.level, int))) \
                or self.level != want:
            raise bad("level", f"{want} (the problem's level folder)" if m else "null outside KernelBench")
        if self.status not in STATUSES:
            raise bad("status", f"one of {', '.join(STATUSES)}")
        if not isinstance(self.knobs, dict):
            raise bad("knobs", "an object of knob -> value")
        for name in ("directions", "strategies", "flags"):
            value = getattr(self, name)
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise bad(name, "a list of strings")
        for name in ("speedup_eager", "speedup_compile", "time_ms", "eager_ms", "compile_ms", "ratio_lo",
                     "ratio_hi", "roofline_fraction"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or value < 0:
                raise bad(name, "a finite non-negative number or null")
        if (self.ratio_lo is None) != (self.ratio_hi is None):
            raise bad("ratio_lo", "ratio_lo and ratio_hi both set or both null")
        if self.ratio_lo is not None and self.ratio_hi is not None and self.ratio_lo > self.ratio_hi:
            raise bad("ratio_lo", f"at most ratio_hi ({self.ratio_hi})")
        if self.accepted and self.speedup_eager is None:
            raise bad("speedup_eager", "a number for an accepted variant (an untimed one is not replayable)")
        if self.seed is not None and (isinstance(self.seed, bool) or not isinstance(self.seed, int)):
            raise bad("seed", "an integer or null")
        if isinstance(self.n_timings, bool) or not isinstance(self.n_timings, int) or self.n_timings < 0:
            raise bad("n_timings", "a non-negative integer")
        if self.code_sha is not None and not (isinstance(self.code_sha, str) and re.fullmatch(r"[0-9a-f]{16}",
                                                                                              self.code_sha)):
            raise bad("code_sha", "16 lowercase hex digits (sha256 of the candidate's code) or null")
        if self.bound not in (None, "memory", "compute"):
            raise bad("bound", "'memory', 'compute' or null")


# -- from a verdict ------------------------------------------------------------------------------------------------
def _one_line(text: Any, limit: int = 300) -> str:
    return " ".join(str(text or "").split())[:limit]


def record_from_verdict(verdict: Mapping[str, Any], *, problem: str, level: int | None, op_class: str, family: str,
                        knobs: Mapping[str, Any], directions: Sequence[str], strategies: Sequence[str],
                        variant: str | None = None, size: str | None = None, seed: int | None = None,
                        n_timings: int | None = None, ratio_lo: float | None = None, ratio_hi: float | None = None,
                        speedup_eager: float | None = None, speedup_compile: float | None = None,
                        time_ms: float | None = None, eager_ms: float | None = None,
                        code: str | None = None) -> VariantRecord:
    """The slim record of one evaluated variant.

    Status, reason, compile speedup and time, roofline fraction and bound, flags and backend come from the
    verdict. `variant` defaults to `variant_id(knobs)`; `size` and `seed` default to the verdict's. When a
    variant was timed several times, pass the summary (`speedup_eager`, `time_ms`, `eager_ms`, ...) with
    `n_timings` and the interval `ratio_lo`/`ratio_hi`; each defaults to the verdict's own figure (and
    `n_timings` to 1 for a timed verdict, 0 for an untimed one).
    """
    if not isinstance(verdict, Mapping):
        raise TableError(f"verdict of {problem}: expected a verdict object (dict), got {type(verdict).__name__}")
    from htam_agent.evaluation.parent.readout import Readout

    read = Readout(dict(verdict))
    if variant is None:
        from htam_agent.coder.exemplar.common import variant_id

        variant = variant_id(knobs)
    sp_eager = speedup_eager if speedup_eager is not None else read.speedup_vs_eager
    if n_timings is None:
        n_timings = 1 if sp_eager is not None else 0
    rec = VariantRecord(
        problem=problem, level=level, op_class=op_class, family=family, backend=read.backend,
        size=size if size is not None else (read.size or "default"), variant=variant, knobs=dict(knobs),
        directions=list(directions), strategies=list(strategies), status=read.status, speedup_eager=sp_eager,
        speedup_compile=speedup_compile if speedup_compile is not None else read.speedup_vs_compile,
        time_ms=time_ms if time_ms is not None else read.median_ms("candidate"),
        eager_ms=eager_ms if eager_ms is not None else read.median_ms("eager"),
        compile_ms=read.median_ms("compile"), ratio_lo=ratio_lo, ratio_hi=ratio_hi,
        roofline_fraction=read.roofline_fraction, reason=_one_line(read.reason),
        seed=seed if seed is not None else read.seed, n_timings=n_timings, bound=read.bound,
        flags=read.flag_names, code_sha=code_sha(code) if code is not None else None,
    )
    rec._check(f"verdict of {problem} variant {variant}")
    return rec


def code_sha(code: str) -> str:
    """The record's `code_sha` of a candidate's code."""
    return hashlib.sha256(code.encode()).hexdigest()[:16]


def variant_annotations(pattern: Any, backend: str, knobs: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """(directions, strategies) of a variant, relative to its family's default on this backend.

    directions: every HTG direction whose DIRECTION_MOVES touches a knob this variant changes (in the family's
    order). strategies: every strategy whose move, from the default, changes at least one knob this variant
    changes and contradicts none: a knob the move sets to a value must have that value here (or be outside the
    backend's space); a knob it sets to NEXT (a sweep) is realized by any value other than the default.
    """
    from htam_agent.coder.exemplar.common import NEXT
    from htam_agent.coder.exemplar.families import family_module

    fam = family_module(pattern.family)
    sp = fam.space(pattern, backend)
    base = fam.default(pattern, backend)
    changed = {k for k in knobs if knobs.get(k) != base.get(k)}
    directions = [d for d, mv in fam.DIRECTION_MOVES.items() if changed & set(mv)]
    strategies = []
    for sid, move in fam.moves(backend).items():
        own = {k: v for k, v in move.items() if k in sp and (v == NEXT or (v in sp[k] and v != base.get(k)))}
        if any(k in changed for k in own) and all(knobs.get(k) == v for k, v in own.items() if v != NEXT):
            strategies.append(sid)
    return directions, strategies


# -- files ---------------------------------------------------------------------------------------------------------
def write_record(path: str | Path, rec: VariantRecord) -> None:
    """Append one record: one write of the whole line, then fsync (a kill loses at most this line)."""
    path = Path(path)
    if path.name.endswith(".gz"):
        raise TableError(f"{path}: appending to a gzip table is not crash-safe; write to the .jsonl and compress "
                         "it when the table is complete (gzip -k)")
    if not isinstance(rec, VariantRecord):
        raise TableError(f"{path}: write_record takes a VariantRecord (record_from_verdict makes one), got "
                         f"{type(rec).__name__}")
    rec._check(f"{path}: new record {rec.problem} {rec.variant}")
    line = (rec.to_json() + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path, os.O_RDWR | os.O_APPEND | os.O_CREAT) as fd:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line  # a killed writer left a torn line: never glue onto it
        os.write(fd, line)
        os.fsync(fd)


@contextmanager
def _locked(path: Path, flags: int) -> Iterator[int]:
    """The table file open and exclusively locked, the writers' one protocol. Locked, the descriptor is checked
    against the path: a prune that replaced the file while this writer waited leaves it holding the old inode,
    whose writes nobody would read, so it opens the new file and locks again."""
    import fcntl

    while True:
        fd = os.open(path, flags, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if os.fstat(fd).st_ino == os.stat(path).st_ino:
                break
        except FileNotFoundError:
            pass
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)


def prune_records(path: str | Path, drop: Callable[[VariantRecord], bool]) -> int:
    """Rewrite the table without the records ``drop`` names (e.g. variants the coder no longer writes: a renamed
    knob leaves records no run will ask for, and an oracle must not pick them); returns how many went. Under the
    writers' lock (_locked), into a temporary file that replaces the table atomically, so a kill leaves the old
    table or the new one. A torn last line is dropped with them."""
    path = Path(path)
    if path.name.endswith(".gz"):
        raise TableError(f"{path}: prune the .jsonl the job writes, then compress it (gzip -k)")
    with _locked(path, os.O_RDWR):
        table = load_table(path)
        keep = [r for r in table.records if not drop(r)]
        gone = len(table.records) - len(keep)
        if gone or table.torn:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.prune")
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.writelines(r.to_json() + "\n" for r in keep)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, path)
        return gone


class Table:
    """The records of one table file, in file order, with the latest record of each key as the lookup."""

    def __init__(self, records: Sequence[VariantRecord], path: Path | None = None, torn: int = 0) -> None:
        self.path, self.torn = path, torn
        self.records = list(records)
        self._by_key: dict[tuple[str, str, str], VariantRecord] = {}
        sizes: dict[tuple[str, str], str] = {}
        for rec in self.records:
            prior = sizes.setdefault((rec.problem, rec.backend), rec.size)
            if prior != rec.size:
                raise TableError(f"{path or 'table'}: problem {rec.problem} ({rec.backend}) has records at sizes "
                                 f"{prior!r} and {rec.size!r}; a table times each problem at one size")
            self._by_key[rec.key] = rec
        self._by_problem: dict[str, list[VariantRecord]] = {}
        for rec in self._by_key.values():
            self._by_problem.setdefault(rec.problem, []).append(rec)

    def __len__(self) -> int:
        return len(self._by_key)

    def __iter__(self) -> Iterator[VariantRecord]:
        """The latest record of each key, in the order keys first appeared."""
        return iter(self._by_key.values())

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def get(self, problem: str, variant: str, backend: str | None = None) -> VariantRecord | None:
        if backend is not None:
            return self._by_key.get((problem, backend, variant))
        hits = [r for r in self._by_problem.get(problem, ()) if r.variant == variant]
        if len(hits) > 1:
            raise TableError(f"{self.path or 'table'}: {problem} variant {variant} is in several backends "
                             f"({', '.join(r.backend for r in hits)}); pass backend=")
        return hits[0] if hits else None

    @property
    def problems(self) -> list[str]:
        return sorted(self._by_problem)

    def variants(self, problem: str) -> list[VariantRecord]:
        return list(self._by_problem.get(problem, ()))

    def best(self, problem: str) -> VariantRecord | None:
        """The accepted variant with the largest speedup over eager (the oracle's pick), None if none."""
        ok = [r for r in self.variants(problem) if r.accepted and r.speedup_eager is not None]
        return max(ok, key=lambda r: (r.speedup_eager, r.variant)) if ok else None

    def done_keys(self) -> set[tuple[str, str, str]]:
        """(problem, backend, variant) already recorded: what a resumed job skips."""
        return set(self._by_key)


def _open_text(path: Path) -> Any:
    return gzip.open(path, "rt", encoding="utf-8") if path.name.endswith(".gz") else open(path, encoding="utf-8")


def load_table(path: str | Path) -> Table:
    """Read a table (.jsonl or .jsonl.gz). A torn last line (a killed writer) is skipped and counted in
    ``Table.torn``; any other malformed line raises TableError naming the file, the line and the field."""
    path = Path(path)
    if not path.exists():
        raise TableError(f"{path}: no such table file")
    records: list[VariantRecord] = []
    torn = 0
    try:
        with _open_text(path) as fh:
            text = fh.read()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise TableError(f"{path}: cannot read the table: {type(exc).__name__}: {exc}") from None
    lines = text.split("\n")
    ends_clean = text.endswith("\n") or not text
    for i, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        where = f"{path}:{i}"
        try:
            data = json.loads(raw)
        except ValueError as exc:
            last = i == len(lines) or all(not x.strip() for x in lines[i:])
            torn_tail = last and not ends_clean
            # a line a later append started afresh after (write_record put a newline before its own line)
            torn_mid = not torn_tail and i < len(lines) and raw.lstrip().startswith("{") and not raw.rstrip().endswith("}")
            if torn_tail or torn_mid:
                torn += 1
                continue
            raise TableError(f"{where}: not JSON ({exc}); each line is one record, see htam_agent/bench/table.py") \
                from None
        records.append(VariantRecord.from_dict(data, where))
    return Table(records, path, torn)


# -- provenance ----------------------------------------------------------------------------------------------------
def provenance_path(table_path: str | Path) -> Path:
    """NAME.provenance.json beside NAME.jsonl or NAME.jsonl.gz."""
    p = Path(table_path)
    name = p.name
    for suffix in (".jsonl.gz", ".jsonl", ".gz"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return p.with_name(name + ".provenance.json")


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(), "system": platform.platform()}


def provenance_entry(*, command: str, size: str, backend: str, device: str | None = None,
                     notes: str = "", repo: str | Path | None = None) -> dict[str, Any]:
    """One invocation of the job: commit (and whether the tree had changes), machine, UTC date, command, torch
    and python versions, evaluator version, backend, size, the device's name, free notes."""
    repo = Path(repo) if repo else Path(__file__).resolve().parents[2]
    try:
        import torch

        torch_version: str | None = str(torch.__version__)
    except Exception:  # noqa: BLE001 - a provenance entry never fails the job
        torch_version = None
    try:
        from htam_agent.evaluation.common.verdict import EVALUATOR_VERSION

        evaluator: str | None = EVALUATOR_VERSION
    except Exception:  # noqa: BLE001
        evaluator = None
    # the tables themselves change as the job runs: a tree dirty only there still made its records with this commit
    status = _git(["status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)benchmarks/tables"], repo)
    return {
        "commit": _git(["rev-parse", "HEAD"], repo), "dirty": bool(status) if status is not None else None,
        "machine": _machine(), "device": device, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "command": command, "torch": torch_version, "python": sys.version.split()[0],
        "evaluator_version": evaluator, "backend": backend, "size": size, "notes": notes,
    }


def read_provenance(table_path: str | Path) -> dict[str, Any]:
    """The provenance beside a table ({"format", "version", "runs": [...]}); an empty one if there is none."""
    p = provenance_path(table_path)
    if not p.exists():
        return {"format": TABLE_FORMAT, "version": TABLE_VERSION, "runs": []}
    try:
        data = json.loads(p.read_text())
    except ValueError as exc:
        raise TableError(f"{p}: not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != TABLE_FORMAT or not isinstance(data.get("runs"), list):
        raise TableError(f"{p}: expected {{'format': '{TABLE_FORMAT}', 'version': {TABLE_VERSION}, 'runs': [...]}}")
    return data


def add_provenance(table_path: str | Path, entry: Mapping[str, Any]) -> Path:
    """Append one invocation's entry to the provenance file (atomically replaced)."""
    data = read_provenance(table_path)
    data["runs"].append(dict(entry))
    p = provenance_path(table_path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, p)
    return p


__all__ = ["STATUSES", "TABLE_FORMAT", "TABLE_VERSION", "Table", "TableError", "VariantRecord", "add_provenance",
           "load_table", "provenance_entry", "provenance_path", "prune_records", "read_provenance", "record_from_verdict",
           "code_sha",
           "variant_annotations", "write_record"]
