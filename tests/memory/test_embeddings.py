"""The shipped embedding model: loaded from the package folder, never from the network, registered with Chroma."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
from conftest import subprocess_env

from htam_agent.memory.embeddings import EMBEDDING_FUNCTION_NAME, HTAMEmbeddingFunction, embed, model_path


def test_embeddings_are_unit_vectors_of_the_model(embedding_model):
    v = embed(["shared memory tiling", "warp shuffle reduction", "shared-memory tiles for GEMM"])
    assert v.shape == (3, 384)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-4)
    assert v[0] @ v[2] > v[0] @ v[1]  # it is a real sentence model


def test_registered_by_name_and_rebuilt_from_its_config():
    from chromadb.utils.embedding_functions import known_embedding_functions

    assert known_embedding_functions[EMBEDDING_FUNCTION_NAME] is HTAMEmbeddingFunction
    ef = HTAMEmbeddingFunction()
    again = HTAMEmbeddingFunction.build_from_config(ef.get_config())
    assert again.get_config() == ef.get_config() and not ef.is_legacy()
    assert model_path().joinpath("model.safetensors").is_file()


def test_model_loads_and_embeds_with_the_network_cut_off():
    code = """
import socket
def refuse(*a, **k):
    raise OSError("network access attempted")
socket.socket.connect = refuse
socket.create_connection = refuse
from htam_agent.memory.embeddings import embed
print(embed(["offline"]).shape)
"""
    env = subprocess_env()
    env.pop("HF_HUB_OFFLINE", None)  # the module must switch the hub off by itself
    env.pop("TRANSFORMERS_OFFLINE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert out.stdout.strip().endswith("(1, 384)")
