"""A human quality score predicted from one sentence's embedding (``sentence_regressor.v1`` and
its trainer ``sentence_regressor_model.v1``).

Sentence-level quality estimation (Specia et al. 2020, *Findings of the WMT 2020 Shared Task on
Quality Estimation*; data: Fomicheva et al. 2022, *MLQE-PE*) predicts a human score of a
translation without a reference. Some of what makes a translation poor is in the source alone:
long, rare, technical or badly formed sentences are translated worse, which is why the QuEst
baseline features (Specia et al. 2013) include source complexity beside adequacy and fluency.
This regressor learns that part from the data: a ridge regression (scikit-learn) from a
sentence-transformers embedding (Reimers & Gurevych 2019; default the packaged all-MiniLM-L6-v2)
of one column to the human score, fitted on the labelled rows of a training split. Its output is
one more score for ``score_correlation.v1`` / ``combine_model.v1 task: regress`` to combine with
the pair's adequacy scores (IBM-1, NMT log-probability, coverage), i.e. stacking.

Stacking needs the training rows scored the way unseen rows are: a model that saw a row's label
would score it too well, and the combining regression would trust the score too much. So the
trainer cross-fits (``folds: n``): model k is fitted on the training rows whose data line index i
has ``i % n != k``, and the filter scores the row with id i by model ``i % n``; a recipe that reads
the same file with ``header: true`` gives each line that id, so no training row is scored by a
model that saw it (the model file keeps each training row's index with a fingerprint of its text,
so a row of another corpus that happens to have the same id is not taken for it). Every other row
(a dev or test row, or any row of another corpus) gets the mean of the fold models' predictions,
which uses every training row. The model file is JSON (means, scales, coefficients per fold): scoring is a
NumPy dot product with nothing pickled to trust.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field

from bitextforge import ComponentError, Filter, InputError, Trainer
from bitextforge.api import ComponentConfig
from bitextforge.api import Precision, device_field

from ._common import column_texts

MODEL_FORMAT = "bitextforge-sentence-regressor"
#: ridge strengths tried by RidgeCV: standardised 384-dimensional embeddings of a few thousand
#: noisy labels need far stronger shrinkage than the handful of scores combine_model.v1 fits
ALPHAS = (0.1, 1e6, 29)


class EncoderOptions(ComponentConfig):
    """How the trainer and the filter run the sentence encoder (the same options for both, so a
    model is applied as it was fitted)."""

    precision: Precision = Field(
        "auto", description="Encoder precision: fp32, bf16 autocast, or auto (bf16 only where "
                            "the CPU has native bfloat16).")
    batch_size: int = Field(64, ge=1, description="Sentences per forward pass.")
    threads: int | None = Field(None, ge=1, description="CPU threads; empty: torch's default.")
    device: str = device_field("the sentence encoder")


def _alphas():
    import numpy as np

    lo, hi, n = ALPHAS
    return np.logspace(np.log10(lo), np.log10(hi), n)


class SentenceRegressorTrainer(Trainer):
    """Fits ``sentence_regressor.v1``'s model: a ridge regression from the sentence embedding of
    one text column of a TSV with a header to a numeric human score column (e.g. MLQE-PE's
    ``en_source`` to ``da_z_mean``, ``where: {split: [train]}``), cross-fitted over ``folds``
    (see the module docstring), with the out-of-fold Pearson's r of the training rows reported.
    """

    name = "sentence_regressor_model.v1"
    run_options = frozenset({"batch_size"})
    extra = "embeddings"

    class Config(EncoderOptions, Trainer.Config):
        """Options of sentence_regressor_model.v1."""

        data: str = Field(description="TSV with a header line (.gz ok) holding the text column "
                          "and the human score column.")
        text: str = Field(description="Column of data whose sentences are embedded (for "
                          "quality estimation: the source sentence).")
        label: str = Field(description="Column of data with the numeric human score.")
        where: dict[str, list[str]] = Field(default_factory=dict, description="Only rows whose "
                                            "column has one of these values, e.g. {split: "
                                            "[train]}.")
        folds: int = Field(5, ge=1, description="Cross-fitting: model k is fitted on the rows "
                           "whose data line index i has i % folds != k; 1: one model on every "
                           "row (nothing to stack on the training rows).")
        encoder: str | None = Field(None, description="Local sentence-transformers directory or "
                                    "cached hub id; empty: packaged all-MiniLM-L6-v2.")

    @classmethod
    def input_paths(cls, config):
        """The labelled TSV."""
        return {"data": config.data}

    def train(self):
        """Read, embed, fit one ridge per fold, write the JSON model."""
        from bitextforge.plugins.combine import ridge_regression

        c = self.config
        index, rows, y = read_labelled_rows(self, [c.text])
        texts = [r[0] for r in rows]
        X, device = embed(texts, c.encoder, c.precision, c.batch_size, c.threads, self, c.device)
        fits, r = cross_fit(X, y, index, c.folds, lambda X, y: ridge_regression(
            alphas=_alphas()).fit(X, y), lambda m, X: m.predict(X))
        models = [{"mean": m[0].mean_.tolist(), "scale": m[0].scale_.tolist(),
                   "coef": m[1].coef_.tolist(), "intercept": float(m[1].intercept_),
                   "alpha": float(m[1].alpha_), "rows": rows_k} for m, rows_k in fits]
        data = {"format": MODEL_FORMAT, "version": 1, "encoder": c.encoder,
                "dim": int(X.shape[1]), "folds": c.folds, "models": models,
                "cv_pearson": r, "rows": len(y),
                # rows scored by their own fold (line index and text must both match, so another
                # corpus's rows are never mistaken for training rows); the rest by the mean
                "trained": ({str(i): text_key(t) for i, t in zip(index, texts)}
                            if c.folds > 1 else {}),
                "trained_on": {"data": c.data, "text": c.text, "label": c.label,
                               "where": dict(c.where)}}
        out = Path(c.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data) + "\n", encoding="utf-8")
        return {"rows": len(y), "folds": c.folds, "dim": int(X.shape[1]), "device": device,
                "cross_fitted_pearson": round(r, 4),
                "alpha": [round(m["alpha"], 1) for m in models]}


def read_labelled_rows(trainer, columns: list[str]):
    """The rows of ``trainer.config.data`` that match its ``where``: their line indices (the
    cross-fitting folds go by them), the values of ``columns``, and the numeric label as an
    array; an error naming the file when too few rows are left for ``folds``."""
    import numpy as np

    from bitextforge.plugins.combine import iter_tsv_records, quality_score

    c = trainer.config
    index, rows, y = [], [], []
    for i, lineno, values in iter_tsv_records(c.data, [*columns, c.label], c.where):
        index.append(i)
        rows.append(values[:-1])
        y.append(quality_score(values[-1], c.data, lineno, c.label))
    if len(y) < max(10, 2 * c.folds):
        raise InputError(f"{trainer.name}: {len(y)} rows of {c.data} match where {c.where}; "
                         f"fitting {c.folds} fold(s) needs at least {max(10, 2 * c.folds)}")
    return index, rows, np.array(y)


def cross_fit(X, y, index, folds: int, fit, predict):
    """Cross-fitting (module docstring): for k in 0..folds-1, ``fit(X, y)`` on the rows whose
    line index i has ``i % folds != k`` (every row when folds is 1). Returns each fold's
    ``(model, rows it was fitted on)`` and the Pearson's r of the out-of-fold predictions
    ``predict(model, X)`` with ``y`` (NaN with one fold, or where either is constant)."""
    import numpy as np
    from scipy.stats import pearsonr

    fold = np.array(index) % folds
    fits, oof = [], np.full(len(y), np.nan)
    for k in range(folds):
        rows = fold != k if folds > 1 else np.ones(len(y), dtype=bool)
        m = fit(X[rows], y[rows])
        fits.append((m, int(rows.sum())))
        if folds > 1 and (fold == k).any():  # a split aligned with the folds empties one
            oof[fold == k] = predict(m, X[fold == k])
    r = (float(pearsonr(oof, y)[0]) if folds > 1 and np.ptp(oof) > 0 and np.ptp(y) > 0
         else float("nan"))
    return fits, r


def text_key(text: str) -> str:
    """A short fingerprint of a training row's text, to recognise the row when it is scored."""
    import hashlib

    return hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()


