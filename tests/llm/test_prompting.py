"""Prompt templates: every backend and node renders, with the task, direction, strategies and feedback."""

from __future__ import annotations

from pathlib import Path

import pytest
from llm_samples import CUDA_NVRTC, TASK

from htam_agent.backend_registry import BACKENDS
from htam_agent.backend_registry import spec as backend_spec
from htam_agent.coder.base import CodeRequest, StrategyBrief
from htam_agent.coder.prompting import (
    PROMPTS_ENV,
    PromptError,
    load_template,
    placeholders,
    render,
    render_ask_again,
    render_request,
    shipped_prompts_dir,
    summarize_verdict,
    template_names,
)

STRATEGIES = (
    StrategyBrief("mem.vec16", "Vectorized 16-byte loads", summary="Load float4 where aligned.",
                  sketch="float4 v = reinterpret_cast<const float4*>(x)[i];", risks="misaligned tails"),
    StrategyBrief("launch.grid_stride", "Grid-stride loop", summary="Fewer, fatter blocks."),
)
VERDICT = {"status": "accepted", "speedup_vs_eager": 1.234, "speedup_vs_compile": 0.91,
           "roofline": {"fraction": 0.42, "bound": "memory"}, "timing": {"candidate": {"median_ms": 3.21}},
           "reason": "accepted: correct on all trials, 1.23x vs eager", "flags": [{"name": "roofline_low"}]}


def request(backend: str, **kw) -> CodeRequest:
    base = dict(task_name="elementwise_leaky_relu", task_source=TASK, backend=backend, op_class="elementwise",
                direction="memory_access", direction_reason="memory-bound at 40% of peak bandwidth",
                strategies=STRATEGIES, best_code=CUDA_NVRTC, best_verdict=VERDICT, step=2,
                notes=("float4 on odd widths needs a scalar tail",))
    base.update(kw)
    return CodeRequest(**base)


@pytest.mark.parametrize("backend", ["cuda", "triton", "cpp"])
def test_generate_prompt_carries_everything(backend):
    prompt = render_request(request(backend))
    assert prompt.kind == "generate"
    user, system = prompt.user, prompt.system
    assert "def get_inputs():" in user and "elementwise_leaky_relu" in user   # the task source
    assert "memory access" in user and "memory-bound at 40% of peak bandwidth" in user  # direction + reason
    for s in STRATEGIES:
        assert s.title in user and s.id in user and s.summary in user
    assert "float4 v = reinterpret_cast" in user and "misaligned tails" in user  # sketch, risks
    assert "float4 on odd widths needs a scalar tail" in user                     # notes
    assert "leaky_relu_f32" in user                                               # the current best code
    assert "1.23x vs eager PyTorch" in user and "42% of the roofline (memory-bound)" in user
    assert "class ModelNew" in system and "```python" in system
    assert "must compute part of every output" in system                         # the PyTorch-call rule
    filled = {"task_name", "task_source", "current", "direction", "strategies", "notes", "variant", "step",
              "format", "backend", "backend_title", "op_class"}
    assert not (placeholders(user) | placeholders(system)) & filled               # nothing left unfilled
    fmt = {"cuda": ("load_inline", "_compile_kernel", "__global__"), "triton": ("@triton.jit",),
           "cpp": ("cpp_sources", "-fopenmp")}[backend]
    for marker in fmt:
        assert marker in system, marker
    others = {"cuda": "@triton.jit", "triton": "torch.cuda._compile_kernel", "cpp": "__global__"}[backend]
    assert others not in system


@pytest.mark.parametrize("backend", ["cuda", "triton", "cpp"])
def test_repair_prompt_carries_the_failure(backend):
    failed = CUDA_NVRTC.replace("leaky_relu_f32", "broken_kernel")
    prompt = render_request(request(backend, repair=1, failed_code=failed,
                                    feedback="compile error: line 3: expected ';'\nsecond line"))
    assert prompt.kind == "repair"
    assert "broken_kernel" in prompt.user
    assert "> compile error: line 3: expected ';'\n> second line" in prompt.user
    assert "Repair 1" in prompt.user and backend in prompt.user
    hint = {"cuda": "NVRTC", "triton": "tl.constexpr", "cpp": "reduction(+:...)"}[backend]
    assert hint in prompt.user
    assert "memory-bound at 40% of peak bandwidth" in prompt.user


def test_first_step_without_best_code_or_strategies():
    prompt = render_request(request("cuda", best_code=None, best_verdict=None, strategies=(), notes=(),
                                    direction=None, direction_reason=""))
    assert "No candidate has been accepted yet" in prompt.user
    assert "None retrieved" in prompt.user and "No direction chosen" in prompt.user


def test_variants_ask_for_a_different_approach():
    assert "different approach" not in render_request(request("cuda")).user
    assert "candidate 2 of this step" in render_request(request("cuda", variant=1)).user


