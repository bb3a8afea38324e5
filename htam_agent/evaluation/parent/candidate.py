"""A candidate as the parent holds it: its code and its task's source, read once, with errors that name the file
and the fix."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


class CandidateError(ValueError):
    """A candidate that cannot be built as given; the message names the file or field and the fix."""


@dataclass
class Candidate:
    """One candidate to evaluate against one task file: its code and the task's source, read once (a task file
    edited later cannot change what the candidate is compiled and timed against).

    Build it with `Candidate.of` (from a source, an LLM's reply or a candidate file); constructing it directly
    runs the same checks in `__post_init__`."""

    task_path: str
    source: str
    name: str = ""
    task_source: str = ""
    origin: str = ""  # the candidate file the source was read from, if any

    def __post_init__(self) -> None:
        if not isinstance(self.source, str):
            raise CandidateError(f"candidate for {self.task_path}: source is a {type(self.source).__name__}, "
                                 "not the code as a string")
        self.task_path = str(self.task_path)
        if not self.task_source:
            self.task_source = _read(self.task_path, "task file", "pass the path of a KernelBench task file")
        if not self.name:
            self.name = Path(self.task_path).stem

    @classmethod
    def of(cls, task_path: str | Path, source: str | None = None, *, source_path: str | Path | None = None,
           name: str = "", task_source: str = "") -> Candidate:
        """The one factory: code given as `source` (a reply, a pasted snippet) or read from `source_path`;
        the task's source read from `task_path` unless given (the one a run started with)."""
        if (source is None) == (source_path is None):
            raise CandidateError(f"candidate for {task_path}: give the code as source or as source_path, not "
                                 f"{'both' if source is not None else 'neither'}")
        origin = ""
        if source_path is not None:
            origin = str(source_path)
            source = _read(origin, "candidate file", "pass the path of a file defining class ModelNew")
        path = Path(task_path).expanduser()
        return cls(task_path=str(path), source=source or "", name=name, task_source=task_source, origin=origin)


def _read(path: str, what: str, fix: str) -> str:
    try:
        return Path(path).expanduser().read_text()
    except FileNotFoundError as exc:
        raise CandidateError(f"{what} {path!r}: no such file; {fix}") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise CandidateError(f"{what} {path!r}: cannot read it ({exc}); {fix}") from exc

