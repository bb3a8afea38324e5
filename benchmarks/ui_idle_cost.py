"""What an idle page costs (issue 33): `htam ui` in its own process showing a finished run, the page open in
headless Chromium (Debian's package, over CDP), nothing happening; the CPU time both use over a window
(default 30 s), as a percentage of one core. Budget: under 2% for the server.

The run shown is the recorded 3-step norm_rmsnorm run the chat tests use (tests/chat/data/recorded_run.tar.gz),
or the newest run of --runs-dir. CPU time is read from /proc (utime + stime of every thread; for the browser,
of every process under the one started here), so the figures are what the processes used, whatever the
rest of the machine does.

    python -m benchmarks.ui_idle_cost [--seconds 30] [--tabs 1] [--runs-dir DIR]     # from the repository root
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """utime + stime of the process (all its threads), in seconds; 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICK


def tree(pid: int) -> list[int]:
    """pid and every process below it."""
    children: dict[int, list[int]] = {}
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            try:
                ppid = int((p / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(p.name))
    out, todo = [], [pid]
    while todo:
        cur = todo.pop()
        out.append(cur)
        todo += children.get(cur, [])
    return out


def tree_cpu(pid: int) -> dict[int, float]:
    return {p: cpu_seconds(p) for p in tree(pid)}


def _answers(url: str) -> bool:
    import urllib.request

    try:
        with urllib.request.urlopen(url, timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--tabs", type=int, default=1, help="pages open on the run (each its own browser)")
    ap.add_argument("--runs-dir", default=None, help="show the newest run here (default: the recorded run)")
    args = ap.parse_args()

    from tests.support.cdp import Chromium

    work = Path(tempfile.mkdtemp(prefix="htam-idle-"))
    runs = Path(args.runs_dir) if args.runs_dir else work / "runs"
    if not args.runs_dir:
        runs.mkdir()
        with tarfile.open(ROOT / "tests" / "chat" / "data" / "recorded_run.tar.gz") as tar:
            tar.extractall(runs, filter="data")
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False"}
    log = work / "server.log"
    with log.open("w") as out:  # a file, not a pipe: nobody reads the server's output while it runs
        server = subprocess.Popen([sys.executable, "-m", "htam_agent", "ui", "--backend", "cpp", "--port",
                                   str(port), "--runs-dir", str(runs), "--memory-dir", str(work / "memory")],
                                  cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        url = f"http://127.0.0.1:{port}/"
        deadline = time.time() + 180
        while not _answers(url):  # the page is served (whatever the server prints)
            if server.poll() is not None or time.time() > deadline:
                raise SystemExit(f"htam ui did not start:\n{log.read_text()[-2000:]}")
            time.sleep(0.5)
        browsers = [Chromium(1400, 900) for _ in range(args.tabs)]
        try:
            for b in browsers:
                b.open(url)
                b.wait_for("(document.querySelector('#run-status') || {innerText: ''}).innerText.includes('finished')",
                           120, "the finished run on the page")
                b.wait_for("(document.querySelector('#speedup-plot img') || {}).src", 120, "the plot")
            time.sleep(5)  # the last panels drawn
            s0, b0 = cpu_seconds(server.pid), [tree_cpu(b.proc.pid) for b in browsers]
            t0 = time.monotonic()
            time.sleep(args.seconds)
            wall = time.monotonic() - t0
            s1, b1 = cpu_seconds(server.pid), [tree_cpu(b.proc.pid) for b in browsers]
            still = all("finished" in b.text("#run-status") for b in browsers)
        finally:
            for b in browsers:
                b.close()
        used_browser = sum(sum(after.get(p, 0.0) - before.get(p, 0.0) for p in after)
                           for before, after in zip(b0, b1, strict=True))
        server_pct, browser_pct = 100 * (s1 - s0) / wall, 100 * used_browser / wall
        print(f"idle page, {args.tabs} tab(s) on a finished run, {wall:.1f} s: server {s1 - s0:.2f} s of CPU "
              f"= {server_pct:.2f}% of a core; browser {used_browser:.2f} s = {browser_pct:.2f}% of a core "
              f"(budget: server under 2%); the page still showed the run: {still}")
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} at the end")
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


if __name__ == "__main__":
    main()
