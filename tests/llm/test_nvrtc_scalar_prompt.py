"""What the LLM is told about CUDA kernel arguments. torch's NVRTC launcher packs by Python type (a float as a
C double, an int as a 32-bit int, so a parameter declared `float` reads garbage, checked below against the
installed torch): that trap is why the prompt teaches only the fast form, whose launcher packs each argument
by the type the kernel declares. The format section and the repair hints say so, and both reach the model.
"""

from __future__ import annotations

import ctypes
import re
import struct

import pytest
from llm_samples import CUDA_NVRTC, TASK, reply_with

from htam_agent.coder.base import CodeRequest
from htam_agent.coder.prompting import load_template, render_request

WRONG_RESULT = ("status: wrong_result\nwrong result on trial 'randn_seed0': max abs err 8.9e+04 "
                "(tolerance 1e-04), 4194304 of 4194304 elements off")


def request(backend: str = "cuda", **kw) -> CodeRequest:
    base = dict(task_name="elementwise_leaky_relu", task_source=TASK, backend=backend, op_class="elementwise",
                direction="memory_access", direction_reason="memory-bound", step=1)
    base.update(kw)
    return CodeRequest(**base)


def _flat(text: str) -> str:
    """Whitespace-normalised (the templates wrap lines anywhere)."""
    return " ".join(text.split())


# ------------------------------------------------------------------------------------------------------
# the format section (system message of every cuda prompt): the fast form only, its launcher verbatim
# ------------------------------------------------------------------------------------------------------
def test_format_section_teaches_the_fast_form_and_its_packing():
    from htam_agent.coder.exemplar.fast_cuda import FAST_LAUNCHER

    fmt = load_template("format_cuda.md")
    assert FAST_LAUNCHER in fmt                      # the block a candidate copies is the one we test
    system = _flat(render_request(request()).system)
    assert "packed by the type its kernel parameter declares" in system
    assert "larger ones are refused: declare `long long`" in system
    assert "torch.cuda._compile_kernel(" not in fmt and "becomes a C `double`" not in system
    assert "#include <torch/extension.h>" not in fmt.split("```python", 1)[1].split("```", 1)[0]  # the example


def test_format_example_kernel_declares_what_it_is_passed():
    """The example is what models copy: its float scalar is declared float (packed as float), its size 64-bit."""
    fmt = load_template("format_cuda.md")
    source = re.search(r'_SOURCE = r"""(.*?)"""', fmt.split("# ---- end of the fast CUDA launcher", 1)[1],
                       re.DOTALL).group(1)
    signature = re.search(r'extern "C" __global__ void my_kernel\((.*?)\)', source, re.DOTALL).group(1)
    params = [" ".join(p.split()) for p in signature.split(",")]
    assert [p for p in params if "*" not in p] == ["float alpha", "long long n"]
    assert "args=[x, y, self.alpha, n]" in fmt


@pytest.mark.parametrize("backend", ["triton", "cpp"])
def test_other_backends_do_not_get_the_cuda_launcher(backend):
    system = _flat(render_request(request(backend)).system)
    assert "_fast_kernel" not in system


# ------------------------------------------------------------------------------------------------------
# the repair hints (user message of a cuda repair)
# ------------------------------------------------------------------------------------------------------
def test_repair_hints_name_the_launcher_errors_and_the_slow_build():
    failed = CUDA_NVRTC.replace("int n)", "float slope, int n)")
    prompt = render_request(request(repair=1, failed_code=failed, feedback=WRONG_RESULT))
    assert prompt.kind == "repair"
    user = _flat(prompt.user)
    assert "> " + WRONG_RESULT.splitlines()[1] in prompt.user                       # the evaluator's reason
    assert "a pointer parameter needs a CUDA tensor" in user
    assert "an `int` parameter refuses values of 2**31 and more" in user
    assert "rewrite it in the fast form above" in user
    assert "(`int`, `float`)" not in user and "NVRTC scalar mismatch" not in user


