"""Run configuration: the graph's `context_schema`, and the one place settings and their defaults live.

Every setting has an environment variable; `RunContext.from_env(**overrides)` reads them and applies the
caller's overrides (CLI options, Python arguments). Nodes read `runtime.context`; nothing else reads the
environment for these settings. The memory's own locations (HTAM_MEMORY_DIR, HTAM_CHROMA_URL) and the
evaluator's caches (HTAM_CACHE_DIR, ...) keep their modules' readers; the fields here default to them.

The method's switches (memory mode, ablations, direction policy) are settings too, so the benchmark's
baselines (one-shot, refine, flat memory, best-of-n) are the same graph with another context.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

from htam_agent.backend_registry import BACKENDS
from htam_agent.evaluation.parent.gateway import EvaluationMode

CoderKind = Literal["auto", "llm", "exemplar"]
MemoryMode = Literal["htam", "flat", "none"]
DirectionPolicy = Literal["htam", "random", "first"]
#: The settings whose values are one of a Literal's: validate() reads the allowed values from it.
_CHOICES: dict[str, Any] = {"coder": CoderKind, "memory_mode": MemoryMode, "evaluation": EvaluationMode,
                            "direction_policy": DirectionPolicy}


class ConfigError(ValueError):
    """A setting has a bad value; the message names the setting, its variable and the fix."""


def _env(name: str) -> str | None:
    value = os.environ.get(name)
    return value if value not in (None, "") else None


def default_runs_dir() -> Path:
    """`HTAM_RUNS_DIR`, else `runs/` under the evaluator's cache root."""
    env = _env("HTAM_RUNS_DIR")
    if env:
        return Path(env).expanduser()
    from htam_agent.evaluation.common.paths import cache_root

    return cache_root() / "runs"


def _boolean(raw: str) -> bool:
    v = raw.strip().lower()
    if v in ("1", "true", "yes", "on"):
        return True
    if v in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(raw)


_boolean.__name__ = "boolean (1/0, true/false)"

# name -> (environment variable, converter). Fields absent here have no variable.
_ENV: dict[str, tuple[str, Callable[[str], Any]]] = {
    "model": ("HTAM_MODEL", str),
    "base_url": ("HTAM_BASE_URL", str),
    "api_key_env": ("HTAM_API_KEY_ENV", str),
    "temperature": ("HTAM_TEMPERATURE", float),
    "max_tokens": ("HTAM_MAX_TOKENS", int),
    "llm_timeout_s": ("HTAM_LLM_TIMEOUT", float),
    "llm_retries": ("HTAM_LLM_RETRIES", int),
    "coder": ("HTAM_CODER", str),
    "backend": ("HTAM_BACKEND", str),
    "device_index": ("HTAM_DEVICE_INDEX", int),
    "size": ("HTAM_SIZE", str),
    "steps": ("HTAM_STEPS", int),
    "candidates": ("HTAM_CANDIDATES", int),
    "max_repairs": ("HTAM_MAX_REPAIRS", int),
    "max_evaluations": ("HTAM_MAX_EVALUATIONS", int),
    "target_speedup": ("HTAM_TARGET_SPEEDUP", float),
    "roofline_stop": ("HTAM_ROOFLINE_STOP", float),
    "memory_mode": ("HTAM_MEMORY_MODE", str),
    "direction_policy": ("HTAM_DIRECTION_POLICY", str),
    "strategies_k": ("HTAM_STRATEGIES_K", int),
    "memory_dir": ("HTAM_MEMORY_DIR", str),
    "chroma_url": ("HTAM_CHROMA_URL", str),
    "memory_namespace": ("HTAM_MEMORY_NAMESPACE", str),
    "shipped_memory": ("HTAM_SHIPPED_MEMORY", _boolean),
    "runs_dir": ("HTAM_RUNS_DIR", str),
    "keep_checkpoints": ("HTAM_KEEP_CHECKPOINTS", _boolean),
    "compile_timeout_s": ("HTAM_COMPILE_TIMEOUT", float),
    "run_timeout_s": ("HTAM_RUN_TIMEOUT", float),
    "seed": ("HTAM_SEED", int),
    "evaluation": ("HTAM_EVALUATION", str),
}


