"""FX tracing from several threads at once (the bench's parallel lanes) gives every thread its own graph."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from htam_agent.bundled_tasks import SUITE_DIR
from htam_agent.coder.exemplar.patterns import recognize
from htam_agent.nodes.analyze import classify, reference_ops

TASKS = ["fused_gemm_bias_gelu", "norm_softmax", "fused_conv2d_bias_relu", "matmul_batched", "model_mlp"]


def _once(stem: str) -> tuple[str, str]:
    src = (SUITE_DIR / f"{stem}.py").read_text()
    ops = reference_ops(src, str(SUITE_DIR / f"{stem}.py"))
    try:
        family = recognize(src, stem).family
    except Exception as exc:  # noqa: BLE001 - unsupported is fine; a tracing race is not
        assert "not installed as a submodule" not in str(exc), exc
        family = "unsupported"
    return classify(ops), family


def test_concurrent_tracing_matches_serial_tracing() -> None:
    serial = {stem: _once(stem) for stem in TASKS}
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(_once, TASKS * 6))
    assert parallel == [serial[s] for s in TASKS * 6]


def test_embeddings_while_tracing_in_another_thread() -> None:
    from htam_agent.memory.embeddings import embed

    texts = [f"softmax over rows, step {i}" for i in range(8)]
    want = embed(texts)
    with ThreadPoolExecutor(3) as pool:
        traced = [pool.submit(_once, s) for s in TASKS * 3]
        vecs = [pool.submit(embed, texts) for _ in range(6)]
        for f in traced:
            f.result()
        for f in vecs:
            assert abs(f.result() - want).max() < 1e-5
