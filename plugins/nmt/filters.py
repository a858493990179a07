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

from pydantic import Field

from bitextforge import Filter

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

    class Config(Filter.Config):
        """Options of nmt_logprob.v1."""

        model: str = Field(description="Model that translates the ``reads`` side into the other "
                           "side: a local directory (e.g. from train-nmt) or a cached hub id.")
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
        batch_size: int = Field(32, ge=1, description="Pairs per batch.")
        max_length: int = Field(256, ge=8, description="Tokens kept of each side.")

    @classmethod
    def input_paths(cls, config):
        """The model directories (hub ids are not paths)."""
        return {"model": _local_model(config.model),
                "reverse_model": _local_model(config.reverse_model)
                if config.reverse_model else None}

    def __init__(self, config=None):
        """Load the model(s) once for the run."""
        super().__init__(config)
        from .backends import make_backend

        c = self.config
        kw = dict(threads=c.threads, batch_size=c.batch_size, compute_type=c.compute_type)
        self.forward = make_backend(c.backend, c.model, option=f"{self.name} model", **kw)
        self.backward = (make_backend(c.backend, c.reverse_model,
                                      option=f"{self.name} reverse_model", **kw)
                         if c.reverse_model else None)

    def score(self, batch):
        """One score per row (see the class docstring)."""
        c = self.config
        src = ["" if t is None else t for t in batch[c.reads]]
        tgt = ["" if t is None else t for t in batch["tgt" if c.reads == "src" else "src"]]
        fwd = self.forward.score(src, tgt, c.max_length)
        if self.backward is None:
            return fwd
        return dual_cross_entropy(fwd, self.backward.score(tgt, src, c.max_length))

    def manifest_info(self):
        """The models' facts."""
        info = {"model": self.forward.info()}
        if self.backward is not None:
            info["reverse_model"] = self.backward.info()
        return info

    def close(self):
        """Release the models."""
        for be in (self.forward, self.backward):
            if be is not None:
                be.close()
