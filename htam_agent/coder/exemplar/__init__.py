"""The offline exemplar coder: real kernels for recognised operator patterns, written without an LLM.

A task's reference `Model` is traced with torch.fx and matched to a family (elementwise chains and GEMM/conv
epilogues, row-wise reductions and normalizations, tiled matmul). Each family renders candidates for the cuda
(NVRTC), triton and cpp backends from a small set of knobs; retrieved HTAM strategies map to knob changes, so
the memory's choices change the code. Nothing heavy is imported here: torch loads only when a task is traced.

Where things live: every elementwise op and its spellings (`F.*`, `torch.*`, tensor methods, `nn.*` modules)
is one row of `optable.py` (an op is added with one `register(OpRow(...))`; see its docstring); the staged
family's stage kinds each have one emitter in `stages/` whose kernel text is in `templates/*.tmpl`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .coder import ExemplarCoder
    from .enumerate import enumerate_candidates
    from .patterns import recognize

__all__ = ["ExemplarCoder", "enumerate_candidates", "recognize"]


def __getattr__(name: str) -> Any:
    if name == "ExemplarCoder":
        from .coder import ExemplarCoder

        return ExemplarCoder
    if name == "enumerate_candidates":
        from .enumerate import enumerate_candidates

        return enumerate_candidates
    if name == "recognize":
        from .patterns import recognize

        return recognize
    raise AttributeError(name)
