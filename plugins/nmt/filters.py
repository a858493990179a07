"""NMT scores of a sentence pair: the teacher-forced log-probability of one side given the other
under a translation model, and with a model of each direction the dual conditional cross-entropy
of Junczys-Dowmunt (2018), "Dual Conditional Cross-Entropy Filtering of Noisy Parallel Corpora"
(WMT18 parallel corpus filtering, the best system of that task).

A user's own Hugging Face seq2seq model works as well as the ones ``train-nmt`` writes
(``recipes/models-deen.yaml`` trains a de-en pair); decoding is the CTranslate2 ``score_batch``
or a transformers forward pass, the two agree to float precision.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from bitextforge import ComponentError, Filter
from bitextforge.api import device_field

from .paraphrasers import _local_model


def dual_cross_entropy(fwd: list[float], bwd: list[float]) -> list[float]:
    """Junczys-Dowmunt (2018)'s score ``exp(-(|H_f - H_b| + (H_f + H_b) / 2))`` from the mean
    log-probabilities per token of each direction (the cross-entropies H are their negations)."""
    return [math.exp(-(abs(f - b) + (-f - b) / 2)) for f, b in zip(fwd, bwd)]


class NmtLogprobFilter(Filter):
    """Mean log-probability per token of one side given the other under an NMT model (<= 0,
    higher = a likelier translation); with ``reverse_model`` the dual conditional cross-entropy
    ``exp(-(|H_f - H_b| + (H_f + H_b) / 2))`` of Junczys-Dowmunt (2018), in (0, 1], where H_f and
    H_b are the per-token cross-entropies of each direction."""

    name = "nmt_logprob.v1"
    extra = "nmt"

    class Config(Filter.Config):
        """Options of nmt_logprob.v1."""

        model: str | list[str] = Field(
            description="Model that translates the ``reads`` side into the other side: a local "
            "directory (e.g. from train-nmt) or a cached hub id. A list of n models is "
            "cross-fitted scoring: the row with id i is scored by the (i % n)-th, the model that "
            "train-nmt trained with folds: n, fold: i % n and so never saw that row's line (for "
            "models trained on the scored corpus itself, such as in-domain adaptation on a QE "
            "training split).")
        reverse_model: str | None = Field(None, description="Model of the opposite direction: "
                                          "with it the score is the dual conditional "
                                          "cross-entropy.")
        reads: Literal["src", "tgt"] = Field("src", description="The side ``model`` translates "
                                             "from (src: scores P(tgt | src)).")
        backend: Literal["ctranslate2", "transformers"] = Field(
            "ctranslate2", description="ctranslate2 (score_batch on a cached conversion) or "
                                       "transformers (a forward pass).")
        compute_type: str = Field("float32", description="ctranslate2 weight type.")
        threads: int = Field(0, ge=0, description="CPU threads (0: all).")
        device: str = device_field("the model")
        batch_size: int = Field(32, ge=1, description="Pairs per batch.")
        max_length: int = Field(256, ge=8, description="Tokens kept of each side.")

        @model_validator(mode="after")
        def _cross_fit_alone(self):
            if isinstance(self.model, list):
                if not self.model:
                    raise ValueError("model: an empty list; give a model or a list of them")
                if self.reverse_model:
                    raise ValueError("cross-fitted scoring (a list of models) takes no "
                                     "reverse_model")
            return self

    @classmethod
    def cache_key_columns(cls, config):
        """Cross-fitted scoring (a list of models) picks each row's model by its id."""
        return ("id",) if isinstance(config.model, list) else ()

    @classmethod
    def input_paths(cls, config):
        """The model directories (hub ids are not paths)."""
        if isinstance(config.model, list):
            paths = {f"model[{i}]": _local_model(m) for i, m in enumerate(config.model)}
        else:
            paths = {"model": _local_model(config.model)}
        paths["reverse_model"] = (_local_model(config.reverse_model)
                                  if config.reverse_model else None)
        return paths

    def __init__(self, config=None):
        """Load the model(s) once for the run."""
        super().__init__(config)
        from .backends import backend_device, make_backend

        c = self.config
        kw = dict(threads=c.threads, batch_size=c.batch_size, compute_type=c.compute_type,
                  device=backend_device(c.backend, c.device, self.name))
        many = isinstance(c.model, list)
        self.forwards = [make_backend(c.backend, m, **kw,
                                      option=f"{self.name} model" + (f"[{i}]" if many else ""))
                         for i, m in enumerate(c.model if many else [c.model])]
        self.backward = (make_backend(c.backend, c.reverse_model,
                                      option=f"{self.name} reverse_model", **kw)
                         if c.reverse_model else None)

    def score(self, batch):
        """One score per row (see the class docstring)."""
        c = self.config
        src = ["" if t is None else t for t in batch[c.reads]]
        tgt = ["" if t is None else t for t in batch["tgt" if c.reads == "src" else "src"]]
        if len(self.forwards) > 1:
            if "id" not in batch:
                raise ComponentError(f"{self.name}: cross-fitted scoring (a list of models) "
                                     f"needs each row's id; this batch has none")
            return self._cross_fitted(batch["id"], src, tgt)
        fwd = self.forwards[0].score(src, tgt, c.max_length)
        if self.backward is None:
            return fwd
        return dual_cross_entropy(fwd, self.backward.score(tgt, src, c.max_length))

    def _cross_fitted(self, ids, src, tgt) -> list[float]:
        """Each row scored by the model of its fold (row id modulo the number of models)."""
        n = len(self.forwards)
        out = [0.0] * len(src)
        for k, backend in enumerate(self.forwards):
            rows = [r for r, i in enumerate(ids) if int(i) % n == k]
            if rows:
                scores = backend.score([src[r] for r in rows], [tgt[r] for r in rows],
                                       self.config.max_length)
                for r, v in zip(rows, scores):
                    out[r] = v
        return out

    def manifest_info(self):
        """The models' facts."""
        info = ({"models": [be.info() for be in self.forwards]}
                if isinstance(self.config.model, list) else {"model": self.forwards[0].info()})
        if self.backward is not None:
            info["reverse_model"] = self.backward.info()
        return info

    def close(self):
        """Release the models."""
        for be in (*self.forwards, self.backward):
            if be is not None:
                be.close()
