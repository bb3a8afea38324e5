"""One backend registry (htam_agent/backend_registry.py): every layer's list of backends is the registry's."""

from __future__ import annotations

import subprocess
import sys

import pytest

from htam_agent import backend_registry as registry
from htam_agent.backend_registry import BACKENDS, spec

UNKNOWN = "unknown backend 'hip'; choose one of: cuda, triton, cpp"


def test_registry_is_stdlib_only_and_the_evaluator_stays_bare():
    code = ("import sys, htam_agent.backend_registry, htam_agent.evaluation.backends; "
            "assert not any(m.split('.')[0] in ('pydantic','langgraph','langchain_core','chromadb') "
            "for m in sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)
    # the registry itself is cheap: no torch either
    code = "import sys, htam_agent.backend_registry; assert not any(m.split('.')[0] == 'torch' for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_names_order_and_unknown_name():
    assert BACKENDS == ("cuda", "triton", "cpp")  # memory/stats.py indexes this order
    with pytest.raises(ValueError) as err:
        spec("hip")
    assert str(err.value) == UNKNOWN
    assert [registry.is_cpu(b) for b in BACKENDS] == [False, False, True]
    assert [registry.device_type(b) for b in BACKENDS] == ["cuda", "cuda", "cpu"]
    assert registry.gpu_backends() == ("cuda", "triton")
    assert spec("cpp").default_size == "small" and spec("cuda").default_size == "default"
    assert spec("cuda").candidate_glob == "cuda_*.py" and spec("cpp").candidate_file("omp") == "cpp_omp.py"


def test_prompt_files_of_every_backend_are_shipped():
    from htam_agent.coder.prompting import shipped_prompts_dir

    folder = shipped_prompts_dir()
    for name in BACKENDS:
        s = spec(name)
        for file in (s.format_prompt, s.generate_prompt, s.repair_hints_prompt):
            assert folder.joinpath(file).is_file(), file


def test_context_validation_names_the_registry_choices():
    from htam_agent.context import ConfigError, RunContext

    with pytest.raises(ConfigError, match="expected one of cuda, triton, cpp"):
        RunContext(backend="hip").validate()
    for name in BACKENDS:
        RunContext(backend=name).validate()


def test_memory_schema_backends_are_the_registry():
    from typing import get_args

    from htam_agent.memory.schema import BACKENDS as MEMORY_BACKENDS
    from htam_agent.memory.schema import Backend, StateKey

    assert MEMORY_BACKENDS == BACKENDS and isinstance(MEMORY_BACKENDS, tuple)
    assert get_args(Backend) == BACKENDS
    with pytest.raises(ValueError, match="unknown backend 'hip'"):
        StateKey("elementwise", backend="hip")


def test_exemplar_cli_rejects_an_unknown_backend_with_the_registry_message():
    import typer
    from typer.testing import CliRunner

    from htam_agent.cli.exemplar import _backends, app

    assert _backends("all") == list(BACKENDS) and _backends("cpp, cuda") == ["cpp", "cuda"]
    with pytest.raises(typer.BadParameter) as err:
        _backends("cuda,hip")
    assert UNKNOWN in str(err.value)
    result = CliRunner().invoke(app, ["list", "elementwise_leaky_relu", "--backend", "hip"])
    assert result.exit_code == 2


def test_exemplar_coder_and_prompts_reject_an_unknown_backend_with_the_registry_message():
    from htam_agent.coder.base import CodeRequest, UnsupportedTask
    from htam_agent.coder.exemplar.coder import plan
    from htam_agent.coder.prompting import BACKEND_EXPECTED, BACKEND_TITLES, PromptError, request_values

    req = CodeRequest(task_name="t", task_source="", backend="hip")
    with pytest.raises(UnsupportedTask, match="choose one of: cuda, triton, cpp"):
        plan(req)
    with pytest.raises(PromptError, match="choose one of: cuda, triton, cpp"):
        request_values(req)
    assert tuple(BACKEND_TITLES) == tuple(BACKEND_EXPECTED) == BACKENDS


def test_evaluation_backends_are_the_registry():
    from htam_agent.evaluation.backends import BACKEND_NAMES, get_backend
    from htam_agent.evaluation.parent.options import EvalOptions

    assert BACKEND_NAMES == BACKENDS
    for name in BACKENDS:
        b = get_backend(name)
        assert (b.name, b.device_type, b.description) == (name, spec(name).device_type, spec(name).description)
        assert type(b).__module__ + ":" + type(b).__name__ == spec(name).evaluator
    with pytest.raises(ValueError) as err:
        get_backend("hip")
    assert str(err.value) == UNKNOWN
    with pytest.raises(ValueError) as err:
        EvalOptions(backend="hip")
    assert str(err.value) == UNKNOWN
    assert EvalOptions(backend="cpp", threads=2).key_fields()["threads"] == 2
    assert EvalOptions(backend="cuda", threads=2).key_fields()["threads"] is None


def test_bundled_candidates_follow_the_registry():
    """Each bundled candidate is named after a backend, passes that backend's static check, and is detected."""
    from htam_agent.bundled_tasks import CANDIDATES_DIR, candidate_files
    from htam_agent.evaluation.backends import detect_backend, get_backend

    files = sorted(p for p in CANDIDATES_DIR.glob("*/*.py") if not p.name.startswith("_"))
    assert files
    by_backend = {name: [] for name in BACKENDS}
    for path in files:
        name = path.name.split("_", 1)[0]
        assert name in BACKENDS, path
        by_backend[name].append(path)
        source = path.read_text()
        assert get_backend(name).static_problems(source) == [], path
        assert detect_backend(source) == name, path
    for name, paths in by_backend.items():
        assert paths, f"no bundled {name} candidate"
        assert sorted(p for stem in {q.parent.name for q in paths} for p in candidate_files(stem, name)) == paths
