"""Sizes for any KernelBench file: derive 'small' and 'alt' overrides when a file has no SMALL_SIZES / ALT_SIZES.

KernelBench files size their inputs for a GPU (a 6 GB ReLU input is common) and carry no size dicts, so the CPU
backend could not run them and the second-shape check (cheat pattern 12) had no second shape. This module finds
the module-level size globals a file's reference reads, scales them down for 'small' and nudges them to odd,
non-power-of-two values for 'alt', checking every candidate with a forward of the reference on the meta device.

What counts as a size global (`_slots`):
- a module-level name bound once, by a plain assignment whose right-hand side reads no other module global
  (`dim = 8192 * 2` is one, `bias_shape = (out_channels, 1, 1)` is not: it is recomputed from its inputs);
- read, directly or through module-level functions, classes and globals, by `get_inputs`, `get_init_inputs` or
  `Model` (found from the bytecode's global loads, so a constructor parameter of the same name does not count);
- an int, or a tuple/list of ints (each group of equal elements is one slot: `input_shape = (3, 240, 240)`);
- larger than its floor: 2 for names with a `batch` token, else 8. Smaller values are flags, axis indices or
  channel counts like RGB's 3, which buy nothing when shrunk and break the model when changed;
- not named like a structural hyper-parameter (`kernel`, `stride`, `pad(ding)`, `dilation`, `patch`, `window`,
  `layers`, `stages`, `ratio`, `factor` tokens): those describe the op, not the data, and the model's geometry
  depends on them staying as they are.

'small' shrinks greedily: the largest slot (not at its floor) is halved (divided by 4 or 8 while the cost is
far over budget), rounded down to a multiple of the fixed ints that divided it (groups, heads, kernel sizes),
and the move is kept when the reference still runs on the meta device. A move that fails is retried with its divisors and multiples halved along (channels with groups,
embedding with heads, sequence with its maximum); a slot whose moves all fail is frozen where it is. Shrinking
stops once a cost model says the forward fits `BUDGET_MS` on a 2-core CPU with at most `MAX_INPUT_BYTES` of
inputs. The cost model counts FLOPs (torch's flop counter), bytes read and written by every op, the number
of ops, and the pooling taps and arg-reduction elements that CPUs run slowly, all on the meta device, so the
choice depends on the file alone (and torch's version), never on how busy the machine is: the same file gets
the same sizes on every host. A real CPU forward at the chosen size is timed once (`time_forward`: 2-thread
wall clock, one thread's CPU time) and reported against `TARGET_MS`; it does not change the choice.

'alt' starts from 'small' and moves each slot to the nearest other odd value (v-1, v+1, v-3, ... for an even
v; v-2, v+2, ... for an odd one), else to a non-power-of-two multiple of its divisors, keeping each move the
reference accepts; it must differ from small.

Ops the meta device cannot run (data-dependent `.item()`, CPU-only kernels) fall back to building the model on
the CPU and moving it to meta, then to a real CPU forward once the inputs and weights are small enough.

Results are cached per file content (and evaluator version, torch version) as JSON under the evaluator's cache
folder; an unwritable cache only costs the derivation again. Imports only torch and the standard library.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from .... import threadsafe
from ...common import paths
from .budget import BUDGET_MS, MAX_INPUT_BYTES, SIZE_DICTS, TARGET_MS, VERSION, SizeError
from .probe import describe_input, time_forward
from .record import decode, encode
from .search import _derive

_memo: dict[str, dict[str, Any]] = {}


def cache_dir() -> Path:
    """`HTAM_SIZES_DIR`, else `sizes/` under the evaluator's cache root."""
    return Path(os.environ.get("HTAM_SIZES_DIR") or paths.cache_root() / "sizes").expanduser()


def _key(source: str) -> str:
    import torch

    return hashlib.sha256(f"{VERSION}\0{torch.__version__}\0{source}".encode()).hexdigest()


