"""The bundled task suite and its hand-written honest candidates (data files in KernelBench format)."""

from __future__ import annotations

from pathlib import Path

from htam_agent.backend_registry import spec

SUITE_DIR = Path(__file__).parent / "suite"
CANDIDATES_DIR = Path(__file__).parent / "candidates"


def suite_files() -> list[Path]:
    """Every bundled problem file, sorted by name."""
    return sorted(p for p in SUITE_DIR.glob("*.py") if not p.name.startswith("_"))


def candidate_files(task_stem: str, backend: str | None = None) -> list[Path]:
    """Bundled candidates for one task, optionally only those of one backend."""
    folder = CANDIDATES_DIR / task_stem
    pattern = spec(backend).candidate_glob if backend else "*.py"
    return sorted(folder.glob(pattern))
