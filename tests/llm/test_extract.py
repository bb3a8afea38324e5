"""Code extraction from LLM replies: block choice, merging, bare code, prose, wrong backend, truncation."""

from __future__ import annotations

import ast

from llm_samples import CPP, CUDA_INLINE, CUDA_NVRTC, TRITON, fenced, reply_with

from htam_agent.coder.extract import extract_code, fenced_blocks, strip_reasoning


def test_one_block_is_the_candidate():
    result = extract_code(reply_with(CUDA_NVRTC), "cuda")
    assert result.ok, result.reason
    assert result.code == CUDA_NVRTC
    assert result.backend == "cuda"
    assert result.blocks == 1


def test_each_backend_accepts_its_own_candidate_and_rejects_the_others():
    samples = {"cuda": CUDA_INLINE, "triton": TRITON, "cpp": CPP}
    for requested in samples:
        for written, code in samples.items():
            result = extract_code(reply_with(code), requested)
            if requested == written:
                assert result.ok and result.code == code, (requested, result.reason)
            else:
                assert result.code is None, (requested, written)
                assert "wrong backend" in result.reason
                assert f"{written} candidate" in result.reason and f"{requested} was requested" in result.reason
                assert result.backend == written


def test_the_block_defining_modelnew_is_picked_among_several():
    reply = ("First a shell command:\n" + fenced("pip install torch", "bash") + "\nthen a usage example:\n"
             + fenced("model = ModelNew(0.01)\ny = model(x)") + "\nand the candidate:\n" + fenced(TRITON)
             + "\nTest with:\n" + fenced("python bench.py", "sh"))
    result = extract_code(reply, "triton")
    assert result.ok, result.reason
    assert result.code == TRITON
    assert result.blocks == 4
    assert "block 3 of 4" in result.reason


def test_the_last_of_two_modelnew_blocks_wins():
    first = TRITON.replace("BLOCK = 4096", "BLOCK = 1024")
    reply = "Draft:\n" + fenced(first) + "\nOn reflection a larger block is better:\n" + fenced(TRITON)
    result = extract_code(reply, "triton")
    assert result.ok and result.code == TRITON
    assert "last that parses of 2" in result.reason


def test_a_truncated_last_block_loses_to_an_earlier_complete_one():
    cut = TRITON[: len(TRITON) // 2 + 40]
    reply = fenced(TRITON) + "\nAn improved version:\n```python\n" + cut  # cut off by max_tokens
    result = extract_code(reply, "triton")
    assert result.ok and result.code == TRITON


def test_a_truncated_only_block_is_refused_with_the_parse_error():
    cut = CUDA_NVRTC[: len(CUDA_NVRTC) - 200]
    result = extract_code("```python\n" + cut, "cuda")
    assert result.code is None
    assert "does not parse" in result.reason and "line" in result.reason


def test_a_separate_cuda_source_block_is_merged_when_clearly_needed():
    kernel = CUDA_INLINE.split('_CUDA_SOURCE = r"""')[1].split('"""')[0]
    python = CUDA_INLINE.replace('_CUDA_SOURCE = r"""' + kernel + '"""\n', "")
    assert "_CUDA_SOURCE =" not in python and "cuda_sources=_CUDA_SOURCE" in python
    reply = "The kernel:\n" + fenced(kernel, "cuda") + "\nThe module:\n" + fenced(python)
    result = extract_code(reply, "cuda")
    assert result.ok, result.reason
    assert "merged 1 separate source block(s) as _CUDA_SOURCE" in result.reason
    namespace: dict = {}
    tree = ast.parse(result.code)
    assign = next(n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "_CUDA_SOURCE")
    exec(compile(ast.Module([assign], []), "<merged>", "exec"), namespace)
    assert namespace["_CUDA_SOURCE"].strip() == kernel.strip()


def test_an_ambiguous_merge_is_refused():
    kernel = CUDA_INLINE.split('_CUDA_SOURCE = r"""')[1].split('"""')[0]
    python = CUDA_INLINE.replace('_CUDA_SOURCE = r"""' + kernel + '"""\n', "")
    reply = fenced(kernel, "cuda") + "\nor, alternatively:\n" + fenced(kernel, "cuda") + "\n" + fenced(python)
    result = extract_code(reply, "cuda")
    assert result.code is None
    assert "_CUDA_SOURCE" in result.reason and "2 separate source block(s)" in result.reason


def test_no_merge_when_the_python_block_is_self_contained():
    reply = fenced("__global__ void unrelated() {}", "cuda") + "\n" + fenced(CUDA_INLINE)
    result = extract_code(reply, "cuda")
    assert result.ok and result.code == CUDA_INLINE
    assert "merged" not in result.reason


def test_bare_code_without_a_fence_is_accepted():
    reply = "Here is the implementation:\n\n" + CPP + "\nIt uses OpenMP."
    result = extract_code(reply, "cpp")
    assert result.ok, result.reason
    assert result.code.strip() == CPP.strip()
    assert result.blocks == 0 and "bare code" in result.reason


def test_prose_only_gives_no_code():
    result = extract_code("I would use vectorized loads and a grid-stride loop; ModelNew should be fast.", "cuda")
    assert result.code is None
    assert "no code" in result.reason


def test_blocks_without_modelnew_give_no_code():
    result = extract_code(fenced("def helper():\n    return 1") + "\n" + fenced("x = 2"), "cuda")
    assert result.code is None
    assert "none of the reply's 2 code block(s) defines class ModelNew" == result.reason


def test_code_without_any_kernel_is_refused():
    plain = "import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n    def forward(self, x):\n        return torch.relu(x)\n"
    result = extract_code(fenced(plain), "cuda")
    assert result.code is None
    assert "has no cuda kernel" in result.reason and "__global__" in result.reason


def test_reasoning_is_ignored():
    reply = "<think>maybe\n" + fenced(TRITON) + "\nno, CUDA is required</think>\n" + reply_with(CUDA_NVRTC)
    assert "<think>" not in strip_reasoning(reply)
    result = extract_code(reply, "cuda")
    assert result.ok and result.code == CUDA_NVRTC
    only_thinking = extract_code("<think>" + fenced(CUDA_NVRTC) + " and then I ran out of tokens", "cuda")
    assert only_thinking.code is None and "only reasoning" in only_thinking.reason


def test_fences_with_tildes_longer_backticks_and_indentation():
    blocks = fenced_blocks("~~~py\nclass ModelNew: pass\n~~~\n  ````python\n  a = '```'\n  ````\n")
    assert [b.lang for b in blocks] == ["py", "python"]
    assert blocks[0].code == "class ModelNew: pass\n"
    assert blocks[1].code == "a = '```'\n" and blocks[1].closed


def test_a_separate_kernel_block_of_the_fast_form_is_merged():
    from pathlib import Path

    fast = (Path(__file__).resolve().parents[2] / "htam_agent" / "bundled_tasks" / "candidates" / "reduction_row_sum"
            / "cuda_fast_warp.py").read_text()
    kernel = fast.split('_SOURCE = r"""')[1].split('"""')[0]
    python = fast.replace('_SOURCE = r"""' + kernel + '"""\n', "")
    assert "_SOURCE =" not in python and '_fast_kernel(_SOURCE, "row_sum_warp")' in python
    result = extract_code("The kernel:\n" + fenced(kernel, "cuda") + "\nThe module:\n" + fenced(python), "cuda")
    assert result.ok, result.reason
    assert "merged 1 separate source block(s) as _SOURCE" in result.reason
