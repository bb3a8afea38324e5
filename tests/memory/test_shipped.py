"""The memory that ships (htam_agent/memory/shipped.py): a fresh install's empty memory gets the experience trained
on our verdict tables under shipped names, the run says so, the user's own steps go on top without touching it,
`htam memory` shows where each piece came from and `reset --shipped` drops it. Real SQLite and Chroma stores, the
real package file."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from memory_helpers import gain, state
from typer.testing import CliRunner

from htam_agent.cli.memory import app
from htam_agent.context import RunContext
from htam_agent.memory import shipped
from htam_agent.memory.config import MemoryConfig
from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.io import MemoryFormatError
from htam_agent.memory.schema import MemoryState, StateKey
from htam_agent.memory.transitions import Event, origin_of
from htam_agent.run import resources

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FILE = ROOT / "htam_agent" / "memory" / "shipped" / "cuda.json.gz"
runner = CliRunner()


def _about(path: Path = PACKAGE_FILE) -> dict:
    with gzip.open(path, "rt") as fh:
        return json.load(fh)["shipped"]


@pytest.fixture
def fresh_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A new user: an empty HOME, no memory settings, the package's own shipped files."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for var in ("XDG_DATA_HOME", "HTAM_MEMORY_DIR", "HTAM_CHROMA_URL", "HTAM_MEMORY_NAMESPACE", "HTAM_SHIPPED_DIR",
                "HTAM_SHIPPED_MEMORY"):
        monkeypatch.delenv(var, raising=False)
    resources.clear_cache()
    yield home
    resources.clear_cache()


def _mem(home: Path) -> HTAMemory:
    return HTAMemory(MemoryConfig.from_env())


def _cli(*args: str):
    return runner.invoke(app, list(args), env={"COLUMNS": "220"})


def _shipped_rows(mem: HTAMemory) -> list[dict]:
    return [e.to_dict() for _, e in mem.transitions.events() if origin_of(e.uid) == "shipped"]


def test_the_package_ships_a_measured_cuda_memory_with_its_provenance():
    about = _about()
    assert about["backend"] == "cuda" and about["format"] == shipped.SHIPPED_FORMAT
    assert about["table"] == "cuda_h200_dev" and about["table_date"].startswith("2026-11-30")
    assert about["trained"]["command"].startswith("python benchmarks/train_shipped_memory.py")
    assert about["trained"]["problems"] == 23 and about["trained"]["not_evaluated"] == 0
    f = shipped.read_shipped(PACKAGE_FILE, _catalog())
    assert len(f.events) == about["events"] > 0 and len(f.learned) == about["learned_strategies"] > 0
    assert sum(about["op_classes"].values()) == about["events"]
    assert all(e.key.backend == "cuda" and e.uid.startswith("shipped:cuda:") for e in f.events)
    # a wheel carries it: package data names the folder's files
    data = (ROOT / "pyproject.toml").read_text().split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]
    assert '"memory/shipped/*.json.gz"' in data


def test_the_package_ships_a_cpp_memory_trained_on_the_whole_cpp_table():
    """Part 5 of issue 35: the cpp memory is the htam lane trained on every problem of the committed cpp table."""
    from htam_agent.bench.table import load_table

    path = PACKAGE_FILE.with_name("cpp.json.gz")
    about = _about(path)
    table = load_table(ROOT / "benchmarks" / "tables" / "cpp_kb_small.jsonl")
    assert about["backend"] == "cpp" and about["table"] == "cpp_kb_small"
    assert about["trained"]["problems"] == len(table.problems) >= 100 and about["trained"]["not_evaluated"] == 0
    assert about["trained"]["command"].startswith("python benchmarks/train_shipped_memory.py")
    f = shipped.read_shipped(path, _catalog())
    assert len(f.events) == about["events"] > 0 and len(f.learned) == about["learned_strategies"] > 0
    assert all(e.key.backend == "cpp" and e.uid.startswith("shipped:cpp:") for e in f.events)
    assert {"elementwise", "reduction", "matmul", "fused"} <= set(about["op_classes"])


def _catalog():
    from htam_agent.memory.catalog import load_catalog

    return load_catalog()


def test_a_fresh_install_loads_the_shipped_experience_and_the_run_says_so(fresh_home):
    from htam_agent.agent.optimization import memory_line

    about = _about()
    line = memory_line(RunContext.from_env(backend="cuda"))
    assert line == (f"memory: {about['events']} shipped transitions from the cuda verdict table of "
                    f"{about['table_date'][:10]} (loaded now); your own steps are added on top")
    resources.clear_cache()
    assert memory_line(RunContext.from_env(backend="cuda")).endswith("of 2026-11-30; your own steps are added on top")
    assert (fresh_home / ".local" / "share" / "htam-agent" / "memory" / "transitions.sqlite3").is_file()
    with _mem(fresh_home) as mem:
        assert mem.transitions.origin_counts() == {("shipped", "cuda"): about["events"]}
        cards = mem.learned_cards()
        assert len(cards) == about["learned_strategies"]
        assert all(c.id.startswith("shipped-") and c.evidence["origin"] == "shipped" for c in cards)
        assert mem.transitions.check()["ok"]
    # a backend nothing ships for says so and loads nothing
    assert memory_line(RunContext.from_env(backend="triton")).startswith(
        "memory: empty on triton (no experience ships")


@pytest.mark.slow  # embeds the seed strategies and the notes twice (~1 min on two busy cores)
def test_chroma_serves_shipped_cards_and_notes_until_reset_shipped(fresh_home, embedding_model):
    from htam_agent.agent.optimization import memory_line

    memory_line(RunContext.from_env(backend="cuda"))
    resources.clear_cache()
    with _mem(fresh_home) as mem:
        mem.record(state(text="mine"), "data_reuse", [], gain(1.4), note="my own lesson")
        card = mem.learned_cards()[0]
        a = card.applicability
        st = MemoryState(StateKey(a.op_classes[0], a.bottlenecks[0], "correct_slow", "cuda"), "a kernel",
                         1.0, shape_facts=tuple(sorted((k, lo) for k, (lo, _hi) in a.shapes.items())))
        assert any(r.strategy.id.startswith("shipped-") for r in mem.retrieve_strategies(card.direction, st, k=3))
        assert any(n.metadata["event_uid"].startswith("shipped:") for n in mem.retrieve_notes(st, k=50))
    assert _cli("reset", "--shipped", "--yes").exit_code == 0
    with _mem(fresh_home) as mem:
        assert not any(r.strategy.id.startswith("shipped-") for r in mem.retrieve_strategies(card.direction, st, k=3))
        notes = mem.retrieve_notes(st, k=50)  # the Chroma side rebuilt from what stays: the own note only
        assert notes and all(not n.metadata["event_uid"].startswith("shipped:") for n in notes)


def test_own_steps_go_on_top_and_never_overwrite_the_shipped_ones(fresh_home, tmp_path):
    from htam_agent.agent.optimization import memory_line

    memory_line(RunContext.from_env(backend="cuda"))
    resources.clear_cache()
    with _mem(fresh_home) as mem:
        before = _shipped_rows(mem)
        cards_before = {c.id: c for c in mem.learned_cards()}
        for i in range(3):
            mem.record(state("normalization", "memory", text=f"mine {i}"), "memory_access", [], gain(1.3),
                       history=["data_reuse"])
        mine = mem.learn_card(state("normalization", "memory"), "memory_access", code="__global__ void k() {}",
                              plan="one pass", speedup_after=2.0)
        # an import of someone's export that holds a card of the same content (its own id) changes no shipped row
        other = HTAMemory(MemoryConfig(tmp_path / "other"))
        other.learn_card(state("normalization", "memory"), "memory_access", code="__global__ void k() {}",
                         plan="one pass, again", speedup_after=2.5)
        other.export(tmp_path / "other.json")
        other.close()
        mem.import_file(tmp_path / "other.json")
        assert _shipped_rows(mem) == before
        assert {c.id: c for c in mem.learned_cards() if c.id.startswith("shipped-")} == cards_before
        assert mine is not None and not mine.id.startswith("shipped-")
        counts = mem.transitions.origin_counts()
        assert counts == {("shipped", "cuda"): len(before), ("own", "cuda"): 3}
    line = memory_line(RunContext.from_env(backend="cuda"))  # not loaded again: the user has steps of their own
    assert f"{len(before)} shipped transitions" in line and "and 3 of your own" in line and "loaded now" not in line


def test_htam_memory_shows_where_the_experience_came_from(fresh_home):
    from htam_agent.agent.optimization import memory_line

    about = _about()
    memory_line(RunContext.from_env(backend="cuda"))
    resources.clear_cache()
    with _mem(fresh_home) as mem:
        mem.record(state(text="mine"), "data_reuse", ["dr_smem_tiling_gemm"], gain(1.4))
    r = _cli()
    assert r.exit_code == 0, r.output
    assert (f"shipped with htam-agent: {about['events']} transitions (cuda {about['events']}), "
            f"{about['learned_strategies']} learned strategy cards") in r.output
    assert "your own steps and imports: 1 transition (cuda 1), 0 learned strategy cards" in r.output
    assert "shipped cuda experience: the cuda verdict table of 2026-11-30" in r.output
    r = _cli("show", "--what", "learned", "--limit", "100")
    assert r.exit_code == 0 and r.output.count("shipped (cuda_h200_dev)") == about["learned_strategies"]
    r = _cli("show", "--what", "edges", "--limit", "200")
    assert f"{about['events'] + 1} recorded transitions ({about['events']} shipped, 1 your own)" in r.output
    assert "shipped" in r.output.split("Transition edges")[1].splitlines()[1 + 1]  # the column's header


def test_reset_shipped_drops_it_keeps_own_and_keeps_it_off(fresh_home):
    from htam_agent.agent.optimization import memory_line

    about = _about()
    memory_line(RunContext.from_env(backend="cuda"))
    resources.clear_cache()
    with _mem(fresh_home) as mem:
        mem.record(state(text="mine"), "data_reuse", [], gain(1.4), note="my own lesson")
    r = _cli("reset", "--shipped", "--yes")
    assert r.exit_code == 0, r.output
    assert f"{about['events']} shipped transitions and {about['learned_strategies']} shipped strategy cards" \
        in r.output and "1 of your own kept" in r.output
    with _mem(fresh_home) as mem:
        assert mem.transitions.origin_counts() == {("own", "cuda"): 1}
        assert mem.learned_cards() == [] and mem.transitions.check()["ok"]
    line = memory_line(RunContext.from_env(backend="cuda"))
    assert line.startswith("memory: 1 transition of your own on cuda (shipped experience turned off")
    resources.clear_cache()
    # back on purpose, then forget only the user's own, then everything: the next run loads it again
    r = _cli("load-shipped", "--backend", "cuda")
    assert r.exit_code == 0 and f"cuda: {about['events']} shipped transitions" in r.output, r.output
    r = _cli("reset", "--own", "--yes")
    assert r.exit_code == 0 and f"{about['events']} shipped kept" in r.output, r.output
    r = _cli("reset", "--yes")
    assert r.exit_code == 0 and f"({0} your own, {about['events']} shipped)" in r.output, r.output
    assert "(loaded now)" in memory_line(RunContext.from_env(backend="cuda"))
    assert _cli("reset", "--shipped", "--own").exit_code == 2


def test_benches_and_frozen_memories_do_not_load_it(fresh_home, tmp_path):
    from htam_agent.agent.optimization import memory_line
    from htam_agent.bench import memory_cv as cv

    lane = str(tmp_path / "lane")
    assert memory_line(RunContext.from_env(backend="cuda", memory_dir=lane, shipped_memory=False)) \
        .startswith("memory: 0 transitions of your own on cuda")
    assert memory_line(RunContext.from_env(backend="cuda", memory_dir=lane, learn=False)) \
        .startswith("memory: 0 transitions")
    assert memory_line(RunContext.from_env(backend="cuda", memory_mode="none")) is None
    with HTAMemory(MemoryConfig(lane)) as mem:
        assert mem.transitions.count() == 0
    ctx = cv._ctx(cv.METHODS["htam"], 6, 1, 0, True, tmp_path / "m", tmp_path / "r", "cuda", "default")
    assert ctx.shipped_memory is False


def _lane_export(tmp_path: Path, name: str, gains: list[float]) -> dict:
    with HTAMemory(MemoryConfig(tmp_path / name)) as m:
        for i, g in enumerate(gains):
            m.record(state(text=f"{name} {i}"), "data_reuse", ["dr_smem_tiling_gemm"], gain(g),
                     history=["memory_access"], uid=f"{name}:{i}")
        m.learn_card(state(), "data_reuse", code=f"__global__ void {name}() {{}}", plan=name, speedup_after=1.0)
        m.export(tmp_path / f"{name}.json")
    return json.loads((tmp_path / f"{name}.json").read_text())


def test_a_new_package_file_replaces_only_its_own_shipped_experience(tmp_path):
    root = tmp_path / "pkg"
    prov = {"table": "t", "table_date": "2026-12-01"}
    shipped.write_shipped(shipped.make_shipped_doc(_lane_export(tmp_path, "v1", [1.2, 1.3]), backend="cuda",
                                                   provenance=prov), root / "cuda.json.gz")
    with HTAMemory(MemoryConfig(tmp_path / "user")) as mem:
        assert "2 shipped transitions" in shipped.prepare(mem, "cuda", root=root)
        shipped.write_shipped(shipped.make_shipped_doc(_lane_export(tmp_path, "v2", [1.1, 1.5, 1.6]),
                                                       backend="cuda", provenance=prov), root / "cuda.json.gz")
        line = shipped.prepare(mem, "cuda", root=root)  # no steps of the user's own yet: the new file replaces
        assert "3 shipped transitions" in line and "(loaded now)" in line
        assert {e.uid for _, e in mem.transitions.events()} == {f"shipped:cuda:v2:{i}" for i in range(3)}
        assert [c.description.endswith("v2") for c in mem.learned_cards()] == [True]
        mem.record(state(text="mine"), "memory_access", [], gain(1.2))
        shipped.write_shipped(shipped.make_shipped_doc(_lane_export(tmp_path, "v3", [1.4]), backend="cuda",
                                                       provenance=prov), root / "cuda.json.gz")
        assert "3 shipped transitions" in shipped.prepare(mem, "cuda", root=root)  # the user has own steps now
        rep = shipped.load(mem, "cuda", root=root)  # on purpose: replaces the shipped part, keeps the own step
        assert (rep.events_replaced, rep.events_added) == (3, 1)
        assert mem.transitions.origin_counts() == {("shipped", "cuda"): 1, ("own", "cuda"): 1}


def test_a_shipped_file_must_use_shipped_names(tmp_path):
    doc = shipped.make_shipped_doc(_lane_export(tmp_path, "v1", [1.2]), backend="cuda",
                                   provenance={"table": "t", "table_date": "2026-12-01"})
    doc["events"][0]["uid"] = "plain-uid"
    path = shipped.write_shipped(doc, tmp_path / "pkg" / "cuda.json.gz")
    with pytest.raises(MemoryFormatError, match=r"cuda\.json\.gz: field 'uid'.*plain-uid"):
        shipped.read_shipped(path, _catalog())
    with HTAMemory(MemoryConfig(tmp_path / "user")) as mem:
        line = shipped.prepare(mem, "cuda", root=tmp_path / "pkg")
        assert line.startswith("memory: the shipped experience could not be loaded") and "plain-uid" in line
        assert mem.transitions.count() == 0
        own = [Event.from_step(state(), "data_reuse", [], gain(1.2), uid="own-1")]
        with pytest.raises(ValueError, match="shipped names"):  # the store itself refuses to file own steps so
            mem.transitions.replace_shipped("cuda", own, [], "x")
        assert mem.transitions.count() == 0


def test_htam_optimize_shows_the_memory_line():
    from rich.console import Console

    from htam_agent.cli.optimize import ProgressView

    view = ProgressView("htam optimize t")
    line = "memory: 94 shipped transitions from the cuda verdict table of 2026-11-30; your own steps are added on top"
    view.on_event({"event": "memory", "line": line})
    view.on_event({"event": "analyze", "step": 0, "op_class": "elementwise", "bottleneck": "memory",
                   "status": "no_kernel"})
    console = Console(width=200, record=True)
    console.print(view)
    assert line in console.export_text()