@dataclass(frozen=True)
class RunContext:
    """What a run may vary without changing code. Field docs name the environment variable."""

    # --- LLM (HTAM_MODEL, HTAM_BASE_URL; the key is read from the variable named by api_key_env) ---------
    model: str | None = None
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = 0.2
    max_tokens: int | None = None
    llm_timeout_s: float = 600.0
    llm_retries: int = 4
    #: auto: the LLM when a model is configured, else the offline exemplar coder (HTAM_CODER)
    coder: CoderKind = "auto"
    #: ask again (bounded) when a reply has no usable code
    max_asks: int = 2

    # --- target (HTAM_BACKEND, HTAM_DEVICE_INDEX, HTAM_SIZE) -------------------------------------------
    backend: str = "cuda"
    device_index: int = 0
    size: str | None = None  # None: the evaluator's default for the backend
    baselines: tuple[str, ...] = ("eager", "compile")
    #: local: run the evaluator here; replay: only verdicts already in the verdict store (made on a GPU host
    #: and imported); auto: local when this machine has the backend's device, else replay (HTAM_EVALUATION)
    evaluation: EvaluationMode = "auto"
    compile_timeout_s: float = 600.0
    run_timeout_s: float = 180.0

    # --- budgets (HTAM_STEPS, HTAM_CANDIDATES, HTAM_MAX_REPAIRS, HTAM_TARGET_SPEEDUP, HTAM_ROOFLINE_STOP) --
    steps: int = 6
    candidates: int = 1
    max_repairs: int = 2
    #: a cap on evaluations per run (repairs included): the run stops when it is spent, whatever the steps
    max_evaluations: int | None = None
    target_speedup: float | None = None
    #: stop when the best candidate reaches this fraction of the roofline floor (1.0 = speed of light)
    roofline_stop: float = 0.9

    # --- method (HTAM_MEMORY_MODE, HTAM_DIRECTION_POLICY, HTAM_STRATEGIES_K) ---------------------------
    #: htam: hierarchical memory with transitions; flat: similarity retrieval over past experiences only;
    #: none: no memory at all (one-shot / refine baselines)
    memory_mode: MemoryMode = "htam"
    direction_policy: DirectionPolicy = "htam"
    use_strategies: bool = True       # ablation: no local strategies
    use_transitions: bool = True      # ablation: no transition experience on the edges
    learn: bool = True                # record outcomes into the memory
    strategies_k: int = 3

    # --- places (HTAM_MEMORY_DIR, HTAM_CHROMA_URL, HTAM_RUNS_DIR) --------------------------------------
    memory_dir: str | None = None     # None: the memory's per-user default
    chroma_url: str | None = None
    #: prefix of the Chroma collections: separates memories that share one Chroma server (bench methods)
    memory_namespace: str | None = None
    #: load the experience shipped for the run's backend into a memory with none of the user's own on it
    #: (memory/shipped.py; HTAM_SHIPPED_MEMORY); benches turn it off, their lanes start from what they trained
    shipped_memory: bool = True
    runs_dir: str | None = None       # None: default_runs_dir()
    #: keep every checkpoint of a finished run (time travel in LangGraph Studio); by default only the last
    #: one stays, which is all `--resume` needs (a 6-step run folder measured 2.3 MB before, 0.32 MB after)
    keep_checkpoints: bool = False

    seed: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    #: pause before each generation (LangGraph interrupt) so a person can accept, redirect or edit
    interactive: bool = False
    #: objects injected from Python (chat model, memory, evaluator); never serialized or checkpointed
    resources: Any = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.validate()

    # ------------------------------------------------------------------------------------------------
    @classmethod
    def from_env(cls, **overrides: Any) -> RunContext:
        """Defaults <- environment variables <- overrides (None overrides are ignored)."""
        values: dict[str, Any] = {}
        for name, (var, conv) in _ENV.items():
            raw = _env(var)
            if raw is None:
                continue
            try:
                values[name] = conv(raw)
            except ValueError:
                raise ConfigError(f"environment variable {var}={raw!r} is not a valid {conv.__name__} "
                                  f"(setting '{name}'); fix or unset it") from None
        if "HTAM_BASE_URL" not in os.environ and _env("OPENAI_BASE_URL"):
            values["base_url"] = _env("OPENAI_BASE_URL")
        known = {f.name for f in fields(cls)}
        for key, value in overrides.items():
            if key not in known:
                raise ConfigError(f"unknown setting {key!r}; known: {', '.join(sorted(known))}")
            if value is not None:
                values[key] = tuple(value) if isinstance(value, list) else value
        return cls(**values)

    def with_(self, **changes: Any) -> RunContext:
        return replace(self, **changes)

    def validate(self) -> None:
        def bad(name: str, why: str) -> ConfigError:
            var = _ENV.get(name, (None,))[0]
            where = f" (option --{name.replace('_', '-')}" + (f" or {var})" if var else ")")
            return ConfigError(f"setting '{name}'={getattr(self, name)!r}: {why}{where}")

        if self.backend not in BACKENDS:
            raise bad("backend", f"expected one of {', '.join(BACKENDS)}")
        for name, vocabulary in _CHOICES.items():  # each read from its Literal, written once
            allowed = get_args(vocabulary)
            if getattr(self, name) not in allowed:
                raise bad(name, f"expected {', '.join(allowed[:-1])} or {allowed[-1]}")
        for name in ("steps", "candidates", "strategies_k", "max_asks"):
            if getattr(self, name) < 1:
                raise bad(name, "must be at least 1")
        if self.max_repairs < 0:
            raise bad("max_repairs", "must be 0 or more")
        if self.max_evaluations is not None and self.max_evaluations < 1:
            raise bad("max_evaluations", "must be at least 1 (or unset for no cap)")
        if self.target_speedup is not None and self.target_speedup <= 0:
            raise bad("target_speedup", "must be positive")
        if not 0 < self.roofline_stop <= 10:
            raise bad("roofline_stop", "must be a fraction of the roofline floor in (0, 10]")
        if self.coder == "llm" and not self.model:
            raise bad("coder", "the LLM coder needs a model: set HTAM_MODEL or pass --model")

    # ------------------------------------------------------------------------------------------------
    @property
    def coder_kind(self) -> Literal["llm", "exemplar"]:
        if self.coder == "auto":
            return "llm" if self.model else "exemplar"
        return self.coder

    @property
    def uses_memory(self) -> bool:
        return self.memory_mode != "none"

    def runs_path(self) -> Path:
        return Path(self.runs_dir).expanduser() if self.runs_dir else default_runs_dir()

    def recursion_limit(self) -> int:
        """Graph super-steps a run may take: per step one pass of every node, plus each repair's loop."""
        per_step = 7 + 3 * self.max_repairs * self.candidates
        return 25 + self.steps * per_step

    def as_dict(self) -> dict[str, Any]:
        """The settings as JSON types (resources left out): what a run folder records for --resume."""
        data = asdict(replace(self, resources=None))
        data.pop("resources")
        data["baselines"] = list(self.baselines)
        data["tags"] = list(self.tags)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunContext:
        known = {f.name for f in fields(cls)}
        values = {k: (tuple(v) if isinstance(v, list) else v) for k, v in data.items() if k in known}
        return cls(**values)

    def describe(self) -> str:
        who = f"LLM {self.model}" if self.coder_kind == "llm" else "exemplar coder (no LLM)"
        return (f"{who}, backend {self.backend}, {self.steps} steps x {self.candidates} candidate(s), "
                f"memory {self.memory_mode}")
