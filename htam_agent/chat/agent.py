"""The chat agent: a LangGraph graph with `messages` state (langchain's `create_agent`) over the chat tools,
and `ChatSession`, the one conversation loop both front ends (terminal, page) drive.

A session streams what happens as `ChatEvent`s: the reply's tokens as they arrive, the tool calls, and the
run's progress events (steps, directions, verdicts) while a tool runs. Any LangChain chat model works; from the
command line, any OpenAI-compatible endpoint (`--model`, `--base-url`). Without a model the session says so
and still does what needs none, through slash commands (optimize with the offline coder, evaluate, explain,
memory, steer, resume, export).
"""

from __future__ import annotations

import shlex
import sqlite3
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from htam_agent.context import RunContext

from .runs import RunManager

SYSTEM_PROMPT = """You help a person make PyTorch operators faster with hand-written kernels, using the HTAM \
agent through your tools. Use them; never invent figures.
- To optimize, call `optimize` with a task file path or the PyTorch code the person pasted (it needs a `Model` \
class with forward(), `get_inputs()` and `get_init_inputs()`; if the tool says something is missing, tell the \
person exactly what). Pass interactive=true when the person wants to steer or review steps.
- A paused run waits for a decision: relay the planned direction and its alternatives, and call `steer_run` \
with what the person wants (accept, another direction, their own code, stop).
- "Why was candidate N rejected?": `explain_verdict` (its words are the evaluator's; keep them).
- Runs: `list_runs`, `show_run`, `compare_runs`; an interrupted run: `resume_run`; the result: `export_kernel`.
- What the memory learned: `query_memory` (op_class such as normalization, reduction, elementwise, matmul).
Report speedups over eager PyTorch and torch.compile as the tools give them, and the advice (use the kernel, \
use torch.compile, keep PyTorch)."""

NO_MODEL = ("No chat model is configured, so I cannot talk freely: start with --model NAME [--base-url URL] "
            "(any OpenAI-compatible endpoint; the key from OPENAI_API_KEY), or pass a LangChain chat model from "
            "Python. Without one these work (the offline exemplar coder writes the kernels):")

#: each slash command: its arguments, and what it does (for /help, and the page's help)
COMMANDS: dict[str, tuple[str, str]] = {
    "/optimize": ("TASK.py [steps=N] [backend=cpp|cuda|triton] [candidates=N] [interactive=true] [name=NAME]",
                  "start a run on a task file (or paste a task's code between ``` lines); interactive=true "
                  "pauses before each step so you can steer; name= names pasted code"),
    "/steer": ("accept | direction ID | code FILE | stop [run=RUN_ID]",
               "answer a paused run: go on as planned, take another direction, use your own kernel file for "
               "this step, or stop"),
    "/resume": ("[RUN_ID]", "continue a run that stopped (closed, killed, crashed) from its checkpoint; "
                            "finished steps are not repeated"),
    "/eval": ("TASK.py CANDIDATE.py [backend=...]", "compile, verify and time one kernel file against a task"),
    "/explain": ("[RUN_ID|EVAL_ID] [N]", "why candidate N (default: the last rejected one) was or was not "
                                         "accepted, and what to change"),
    "/runs": ("", "list the runs, newest first, with their best speedups"),
    "/show": ("[RUN_ID]", "one run's steps: directions, verdicts, speedups, and what it waits for"),
    "/compare": ("RUN_ID RUN_ID ...", "runs side by side, and which is fastest"),
    "/memory": ("[directions|transitions|learned|strategies|all] [op_class=...] [backend=...]",
                "what the memory has learned: ranked directions, transitions, strategy cards"),
    "/export": ("[RUN_ID] [PATH]", "write a run's best kernel (a drop-in ModelNew file) to PATH (default: "
                                   "./TASK_best_kernel.py) and say where"),
    "/help": ("", "this list"),
    "/quit": ("", "leave the chat (also /exit or Ctrl-D); runs are saved and /resume continues them"),
}
EXTRAS = ("Add --json to a command for its raw JSON. Up and Down recall earlier lines; Ctrl-A, Ctrl-E and "
          "Ctrl-R edit and search them. Without a slash, text goes to the chat model.")


def help_text() -> str:
    """Every command with what it does: the syntax on one line, the explanation indented below it."""
    lines = []
    for c, (args, what) in COMMANDS.items():
        lines += [f"{c} {args}".rstrip(), f"    {what}"]
    return "\n".join([*lines, EXTRAS])


@dataclass
class ChatEvent:
    """kind: token (text), tool_call (name, args), tool_result (name, text), run (event), reply (text: a
    whole reply, e.g. a slash command's answer), error (text)."""

    kind: str
    text: str = ""
    name: str = ""
    data: dict[str, Any] = field(default_factory=dict)


