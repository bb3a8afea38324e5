"""The web page in a real browser: Debian's headless Chromium over the DevTools protocol, against `htam ui`'s
Gradio app on 127.0.0.1, with a real run behind it (cpp backend, offline exemplar coder, real compilation).

The panels render; a task pasted into the page (and named there) starts a run that pauses for a decision;
a second tab and a reload show the same pause; after the server is stopped and started again, a tab opened
then shows the pause too and its Accept resumes the run; the step table and the speedup plot change as the
verdicts arrive; the chat answers. A finished run (the recorded run of tests/chat) looks the same in two tabs
and after a reload, and fits 1400x900 and 1920x1080 without sideways scrolling. Screenshots go to
tests/output/ui/ (kept as CI artifacts). Without Chromium on PATH this fails, saying how to install it.
"""

from __future__ import annotations

import json
import re
import tarfile
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
RECORDED = Path(__file__).resolve().parents[1] / "chat" / "data" / "recorded_run.tar.gz"
RUN = "20261205-202442-norm_rmsnorm-8c937f"
ROOT = Path(__file__).resolve().parents[2]


def _serve(steps: int) -> tuple[object, str, RunManager]:
    from htam_agent.ui.app import serve

    ctx = RunContext.from_env(backend="cpp", steps=steps, baselines=("eager",), coder="exemplar",
                              roofline_stop=10.0)
    session = ChatSession(RunManager(ctx))
    demo, url = serve(session, port=0, block=False)
    return demo, url, session.manager


def _state(b: Chromium) -> dict[str, object]:
    """What a person sees of the run: the status (its running clock left out), the table, the buttons."""
    status = re.sub(r"\(\d+ s so far\)", "", b.text("#run-status"))
    return {"status": status, "table": b.text(TABLE), "accept": b.enabled("#btn-accept"),
            "resume": b.enabled("#btn-resume")}


def _loaded(b: Chromium, what: str, timeout: float = 90) -> None:
    b.wait_for(f"(document.querySelector('#run-status') || {{innerText: ''}}).innerText.includes({json.dumps(what)})",
               timeout, f"the page to show {what!r}")
    b.wait_for(f"(document.querySelector('{TABLE}') || {{innerText: ''}}).innerText.includes('step')", timeout,
               "the step table")


def _viewport(b: Chromium, width: int, height: int) -> None:
    b.send("Emulation.setDeviceMetricsOverride", width=width, height=height, deviceScaleFactor=1, mobile=False)


def test_page_renders_starts_a_run_updates_and_resumes_on_a_button(ui_env: Path, shots: Path) -> None:
    demo, url, manager = _serve(steps=2)
    demo2 = None
    try:
        with Chromium() as b, Chromium() as other:
            b.open(url)
            b.wait_for("(document.querySelector('#run-status') || {innerText: ''}).innerText.includes('No run yet')",
                       90, "the page to load")
            for panel in ("#chat", "#chat-input", "#btn-accept", "#btn-direction", "#btn-stop", "#btn-resume",
                          TABLE, "#speedup-plot", "#htg-plot", "#best-code"):
                assert b.eval(f"!!document.querySelector('{panel}')"), f"panel {panel} is missing"
            assert not b.enabled("#btn-accept")  # nothing to decide yet

            # the chat works without a model: it says so and what works, in prose (no code block)
            b.type_into("#chat-input textarea", "hello")
            b.click("#chat-send")
            b.wait_for("document.querySelector('#chat').innerText.includes('No chat model is configured')", 30)
            b.type_into("#chat-input textarea", "/help")
            b.click("#chat-send")
            b.wait_for("document.querySelector('#chat').innerText.includes('leave the chat')", 30, "/help's answer")
            assert not b.eval("!!document.querySelector('#chat pre')"), "an answer was shown as a code block"
            b.screenshot(shots / "01_empty.png")

            # a pasted task that is not one says what is missing
            b.click("[data-tab-id=tab-new]")
            b.wait_for("!!document.querySelector('#task-input textarea')", 30, "the New run tab")
            b.type_into("#task-input textarea", "import torch\nx = 1\n")
            b.click("#start")
            b.wait_for("document.querySelector('#run-status').innerText.includes('get_inputs()')", 30,
                       "the page to say what the pasted task lacks")
            b.eval("(() => { const t = document.querySelector('#task-input textarea'); t.value = '';"
                   " t.dispatchEvent(new Event('input', {bubbles: true})); })()")

            # pasted, and named by the person
            b.type_into("#task-input textarea", (SUITE_DIR / "norm_rmsnorm.py").read_text())
            b.type_into("#task-name textarea, #task-name input", "my RMSNorm")
            b.click("#start")
            b.wait_for("document.querySelector('#run-status').innerText.includes('Waiting for your decision')", 600,
                       "the run to pause before step 0")
            assert "my_rms_norm" in b.text("#run-status") and manager.view().task_name == "my_rms_norm"
            assert b.enabled("#btn-accept")
            b.wait_for(PLOT_SRC, 120, "the speedup plot")
            assert "waiting for your decision" in b.text(TABLE) and "policy" in b.text(TABLE)
            b.screenshot(shots / "02_paused.png")

            # a second tab and a reload show the same pause, Accept live in both
            other.open(url)
            _loaded(other, "Waiting for your decision")
            assert _state(other) == _state(b)
            b.send("Page.reload")
            _loaded(b, "Waiting for your decision")
            b.wait_for("(() => { const b = document.querySelector('#btn-accept'); return b && !b.disabled; })()", 30,
                       "Accept after the reload")
            assert _state(b) == _state(other) and _state(b)["accept"] is True

        # the server stops while the run waits; a new server, and a tab opened only now, answers the pause
        demo.close()
        demo2, url2, manager2 = _serve(steps=2)
        with Chromium() as b:
            b.open(url2)
            _loaded(b, "Waiting for your decision")
            b.wait_for("(() => { const b = document.querySelector('#btn-accept'); return b && !b.disabled; })()", 30,
                       "the Accept button in a tab opened after the pause")
            empty_plot = b.wait_for(PLOT_SRC, 120, "the speedup plot")
            b.click("#btn-accept")  # resumes the paused run through its interrupt, from its checkpoint
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
            b.screenshot(shots / "03_finished.png")
        run = manager2.view()
        assert run.result is not None and [s.step for s in run.steps if s.done] == [0, 1]
        best = run.bests()[-1].code
        assert "class ModelNew" in best
        first = [line.strip() for line in best.splitlines() if line.strip()][:3]
        assert all(line in shown for line in first), (first, shown[:400])  # the panel shows that kernel
        assert [a.number for a in run.attempts] == [1, 2]
    finally:
        demo.close()
        if demo2 is not None:
            demo2.close()


