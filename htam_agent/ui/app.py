"""`htam ui`: the chat beside the live run, a Gradio page on 127.0.0.1 (Gradio is what KernelAgent ships, and
it is one optional extra: `pip install "htam-agent[ui]"`).

Each open tab gets its own push stream (`watch`): on the server it looks at the run folder's two files that
change with every event (a `stat`, twice a second) and sends the panels only when something changed, the
status and table at once, the plots and the best kernel just after. So a new tab, a reload or a second tab
shows the run's state at once, an idle page costs next to nothing (no request per poll, nothing redrawn),
and a verdict shows within a second of the checker writing it, whoever started the run (the chat, the page's
form, another process). Decisions at a pause are buttons that answer the graph's interrupt; closing the tab
or stopping the server loses nothing: the run is checkpointed and Resume (or the chat's resume) continues it.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from typing import Any

from htam_agent.backend_registry import BACKENDS
from htam_agent.chat.agent import ChatSession
from htam_agent.chat.runs import ChatInputError
from htam_agent.chat.runview import RunView, list_runs

from .panels import best_panel, htg_figure, speedup_figure, status_text, step_table_html

WATCH_S = 0.5        # how often a tab's stream looks at the run folder (a stat of two files)
KEEPALIVE_S = 20.0   # an empty update this often, so a closed tab's stream ends
CSS = """
.gradio-container {max-width: 100% !important; padding-top: 6px !important}
#title {margin: 0} #title h2 {margin: 2px 0}
#best-code, #best-diff {max-height: 300px; overflow: auto}
.htam-steps {width: 100%; border-collapse: collapse; font-size: 13px}
.htam-steps th, .htam-steps td {border-bottom: 1px solid var(--border-color-primary); padding: 3px 6px;
  text-align: left; vertical-align: top; word-break: normal; overflow-wrap: normal}
.htam-steps th {white-space: nowrap}
.htam-why {font-size: 13px; margin: 4px 0 0 0}
#run-status p {margin: 2px 0}
#run-status small {color: var(--body-text-color-subdued)}
#decide {align-items: end}
"""


def _directions() -> list[str]:
    from htam_agent.memory.catalog import load_catalog

    return load_catalog().direction_ids()


def _stat(path: os.PathLike[str] | str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size


def as_markdown(text: str) -> str:
    """A prose answer for the chat panel: indented lines become list items, other lines paragraphs."""
    out = []
    for line in text.splitlines():
        if line.startswith("  ") and line.strip():
            out.append("- " + line.strip())
        else:
            out.append(("\n" if out else "") + line)
    return "\n".join(out)


def greeting(session: ChatSession) -> str:
    """The chat's first words on the page: without a model, what works, and /help for the rest."""
    from htam_agent.chat.agent import NO_MODEL

    if session.agent is not None:
        return session.greeting()
    return (NO_MODEL.rstrip(":") + ": /optimize a task file or paste a task's code (or use **New run**), "
            "/explain, /runs, /show, /memory, /export ... /help says what each does.")


