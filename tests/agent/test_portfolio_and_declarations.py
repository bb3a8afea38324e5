"""Issue 17 through a real run: the real ChatOpenAI client against the scripted server, the cuda backend replaying
H200 verdicts (tests/agent/test_loop_cuda_replay.py), a real Chroma memory and the SQLite checkpointer.

Three candidates per step: they take three different directions (a portfolio), each reply's `APPLIED:` line is
what the memory records (not what was asked), the kernel that beat eager becomes a strategy card, and step 1
does not offer again what the current best already applies (nor the card learned from that very best).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from htam_agent.agent import run_optimization
from htam_agent.bundled_tasks import CANDIDATES_DIR
from htam_agent.coder.extract import parse_declaration
from htam_agent.context import RunContext
from htam_agent.evaluation.parent.store import VerdictStore
from htam_agent.memory.catalog import load_catalog
from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory

from .scripted_coder import softmax_task

REPO = Path(__file__).resolve().parents[2]
VERDICTS = REPO / "benchmarks" / "results" / "h200_scripted_cuda_verdicts.jsonl"
BROKEN = (REPO / "tests" / "agent" / "cuda_script" / "softmax_nvrtc_broken.py").read_text()
NVRTC = (CANDIDATES_DIR / "norm_softmax" / "cuda_nvrtc.py").read_text()
ONLINE = (CANDIDATES_DIR / "norm_softmax" / "cuda_online.py").read_text()
SUGGESTED = re.compile(r"Suggested for this candidate: \*\*[^*]+\*\* \(`(\w+)`\)")
CAT = load_catalog()


def block(code: str) -> str:
    return "```python\n" + code + "```"  # byte-identical to the evaluated file


def _device_name() -> str:
    for line in VERDICTS.read_text().splitlines():
        v = json.loads(line)
        if v.get("kind") == "candidate":
            return v["device_name"]
    raise AssertionError("no candidate verdict")


def _candidates(root: Path, step: int) -> dict[int, dict[str, str]]:
    out = {}
    for d in sorted((root / f"step_{step:02d}").glob("cand_*_r0")):
        variant = int(d.name.split("_")[1])
        out[variant] = {"prompt": (d / "prompt.md").read_text(), "reply": (d / "reply.md").read_text()}
    return out


def _strategy_headings(prompt: str) -> set[str]:
    section = prompt.split("## Strategies for the suggested direction", 1)[1].split("## Notes", 1)[0]
    return set(re.findall(r"^### .*\(`([^`]+)`\)$", section, re.MULTILINE))


def test_portfolio_declarations_and_cards_through_a_run(agent_env: Path, openai_server,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    assert VerdictStore(agent_env / "verdicts").import_jsonl(VERDICTS) >= 3
    monkeypatch.setenv("HTAM_DEVICE_NAME", _device_name())
    monkeypatch.setenv("SCRIPTED_KEY", "sk-local-test")
    best_reply = ("One pass with an online max and sum per row, float4 loads.\n" + block(ONLINE)
                  + "\nAPPLIED: direction=memory_access; strategies=ma_vectorized_loads\n")
    other_reply = ("A plain row kernel with a tuned block size.\n" + block(NVRTC)
                   + "\n**Applied**: Occupancy and resource tuning (oc_block_size)\n")
    draft = "A first draft.\n" + block(BROKEN)  # no declaration: the assigned direction stands
    openai_server.push(best_reply, other_reply, draft, best_reply, other_reply, draft)
    ctx = RunContext.from_env(backend="cuda", steps=2, candidates=3, max_repairs=0, model="scripted-model",
                              base_url=openai_server.url, api_key_env="SCRIPTED_KEY", llm_retries=0,
                              evaluation="replay")
    result = run_optimization(softmax_task(), ctx)
    assert openai_server.remaining == 0 and result.llm_calls == 6
    assert result.best_speedup_vs_eager == pytest.approx(1.3093)
    root = Path(result.artifact_dir)

    mem = HTAMemory(MemoryConfig(agent_env / "memory"))
    events = {e.uid: e for _, e in mem.transitions.events()}
    run_id = next(iter(events)).split(":")[0]
    directions = {d.id: d.name for d in CAT.directions}
    strategies = {s.id: s.title for s in CAT.strategies}
    step0 = _candidates(root, 0)
    assert sorted(step0) == [0, 1, 2]
    assigned = {v: SUGGESTED.search(c["prompt"]).group(1) for v, c in step0.items()}
    assert len(set(assigned.values())) == 3, assigned  # a portfolio, not three variations of one direction
    for v, c in step0.items():
        assert "Directions ranked by the memory" in c["prompt"] and "APPLIED: direction=" in c["prompt"]
        decl = parse_declaration(c["reply"], directions, strategies)
        ev = events[f"{run_id}:0" + (f":v{v}" if v else "")]
        if decl is None:  # the draft: recorded under what it was asked to do
            assert ev.direction == assigned[v] and not ev.accepted
        else:  # recorded under what the reply says it did
            assert ev.direction == decl.direction and ev.strategies == tuple(sorted(decl.strategies))
            assert ev.accepted
    by_dir = {e.direction: e for e in events.values() if e.uid.startswith(f"{run_id}:0")}
    assert "occupancy_tuning" in by_dir and "occupancy_tuning" not in assigned.values()  # done, not asked
    assert result.steps[0]["direction"] == "memory_access"  # the step's best, as declared

    (card,) = mem.learned_cards()
    assert card.direction == "memory_access" and card.applicability.op_classes == ["normalization"]
    assert card.applicability.backends == ["cuda"] and "softmax_kernel" in card.code_sketch["cuda"]
    assert "online max and sum" in card.description and card.evidence["step"] == 0

    step1 = _candidates(root, 1)
    slots = {v: SUGGESTED.search(c["prompt"]).group(1) for v, c in step1.items()}
    assert len(set(slots.values())) == 3
    for v, c in step1.items():
        offered = _strategy_headings(c["prompt"])
        assert "ma_vectorized_loads" not in offered and card.id not in offered, (v, offered)
        assert not (slots[v] == "memory_access" and offered <= {"ma_vectorized_loads"})
    # step 0's kernels are baselines, not gains: step 1 explores what step 0 did not measure (issue 23)
    measured0 = {e.direction for e in by_dir.values()}
    assert slots[0] not in measured0 and slots[1] not in measured0, (slots, measured0)  # the untried that fit
    # how many untried directions are left depends on which step-0 slot the draft reached (the three
    # candidates ask the scripted server in parallel, so the replies' order is the threads'): the split
    # must say what it did, and explore at least the two
    explored = sum(1 for s in slots.values() if s not in measured0)
    assert explored >= 2
    assert (f"0 exploit (last attempt here improved the previous best), {explored} explore"
            in result.steps[1]["direction_reason"]), (slots, measured0, result.steps[1]["direction_reason"])
    for c in step1.values():
        assert "improved the best" not in c["prompt"] and "typical gain" not in c["prompt"]
        if "(`memory_access`)" in c["prompt"].split("## Already measured", 1)[0]:
            assert "step 0 gave the task's first kernel, x1.31 over eager (a baseline, not a gain)" in c["prompt"]

    # every candidate of step 1 is told what step 0 measured (what each applied, what it gave), not asked again
    assert all("Nothing yet: this is the task's first step." in c["prompt"] for c in step0.values())
    for c in step1.values():
        measured = c["prompt"].split("## Already measured in this task", 1)[1].split("\n## ", 1)[0]
        assert measured.count("- step 0: ") == 3, measured
        assert "- step 0: `memory_access` with `ma_vectorized_loads`: accepted, 1.31x vs eager" in measured
        assert "- step 0: `occupancy_tuning` with `oc_block_size`: accepted" in measured
        assert re.search(r"- step 0: `\w+`( with [^:]+)?: (incorrect|compile_error|runtime_error|invalid_candidate): \w", measured)
        assert "Do not resubmit any of these" in measured
    mem.close()