# ------------------------------------------------------------------------------------------------------
# over the wire: the messages the model really receives
# ------------------------------------------------------------------------------------------------------
def test_format_and_hints_reach_the_model(scripted_coder, openai_server):
    coder = scripted_coder(reply_with(CUDA_NVRTC), reply_with(CUDA_NVRTC))
    coder.propose(request())
    coder.propose(request(repair=1, failed_code=CUDA_NVRTC, feedback=WRONG_RESULT))
    generate, repair = openai_server.chat_requests
    for sent in (generate, repair):
        assert "packed by the type its kernel parameter declares" in _flat(sent.messages[0]["content"])
    assert "a pointer parameter needs a CUDA tensor" not in _flat(generate.messages[1]["content"])
    assert "a pointer parameter needs a CUDA tensor" in _flat(repair.messages[1]["content"])


# ------------------------------------------------------------------------------------------------------
# the claims are true of the installed torch
# ------------------------------------------------------------------------------------------------------
class _RecordingDriver:
    """Stands in for libcuda: records the bytes each kernel argument pointer points at."""

    def __init__(self, sizes: list[int]):
        self.sizes = sizes
        self.args: list[bytes] = []

    def cuLaunchKernel(self, func, gx, gy, gz, bx, by, bz, shared, stream, c_args_array, extra):  # noqa: N802
        for i, size in enumerate(self.sizes):
            self.args.append(ctypes.string_at(c_args_array[i], size))
        return 0


class _Stream:
    _as_parameter_ = ctypes.c_void_p(0)


def test_torch_launcher_passes_float_as_double_and_int_as_int32(monkeypatch):
    cuda_utils = pytest.importorskip("torch.cuda._utils")
    if not hasattr(cuda_utils, "_CudaKernel"):
        pytest.skip("this torch has no NVRTC launcher")
    driver = _RecordingDriver([8, 4, 4])
    monkeypatch.setattr(cuda_utils, "_get_gpu_runtime_library", lambda: driver)
    kernel = cuda_utils._CudaKernel(ctypes.c_void_p(0), ctypes.c_void_p(0))
    kernel(grid=(1, 1, 1), block=(1, 1, 1), args=[0.01, 4096, 2**31 + 5], stream=_Stream())
    as_double, as_int, wrapped = driver.args
    assert struct.unpack("<d", as_double)[0] == 0.01                  # a Python float arrives as a double
    assert struct.unpack("<i", as_int)[0] == 4096                     # a Python int as a 32-bit int
    assert struct.unpack("<i", wrapped)[0] == -(2**31) + 5            # ... and wraps silently past 2**31
    # what a kernel declaring `float` reads from that double: the numbers the prompt quotes
    assert struct.unpack("<f", struct.pack("<d", 0.01)[:4])[0] == pytest.approx(89128.96, rel=1e-6)
    assert struct.unpack("<f", struct.pack("<d", 0.1)[:4])[0] == pytest.approx(-1.588e-23, rel=1e-3)
    for round_value in (0.5, 1.0, 2.0):
        assert struct.unpack("<f", struct.pack("<d", round_value)[:4])[0] == 0.0


def test_torch_launcher_refuses_numpy_scalars(monkeypatch):
    np = pytest.importorskip("numpy")
    cuda_utils = pytest.importorskip("torch.cuda._utils")
    if not hasattr(cuda_utils, "_CudaKernel"):
        pytest.skip("this torch has no NVRTC launcher")
    monkeypatch.setattr(cuda_utils, "_get_gpu_runtime_library", lambda: _RecordingDriver([]))
    kernel = cuda_utils._CudaKernel(ctypes.c_void_p(0), ctypes.c_void_p(0))
    with pytest.raises(TypeError):
        kernel(grid=(1, 1, 1), block=(1, 1, 1), args=[np.float32(0.5)], stream=_Stream())