class Page:
    """The page's shared state on the server: one session (chat + runs) and the last action's note; what a
    tab has shown lives in that tab's own stream."""

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self.manager = session.manager
        self.directions = _directions()
        self.note = ""
        self.note_seq = 0

    def set_note(self, note: str) -> None:
        self.note = note
        self.note_seq += 1

    def current_view(self) -> RunView | None:
        m = self.manager
        if m.current:
            return RunView(m.runs_dir / m.current)
        runs = list_runs(m.runs_dir)
        if runs:
            m.current = runs[0].run_id
            return runs[0]
        return None

    def stamp(self) -> tuple[Any, ...]:
        """What changes when anything shown changes, without reading the run: the run folder's events and
        result (their size and time), whether it is running here, the last note and outcome; while a run is
        going, the clock too (every 2 s), so the "N s so far" of a long step moves."""
        m = self.manager
        if not m.current:
            return (None, _stat(m.runs_dir), self.note_seq)
        root = m.runs_dir / m.current
        active = m.active == m.current
        thread = m._thread is not None and m._thread.is_alive()
        return (m.current, _stat(root / "events.jsonl"), _stat(root / "result.json"), active, thread,
                self.note_seq, id(m.last_outcome), int(time.time() // 2) if active else 0)

    # -- actions ---------------------------------------------------------------------------------------
    def start(self, task: str, name: str, backend: str, steps: float, interactive: bool) -> None:
        m = self.manager
        try:
            path = m.task_file(task or "", name or None)
            m.in_background(m.optimize, str(path), backend=backend or None, steps=int(steps) if steps else None,
                            interactive=bool(interactive))
            self.set_note(f"started a run of {path.stem}")
        except ChatInputError as exc:
            self.set_note(f"**Cannot start:** {exc}")

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
            self.set_note(f"answered step {view.pause.get('step')}: {action}" + (f" {direction}" if direction else ""))
        except ChatInputError as exc:
            self.set_note(f"**Cannot do that:** {exc}")

    def resume(self) -> None:
        m = self.manager
        try:
            view = self.current_view()
            if view is None:
                raise ChatInputError("no run to resume")
            m.in_background(m.resume, view.run_id)
            self.set_note(f"resuming {view.run_id}")
        except ChatInputError as exc:
            self.set_note(f"**Cannot resume:** {exc}")

    # -- what a tab shows --------------------------------------------------------------------------------
    def fast_panels(self) -> tuple[Any, ...]:
        """Status, step table and buttons: cheap, so a verdict reaches the table without waiting on plots."""
        import gradio as gr

        view = self.current_view()
        if view is None:
            empty = ("No run yet: paste a task under **New run**, or ask in the chat. " + self.note).strip()
            return (empty, step_table_html(None), *(gr.update(interactive=False) for _ in range(5)))
        active = self.manager.active == view.run_id
        paused = view.pause is not None and not active
        choices = (view.pause or {}).get("directions") or self.directions
        resumable = view.state(active).startswith("stopped")
        if self.manager.last_outcome and self.manager.last_outcome.get("state") == "error" and not active:
            note = f"{self.note}\n\n**The last action failed:** {self.manager.last_outcome.get('error')}"
        else:
            note = self.note
        return (status_text(view, active, note), step_table_html(view),
                gr.update(interactive=paused), gr.update(interactive=paused, choices=choices),
                gr.update(interactive=paused), gr.update(interactive=paused), gr.update(interactive=resumable))

    def slow_key(self) -> tuple[Any, ...] | None:
        view = self.current_view()
        return None if view is None else (view.run_id, len(view.attempts), tuple(s.direction for s in view.steps))

    def slow_panels(self) -> tuple[Any, ...]:
        """The plots and the best kernel (matplotlib: tens of milliseconds, so only when a verdict or a
        direction changed)."""
        view = self.current_view()
        if view is None:
            return (None, None, "", "", "")
        verdict, code, diff = best_panel(view)
        return (speedup_figure(view), htg_figure(view, self.directions), verdict, code, diff)

    async def watch(self) -> AsyncIterator[tuple[Any, ...]]:
        """One tab's stream: a new value for the tab's fast tick when anything shown changed (at once when the
        tab opens), for its slow tick when a verdict or a direction did; each tick's change event then draws
        its panels in an ordinary short event. The stream's own outputs are only those two `gr.State`s, which
        the browser does not render, so an event that lasts as long as the tab is open holds no panel in a
        pending state."""
        import gradio as gr

        fast = slow = 0
        seen_stamp: Any = object()
        seen_slow: Any = object()
        last_sent = time.monotonic()
        while True:
            stamp = self.stamp()
            if stamp != seen_stamp:
                seen_stamp, fast = stamp, fast + 1
                key = self.slow_key()
                if key != seen_slow:
                    seen_slow, slow = key, slow + 1
                    yield fast, slow
                else:
                    yield fast, gr.skip()
                last_sent = time.monotonic()
            elif time.monotonic() - last_sent > KEEPALIVE_S:
                yield gr.skip(), gr.skip()  # a closed tab's stream stops here (Gradio drops the event)
                last_sent = time.monotonic()
            await asyncio.sleep(WATCH_S)

    # -- the chat --------------------------------------------------------------------------------------
    def respond(self, message: str, history: list[dict[str, Any]]) -> Any:
        """The chat's answer as it streams, in prose; a line below it says what the run is doing meanwhile."""
        from htam_agent.chat.terminal import activity, event_line

        history = list(history or []) + [{"role": "user", "content": message},
                                         {"role": "assistant", "content": "*working...*"}]
        yield history, ""
        text, tools, now = "", "", ""
        for ev in self.session.send(message):
            if ev.kind == "token":
                text += ev.text
            elif ev.kind == "tool_call":
                tools += f"*({ev.name} ...)*\n\n"
            elif ev.kind == "reply":
                text += ("\n\n" if text else "") + as_markdown(ev.text)
            elif ev.kind == "error":
                text += ("\n\n" if text else "") + "**error:** " + as_markdown(ev.text)
            elif ev.kind == "run":
                line = event_line(ev.data)
                now = f"\n\n*{line.plain if line is not None else activity(ev.data)}*"
            history[-1] = {"role": "assistant", "content": tools + text + ("" if ev.kind == "reply" else now)}
            yield history, ""
        history[-1] = {"role": "assistant", "content": tools + text}
        yield history, ""


def build(session: ChatSession) -> Any:
    import gradio as gr

    page = Page(session)
    with gr.Blocks(title="htam: kernel optimization", fill_width=True) as demo:
        gr.Markdown("## htam: chat-driven kernel optimization", elem_id="title")
        with gr.Row(equal_height=False):
            with gr.Column(scale=4, min_width=380):
                with gr.Tabs():
                    with gr.Tab("Chat", id="tab-chat"):
                        chatbot = gr.Chatbot(label="chat", elem_id="chat", height=540, show_label=False, value=[
                            {"role": "assistant", "content": as_markdown(greeting(session))}])
                        msg = gr.Textbox(label="message (paste PyTorch code here too; /help lists the commands)",
                                         lines=2, elem_id="chat-input")
                        send = gr.Button("Send", variant="primary", elem_id="chat-send")
                    with gr.Tab("New run", id="tab-new"):
                        task = gr.Textbox(label="task: a file path, or pasted PyTorch code (Model, get_inputs, "
                                                "get_init_inputs)", lines=10, elem_id="task-input")
                        name = gr.Textbox(label="name (optional; pasted code is named after its own nn.Module "
                                                "class, else pasted_...)", elem_id="task-name", max_lines=1)
                        with gr.Row():
                            backend = gr.Dropdown(sorted(BACKENDS), value=session.manager.base.backend,
                                                  label="backend", elem_id="backend", min_width=90)
                            steps = gr.Number(value=session.manager.base.steps, precision=0, label="steps",
                                              elem_id="steps", min_width=70)
                            interactive = gr.Checkbox(label="pause before each step (steer)", value=True,
                                                      elem_id="interactive")
                        start = gr.Button("Optimize", variant="primary", elem_id="start")
            with gr.Column(scale=7, min_width=600):
                status = gr.Markdown("loading...", elem_id="run-status")
                with gr.Row(elem_id="decide", equal_height=True):
                    accept = gr.Button("Accept", elem_id="btn-accept", interactive=False, size="sm", min_width=70,
                                       variant="primary")
                    direction = gr.Dropdown(page.directions, elem_id="direction", interactive=False, min_width=200,
                                            show_label=False, container=False, scale=2,
                                            info="another direction")
                    take = gr.Button("Take direction", elem_id="btn-direction", interactive=False, size="sm",
                                     min_width=120)
                    stop = gr.Button("Stop", elem_id="btn-stop", interactive=False, size="sm", min_width=60)
                    resume = gr.Button("Resume", elem_id="btn-resume", interactive=False, size="sm", min_width=80)
                table = gr.HTML(elem_id="steps-table")
                with gr.Row(equal_height=True):
                    plot = gr.Plot(label="speedup by step", elem_id="speedup-plot", show_label=False)
                    htg = gr.Plot(label="HTG path", elem_id="htg-plot", show_label=False)
                best = gr.Markdown(elem_id="best-verdict")
                with gr.Tabs():
                    with gr.Tab("best kernel"):
                        code = gr.Code(language="python", label="best kernel", elem_id="best-code",
                                       interactive=False, show_label=False)
                    with gr.Tab("diff to the previous best"):
                        diff = gr.Code(label="diff to the previous best", elem_id="best-diff", interactive=False,
                                       show_label=False)
                with gr.Accordion("give your own code for this step", open=False):
                    own = gr.Code(language="python", label="ModelNew", elem_id="own-code")
                    give = gr.Button("Use my code", elem_id="btn-code")

        fast = [status, table, accept, direction, take, stop, resume]
        slow = [plot, htg, best, code, diff]
        send.click(page.respond, [msg, chatbot], [chatbot, msg], show_progress="hidden")
        msg.submit(page.respond, [msg, chatbot], [chatbot, msg], show_progress="hidden")
        start.click(page.start, [task, name, backend, steps, interactive], None, show_progress="hidden")
        accept.click(lambda: page.decide("accept"), None, None, show_progress="hidden")
        take.click(lambda d: page.decide("direction", direction=d), [direction], None, show_progress="hidden")
        stop.click(lambda: page.decide("stop"), None, None, show_progress="hidden")
        give.click(lambda c: page.decide("code", code=c), [own], None, show_progress="hidden")
        resume.click(page.resume, None, None, show_progress="hidden")
        # every tab (a reload, a second tab) has its own ticks and its own stream; no limit on the streams,
        # since each holds one open event for as long as its tab is open
        fast_tick, slow_tick = gr.State(0), gr.State(0)
        demo.load(page.watch, None, [fast_tick, slow_tick], show_progress="hidden", concurrency_limit=None)
        fast_tick.change(page.fast_panels, None, fast, show_progress="hidden")
        slow_tick.change(page.slow_panels, None, slow, show_progress="hidden")
    return demo


def quiet_queue(demo: Any) -> None:
    """Gradio's queue looks for new events every 1 ms and for progress every 10 ms while it has nothing to do
    (queueing.py, `sleep_when_free`): about 2.7% of a core on the 2-core VM with no tab open. Every 50 ms and
    250 ms is still instant for a click and brings an idle page under 1% (benchmarks/ui_idle_cost.py). The
    attributes are Gradio's own; a Gradio without them keeps its pace."""
    q = getattr(demo, "_queue", None)
    if q is not None and hasattr(q, "sleep_when_free") and hasattr(q, "progress_update_sleep_when_free"):
        q.sleep_when_free = max(q.sleep_when_free, 0.05)
        q.progress_update_sleep_when_free = max(q.progress_update_sleep_when_free, 0.25)


def serve(session: ChatSession, port: int = 7860, *, block: bool = True) -> Any:
    """Serve the page on 127.0.0.1 (never on other interfaces), saying where; block=False returns (demo, url)
    at once."""
    os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
    demo = build(session)
    demo.queue(default_concurrency_limit=4)
    quiet_queue(demo)
    if not port:
        import socket

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
    _app, url, _ = demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True,
                               quiet=True, css=CSS, footer_links=[])
    if block:
        print(f"htam ui: open {url} (only this machine can reach it). Ctrl-C stops the page; runs are kept.",
              flush=True)
        try:
            while demo.is_running:
                time.sleep(0.5)
        finally:  # Ctrl-C: close the server quietly; the caller says what the run's state is
            demo.close()
    return demo, url
