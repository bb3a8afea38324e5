"""`htam ui`: the chat beside the live run, a Gradio page on 127.0.0.1 (Gradio is what KernelAgent ships, and
it is one optional extra: `pip install "htam-agent[ui]"`).

The run side polls the run folder four times a second and re-renders only what changed (the table
at once, the plots apart), so a verdict shows within
a second of the checker writing it, whoever started the run (the chat, the page's own form, another process).
Decisions at a pause are buttons that answer the graph's interrupt; closing the tab or stopping the server
loses nothing: the run is checkpointed and Resume (or the chat's resume) continues it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from htam_agent.chat.agent import ChatSession
from htam_agent.chat.runs import ChatInputError
from htam_agent.chat.runview import RunView, list_runs

from .panels import STEP_HEADERS, best_panel, htg_figure, speedup_figure, status_text, step_rows

POLL_S = 0.25
CSS = "#best-code, #best-diff {max-height: 320px; overflow: auto}"


def _directions() -> list[str]:
    from htam_agent.memory.catalog import load_catalog

    return load_catalog().direction_ids()


class Page:
    """The page's state on the server: one session (chat + runs), the last rendered fingerprint."""

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self.manager = session.manager
        self.directions = _directions()
        self.note = ""

    def current_view(self) -> RunView | None:
        m = self.manager
        if m.current:
            return RunView(m.runs_dir / m.current)
        runs = list_runs(m.runs_dir)
        if runs:
            m.current = runs[0].run_id
            return runs[0]
        return None

    def fingerprint(self, view: RunView | None) -> tuple[Any, ...]:
        if view is None:
            return (None, self.note)
        active = self.manager.active == view.run_id
        return (view.run_id, len(view.events), len(view.attempts), view.result is not None, active, self.note,
                str(self.manager.last_outcome)[:200], int(time.time() // 5) if active else 0)

    # -- actions ---------------------------------------------------------------------------------------
    def start(self, task: str, backend: str, steps: float, interactive: bool) -> None:
        m = self.manager
        try:
            path = m.task_file(task or "")
            m.in_background(m.optimize, str(path), backend=backend or None, steps=int(steps) if steps else None,
                            interactive=bool(interactive))
            self.note = f"started a run of {path.name}"
        except ChatInputError as exc:
            self.note = f"**Cannot start:** {exc}"
        return None  # the page shows the note on its next refresh

    def decide(self, action: str, direction: str | None = None, code: str | None = None) -> None:
        m = self.manager
        try:
            view = self.current_view()
            if view is None or view.pause is None:
                raise ChatInputError("no run is waiting for a decision")
            if action == "direction" and direction not in (view.pause.get("directions") or []):
                raise ChatInputError(f"pick a direction first (one of {', '.join(view.pause.get('directions') or [])})")
            if action == "code" and "ModelNew" not in (code or ""):
                raise ChatInputError("your code must define `class ModelNew(nn.Module)`")
            m.in_background(m.steer, view.run_id, action, direction=direction, code=code)
            self.note = f"answered step {view.pause.get('step')}: {action}" + (f" {direction}" if direction else "")
        except ChatInputError as exc:
            self.note = f"**Cannot do that:** {exc}"
        return None  # the page shows the note on its next refresh

    def resume(self) -> None:
        m = self.manager
        try:
            view = self.current_view()
            if view is None:
                raise ChatInputError("no run to resume")
            m.in_background(m.resume, view.run_id)
            self.note = f"resuming {view.run_id}"
        except ChatInputError as exc:
            self.note = f"**Cannot resume:** {exc}"
        return None  # the page shows the note on its next refresh

    # -- the chat --------------------------------------------------------------------------------------
    def respond(self, message: str, history: list[dict[str, Any]]) -> Any:
        history = list(history or []) + [{"role": "user", "content": message},
                                         {"role": "assistant", "content": ""}]
        text, tools = "", ""
        for ev in self.session.send(message):
            if ev.kind == "token":
                text += ev.text
            elif ev.kind == "tool_call":
                tools += f"*({ev.name} ...)*\n\n"
            elif ev.kind in ("reply", "error"):
                text += ("**error:** " if ev.kind == "error" else "") + f"\n```\n{ev.text}\n```\n"
            elif ev.kind == "run":
                continue  # the run side shows progress
            history[-1] = {"role": "assistant", "content": tools + text}
            yield history, ""
        yield history, ""


def build(session: ChatSession) -> Any:
    import gradio as gr

    page = Page(session)
    last: dict[str, Any] = {"fast": None, "slow": None}

    def refresh_fast() -> Any:
        """Status, step table and buttons: cheap, so a verdict reaches the table without waiting on plots."""
        view = page.current_view()
        fp = page.fingerprint(view)
        if fp == last["fast"]:
            return tuple(gr.skip() for _ in range(6))
        last["fast"] = fp
        if view is None:
            empty = ("no run yet: paste a task on the right, or ask in the chat. " + page.note).strip()
            return (empty, [], *(gr.update(interactive=False) for _ in range(4)))
        active = page.manager.active == view.run_id
        paused = view.pause is not None and not active
        choices = (view.pause or {}).get("directions") or page.directions
        resumable = view.state(active).startswith("stopped")
        return (status_text(view, active, page.note), step_rows(view),
                gr.update(interactive=paused), gr.update(interactive=paused, choices=choices),
                gr.update(interactive=paused), gr.update(interactive=resumable))

    def refresh_slow() -> Any:
        """The plots and the best kernel: drawn again only when a verdict or a direction changed."""
        view = page.current_view()
        fp = None if view is None else (view.run_id, len(view.attempts), tuple(s.direction for s in view.steps))
        if fp == last["slow"]:
            return tuple(gr.skip() for _ in range(5))
        if fp != last.get("slow_seen"):  # one tick later: the table goes first, the plots do not hold it up
            last["slow_seen"] = fp
            return tuple(gr.skip() for _ in range(5))
        last["slow"] = fp
        if view is None:
            return (None, None, "", "", "")
        verdict, code, diff = best_panel(view)
        return (speedup_figure(view), htg_figure(view, page.directions), verdict, code, diff)

    with gr.Blocks(title="htam: kernel optimization") as demo:
        gr.Markdown("## htam: chat-driven kernel optimization")
        with gr.Row():
            with gr.Column(scale=5):
                chatbot = gr.Chatbot(label="chat", elem_id="chat", height=560, value=[
                    {"role": "assistant", "content": session.greeting()}])
                msg = gr.Textbox(label="message (paste PyTorch code here too)", lines=3, elem_id="chat-input")
                send = gr.Button("Send", variant="primary", elem_id="chat-send")
            with gr.Column(scale=7):
                status = gr.Markdown("loading...", elem_id="run-status")
                with gr.Accordion("new run", open=True):
                    task = gr.Textbox(label="task: a file path, or pasted PyTorch code (Model, get_inputs, "
                                            "get_init_inputs)", lines=5, elem_id="task-input")
                    with gr.Row():
                        backend = gr.Dropdown(["cpp", "cuda", "triton"], value=session.manager.base.backend,
                                              label="backend", elem_id="backend")
                        steps = gr.Number(value=session.manager.base.steps, precision=0, label="steps",
                                          elem_id="steps")
                        interactive = gr.Checkbox(label="pause before each step (steer)", value=True,
                                                  elem_id="interactive")
                        start = gr.Button("Optimize", variant="primary", elem_id="start")
                with gr.Row():
                    accept = gr.Button("Accept", elem_id="btn-accept", interactive=False)
                    direction = gr.Dropdown(page.directions, label="another direction", elem_id="direction",
                                            interactive=False)
                    take = gr.Button("Take direction", elem_id="btn-direction", interactive=False)
                    resume = gr.Button("Resume", elem_id="btn-resume", interactive=False)
                with gr.Accordion("give your own code for this step", open=False):
                    own = gr.Code(language="python", label="ModelNew", elem_id="own-code")
                    give = gr.Button("Use my code", elem_id="btn-code")
                table = gr.Dataframe(headers=STEP_HEADERS, label="steps", elem_id="steps-table", wrap=True,
                                     interactive=False,
                                     column_widths=["6%", "16%", "32%", "10%", "10%", "10%", "16%"])
                with gr.Row():
                    plot = gr.Plot(label="speedup by step", elem_id="speedup-plot")
                    htg = gr.Plot(label="HTG path", elem_id="htg-plot")
                best = gr.Markdown(elem_id="best-verdict")
                code = gr.Code(language="python", label="best kernel", elem_id="best-code", interactive=False)
                diff = gr.Code(label="diff to the previous best", elem_id="best-diff", interactive=False)

        fast = [status, table, accept, direction, take, resume]
        slow = [plot, htg, best, code, diff]
        send.click(page.respond, [msg, chatbot], [chatbot, msg])
        msg.submit(page.respond, [msg, chatbot], [chatbot, msg])
        start.click(page.start, [task, backend, steps, interactive], None)
        accept.click(lambda: page.decide("accept"), None, None)
        take.click(lambda d: page.decide("direction", direction=d), [direction], None)
        give.click(lambda c: page.decide("code", code=c), [own], None)
        resume.click(page.resume, None, None)
        timer = gr.Timer(POLL_S)
        timer.tick(refresh_fast, None, fast, show_progress="hidden")
        timer.tick(refresh_slow, None, slow, show_progress="hidden")
        demo.load(refresh_fast, None, fast)
        demo.load(refresh_slow, None, slow)
    return demo


def serve(session: ChatSession, port: int = 7860, *, block: bool = True) -> Any:
    """Serve the page on 127.0.0.1 (never on other interfaces). block=False returns (demo, url) at once."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    demo = build(session)
    demo.queue(default_concurrency_limit=4)
    if not port:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    _app, url, _ = demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=not block,
                               quiet=not block, css=CSS, footer_links=[])
    return demo, url
