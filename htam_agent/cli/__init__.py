"""The `htam` command, the one home of the package's command lines: `cli/<command>.py` defines `htam <command>`,
`cli/main.py` assembles them, and `main` is both the `htam` console script and `python -m htam_agent`.

`app` and `main` load on first use, so importing one command's module (the exemplar coder's tests do) does not
build every command.
"""

from __future__ import annotations

from typing import Any


def main() -> None:
    """Run `htam` (the console script's entry point)."""
    from htam_agent.cli.main import main as run

    run()


def __getattr__(name: str) -> Any:
    if name == "app":
        from htam_agent.cli.main import app

        return app
    raise AttributeError(f"module 'htam_agent.cli' has no attribute {name!r}")


__all__ = ["app", "main"]
