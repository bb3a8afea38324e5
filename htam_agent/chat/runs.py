"""What the chat and the page do to runs: start one, steer it at its pause, resume it, evaluate, export.

Every run goes through `run_optimization` (SQLite-checkpointed, thread id = run id). A run started here with
`interactive=True` stops at each review pause (the graph's `interrupt()`) and the call returns "paused"; the
person's answer (accept, another direction, own code) resumes it from the checkpoint through the same
interrupt, whether the answer comes from the chat, a button on the page, or another process after this one
was killed. One run at a time per manager: the memory and the device are shared.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from htam_agent import threadsafe
from htam_agent.context import RunContext

from .explain import check_task_source, explain, strip_fences
from .runview import RunView, StepRow, coder_note, list_runs

EventSink = Callable[[dict[str, Any]], None]


class ChatInputError(ValueError):
    """Input a person can fix (a task that is not one, an unknown run): the message says how."""


def _slug(text: str) -> str:
    """snake_case letters and digits, at most 40 characters ("RMSNorm" -> "rms_norm")."""
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", text.strip())
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:40].strip("_")


def task_name_for(source: str) -> str:
    """A name for pasted code when the person gave none: a module class of its own besides `Model` (`class
    RMSNorm(nn.Module)` -> rms_norm), else `pasted_<digest>` (Model's docstring is often code, not a name)."""
    import ast

    try:
        tree = threadsafe.parse(source)
    except SyntaxError:
        tree = ast.Module(body=[], type_ignores=[])
    for c in tree.body:
        if isinstance(c, ast.ClassDef) and c.name not in ("Model", "ModelNew") and _slug(c.name) and any(
                (b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")) == "Module" for b in c.bases):
            return _slug(c.name)
    return f"pasted_{hashlib.sha256(source.encode()).hexdigest()[:8]}"


def step_dict(s: StepRow) -> dict[str, Any]:
    """A step for a model to relay: the direction applied, the one asked for and why they differ."""
    d: dict[str, Any] = {"step": s.step, "direction": s.direction, "strategies": s.strategies,
                         "chosen_by": s.chosen_by, "verdicts": s.verdicts, "speedup_vs_eager": s.speedup_vs_eager}
    if s.asked and s.asked != s.direction:
        d.update(asked=s.asked, strategies_offered=s.offered, why=s.explanation())
    elif s.repeats:
        d["why"] = s.explanation()
    return d


class RunManager:
    def __init__(self, base: RunContext | None = None, **injected: Any) -> None:
        """base: the settings new runs start from; injected: passed to run_optimization (coder, memory,
        evaluator, chat_model), as tests and Python callers give them."""
        self.base = base or RunContext.from_env()
        self.injected = injected
        self.listeners: list[EventSink] = []
        self.current: str | None = None   # the run the front ends show
        self.active: str | None = None    # the run executing in this process now
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.last_outcome: dict[str, Any] | None = None

    @property
    def runs_dir(self) -> Path:
        return self.base.runs_path()

    # -- reading -------------------------------------------------------------------------------------------
    def view(self, run_id: str | None = None) -> RunView:
        run_id = run_id or self.current
        if not run_id:  # a new session: the newest run in the folder
            newest = list_runs(self.runs_dir)[:1]
            run_id = newest[0].run_id if newest else None
        if not run_id:
            raise ChatInputError("no run yet: start one with optimize (a task file or pasted PyTorch code)")
        view = RunView(self.runs_dir / run_id)
        if not view.exists:
            known = ", ".join(v.run_id for v in list_runs(self.runs_dir)[:5]) or "none"
            raise ChatInputError(f"no run {run_id!r} in {self.runs_dir}; recent runs: {known}")
        return view

    def runs(self) -> list[dict[str, Any]]:
        return [{**v.summary(), "state": v.state(v.run_id == self.active)} for v in list_runs(self.runs_dir)]

    # -- tasks ---------------------------------------------------------------------------------------------
    def task_file(self, task: str, name: str | None = None) -> Path:
        """A task path as it is, or pasted source checked and written under the runs folder (so the run is
        reproducible), named `name` when given, else after what the code defines (see `task_name_for`); bad
        source raises ChatInputError naming what is missing."""
        text = task.strip()
        if "\n" not in text and len(text) < 500:
            path = Path(text).expanduser()
            if path.is_file():
                problem = check_task_source(path.read_text(), path.name)
                if problem:
                    raise ChatInputError(problem)
                return path.resolve()
            if text.endswith(".py") or "/" in text:
                raise ChatInputError(f"{text}: no such task file; give the path of a KernelBench task file or "
                                     "paste its source")
        source = strip_fences(text)
        stem = _slug(name) if name and name.strip() else task_name_for(source)
        if name and name.strip() and not stem:
            raise ChatInputError(f"task name {name!r} has no letters or digits; name it e.g. my_softmax")
        problem = check_task_source(source, f"{stem}.py")
        if problem:
            raise ChatInputError(problem)
        folder = self.runs_dir / "chat_tasks"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stem}.py"
        if path.exists() and path.read_text() != source:  # another task under that name: keep both
            path = folder / f"{stem}_{hashlib.sha256(source.encode()).hexdigest()[:6]}.py"
        if not path.exists():
            path.write_text(source)
        return path

    # -- running -------------------------------------------------------------------------------------------
    def _explained(self, ev: dict[str, Any]) -> dict[str, Any]:
        """A `generated` event with what the display needs beside it: the direction asked for when the coder
        declared another (`asked`, and its own words `why`), and `same_as` when the code is an earlier
        candidate's again."""
        if ev.get("event") != "generated" or not self.active:
            return ev
        try:
            view = RunView(self.runs_dir / self.active)
            folder = view.root / f"step_{int(ev['step']):02d}" / f"cand_{ev.get('variant', 0)}_r{ev.get('repair', 0)}"
            gen = json.loads((folder / "generation.json").read_text())
            code = (folder / "code.py").read_text() if (folder / "code.py").is_file() else None
        except (OSError, ValueError, KeyError, TypeError):
            return ev
        out = dict(ev)
        if gen.get("assigned_direction") and gen.get("direction") != gen.get("assigned_direction"):
            out["asked"] = gen["assigned_direction"]
            try:
                out["why"] = coder_note((folder / "reply.md").read_text())
            except OSError:
                pass
        if code is not None:
            same = next((a.number for a in view.attempts if a.folder != folder and a.code == code), None)
            if same is not None:
                out["same_as"] = same
        return out

    def _emit(self, sink: EventSink | None) -> EventSink:
        def on_event(ev: dict[str, Any]) -> None:
            ev = self._explained(ev)
            for fn in [*self.listeners, *([sink] if sink else [])]:
                try:
                    fn(ev)
                except Exception:  # noqa: BLE001 - a front end's display must never stop the run
                    pass
        return on_event

    def _drive(self, run_id: str, call: Callable[[], Any]) -> dict[str, Any]:
        from htam_agent.agent import RunInterrupted
        from htam_agent.agent.tool import compact

        if not self._lock.acquire(blocking=False):
            raise ChatInputError(f"run {self.active} is going in this session; wait for it, or steer it when "
                                 "it pauses")
        self.active = self.current = run_id
        try:
            result = call()
            out = {"state": "finished", **compact(result)}
            out.pop("best_kernel", None)  # the code is one export away; keep the answer short
        except RunInterrupted as exc:
            p = exc.payload
            out = {"state": "paused", "run_id": run_id, "step": p.get("step"), "direction": p.get("direction"),
                   "reason": str(p.get("reason", ""))[:300], "strategies": p.get("strategies", []),
                   "directions": p.get("directions", []), "best_speedup": p.get("best_speedup"),
                   "answer_with": "steer_run: accept | direction (one of directions) | code | stop"}
        finally:
            self.active = None
            self._lock.release()
        out["steps_table"] = [step_dict(s) for s in self.view(run_id).steps]
        self.last_outcome = out
        return out

    def optimize(self, task: str, *, backend: str | None = None, steps: int | None = None,
                 candidates: int | None = None, interactive: bool = False, on_event: EventSink | None = None,
                 name: str | None = None, **settings: Any) -> dict[str, Any]:
        """Start a run and drive it until it finishes or pauses for a person (`name`: pasted code's name)."""
        from htam_agent.agent import run_optimization
        from htam_agent.run.artifacts import new_run_id

        path = self.task_file(task, name)
        changes = {k: v for k, v in {"backend": backend, "steps": steps, "candidates": candidates,
                                      **settings}.items() if v is not None}
        ctx = self.base.with_(interactive=interactive, **changes)
        run_id = new_run_id(path.stem)
        return self._drive(run_id, lambda: run_optimization(path, ctx, run_id=run_id, on_event=self._emit(on_event),
                                                            **self.injected))

    def _resume(self, run_id: str, answer: dict[str, Any] | None, on_event: EventSink | None) -> dict[str, Any]:
        from htam_agent.agent import RunInterrupted, run_optimization

        view = self.view(run_id)
        ctx = RunContext.from_dict(view.context).with_(runs_dir=str(self.runs_dir))
        answers = [answer] if answer is not None else []

        def once(payload: dict[str, Any]) -> Any:  # the person's one answer; the next pause returns to them
            if answers:
                return answers.pop()
            raise RunInterrupted(run_id, payload)

        return self._drive(run_id, lambda: run_optimization(view.info["task_path"], ctx, run_id=run_id, resume=True,
                                                            on_event=self._emit(on_event), on_interrupt=once,
                                                            **self.injected))

    def steer(self, run_id: str | None, action: str, direction: str | None = None, code: str | None = None,
              on_event: EventSink | None = None) -> dict[str, Any]:
        """Answer a paused run (accept, another direction, own code, stop) and drive it to its next pause."""
        view = self.view(run_id)
        pause = view.pause
        if pause is None:
            raise ChatInputError(f"run {view.run_id} is {view.state(view.run_id == self.active)}, not waiting for "
                                 "a decision; steering applies to a run started with interactive=True when it "
                                 "pauses")
        if action == "direction":
            known = pause.get("directions") or []
            if direction not in known:
                raise ChatInputError(f"unknown direction {direction!r}; choose one of {', '.join(known)}")
            answer: dict[str, Any] = {"action": "direction", "direction": direction}
        elif action == "code":
            src = strip_fences(code or "")
            if "ModelNew" not in src:
                raise ChatInputError("own code must define `class ModelNew(nn.Module)` (the candidate)")
            answer = {"action": "code", "code": src}
        elif action in ("accept", "stop"):
            answer = {"action": action}
        else:
            raise ChatInputError(f"unknown action {action!r}; one of accept, direction, code, stop")
        return self._resume(view.run_id, answer, on_event)

    def resume(self, run_id: str | None = None, on_event: EventSink | None = None) -> dict[str, Any]:
        """Continue a run that was interrupted (killed, crashed, closed): finished steps are not repeated."""
        view = self.view(run_id)
        return self._resume(view.run_id, None, on_event)

    def in_background(self, fn: Callable[..., dict[str, Any]], *args: Any, **kwargs: Any) -> threading.Thread:
        """Run optimize/steer/resume in a thread (the page stays live; the folder shows the progress)."""
        if self._thread is not None and self._thread.is_alive():
            raise ChatInputError(f"run {self.active or self.current} is going; wait for it or for its pause")

        def target() -> None:
            try:
                fn(*args, **kwargs)
            except Exception as exc:  # noqa: BLE001 - shown on the page; the run folder keeps the state
                self.last_outcome = {"state": "error", "error": f"{type(exc).__name__}: {exc}"}

        self._thread = threading.Thread(target=target, name="htam-run", daemon=True)
        self._thread.start()
        return self._thread

    # -- single candidates, explanations, export --------------------------------------------------------
    def evaluate(self, task: str, code: str, backend: str | None = None) -> dict[str, Any]:
        """Compile, verify and time one candidate; the verdict is kept (eval id) so it can be explained."""
        from htam_agent.evaluation.parent.candidate import Candidate
        from htam_agent.evaluation.parent.readout import Readout
        from htam_agent.run.resources import gateway_for

        path = self.task_file(task)
        src = strip_fences(code)
        if "ModelNew" not in src:
            raise ChatInputError("the candidate must define `class ModelNew(nn.Module)`")
        ctx = self.base.with_(backend=backend) if backend else self.base
        verdict = gateway_for(ctx).benchmark(Candidate.of(path, src, name="chat_candidate"))
        eval_id = "eval-" + hashlib.sha256((str(path) + src).encode()).hexdigest()[:10]
        out = self.runs_dir / "chat_evals" / f"{eval_id}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(verdict, default=str))
        return {"eval_id": eval_id, "verdict": Readout(verdict).brief(), "accepted": Readout(verdict).accepted}

    def explain(self, run_id: str | None = None, candidate: int | None = None) -> str:
        """A verdict in plain words: an eval id, or a run's candidate (default: its last rejected one)."""
        if run_id and run_id.startswith("eval-"):
            path = self.runs_dir / "chat_evals" / f"{run_id}.json"
            if not path.is_file():
                raise ChatInputError(f"no evaluation {run_id!r}")
            return explain(json.loads(path.read_text()), f"evaluation {run_id}")
        view = self.view(run_id)
        att = view.attempt(candidate, rejected=candidate is None)
        if att is None:
            what = f"no candidate {candidate}" if candidate else "no rejected candidate"
            return f"run {view.run_id} has {what} ({len(view.attempts)} evaluated)"
        return explain(att.verdict, att.label)

    def export(self, run_id: str | None = None, dest: str | None = None) -> dict[str, Any]:
        """Copy the run's best kernel (a drop-in ModelNew file) to dest (default: ./<task>_best_kernel.py in the
        current folder); the answer says where, and warns when that kernel is slower than eager PyTorch."""
        view = self.view(run_id)
        src = view.root / "best_kernel.py"
        best = view.bests()
        if not src.is_file():
            if not best:
                raise ChatInputError(f"run {view.run_id} has no accepted kernel yet; nothing to export")
            code = best[-1].code
        else:
            code = src.read_text()
        default = dest is None
        target = Path(dest or f"{view.task_name}_best_kernel.py").expanduser()
        if target.is_dir():
            target = target / f"{view.task_name}_best_kernel.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_file():
            shutil.copyfile(src, target)
        else:
            target.write_text(code)
        r = best[-1].readout if best else None
        sp = r.speedup_vs_eager if r else None
        out: dict[str, Any] = {"path": str(target.resolve()), "run_id": view.run_id, "task": view.task_name,
                               "candidate": best[-1].number if best else None, "speedup_vs_eager": sp,
                               "speedup_vs_compile": r.speedup_vs_compile if r else None, "chars": len(code),
                               "default_path": default}
        if sp is not None and sp < 1.0:
            out["warning"] = (f"this kernel runs {sp:.2f}x as fast as eager PyTorch, i.e. slower than the PyTorch "
                              "you have: keep PyTorch; the file is for reading, not for use")
        return out

    def export_args(self, args: list[str]) -> tuple[str | None, str | None]:
        """(run id, path) from `/export [RUN_ID] [PATH]`: one argument is a run id only when such a run exists,
        so `/export out/kernel.py` writes that file."""
        if len(args) >= 2:
            return args[0], args[1]
        if not args:
            return None, None
        one = args[0]
        if "/" not in one and not one.endswith(".py") and (self.runs_dir / one / "run.json").is_file():
            return one, None
        return None, one
