"""Load KernelBench-format problems (`Model`, `get_inputs`, `get_init_inputs`) from files or folders.

Task files are executed as Python modules; a broken one must fail here, with its path and what is wrong,
never deep inside a checker. Sizes other than the module defaults (`SMALL_SIZES`, `ALT_SIZES`) are applied by
overriding module globals, so the file itself stays a plain KernelBench file. A file without those dicts (every
KernelBench file) gets them derived by `sizes/` (analysis, probe, search); an explicit dict always wins.
"""

from __future__ import annotations

import itertools
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from . import sizes as _sizes

SIZES = ("default", "small", "alt")
_SIZE_DICTS = _sizes.SIZE_DICTS
_counter = itertools.count()


class TaskError(ValueError):
    """A task file that cannot be used; the message names the file, the problem and the fix."""


@dataclass
class Task:
    """One loaded problem at one size."""

    name: str
    path: Path
    source: str
    size: str
    module: ModuleType = field(repr=False)
    # Derived overrides ({'small': ..., 'alt': ..., 'problems': ...}, JSON form) for sizes the file has no dict
    # for: handed in by whoever derived them (a checker gets them from the parent), else derived on first use.
    derived: dict[str, Any] | None = field(default=None, repr=False)

    @property
    def model_cls(self) -> type:
        return self.module.Model

    @property
    def sizes(self) -> tuple[str, ...]:
        """The sizes this task has: 'default', plus 'small'/'alt' from the file's dicts or, where a dict is
        absent, derived (the first call on a KernelBench file derives them: seconds, then cached)."""
        out = ["default"]
        for size, dict_name in _SIZE_DICTS.items():
            if isinstance(getattr(self.module, dict_name, None), dict):
                out.append(size)
            elif getattr(self.module, dict_name, None) is None and self.derived_sizes().get(size) is not None:
                out.append(size)
        return tuple(out)

    def derived_sizes(self) -> dict[str, Any]:
        """The derived overrides (see `sizes.derived_overrides`), computed once per task."""
        if self.derived is None:
            self.derived = _derived(self.source, self.path)
        return self.derived

    def get_inputs(self) -> list[Any]:
        return list(self.module.get_inputs())

    def get_init_inputs(self) -> list[Any]:
        fn = getattr(self.module, "get_init_inputs", None)
        return list(fn()) if fn is not None else []

    def at_size(self, size: str) -> Task:
        """The same task re-loaded at another size (a fresh module, so sizes never leak between them)."""
        return load_task_source(self.source, self.path, size=size, name=self.name, check_inputs=False,
                                derived=self.derived)


def _derived(source: str, path: Path) -> dict[str, Any]:
    try:
        return _sizes.derived_overrides(source, path)
    except _sizes.SizeError as exc:
        return {"small": None, "alt": None, "problems": {"small": str(exc), "alt": str(exc)}}


def has_size(task_source: str, size: str, path: Path | str = "<task>") -> bool:
    """Whether a task source has `size` ('default' always; 'small'/'alt' from its dict or derived).

    For callers that hold only the source, such as the parent choosing a backend's default size
    (`htam_agent.backend_registry.spec(backend).default_size`, 'small' on the CPU) when the task has it.
    """
    return _sizes.has_size(task_source, size, path)


def _exec_module(source: str, path: Path) -> ModuleType:
    mod_name = f"htam_task_{path.stem}_{next(_counter)}".replace("-", "_").replace(".", "_")
    module = ModuleType(mod_name)
    module.__file__ = str(path)
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as exc:
        raise TaskError(
            f"{path}: syntax error at line {exc.lineno}: {exc.msg}. Fix the Python syntax of the task file."
        ) from exc
    sys.modules[mod_name] = module  # dataclasses and pickling look modules up by name
    try:
        exec(code, module.__dict__)
    except Exception as exc:  # an import error or a crash at module level
        del sys.modules[mod_name]
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        raise TaskError(
            f"{path}: executing the task file failed: {last}. The file must import and run as a plain "
            "Python module (only torch and the standard library are guaranteed to be installed)."
        ) from exc
    return module


def _check_interface(module: ModuleType, path: Path) -> None:
    import torch.nn as nn

    model = getattr(module, "Model", None)
    if model is None:
        raise TaskError(f"{path}: no `Model` class. A KernelBench task defines `class Model(nn.Module)`.")
    if not (isinstance(model, type) and issubclass(model, nn.Module)):
        raise TaskError(f"{path}: `Model` is not an nn.Module subclass. Define `class Model(nn.Module)`.")
    if not callable(getattr(module, "get_inputs", None)):
        raise TaskError(
            f"{path}: no `get_inputs()` function. Define `def get_inputs(): return [tensor, ...]` "
            "returning the forward() arguments."
        )
    gii = getattr(module, "get_init_inputs", None)
    if gii is not None and not callable(gii):
        raise TaskError(f"{path}: `get_init_inputs` is not a function. Define `def get_init_inputs(): return [...]`.")