def test_a_finished_run_looks_the_same_in_two_tabs_and_after_a_reload(ui_env: Path, shots: Path) -> None:
    """The recorded run (finished, the coder's declared directions in it), at two window sizes."""
    runs = ui_env / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    with tarfile.open(RECORDED) as tar:
        tar.extractall(runs, filter="data")
    demo, url, _manager = _serve(steps=3)
    try:
        with Chromium(1400, 900) as b, Chromium(1920, 1080) as wide:
            _viewport(b, 1400, 900)
            _viewport(wide, 1920, 1080)
            for page in (b, wide):
                page.open(url)
                _loaded(page, "finished")
                page.wait_for(PLOT_SRC, 120, "the speedup plot")
                page.wait_for("(document.querySelector('#best-verdict') || {innerText: ''}).innerText"
                              ".includes('best: candidate 2')", 60, "the best kernel's verdict")
            first = _state(b)
            assert first == _state(wide) and not first["accept"] and not first["resume"]
            assert "memory_access (asked parallel_mapping)" in first["table"]
            assert "the coder applied memory_access" in first["table"]  # why, under the table
            b.send("Page.reload")
            _loaded(b, "finished")
            b.wait_for(PLOT_SRC, 120, "the speedup plot after the reload")
            assert _state(b) == first
            for page, (w, h) in ((b, (1400, 900)), (wide, (1920, 1080))):
                box = json.loads(page.eval(
                    "JSON.stringify({scroll: document.documentElement.scrollWidth, width: innerWidth, "
                    "table: document.querySelector('#steps-table').getBoundingClientRect().bottom, "
                    "plot: document.querySelector('#speedup-plot').getBoundingClientRect().bottom, "
                    "best: document.querySelector('#best-verdict').getBoundingClientRect().top})"))
                assert box["scroll"] <= box["width"], f"{w}x{h}: the page scrolls sideways: {box}"
                assert box["table"] <= h and box["plot"] <= h and box["best"] <= h, f"{w}x{h}: below the fold: {box}"
                headers = page.eval("[...document.querySelectorAll('#steps-table th')].map(t => t.innerText)")
                assert all("\n" not in t for t in headers), f"{w}x{h}: a header wraps: {headers}"
                shot = page.screenshot(shots / f"finished_{w}x{h}.png")
                assert shot.stat().st_size > 10_000
    finally:
        demo.close()


def test_htam_ui_says_where_and_what_ctrl_c_left(ui_env: Path) -> None:
    """`htam ui` prints its address and no Gradio hint about public links; Ctrl-C on a finished run says it
    is finished (nothing to resume)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    runs = ui_env / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    with tarfile.open(RECORDED) as tar:
        tar.extractall(runs, filter="data")
    log = ui_env / "ui.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "htam_agent", "ui", "--backend", "cpp", "--port", "0"],
                                cwd=ui_env, env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"},
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while "htam ui: open http://127.0.0.1:" not in log.read_text():
            assert proc.poll() is None and time.time() < deadline, log.read_text()
            time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    text = log.read_text()
    assert "share" not in text.lower() and "Traceback" not in text, text
    assert f"Run {RUN} is finished: `htam ui --run {RUN}` shows it again." in " ".join(text.split()), text
    assert "Resume" not in text