def embed(texts: list[str], encoder: str | None, precision: str, batch_size: int,
          threads: int | None, owner, device: str = "auto"):
    """Embeddings of ``texts`` (each distinct sentence once) behind ``owner``'s progress bar,
    and the device that computed them."""
    from .embeddings import SentenceEncoder

    enc = SentenceEncoder(encoder, precision, batch_size, threads, who=owner.name, device=device)
    try:
        return enc.encode_rows(texts, chunk=1024, progress=owner.progress), enc.device
    finally:
        enc.close()


class CrossFitted:
    """What a filter scoring with a cross-fitted model does (module docstring): it recognises a
    training row by its id and the fingerprint of its text (``trained`` in the model file), scores
    it by the fold that left it out, and every other row by the mean of the folds. Shared by
    ``sentence_regressor.v1`` and ``embedding_qe.v1``; the filter sets ``info["trained_on"]``."""

    @classmethod
    def cache_key_columns(cls, config):
        """A training row is scored by the fold of its id: the id enters the cache key (the
        model file, declared, tells whether the model is cross-fitted at all)."""
        return ("id",)

    def read_trained(self, data: dict):
        """The training rows of a model file's ``trained`` map (id -> text fingerprint)."""
        self.trained = {int(k): v for k, v in (data.get("trained") or {}).items()}
        self.recognised = self.other_text = 0

    def check_ids(self, batch, folds: int):
        """A cross-fitted model needs the rows' ids: one clear error before any work."""
        if self.trained and "id" not in batch:
            raise ComponentError(f"{self.name}: a cross-fitted model ({folds} folds) needs each "
                                 f"row's id; this batch has none")

    def pick_folds(self, preds, batch, key_of):
        """One score per row from ``preds`` (rows x folds): a recognised training row's own fold
        (``key_of(r)``: row r's text fingerprint, asked only of rows with a training id), else
        the mean of the folds."""
        out = preds.mean(axis=1)
        if self.trained:
            n = preds.shape[1]
            ids = [int(i) for i in batch["id"]]
            claimed = [r for r, i in enumerate(ids) if i in self.trained]
            seen = [r for r in claimed if self.trained[ids[r]] == key_of(r)]
            if len(seen) < len(claimed) and not self.other_text:
                self.log(f"rows with a training row's id but another text are scored as unseen "
                         f"rows; if this corpus is {self.info['trained_on']['data']}, the "
                         f"recipe reads it differently (column or header), and the training "
                         f"rows' scores are not cross-fitted")
            self.recognised += len(seen)
            self.other_text += len(claimed) - len(seen)
            out[seen] = preds[seen, [ids[r] % n for r in seen]]
        return out

    def cross_fit_info(self) -> dict:
        """How many rows were recognised as training rows (scored by their fold) or had a
        training row's id with another text."""
        return {"training_rows_recognised": self.recognised,
                "training_ids_with_other_text": self.other_text}