def _apply_size(module: ModuleType, path: Path, size: str, source: str | None = None,
                derived: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """Set the globals of `size`: from the file's dict, else from the derived overrides (`derived`, or derived
    here from `source`). Returns the derived overrides it used or computed, so the task keeps them."""
    if size not in SIZES:
        raise TaskError(f"{path}: unknown size {size!r}; use one of {', '.join(SIZES)}.")
    if size == "default":
        return derived
    dict_name = _SIZE_DICTS[size]
    overrides = getattr(module, dict_name, None)
    if overrides is None:
        if derived is None:
            if source is None:
                raise TaskError(f"{path}: size {size!r} requested but the file defines no `{dict_name}` dict. "
                                f"Add `{dict_name} = {{'<global>': value, ...}}` or use size='default'.")
            derived = _derived(source, path)
        try:
            values = _sizes.overrides_from(derived, size, path)
        except _sizes.SizeError as exc:
            raise TaskError(f"{exc}. (size {size!r} requested: the file defines no `{dict_name}` dict and none "
                            "could be derived; or use size='default'.)") from exc
        for key, value in values.items():
            if key not in module.__dict__:
                raise TaskError(f"{path}: the derived {size!r} size overrides {key!r}, which the file does not "
                                f"define; add `{dict_name} = {{...}}` to the file.")
            module.__dict__[key] = value
        return derived
    if not isinstance(overrides, dict):
        raise TaskError(f"{path}: `{dict_name}` must be a dict of module globals to override.")
    for key, value in overrides.items():
        if key not in module.__dict__:
            raise TaskError(
                f"{path}: `{dict_name}` overrides {key!r}, which is not a module-level global of the file. "
                "Name only the size globals that get_inputs()/get_init_inputs() read."
            )
        module.__dict__[key] = value
    return derived


def _check_inputs(module: ModuleType, path: Path) -> None:
    """Call the input functions on the meta device: a shape-only dry run that allocates nothing.

    This catches missing names, wrong return types and non-tensor inputs at load time, even for GPU sizes
    of many GB. Ops the meta device cannot run (NotImplementedError/RuntimeError) defer the check to the
    checker, which validates the real inputs again.
    """
    import torch

    for fn_name in ("get_init_inputs", "get_inputs"):
        fn = getattr(module, fn_name, None)
        if fn is None:
            continue
        try:
            with torch.device("meta"):
                value = fn()
        except (NotImplementedError, RuntimeError):
            continue
        except Exception as exc:
            raise TaskError(f"{path}: {fn_name}() raised {type(exc).__name__}: {exc}") from exc
        if fn_name == "get_inputs":
            validate_inputs(value, path)
        elif not isinstance(value, (list, tuple)):
            raise TaskError(
                f"{path}: get_init_inputs() returned {type(value).__name__}; it must return a list of "
                "constructor arguments (an empty list if there are none)."
            )


def validate_inputs(inputs: Any, path: Path | str) -> list[Any]:
    """Check what get_inputs() returned: a list/tuple whose tensors are real, dense `torch.Tensor`s."""
    import torch

    if not isinstance(inputs, (list, tuple)):
        raise TaskError(
            f"{path}: get_inputs() returned {type(inputs).__name__}; it must return a list of forward() arguments."
        )
    if not any(isinstance(x, torch.Tensor) for x in inputs):
        raise TaskError(
            f"{path}: get_inputs() returned no tensor ({[type(x).__name__ for x in inputs]}); at least one "
            "forward() argument must be a torch.Tensor."
        )
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            if type(x) is not torch.Tensor and not isinstance(x, torch.nn.Parameter):
                raise TaskError(f"{path}: get_inputs()[{i}] is a {type(x).__name__}, not a plain torch.Tensor.")
            if x.is_sparse:
                raise TaskError(f"{path}: get_inputs()[{i}] is sparse; only dense tensors are supported.")
        elif not isinstance(x, (int, float, bool, str, type(None))):
            raise TaskError(
                f"{path}: get_inputs()[{i}] is a {type(x).__name__}; inputs must be tensors or Python scalars."
            )
    return list(inputs)


def load_task_source(source: str, path: Path | str, size: str = "default", name: str | None = None,
                     check_inputs: bool = True, derived: dict[str, Any] | None = None) -> Task:
    """Load a task from its source text (`path` is used for messages and the name).

    `derived`: the output of `sizes.derived_overrides(source)` made elsewhere (a checker gets it from the
    parent rather than derive, or read the cache, in a process that runs candidate code).
    """
    path = Path(path)
    module = _exec_module(source, path)
    _check_interface(module, path)
    derived = _apply_size(module, path, size, source, derived)
    if check_inputs:
        _check_inputs(module, path)
    return Task(name=name or path.stem, path=path, source=source, size=size, module=module, derived=derived)


def load_task(path: Path | str, size: str = "default") -> Task:
    """Load one KernelBench-format problem file at a size ('default', 'small' or 'alt')."""
    path = Path(path)
    if not path.is_file():
        raise TaskError(f"{path}: no such task file. Pass a KernelBench-format .py file or a folder of them.")
    if path.suffix != ".py":
        raise TaskError(f"{path}: task files are Python files ending in .py.")
    try:
        source = path.read_text()
    except UnicodeDecodeError as exc:
        raise TaskError(f"{path}: not UTF-8 text ({exc}).") from exc
    return load_task_source(source, path, size=size)


def task_paths(path: Path | str) -> list[Path]:
    """A file, or every problem file of a folder (a KernelBench `level1` folder works as it is)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("*.py") if not p.name.startswith("_"))
        if not files:
            raise TaskError(f"{path}: the folder holds no .py task files.")
        return sorted(files, key=_natural_key)
    if path.is_file():
        return [path]
    raise TaskError(f"{path}: no such file or folder.")


def load_tasks(path: Path | str, size: str = "default") -> list[Task]:
    """Load every task under `path`; all errors are gathered so one bad file names itself among many."""
    tasks, errors = [], []
    for p in task_paths(path):
        try:
            tasks.append(load_task(p, size=size))
        except TaskError as exc:
            errors.append(str(exc))
    if errors:
        raise TaskError(f"{len(errors)} of {len(errors) + len(tasks)} task files failed to load:\n" + "\n".join(errors))
    return tasks


def _natural_key(p: Path) -> tuple:
    """Sort `2_x.py` before `10_x.py`, as KernelBench numbers its problems."""
    head = p.name.split("_", 1)[0]
    return (int(head), p.name) if head.isdigit() else (10**9, p.name)


def describe_sizes(path: Path | str, refresh: bool = False) -> dict[str, Any]:
    """Every size of one task file, for people (`htam tasks sizes`): where each comes from (the file's dict or
    derived), the globals it sets, the input shapes, and why it was chosen, or why there is none."""
    import torch

    task = load_task(path)
    explicit = _sizes.explicit_dicts(task.source, task.path)
    report = None if explicit >= set(_SIZE_DICTS) else _sizes.derive_sizes(task.source, task.path,
                                                                            use_cache=not refresh)
    out: dict[str, Any] = {"path": str(task.path), "sizes": {}}
    if report is not None:
        out["size_globals"] = report["slots"]
        out["kept_globals"] = report["kept"]
        out["derive_seconds"] = report.get("seconds")
        out["cached"] = report.get("cached")
    for size in SIZES:
        entry: dict[str, Any] = {}
        if size == "default":
            entry["from"] = "the file's globals"
            if report is not None and report["default"]:
                entry["est_ms"] = report["default"]["est_ms"]
        elif size in explicit:
            entry["from"] = f"{_SIZE_DICTS[size]} in the file (explicit dicts win)"
            entry["globals"] = dict(getattr(task.module, _SIZE_DICTS[size], {}) or {})
        else:
            rec = report[size] if report else None
            if rec is None:
                entry["problem"] = (report or {}).get("problems", {}).get(size) or "not derived"
                out["sizes"][size] = entry
                continue
            entry.update({"from": "derived", "globals": {k: v[1] for k, v in rec["changed"].items()},
                          "recomputed": {k: v for k, v in _sizes.decode(rec["overrides"]).items()
                                         if k not in rec["changed"]},
                          "est_ms": rec["est_ms"], "cpu_ms": rec["cpu_ms"], "cpu1_ms": rec.get("cpu1_ms"),
                          "cpu_error": rec["cpu_error"],
                          "checked_on": rec["mode"], "why": rec["why"]})
        try:
            t = task if size == "default" else task.at_size(size)
            with torch.device("meta"):
                entry["inputs"] = [_sizes.describe_input(x) for x in t.get_inputs()]
        except Exception as exc:  # shown, not raised: the other sizes are still worth printing
            entry["inputs_error"] = f"{type(exc).__name__}: {exc}"
        out["sizes"][size] = entry
    return out
