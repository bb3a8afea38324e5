"""`htam chat` (terminal) and `htam ui` (a local web page): chat-driven optimization.

Both build the same session (htam_agent.chat): a chat model from --model/--base-url (any OpenAI-compatible
endpoint), or none, and then what works without one. LangChain and Gradio load only when a command runs.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from htam_agent.backend_registry import choices

console = Console(stderr=True)

Model = Annotated[str | None, typer.Option(help="chat model name (HTAM_MODEL); none: slash commands only")]
BaseUrl = Annotated[str | None, typer.Option(help="OpenAI-compatible endpoint (HTAM_BASE_URL)")]
Backend = Annotated[str | None, typer.Option(help=f"{choices()} for new runs (HTAM_BACKEND)")]
Steps = Annotated[int | None, typer.Option(help="steps per new run (HTAM_STEPS)")]
Coder = Annotated[str | None, typer.Option(help="who writes kernels: auto (the chat's model) | llm | exemplar")]
RunsDir = Annotated[str | None, typer.Option(help="run folders (HTAM_RUNS_DIR)")]
MemoryDir = Annotated[str | None, typer.Option(help="memory folder (HTAM_MEMORY_DIR)")]


def _session(model: str | None, base_url: str | None, backend: str | None, steps: int | None,
             coder: str | None, runs_dir: str | None, memory_dir: str | None, thread: str | None = None) -> Any:
    from htam_agent.chat.agent import ChatSession, chat_model_from
    from htam_agent.chat.runs import RunManager
    from htam_agent.coder.llm import LLMError
    from htam_agent.context import ConfigError, RunContext

    try:
        ctx = RunContext.from_env(model=model, base_url=base_url, backend=backend, steps=steps, coder=coder,
                                  runs_dir=runs_dir, memory_dir=memory_dir)
        chat_model = chat_model_from(ctx)
    except (ConfigError, LLMError) as exc:
        console.print(f"[red]error:[/red] {exc}")
        raise typer.Exit(2) from None
    return ChatSession(RunManager(ctx), chat_model, thread_id=thread)


def chat_cmd(
    model: Model = None, base_url: BaseUrl = None, backend: Backend = None, steps: Steps = None,
    coder: Coder = None, runs_dir: RunsDir = None, memory_dir: MemoryDir = None,
    message: Annotated[list[str] | None, typer.Option("--message", "-m", help="send this (repeatable) and exit")] = None,
    thread: Annotated[str | None, typer.Option(help="continue this conversation (its id)")] = None,
) -> None:
    """Chat with the agent in the terminal: optimize, explain, steer, resume, export (streamed, live)."""
    from htam_agent.chat.terminal import run_terminal

    run_terminal(_session(model, base_url, backend, steps, coder, runs_dir, memory_dir, thread), message)


def ui_cmd(
    model: Model = None, base_url: BaseUrl = None, backend: Backend = None, steps: Steps = None,
    coder: Coder = None, runs_dir: RunsDir = None, memory_dir: MemoryDir = None,
    port: Annotated[int, typer.Option(help="port on 127.0.0.1 (0: a free one)")] = 7860,
    run: Annotated[str | None, typer.Option("--run", help="show this run (e.g. to resume it)")] = None,
) -> None:
    """A local web page on 127.0.0.1: the chat beside the live run (steps, speedups, HTG path, best kernel)."""
    try:
        from htam_agent.ui.app import serve
    except ImportError as exc:
        console.print(f"[red]error:[/red] the page needs the ui extra ({exc}): pip install \"htam-agent[ui]\"")
        raise typer.Exit(2) from None
    session = _session(model, base_url, backend, steps, coder, runs_dir, memory_dir)
    if run:
        session.manager.current = run
    try:
        serve(session, port=port)
    except KeyboardInterrupt:
        pass
    finally:
        from htam_agent.chat.terminal import goodbye

        console.print(goodbye(session, page=True), style="yellow", markup=False, highlight=False)
        session.close()