class SentenceRegressorFilter(CrossFitted, Filter):
    """The human score a ``sentence_regressor_model.v1`` model predicts from the embedding of
    ``column`` (higher = better, on the scale of the label it was fitted to). A cross-fitted model
    scores a training row (id i, with the text it had in training) by its fold ``i % folds``,
    which never saw it, and every other row by the mean of the folds (module docstring)."""

    name = "sentence_regressor.v1"
    extra = "embeddings"

    class Config(EncoderOptions, Filter.Config):
        """Options of sentence_regressor.v1."""

        model: str = Field(description="JSON model written by sentence_regressor_model.v1.")
        column: str = Field("src", description="The column to embed: the one that holds what "
                            "the model's text column held (for QE, the source sentence).")

    @classmethod
    def input_paths(cls, config):
        """The model file."""
        return {"model": config.model}

    def __init__(self, config=None):
        """Read the model file and load its encoder."""
        super().__init__(config)
        import numpy as np

        from .embeddings import SentenceEncoder

        c = self.config
        path = Path(c.model)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ComponentError(f"{self.name}: model {c.model} does not exist; train one with "
                                 f"sentence_regressor_model.v1") from None
        except (OSError, ValueError) as exc:
            raise ComponentError(f"{self.name}: cannot read model {c.model}: {exc}") from None
        if not isinstance(data, dict) or data.get("format") != MODEL_FORMAT:
            raise ComponentError(f"{self.name}: {c.model} is not a sentence_regressor_model.v1 "
                                 f"model file")
        self.info = {k: data[k] for k in ("folds", "rows", "cv_pearson", "trained_on")}
        ms = data["models"]
        self.mean = np.array([m["mean"] for m in ms], dtype=np.float64)
        self.scale = np.array([m["scale"] for m in ms], dtype=np.float64)
        self.coef = np.array([m["coef"] for m in ms], dtype=np.float64)
        self.intercept = np.array([m["intercept"] for m in ms], dtype=np.float64)
        self.read_trained(data)
        self.encoder = SentenceEncoder(data.get("encoder"), c.precision, c.batch_size, c.threads,
                                       who=self.name, device=c.device)

    def score(self, batch):
        """The predicted human score of each row."""
        import numpy as np

        c = self.config
        if c.column not in batch:
            raise ComponentError(f"{self.name}: column {c.column!r} does not exist; columns are "
                                 f"{', '.join(batch)}")
        texts = column_texts(batch, c.column)
        self.check_ids(batch, len(self.coef))
        rows = self.encoder.encode_rows(texts).astype(np.float64)
        if rows.shape[1] != self.coef.shape[1]:
            raise ComponentError(f"{self.name}: the encoder gives {rows.shape[1]}-dimensional "
                                 f"embeddings; {c.model} was fitted on {self.coef.shape[1]}")
        # (rows x folds): every fold's prediction of every row
        preds = np.einsum("fij,fj->if", (rows[None] - self.mean[:, None]) / self.scale[:, None],
                          self.coef) + self.intercept
        return self.pick_folds(preds, batch, lambda r: text_key(texts[r])).tolist()

    def manifest_info(self):
        """The model's facts, the encoder's, and how many rows were recognised as training
        rows (scored by their fold) or had a training row's id with another text."""
        return {**self.info, **self.encoder.info(), **self.cross_fit_info()}

    def close(self):
        """Drop the encoder."""
        self.encoder.close()
