"""Drive the system's headless Chromium (Debian's `chromium` package) over the DevTools protocol.

No browser is downloaded: the binary must be on PATH (`apt-get install -y chromium`), else `Chromium()` raises
with that instruction, so a test that needs a browser fails loudly instead of skipping. The websocket client is
`websockets` (a dependency of Gradio, so the `ui` extra brings it).
"""

from __future__ import annotations

import base64
import itertools
import json
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

BINARIES = ("chromium", "chromium-browser", "google-chrome")


class BrowserMissing(RuntimeError):
    pass


def find_chromium() -> str:
    for name in BINARIES:
        path = shutil.which(name)
        if path:
            return path
    raise BrowserMissing("no Chromium on PATH: install Debian's package (`apt-get install -y chromium`); the web "
                         "page's tests need a real browser and never download one")


class Chromium:
    def __init__(self, width: int = 1600, height: int = 1300) -> None:
        from websockets.sync.client import connect

        self._profile = tempfile.mkdtemp(prefix="htam-chromium-")
        self.proc = subprocess.Popen(
            [find_chromium(), "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
             "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--remote-debugging-port=0",
             f"--user-data-dir={self._profile}", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = Path(self._profile) / "DevToolsActivePort"
        deadline = time.time() + 60
        while not port_file.exists() or not port_file.read_text().strip():
            if self.proc.poll() is not None or time.time() > deadline:
                raise BrowserMissing(f"chromium did not start (exit {self.proc.poll()})")
            time.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=10) as r:
            pages = [t for t in json.load(r) if t.get("type") == "page"]
        self.ws = connect(pages[0]["webSocketDebuggerUrl"], max_size=2**26, open_timeout=20)
        self._ids = itertools.count(1)
        self.send("Page.enable")
        self.send("Runtime.enable")

    def close(self) -> None:
        try:
            self.ws.close()
        finally:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
            shutil.rmtree(self._profile, ignore_errors=True)

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- protocol ----------------------------------------------------------------------------------------
    def send(self, method: str, **params: Any) -> dict[str, Any]:
        mid = next(self._ids)
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv(timeout=60))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})

    def eval(self, js: str) -> Any:
        res = self.send("Runtime.evaluate", expression=js, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in res:
            raise RuntimeError(f"javascript failed: {res['exceptionDetails'].get('text')}: {js[:200]}")
        return res.get("result", {}).get("value")

    # -- what tests do ---------------------------------------------------------------------------------
    def open(self, url: str) -> None:
        self.send("Page.navigate", url=url)

    def wait_for(self, js: str, timeout: float = 60.0, what: str = "") -> Any:
        deadline = time.time() + timeout
        while True:
            value = self.eval(js)
            if value:
                return value
            if time.time() > deadline:
                raise TimeoutError(f"waited {timeout:.0f} s for {what or js}")
            time.sleep(0.1)

    def text(self, selector: str) -> str:
        return self.eval(f"(document.querySelector({json.dumps(selector)}) || {{}}).innerText || ''") or ""

    def type_into(self, selector: str, text: str) -> None:
        """Focus the field and insert the text as a paste would (input events fire)."""
        self.eval(f"document.querySelector({json.dumps(selector)}).focus()")
        self.send("Input.insertText", text=text)

    def click(self, selector: str) -> None:
        self.eval(f"document.querySelector({json.dumps(selector)}).click()")

    def enabled(self, selector: str) -> bool:
        return bool(self.eval(f"(() => {{ const b = document.querySelector({json.dumps(selector)}); "
                              "return !!b && !b.disabled; })()"))

    def screenshot(self, path: Path) -> Path:
        data = self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