def test_templates_are_packaged():
    names = template_names()
    for expected in ("system.md", "repair.md", "ask_again.md", *(f"generate_{b}.md" for b in ("cuda", "triton", "cpp")),
                     *(f"format_{b}.md" for b in ("cuda", "triton", "cpp"))):
        assert expected in names


def test_render_is_strict_and_leaves_code_braces_alone():
    assert render("a {x} { return y; } {{z}}", {"x": 1, "z": 2}) == "a 1 { return y; } {2}"
    with pytest.raises(PromptError, match="needs missing"):
        render("{missing}", {})


def test_unknown_backend_is_an_error():
    with pytest.raises(PromptError, match="no prompts for backend 'hip'"):
        render_request(request("hip"))


def test_prompts_dir_overrides_single_files(tmp_path):
    (tmp_path / "generate_cuda.md").write_text("CUSTOM {task_name} via {direction}")
    prompt = render_request(request("cuda"), prompts_dir=tmp_path)
    assert prompt.user.startswith("CUSTOM elementwise_leaky_relu via **memory access**")
    assert "class ModelNew" in prompt.system  # system.md still from the package


REPO = Path(__file__).resolve().parents[2]


def test_every_backend_template_is_in_the_top_level_prompts_folder():
    """The templates live in the repository's top-level prompts/ (users find and override them there); a
    checkout reads them from there, and the package's own folder no longer holds a copy."""
    top = REPO / "prompts"
    assert shipped_prompts_dir() == top
    assert not (REPO / "htam_agent" / "prompts").exists()
    for name in BACKENDS:
        s = backend_spec(name)
        for file in (s.format_prompt, s.generate_prompt, s.repair_hints_prompt):
            assert (top / file).is_file(), file
    for file in ("system.md", "repair.md", "ask_again.md"):
        assert (top / file).is_file(), file
    assert set(template_names()) == {p.name for p in top.glob("*.md")}


def test_htam_prompts_dir_overrides_single_files_and_prompts_dir_wins_over_it(tmp_path, monkeypatch):
    env_dir, arg_dir = tmp_path / "env", tmp_path / "arg"
    env_dir.mkdir()
    arg_dir.mkdir()
    (env_dir / "generate_cuda.md").write_text("FROM ENV {task_name}")
    (env_dir / "ask_again.md").write_text("ENV ASK {problem}")
    monkeypatch.setenv(PROMPTS_ENV, str(env_dir))
    prompt = render_request(request("cuda"))
    assert prompt.user == "FROM ENV elementwise_leaky_relu\n"
    assert "class ModelNew" in prompt.system  # files the override lacks come from the shipped folder
    assert render_ask_again("no code", "cuda") == "ENV ASK no code."
    (arg_dir / "generate_cuda.md").write_text("FROM ARG {task_name}")
    assert render_request(request("cuda"), prompts_dir=arg_dir).user == "FROM ARG elementwise_leaky_relu\n"
    assert load_template("ask_again.md", arg_dir) == "ENV ASK {problem}"  # not in arg_dir: the env folder's
    monkeypatch.delenv(PROMPTS_ENV)
    assert render_request(request("cuda")).user.startswith("# Task `elementwise_leaky_relu`")


def test_ask_again_names_the_problem_and_the_backend():
    text = render_ask_again("wrong backend: the code is a triton candidate", "cuda")
    assert "wrong backend: the code is a triton candidate." in text and "__global__" in text


def test_verdict_summary():
    assert summarize_verdict(VERDICT).startswith("status accepted; 1.23x vs eager PyTorch; 0.91x vs torch.compile")
    assert "flags: roofline_low" in summarize_verdict(VERDICT)
    assert summarize_verdict(None) == "no verdict recorded"


def test_generate_prompt_lists_what_the_task_already_measured():
    from htam_agent.coder.base import TriedCandidate
    from htam_agent.coder.prompting import MAX_TRIED

    tried = (TriedCandidate(0, "memory_access", ("ma_vectorized_loads",), True, 1.2, "accepted, 1.20x vs eager"),
             TriedCandidate(1, "parallel_mapping", (), False, None, "incorrect: max abs error 3.1 on trial 'odd'"))
    user = render_request(request("cuda", tried=tried)).user
    section = user.split("## Already measured in this task", 1)[1].split("\n## ", 1)[0]
    assert "- step 0: `memory_access` with `ma_vectorized_loads`: accepted, 1.20x vs eager" in section
    assert "- step 1: `parallel_mapping`: incorrect: max abs error 3.1 on trial 'odd'" in section
    assert "Do not resubmit any of these" in section
    assert "Nothing yet" in render_request(request("cuda", step=0)).user
    many = tuple(TriedCandidate(i, "memory_access", (), True, 1.0, "accepted") for i in range(MAX_TRIED + 3))
    long = render_request(request("cuda", tried=many)).user
    assert "(3 earlier attempts not listed)" in long and f"- step {MAX_TRIED + 2}: " in long
    assert "- step 0: " not in long
