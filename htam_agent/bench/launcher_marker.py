"""Fast-form candidate fixtures hold the fast CUDA launcher as one marker line, expanded at test and bench time.

Why: the launcher (`htam_agent.coder.exemplar.fast_cuda.FAST_LAUNCHER`, ~200 lines) is what every fast-form
candidate carries. Pasted into each fixture it is 42 copies that drift from the coder; a marker line keeps
one source, and `expand` gives the evaluator the self-contained file the coder would have written
(`to_fast_form`), byte for byte. A fixture is the usual-form file run through `to_fast_form`, launcher
collapsed back to the marker (`fast_fixture`).

    python -m htam_agent.bench.launcher_marker FILE             # print the standalone candidate
    python -m htam_agent.bench.launcher_marker --fast-from FILE # print FILE's fast-form fixture
"""

from __future__ import annotations

import sys
from pathlib import Path

from htam_agent.coder.exemplar.fast_cuda import FAST_LAUNCHER, to_fast_form

MARKER = "# <<FAST_CUDA_LAUNCHER>>"
_MARKER_LINE = MARKER + "\n"


def _marker_lines(lines: list[str]) -> list[int]:
    return [i for i, line in enumerate(lines) if line.rstrip("\n") == MARKER]


def has_marker(text: str) -> bool:
    """Whether the text holds the marker as a line of its own (a mention inside other text does not count)."""
    return bool(_marker_lines(text.splitlines(keepends=True)))


def expand(text: str, where: str = "the candidate") -> str:
    """The text with its marker line replaced by the launcher; a text without the marker is returned as is.
    Raises ValueError (naming `where`) for two marker lines: a candidate carries one launcher."""
    lines = text.splitlines(keepends=True)
    hits = _marker_lines(lines)
    if len(hits) > 1:
        raise ValueError(f"{where}: {MARKER} on lines {', '.join(str(i + 1) for i in hits)}; keep one (a "
                         "fast-form candidate carries one launcher)")
    for i in hits:
        lines[i] = FAST_LAUNCHER
    return "".join(lines)


def collapse(text: str) -> str:
    """The text with its pasted launcher (exactly as the coder writes it) turned back into the marker line."""
    return text.replace(FAST_LAUNCHER, _MARKER_LINE)


def fast_fixture(usual_form: str) -> str:
    """The fixture for a usual-form NVRTC candidate: what `to_fast_form` writes, launcher as the marker line."""
    return collapse(to_fast_form(usual_form))


def source_of(path: Path) -> str:
    """What the evaluator is given for a fixture file: its text with the launcher expanded."""
    return expand(path.read_text(), where=str(path))


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--fast-from" and Path(argv[1]).is_file():
        sys.stdout.write(fast_fixture(Path(argv[1]).read_text()))
        return 0
    if len(argv) == 1 and Path(argv[0]).is_file():
        sys.stdout.write(source_of(Path(argv[0])))
        return 0
    print("usage:\n" + "\n".join(__doc__.strip().splitlines()[-2:]), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