def _read_cache(key: str, source: str) -> dict[str, Any] | None:
    try:
        report = json.loads((cache_dir() / f"{key}.json").read_text())
    except (OSError, ValueError):
        return None
    ok = (isinstance(report, dict) and report.get("version") == VERSION
          and report.get("source_sha256") == hashlib.sha256(source.encode()).hexdigest()
          and all(isinstance(report.get(s), (dict, type(None))) for s in ("small", "alt")))
    return report if ok else None


def _write_cache(key: str, report: dict[str, Any]) -> None:
    d = cache_dir()
    tmp = d / f".{key}.{os.getpid()}.tmp"
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(report, indent=1, sort_keys=True))
        os.replace(tmp, d / f"{key}.json")
    except OSError:  # a read-only or full cache only costs the derivation next time
        with contextlib.suppress(OSError):
            tmp.unlink()


def derive_sizes(source: str, path: Path | str = "<task>", *, use_cache: bool = True,
                 measure: bool = True) -> dict[str, Any]:
    """The derivation report of a task source (cached): 'small'/'alt' records with their overrides, input
    shapes, estimated and measured cost and why they were chosen, or 'problems' saying why not.

    Explicit dicts are not consulted here: callers (`tasks`) let SMALL_SIZES / ALT_SIZES win.
    `use_cache=False` derives afresh (and refreshes the cache); `measure=False` skips the timed CPU forwards
    (a cached report without them serves it, one with them serves both).
    """
    path = Path(path)
    key = _key(source)
    if use_cache:
        hit = _memo.get(key) or _read_cache(key, source)
        if hit is not None and (hit.get("measured") or not measure):
            _memo[key] = hit
            return {**hit, "path": str(path), "cached": True}
    report = _derive(source, path, measure)
    report["measured"] = measure
    _memo[key] = report
    _write_cache(key, report)
    return {**report, "cached": False}


def explicit_dicts(source: str, path: Path | str = "<task>") -> set[str]:
    """Which of SMALL_SIZES / ALT_SIZES a source assigns at module level (found without running it)."""
    import ast

    try:
        tree = threadsafe.parse(source, str(path))
    except SyntaxError:
        return set()
    names = set()
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
            stmt, ast.AnnAssign) else []
        names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {size for size, dict_name in SIZE_DICTS.items() if dict_name in names}


def derived_overrides(source: str, path: Path | str = "<task>", *, use_cache: bool = True) -> dict[str, Any]:
    """{'small': overrides | None, 'alt': overrides | None, 'problems': {...}} in JSON form, for a job file:
    the parent derives once and the checker applies them (`tasks.load_task_source(derived=...)`)."""
    report = derive_sizes(source, path, use_cache=use_cache, measure=False)
    return {"small": report["small"]["overrides"] if report["small"] else None,
            "alt": report["alt"]["overrides"] if report["alt"] else None,
            "problems": dict(report["problems"])}


def overrides_from(derived: dict[str, Any], size: str, path: Path | str) -> dict[str, Any]:
    """The decoded overrides of one derived size, or SizeError naming the dict to add."""
    enc = derived.get(size)
    if enc is None:
        problem = (derived.get("problems") or {}).get(size)
        raise SizeError(problem or f"{path}: no '{size}' size; add {SIZE_DICTS[size]} = {{...}} to {path}")
    return decode(enc)


def has_size(task_source: str, size: str, path: Path | str = "<task>") -> bool:
    """Whether a task source has `size`: 'default' always; 'small'/'alt' when the file defines the dict or
    the size can be derived (derivation is cached, so asking again is cheap)."""
    if size == "default":
        return True
    if size not in SIZE_DICTS:
        return False
    if size in explicit_dicts(task_source, path):
        return True
    try:
        return derived_overrides(task_source, path).get(size) is not None
    except SizeError:
        return False


__all__ = ["BUDGET_MS", "MAX_INPUT_BYTES", "SIZE_DICTS", "TARGET_MS", "VERSION", "SizeError", "cache_dir", "decode",
           "derive_sizes", "derived_overrides", "describe_input", "encode", "explicit_dicts", "has_size",
           "overrides_from", "time_forward"]