def chat_model_from(ctx: RunContext) -> Any:
    """ChatOpenAI for ctx.model / ctx.base_url (streaming), or None when no model is configured."""
    if not ctx.model:
        return None
    from htam_agent.coder.llm import make_chat_model

    return make_chat_model(ctx, streaming=True)


def build_chat_agent(model: Any, manager: RunManager | None = None, *, checkpointer: Any = None) -> Any:
    """The chat graph (messages state) for any LangChain chat model; `manager` holds the runs' settings."""
    from langchain.agents import create_agent

    from .tools import make_chat_tools

    return create_agent(model, make_chat_tools(manager or RunManager()), system_prompt=SYSTEM_PROMPT,
                        checkpointer=checkpointer, name="htam_chat")


def _kv(tokens: list[str]) -> tuple[list[str], dict[str, str]]:
    pos = [t for t in tokens if "=" not in t]
    return pos, dict(t.split("=", 1) for t in tokens if "=" in t)


def _int(kw: dict[str, str], name: str) -> int | None:
    return int(kw[name]) if name in kw else None


class ChatSession:
    """One conversation: the chat graph (when there is a model), its SQLite-checkpointed thread, the runs."""

    def __init__(self, manager: RunManager | None = None, model: Any = None, *, thread_id: str | None = None,
                 history_path: str | Path | None = None) -> None:
        self.manager = manager or RunManager()
        self.model = model
        self.thread_id = thread_id or f"chat-{uuid.uuid4().hex[:8]}"
        self.agent = None
        self._conn: sqlite3.Connection | None = None
        if model is not None:
            from langgraph.checkpoint.sqlite import SqliteSaver

            path = Path(history_path or self.manager.runs_dir / "chat" / "threads.sqlite")
            path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(str(path), check_same_thread=False)
            self.agent = build_chat_agent(model, self.manager, checkpointer=SqliteSaver(self._conn))

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def greeting(self) -> str:
        if self.agent is None:
            return NO_MODEL + "\n" + help_text()
        from htam_agent.coder.llm import describe_model

        name, base = describe_model(self.model)
        return (f"Chat model {name}" + (f" at {base}" if base else "") + ". Ask me to optimize a task file or "
                "pasted PyTorch code, explain a verdict, steer or resume a run, or what the memory learned. "
                "Slash commands work too (/help).")

    # -- one turn --------------------------------------------------------------------------------------------
    def send(self, text: str) -> Iterator[ChatEvent]:
        text = text.strip()
        if not text:
            return
        if text.startswith("/"):
            yield from self._command(text)
            return
        if self.agent is None:
            if "class Model" in text:  # pasted code with no model: the offline coder can still optimize it
                from . import prose

                m = self.manager
                yield from self._run_tool(lambda sink: m.optimize(text, on_event=sink),
                                          lambda out: prose.outcome_text(out, m.view(out.get("run_id"))))
                return
            yield ChatEvent("reply", NO_MODEL + "\n" + help_text())
            return
        yield from self._agent_turn(text)

    def _agent_turn(self, text: str) -> Iterator[ChatEvent]:
        from langchain_core.messages import AIMessageChunk, HumanMessage, ToolMessage

        config = {"configurable": {"thread_id": self.thread_id}, "recursion_limit": 60}
        try:
            for mode, chunk in self.agent.stream({"messages": [HumanMessage(text)]}, config,
                                                 stream_mode=["messages", "custom"]):
                if mode == "custom" and isinstance(chunk, dict) and "htam_run_event" in chunk:
                    yield ChatEvent("run", data=chunk["htam_run_event"])
                elif mode == "messages":
                    msg, _meta = chunk
                    if isinstance(msg, AIMessageChunk):
                        for tc in msg.tool_call_chunks or []:
                            if tc.get("name"):
                                yield ChatEvent("tool_call", name=str(tc["name"]))
                        if isinstance(msg.content, str) and msg.content:
                            yield ChatEvent("token", msg.content)
                    elif isinstance(msg, ToolMessage):
                        yield ChatEvent("tool_result", str(msg.content), name=str(msg.name or ""))
        except Exception as exc:  # noqa: BLE001 - an endpoint that fails: say what to fix, keep the session
            yield ChatEvent("error", endpoint_problem(exc, self.model))

    # -- slash commands (no model needed) ------------------------------------------------------------------
    def _run_tool(self, call: Any, fmt: Any = None) -> Iterator[ChatEvent]:
        """Run a blocking manager call in a thread, yielding its progress events as they come; its result goes
        through `fmt` (prose for a person; None: JSON)."""
        import json
        import queue
        import threading

        from .runs import ChatInputError

        q: queue.Queue[Any] = queue.Queue()
        done = object()

        def target() -> None:
            try:
                q.put(("result", call(q.put)))
            except (ChatInputError, ValueError, FileNotFoundError) as exc:
                q.put(("error", str(exc)))
            except Exception as exc:  # noqa: BLE001 - shown to the person; the run folder keeps the state
                q.put(("error", f"{type(exc).__name__}: {exc}"))
            q.put(done)

        threading.Thread(target=target, daemon=True).start()
        while (item := q.get()) is not done:
            if isinstance(item, tuple) and item[0] == "result":
                out = item[1]
                if isinstance(out, str):
                    yield ChatEvent("reply", out)
                    continue
                try:
                    text = fmt(out) if fmt is not None else json.dumps(out, indent=1, default=str)
                except Exception as exc:  # noqa: BLE001 - a formatting slip must not hide the result
                    text = f"(could not word this answer: {exc})\n" + json.dumps(out, indent=1, default=str)
                yield ChatEvent("reply", text)
            elif isinstance(item, tuple) and item[0] == "error":
                yield ChatEvent("error", item[1])
            elif isinstance(item, dict):
                yield ChatEvent("run", data=item)

    def _command(self, text: str) -> Iterator[ChatEvent]:
        from . import prose
        from .memory_view import query_memory

        try:
            cmd, *rest = shlex.split(text)
        except ValueError as exc:
            yield ChatEvent("error", f"cannot read the command: {exc}")
            return
        as_json = "--json" in rest
        pos, kw = _kv([t for t in rest if t != "--json"])
        m = self.manager

        def say(fn: Any) -> Any:  # prose for a person, the raw answer with --json
            return None if as_json else fn

        def run_outcome(out: dict[str, Any]) -> str:
            rid = out.get("run_id")
            view = m.view(rid) if rid else None
            return prose.outcome_text(out, view)

        if cmd == "/optimize" and pos:
            yield from self._run_tool(lambda sink: m.optimize(
                pos[0], backend=kw.get("backend"), steps=_int(kw, "steps"), candidates=_int(kw, "candidates"),
                interactive=kw.get("interactive", "false").lower() in ("1", "true", "yes"), on_event=sink,
                name=kw.get("name")), say(run_outcome))
        elif cmd == "/steer" and pos:
            action, arg = pos[0], (pos[1] if len(pos) > 1 else None)
            if action == "code" and not (arg and Path(arg).expanduser().is_file()):
                yield ChatEvent("error", f"/steer code needs the path of your kernel file (a ModelNew class); "
                                         f"{arg or 'none'} is not a file")
                return
            code = Path(arg).expanduser().read_text() if action == "code" and arg else None
            yield from self._run_tool(lambda sink: m.steer(kw.get("run"), action, direction=arg if action ==
                                                           "direction" else None, code=code, on_event=sink),
                                      say(run_outcome))
        elif cmd == "/resume":
            yield from self._run_tool(lambda sink: m.resume(pos[0] if pos else None, on_event=sink), say(run_outcome))
        elif cmd == "/eval" and len(pos) == 2:
            yield from self._run_tool(lambda sink: m.evaluate(pos[0], Path(pos[1]).read_text(), kw.get("backend")),
                                      say(prose.eval_text))
        elif cmd == "/explain":
            num = next((int(p) for p in pos if p.isdigit()), None)
            rid = next((p for p in pos if not p.isdigit()), None)
            yield from self._run_tool(lambda sink: m.explain(rid, num))
        elif cmd == "/runs":
            yield from self._run_tool(lambda sink: m.runs(), say(prose.runs_text))
        elif cmd == "/show":
            def show(sink: Any) -> Any:
                v = m.view(pos[0] if pos else None)
                state = v.state(v.run_id == m.active)
                return prose.show_text(v, state) if not as_json else {**v.summary(), "state": state}
            yield from self._run_tool(show)
        elif cmd == "/compare" and pos:
            yield from self._run_tool(lambda sink: [m.view(r).summary() for r in pos], say(prose.compare_text))
        elif cmd == "/memory":
            yield from self._run_tool(lambda sink: query_memory(m.base, pos[0] if pos else "all", kw.get("op_class"),
                                                                kw.get("backend"), kw.get("direction")),
                                      say(prose.memory_text))
        elif cmd == "/export":
            rid, dest = m.export_args(pos)
            yield from self._run_tool(lambda sink: m.export(rid, dest), say(prose.export_text))
        elif cmd == "/help":
            yield ChatEvent("reply", help_text())
        elif cmd in ("/quit", "/exit"):
            yield ChatEvent("reply", "(the terminal leaves on /quit; on the page, just close the tab: nothing is "
                                     "lost)")
        else:
            known = cmd in COMMANDS
            yield ChatEvent("reply", (f"{cmd} needs more: {cmd} {COMMANDS[cmd][0]}" if known
                                      else f"not a command: {text}") + "\n\n" + help_text())


def endpoint_problem(exc: BaseException, model: Any) -> str:
    """What failed when the chat model's endpoint did, and which setting fixes it."""
    from htam_agent.coder.llm import describe_model, explain_failure

    name, base = describe_model(model)
    return str(explain_failure(exc, model=name, base_url=base, attempts=1))
