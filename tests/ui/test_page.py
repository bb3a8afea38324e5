"""The web page in a real browser: Debian's headless Chromium over the DevTools protocol, against `htam ui`'s
Gradio app on 127.0.0.1, with a real run behind it (cpp backend, offline exemplar coder, real compilation).

The panels render; a task pasted into the page starts a run that pauses for a decision; pressing Accept resumes
it; the step table and the speedup plot change as the verdicts arrive; the chat answers. Screenshots go to
tests/output/ui/ (kept as CI artifacts). Without Chromium on PATH this fails, saying how to install it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.cdp import Chromium

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.chat.agent import ChatSession
from htam_agent.chat.runs import RunManager
from htam_agent.context import RunContext

pytestmark = [pytest.mark.ui, pytest.mark.slow, pytest.mark.timeout(1800)]  # two C++ builds, cold on a busy host

PLOT_SRC = "(document.querySelector('#speedup-plot img') || {}).src || ''"
TABLE = "#steps-table"


def _serve(steps: int) -> tuple[object, str, RunManager]:
    from htam_agent.ui.app import serve

    ctx = RunContext.from_env(backend="cpp", steps=steps, baselines=("eager",), coder="exemplar",
                                    roofline_stop=10.0)
    session = ChatSession(RunManager(ctx))
    demo, url = serve(session, port=0, block=False)
    return demo, url, session.manager


def test_page_renders_starts_a_run_updates_and_resumes_on_a_button(ui_env: Path, shots: Path) -> None:
    demo, url, manager = _serve(steps=2)
    try:
        with Chromium() as b:
            b.open(url)
            b.wait_for("(document.querySelector('#run-status') || {innerText: ''}).innerText.includes('no run yet')",
                       90, "the page to load")
            for panel in ("#chat", "#chat-input", "#task-input", "#start", "#btn-accept", "#btn-direction",
                          "#btn-resume", TABLE, "#speedup-plot", "#htg-plot", "#best-code", "#best-diff"):
                assert b.eval(f"!!document.querySelector('{panel}')"), f"panel {panel} is missing"
            assert not b.enabled("#btn-accept")  # nothing to decide yet

            # the chat works without a model: it says so and what works
            b.type_into("#chat-input textarea", "hello")
            b.click("#chat-send")
            b.wait_for("document.querySelector('#chat').innerText.includes('No chat model is configured')", 30)
            b.screenshot(shots / "01_empty.png")

            # a pasted task that is not one says what is missing
            b.type_into("#task-input textarea", "import torch\nx = 1\n")
            b.click("#start")
            b.wait_for("document.querySelector('#run-status').innerText.includes('get_inputs()')", 30,
                       "the page to say what the pasted task lacks")
            b.eval("(() => { const t = document.querySelector('#task-input textarea'); t.value = '';"
                   " t.dispatchEvent(new Event('input', {bubbles: true})); })()")

            b.type_into("#task-input textarea", (SUITE_DIR / "norm_rmsnorm.py").read_text())
            b.click("#start")
            b.wait_for("document.querySelector('#run-status').innerText.includes('Waiting for your decision')", 600,
                       "the run to pause before step 0")
            assert b.enabled("#btn-accept")
            empty_plot = b.wait_for(PLOT_SRC, 120, "the speedup plot")
            assert "running" in b.text(TABLE) or "policy" in b.text(TABLE)
            b.screenshot(shots / "02_paused.png")

            b.wait_for("(() => { const b = document.querySelector('#btn-accept'); return b && !b.disabled; })()", 30,
                       "the Accept button")
            b.click("#btn-accept")  # resumes the paused run through its interrupt
            b.wait_for(f"document.querySelector('{TABLE}').innerText.includes('#1 accepted')", 600,
                       "step 0's verdict in the table")
            first_plot = b.wait_for(f"(() => {{ const s = {PLOT_SRC}; return s && s !== {json.dumps(empty_plot)} && s; }})()",
                                    120, "the plot to show step 0's speedup")
            b.wait_for("document.querySelector('#run-status').innerText.includes('Waiting for your decision')", 600,
                       "the pause before step 1")
            b.wait_for("(() => { const b = document.querySelector('#btn-accept'); return b && !b.disabled; })()", 30,
                       "the Accept button")
            b.click("#btn-accept")
            b.wait_for(f"document.querySelector('{TABLE}').innerText.includes('#2 ')", 600,
                       "step 1's verdict in the table")
            b.wait_for("document.querySelector('#run-status').innerText.includes('finished')", 600, "the run's end")
            b.wait_for(f"(() => {{ const s = {PLOT_SRC}; return s && s !== {json.dumps(first_plot)}; }})()", 120,
                       "the plot to show step 1")
            # CodeMirror renders only the lines in view, so the panel's text is the best kernel's first lines
            shown = b.eval("document.querySelector('#best-code').innerText")
            assert "best: candidate" in b.text("#best-verdict") and "roofline fraction" in b.text("#best-verdict")
            shot = b.screenshot(shots / "03_finished.png")
        run = manager.view()
        assert run.result is not None and [s.step for s in run.steps if s.done] == [0, 1]
        best = run.bests()[-1].code
        assert "class ModelNew" in best
        first = [line.strip() for line in best.splitlines() if line.strip()][:3]
        assert all(line in shown for line in first), (first, shown[:400])  # the panel shows that kernel
        assert [a.number for a in run.attempts] == [1, 2]
        assert shot.stat().st_size > 10_000  # docs/htam_ui.png is this screenshot
    finally:
        demo.close()
