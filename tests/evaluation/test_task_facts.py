"""The parent's task facts (sizes, derived overrides, footprints): the same from their own process as in the
parent, found without torch in the parent, and a bad task file costs no exception (the checker says why)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from test_sizes import RELU

from htam_agent.evaluation.parent.task_facts import TaskFacts, task_facts

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ROOT / "htam_agent/bundled_tasks/suite/elementwise_leaky_relu.py"
PRINTS = 'print("hello from the task file")\n'


@pytest.mark.slow  # a process of its own per call: a torch import each
@pytest.mark.parametrize("which", ["bundled", "kernelbench_style"])
def test_facts_from_their_own_process_are_the_parents(tmp_path: Path, which: str, monkeypatch):
    """Bundled (explicit dicts) and KernelBench's style (sizes derived from its globals, and a print at import
    that must not spoil the answer): one answer whichever process finds it."""
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    if which == "bundled":
        path, source = BUNDLED, BUNDLED.read_text()
    else:
        path = tmp_path / "19_ReLU.py"
        source = PRINTS + RELU
        path.write_text(source)
    own = task_facts(source, str(path), in_process=False, use_cache=False)
    here = task_facts(source, str(path), in_process=True, use_cache=False)
    assert own == here
    assert own.sizes == ("default", "small", "alt") and own.has("small") and own.has("alt")
    assert own.footprint_bytes["default"] > own.footprint_bytes["small"] > 0
    if which == "bundled":
        assert own.derived is None  # both dicts in the file: nothing derived
        assert own.footprint_bytes["small"] == 2 * 4 * 4096 * 1024  # 16 MiB in, 16 MiB out (SMALL_SIZES)
    else:
        assert own.derived and own.derived["small"] and own.derived["alt"]
        assert own.footprint_bytes["default"] == 2 * 4 * 4096 * 393216


@pytest.mark.slow
def test_a_task_file_that_does_not_load_gives_empty_facts_not_an_exception(tmp_path: Path):
    path = tmp_path / "broken.py"
    source = "import torch\nclass Model(torch.nn.Module):\n    def forward(self, x)\n        return x\n"
    path.write_text(source)
    facts = task_facts(source, str(path), in_process=False, use_cache=False)
    assert facts == task_facts(source, str(path), in_process=True, use_cache=False)
    assert facts.sizes is None and not facts.has("small") and facts.has("default")
    assert facts.footprint_bytes == {"default": None}


@pytest.mark.slow
def test_the_evaluators_parent_decides_size_and_key_without_importing_torch(tmp_path: Path):
    """The parent of a verdict holds no torch of its own (~250 MB PSS measured with it): the size, the fit and
    the store's key come from the facts' own process."""
    code = (
        "import json, sys\n"
        "from htam_agent.evaluation.parent.candidate import Candidate\n"
        "from htam_agent.evaluation.parent.evaluator import Evaluator\n"
        "from htam_agent.evaluation.parent.options import EvalOptions\n"
        f"cand = Candidate(task_path={str(BUNDLED)!r}, source='class ModelNew: pass\\n')\n"
        "ev = Evaluator(EvalOptions(backend='cpp'), store=None)\n"
        "job = ev._job(cand, 'evaluate')\n"
        "print(json.dumps({'torch': 'torch' in sys.modules, 'size': job['size'], 'key': ev.key(cand),\n"
        "                  'fit': ev.fit(cand).as_dict()}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout)
    assert got["torch"] is False and got["size"] == "small"
    assert got["fit"]["need_bytes"] == int(2.5 * (32 << 20)) + (1 << 30)
    from htam_agent.evaluation.parent.candidate import Candidate
    from htam_agent.evaluation.parent.evaluator import Evaluator
    from htam_agent.evaluation.parent.options import EvalOptions

    cand = Candidate(task_path=str(BUNDLED), source="class ModelNew: pass\n")
    assert Evaluator(EvalOptions(backend="cpp"), store=None).key(cand) == got["key"]  # in-process: the same key


def test_facts_round_trip_as_json():
    raw = {"derived": None, "has_size": {"small": True}, "sizes": ["default", "small"],
           "footprint_bytes": {"default": 8, "small": None}}
    assert TaskFacts.of(json.loads(json.dumps(raw))) == TaskFacts(None, {"small": True}, ("default", "small"),
                                                                  {"default": 8, "small": None})


def test_facts_seen_before_come_from_the_cache_without_a_process(tmp_path: Path, monkeypatch):
    """An `eval` of a task seen before starts no process and imports no torch for its facts; another content,
    path or version is another entry."""
    from htam_agent.evaluation.parent import task_facts as module

    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "cache"))
    source = BUNDLED.read_text()
    first = task_facts(source, str(BUNDLED), in_process=True)  # found here, and kept
    assert len(list((tmp_path / "cache" / "task_facts").glob("*.json"))) == 1

    def no_process(*a, **k):
        raise AssertionError("the facts were found again")

    monkeypatch.setattr(module.subprocess, "run", no_process)
    assert task_facts(source, str(BUNDLED), in_process=False) == first
    with pytest.raises(AssertionError, match="found again"):
        task_facts(source + "\n# another content\n", str(BUNDLED), in_process=False)
    monkeypatch.setattr(module, "FACTS_VERSION", module.FACTS_VERSION + 1)
    with pytest.raises(AssertionError, match="found again"):
        task_facts(source, str(BUNDLED), in_process=False)
    (tmp_path / "blocked").mkdir()
    (tmp_path / "blocked" / "task_facts").write_text("a file where the cache's folder would be")
    monkeypatch.setenv("HTAM_CACHE_DIR", str(tmp_path / "blocked"))  # no cache to write: the facts still come
    assert task_facts(source, str(BUNDLED), in_process=True).sizes == first.sizes
