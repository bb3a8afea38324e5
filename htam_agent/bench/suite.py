"""Which tasks a bench runs: the bundled suite, a folder of KernelBench-format files, or a KernelBench checkout.

A task here is only a path with its identity (suite, id, level, operator class); it is loaded by the agent.
The operator class comes from the bundled suite's file-name prefix (``elementwise_*``, ``fused_*``, ...), from
the KernelBench level (level 2 problems are fused chains, level 3 and 4 whole models), or, for level 1, from
keywords of the problem's name.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from pathlib import Path

BUNDLED = ("bundled", "suite", "htam")


class SuiteError(ValueError):
    """A suite, level or filter that selects nothing usable; the message says what to pass instead."""


@dataclass(frozen=True)
class BenchTask:
    suite: str
    id: str          # unique in the suite: "norm_softmax", "level1/23_Softmax"
    path: str
    level: str       # "suite" for the bundled suite and plain folders, else "level1", ...
    category: str    # operator class

    @property
    def problem(self) -> str:
        """The problem's name without its level: "19_ReLU" for "level1/19_ReLU"."""
        return self.id.rsplit("/", 1)[-1]

    def as_dict(self) -> dict[str, str]:
        return {"suite": self.suite, "task": self.id, "task_path": self.path, "level": self.level,
                "problem": self.problem, "category": self.category}


_PREFIX = {"conv": "convolution", "norm": "normalization", "pool": "pooling", "loss": "reduction",
           "gemm": "matmul", "mm": "matmul", "act": "elementwise"}
_KNOWN = ("elementwise", "reduction", "normalization", "matmul", "convolution", "pooling", "attention", "scan",
          "fused", "model")
# Ordered: the first match wins (pooling before the max/min reductions, conv before matmul, ...).
_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("attention", ("attention", "sdpa")),
    ("convolution", ("conv",)),
    ("pooling", ("pool",)),
    ("scan", ("cumsum", "cumprod", "scan")),
    ("normalization", ("softmax", "norm")),
    ("reduction", ("loss", "argmax", "argmin", "reduction", "_sum", "sum_", "_mean", "mean_", "product_over",
                   "cosine_similarity", "cross_entropy")),
    ("matmul", ("matmul", "matrix", "gemm", "mm_", "_mm", "bmm", "einsum")),
    ("elementwise", ("relu", "sigmoid", "tanh", "gelu", "selu", "elu", "softplus", "softsign", "swish", "mish",
                     "hardtanh", "hardsigmoid", "clamp", "scale", "add", "mul")),
)


def operator_class(name: str, level: str = "suite") -> str:
    """The operator class of a task from its file stem and level (see the module docstring)."""
    if level in ("level2",):
        return "fused"
    if level in ("level3", "level4"):
        return "model"
    stem = name.lower()
    if level == "suite":
        head = stem.split("_", 1)[0]
        if head in _KNOWN:
            return head
        if head in _PREFIX:
            return _PREFIX[head]
    stem = re.sub(r"^\d+_", "", stem)
    for cls, words in _KEYWORDS:
        if any(w in stem for w in words):
            return cls
    return "other"


def _level_dirs(root: Path) -> dict[str, Path]:
    """A KernelBench checkout's level folders: `root/KernelBench/levelN` or `root/levelN`."""
    for base in (root / "KernelBench", root):
        found = {p.name: p for p in base.glob("level*") if p.is_dir() and re.fullmatch(r"level\d+", p.name)}
        if found:
            return dict(sorted(found.items(), key=lambda kv: int(kv[0][5:])))
    return {}


def parse_levels(levels: str | None) -> list[int] | None:
    if levels is None or not levels.strip():
        return None
    out = []
    for part in levels.split(","):
        part = part.strip().removeprefix("level")
        if "-" in part:
            lo, _, hi = part.partition("-")
            if not (lo.isdigit() and hi.isdigit()) or int(lo) > int(hi):
                raise SuiteError(f"bad level range {part!r}; use e.g. --levels 1,2 or --levels 1-3")
            out.extend(range(int(lo), int(hi) + 1))
        elif part.isdigit():
            out.append(int(part))
        else:
            raise SuiteError(f"bad level {part!r}; use level numbers, e.g. --levels 1,2 or --levels 1-3")
    return list(dict.fromkeys(out))


