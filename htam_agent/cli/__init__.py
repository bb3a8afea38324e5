"""The `htam` command (typer + rich): `main` is the console script; `optimize` is its longest command."""

from .main import app, main

__all__ = ["app", "main"]
