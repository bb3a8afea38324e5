"""The `htam` command: every subcommand's arguments live in this package, one module per command group
(`cli/<command>.py` is `htam <command>`); this module only assembles them into one typer app.

Heavy imports (torch, LangGraph, Chroma) happen inside the commands, so `htam --help` is instant.
"""

from __future__ import annotations

import typer

from htam_agent.cli.bench import bench_command
from htam_agent.cli.chat import chat_cmd, ui_cmd
from htam_agent.cli.evaluator import eval_cmd, verdicts_app
from htam_agent.cli.exemplar import app as exemplar_app
from htam_agent.cli.optimize import optimize_cmd
from htam_agent.cli.tasks import tasks_app

app = typer.Typer(name="htam", help="Make GPU kernels faster with an LLM and a memory that learns (HTAM).",
                  no_args_is_help=True, add_completion=False)
app.command("optimize")(optimize_cmd)
app.command("bench")(bench_command)  # a single command: `htam bench SUITE` (add_typer would nest it)
app.command("chat")(chat_cmd)
app.command("ui")(ui_cmd)
app.command("eval")(eval_cmd)
app.add_typer(verdicts_app, name="verdicts")
app.add_typer(tasks_app, name="tasks")


def _mount_memory() -> None:
    """`htam memory`, or a stub naming what is missing: the rest of the command works without the memory's
    packages."""
    try:
        from htam_agent.cli.memory import app as memory_app
    except ImportError as exc:  # the memory extra is part of the default install; say what is missing
        app.add_typer(typer.Typer(help=f"(unavailable: {exc})"), name="memory")
        return
    app.add_typer(memory_app, name="memory")


_mount_memory()
app.add_typer(exemplar_app, name="exemplar")


@app.command("kernelbench-checks", add_help_option=False,
             context_settings={"allow_extra_args": True, "ignore_unknown_options": True})
def kernelbench_checks_cmd(ctx: typer.Context) -> None:
    """The KernelBench-targeted cheats and honest candidates through the evaluator, each verdict checked
    against its header (KB_DIR --out OUTDIR ...; --help lists the options)."""
    # argparse, defined once in cli/kernelbench_checks.py: the same parser runs on GPU hosts without typer
    from htam_agent.cli.kernelbench_checks import checkout_candidates_dir
    from htam_agent.cli.kernelbench_checks import main as run

    raise typer.Exit(run(ctx.args, candidates_dir=checkout_candidates_dir()))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