def _matches(task_id: str, patterns: list[str]) -> bool:
    name = task_id.lower()
    for pat in patterns:
        pat = pat.lower()
        if any(c in pat for c in "*?["):
            if fnmatch.fnmatch(name, pat) or fnmatch.fnmatch(name.rsplit("/", 1)[-1], pat):
                return True
        elif pat in name:
            return True
    return False


def _py_files(folder: Path) -> list[Path]:
    from htam_agent.evaluation.tasks.loading import _natural_key

    return sorted((p for p in folder.glob("*.py") if not p.name.startswith("_")), key=_natural_key)


def resolve_suite(suite: str, levels: str | None = None, task_filter: str | None = None,
                  limit: int | None = None) -> list[BenchTask]:
    """The tasks SUITE names, after --levels and --filter (comma-separated substrings or globs)."""
    wanted_levels = parse_levels(levels)
    tasks: list[BenchTask] = []
    if suite in BUNDLED:
        from htam_agent.bundled_tasks import SUITE_DIR

        if wanted_levels:
            raise SuiteError("--levels applies to a KernelBench checkout; the bundled suite has no levels")
        tasks = [BenchTask("bundled", p.stem, str(p), "suite", operator_class(p.stem)) for p in _py_files(SUITE_DIR)]
    else:
        root = Path(suite).expanduser()
        if not root.exists():
            raise SuiteError(f"{suite}: no such folder; pass 'bundled' for the bundled suite, a folder of "
                             "KernelBench-format .py files, or a KernelBench checkout")
        if root.is_file():
            raise SuiteError(f"{suite}: a suite is a folder (or 'bundled'); to optimize one file use `htam optimize`")
        root = root.resolve()
        level_dirs = _level_dirs(root)
        if level_dirs:
            name = root.name
            chosen = level_dirs
            if wanted_levels:
                missing = [n for n in wanted_levels if f"level{n}" not in level_dirs]
                if missing:
                    raise SuiteError(f"{suite}: no level {', '.join(map(str, missing))}; the checkout has "
                                     f"{', '.join(level_dirs)}")
                chosen = {f"level{n}": level_dirs[f"level{n}"] for n in wanted_levels}
            for level, folder in chosen.items():
                tasks += [BenchTask(name, f"{level}/{p.stem}", str(p), level, operator_class(p.stem, level))
                          for p in _py_files(folder)]
        else:
            if wanted_levels:
                raise SuiteError(f"{suite}: --levels needs a KernelBench checkout (a folder with level1, "
                                 "level2, ... or KernelBench/level1, ...); this folder has no level folders")
            level = root.name if re.fullmatch(r"level\d+", root.name) else "suite"
            suite_name = root.parent.name if level != "suite" else root.name
            prefix = f"{level}/" if level != "suite" else ""
            tasks = [BenchTask(suite_name, prefix + p.stem, str(p), level, operator_class(p.stem, level))
                     for p in _py_files(root)]
    if not tasks:
        raise SuiteError(f"{suite}: the suite holds no .py task files")
    if task_filter:
        patterns = [p.strip() for p in task_filter.split(",") if p.strip()]
        tasks = [t for t in tasks if _matches(t.id, patterns)]
        if not tasks:
            raise SuiteError(f"--filter {task_filter!r} matches no task of {suite}")
    if limit is not None:
        if limit < 1:
            raise SuiteError("--limit must be at least 1")
        tasks = tasks[:limit]
    return tasks


__all__ = ["BUNDLED", "BenchTask", "SuiteError", "operator_class", "parse_levels", "resolve_suite"]
