"""The backend registry: the one place that says which backends exist and what each one is.

Every layer reads it: the run settings (`context.py`), the memory's vocabulary (`memory/schema.py`), the
evaluator (`evaluation/backends/`), the coders and their prompts, the CLIs. A backend travels as its name
("cuda", "triton", "cpp"); `spec(name)` gives its facts, and questions such as "does it run on the CPU?" are
answered here (`is_cpu`, `device_type`) instead of by comparing names.

Standard library only: the evaluator imports this module on a bare GPU host, and `import htam_agent` stays
cheap. Adding a backend is adding a `BackendSpec` below, its evaluation module (`evaluator`), and its prompt
files (`prompts/format_<name>.md`, `generate_<name>.md`, `repair_hints_<name>.md`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: A source-code check: (regular expression searched in the comment-stripped source, reason when it fails).
Marker = tuple[str, str]


@dataclass(frozen=True)
class BackendSpec:
    """The facts about one backend; no behaviour beyond deriving names from them."""

    name: str  # "cuda": what settings, files, records and verdicts call it
    title: str  # "CUDA": how prompts name it
    device_type: str  # "cuda" or "cpu": where inputs live and what the reference runs on
    language: str  # the language a candidate's kernel is written in
    description: str  # one line, for CLI help
    evaluator: str  # "module:Class" of its evaluation backend (imported only when evaluating)
    default_size: str  # the task size evaluated when none is asked for ("small" on the CPU, when the task has one)
    signature: str  # regular expression that identifies a source as this backend's (see `detect`)
    requires: tuple[Marker, ...]  # what a valid candidate must contain (besides `class ModelNew`)
    forbids: tuple[Marker, ...] = ()  # what it must not contain
    kernel: str = ""  # the kernel a reply must hold, in a few words ("a __global__ CUDA kernel")
    expected: str = ""  # what a reply must contain, in one phrase (for the LLM's corrective messages)

    # --- derived names -----------------------------------------------------------------------------------
    @property
    def is_cpu(self) -> bool:
        return self.device_type == "cpu"

    @property
    def candidate_prefix(self) -> str:
        """Candidate files of this backend are named `<prefix><anything>.py` (tasks/candidates/, batch)."""
        return f"{self.name}_"

    @property
    def candidate_glob(self) -> str:
        return f"{self.candidate_prefix}*.py"

    def candidate_file(self, label: str) -> str:
        """The file name of a candidate called `label`: cuda_vec4.py."""
        return f"{self.candidate_prefix}{label}.py"

    @property
    def format_prompt(self) -> str:
        """Prompt file with the exact candidate format (part of the system message)."""
        return f"format_{self.name}.md"

    @property
    def generate_prompt(self) -> str:
        """Prompt file asking for a fresh candidate."""
        return f"generate_{self.name}.md"

    @property
    def repair_hints_prompt(self) -> str:
        """Prompt file with this backend's hints for a repair."""
        return f"repair_hints_{self.name}.md"

    @property
    def evaluator_module(self) -> str:
        return self.evaluator.split(":", 1)[0]

    @property
    def evaluator_class(self) -> str:
        return self.evaluator.split(":", 1)[1]


_LOAD_INLINE = r"\bload_inline\s*\("

_SPECS: tuple[BackendSpec, ...] = (
    BackendSpec(
        name="cuda",
        title="CUDA",
        device_type="cuda",
        language="CUDA C++",
        description="CUDA C++ via torch.utils.cpp_extension.load_inline, or __global__ kernels via NVRTC",
        evaluator="htam_agent.evaluation.backends.cuda:CudaBackend",
        default_size="default",
        signature=r"__global__",
        requires=(
            (r"__global__", "no CUDA `__global__` kernel in the source"),
            (_LOAD_INLINE + r"|\b_compile_kernel\s*\(",
             "the CUDA source is never compiled: call torch.utils.cpp_extension.load_inline(cuda_sources=...) "
             "or torch.cuda._compile_kernel(...)"),
        ),
        kernel="a __global__ CUDA kernel",
        expected="a __global__ kernel, compiled by load_inline(cuda_sources=...) or torch.cuda._compile_kernel",
    ),
    BackendSpec(
        name="triton",
        title="Triton",
        device_type="cuda",
        language="Triton (Python)",
        description="Triton kernels (@triton.jit)",
        evaluator="htam_agent.evaluation.backends.triton:TritonBackend",
        default_size="default",
        signature=r"@triton\.(jit|autotune)\b",
        requires=((r"@triton\.jit\b|@triton\.autotune\b|@jit\b", "no `@triton.jit` kernel in the source"),),
        kernel="a @triton.jit kernel",
        expected="a @triton.jit kernel launched from forward",
    ),
    BackendSpec(
        name="cpp",
        title="C++ (CPU, OpenMP)",
        device_type="cpu",
        language="C++ (OpenMP allowed)",
        description="C++ CPU kernels via torch.utils.cpp_extension.load_inline (OpenMP allowed)",
        evaluator="htam_agent.evaluation.backends.cpp:CppBackend",
        default_size="small",
        signature=_LOAD_INLINE,
        requires=((_LOAD_INLINE, "no C++ extension: compile the kernel with "
                                 "torch.utils.cpp_extension.load_inline(cpp_sources=...)"),),
        forbids=((r"\bcuda_sources\s*=", "cuda_sources given to a cpp candidate: use --backend cuda for CUDA code"),),
        kernel="C++ compiled with load_inline(cpp_sources=...)",
        expected="C++ compiled by load_inline(cpp_sources=...), with OpenMP, no CUDA",
    ),
)

REGISTRY: dict[str, BackendSpec] = {s.name: s for s in _SPECS}
#: Every backend's name, in the registry's order (the memory's statistics index this tuple: append only).
BACKENDS: tuple[str, ...] = tuple(REGISTRY)
#: The order `detect` tries the signatures in: the most specific first (a CUDA source calls load_inline too).
DETECT_ORDER: tuple[str, ...] = ("triton", "cuda", "cpp")


class UnknownBackend(ValueError):
    """A backend name that is not in the registry; the message lists the valid ones."""


def spec(name: str) -> BackendSpec:
    """The facts of backend `name`; an unknown name raises UnknownBackend (a ValueError) naming the choices."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownBackend(f"unknown backend {name!r}; choose one of: {', '.join(BACKENDS)}") from None


def is_cpu(name: str) -> bool:
    """Whether backend `name` runs on the CPU (no GPU needed to evaluate it)."""
    return spec(name).is_cpu


def device_type(name: str) -> str:
    """"cuda" or "cpu": the torch device type backend `name` runs on."""
    return spec(name).device_type


def gpu_backends() -> tuple[str, ...]:
    """The backends that need a GPU, in registry order."""
    return tuple(s.name for s in _SPECS if not s.is_cpu)


def choices(sep: str = " | ") -> str:
    """The names joined for help text: "cuda | triton | cpp"."""
    return sep.join(BACKENDS)


def detect(source: str) -> str | None:
    """Guess a candidate's backend from its source (when none is given); None when no signature matches."""
    for name in DETECT_ORDER:
        if re.search(REGISTRY[name].signature, source):
            return name
    return None


if set(DETECT_ORDER) != set(BACKENDS):  # pragma: no cover - a registry edit that forgot the detection order
    raise RuntimeError("backends.DETECT_ORDER must name every registered backend")

__all__ = [
    "BACKENDS", "DETECT_ORDER", "REGISTRY", "BackendSpec", "Marker", "UnknownBackend", "choices", "detect",
    "device_type", "gpu_backends", "is_cpu", "spec",
]
