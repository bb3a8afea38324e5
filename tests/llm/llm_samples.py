"""Candidate sources and replies used by the LLM tests: the bundled honest candidates, and a task."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CANDIDATES = ROOT / "htam_agent" / "bundled_tasks" / "candidates" / "elementwise_leaky_relu"
TASK_PATH = ROOT / "htam_agent" / "bundled_tasks" / "suite" / "elementwise_leaky_relu.py"

TASK = TASK_PATH.read_text()
CUDA_NVRTC = (CANDIDATES / "cuda_nvrtc.py").read_text()
CUDA_INLINE = (CANDIDATES / "cuda_vec4.py").read_text()
TRITON = (CANDIDATES / "triton_block.py").read_text()
CPP = (CANDIDATES / "cpp_omp.py").read_text()

BY_BACKEND = {"cuda": CUDA_NVRTC, "triton": TRITON, "cpp": CPP}


def fenced(code: str, lang: str = "python") -> str:
    return f"```{lang}\n{code.rstrip()}\n```"


def reply_with(code: str, lang: str = "python") -> str:
    return f"The kernel is memory-bound, so I vectorize the loads.\n\n{fenced(code, lang)}\n\nThis should help."
