"""``nmt_model.v1``: the Marian training of ``bitextforge train-nmt`` as a trainer for a recipe's
``prepare:`` list, so a back-translation (Wieting et al. 2017; ParaNMT-50M) or round-trip (BET)
recipe can build its own models offline on first run."""

from __future__ import annotations

import sys

from pydantic import Field

from bitextforge import Trainer


class NmtModelTrainer(Trainer):
    """Train a small Marian model from scratch on a parallel corpus (joint sentencepiece
    vocabulary, token-bucketed batches, budget learning-rate schedule) and save a normal Hugging
    Face model directory; options and defaults are those of ``bitextforge train-nmt``
    (docs/nmt.md)."""

    name = "nmt_model.v1"

    class Config(Trainer.Config):
        """Options of nmt_model.v1."""

        src_train: str = Field(description="Source side of the training corpus (.gz ok).")
        tgt_train: str = Field(description="Target side, line-aligned.")
        src_lang: str = Field(description="Source language code, e.g. de.")
        tgt_lang: str = Field(description="Target language code, e.g. en.")
        valid_src: str | None = Field(None, description="Validation source (the best checkpoint "
                                      "by validation loss is kept).")
        valid_tgt: str | None = Field(None, description="Validation target.")
        tests: list[tuple[str, str]] = Field(default_factory=list, description="[source, "
                                             "reference] files scored with sacrebleu after "
                                             "training (greedy and beam).")
        minutes: float = Field(45.0, gt=0, description="Training time budget.")
        max_steps: int = Field(0, ge=0, description="Stop after this many updates (0: no limit).")
        spm: str | None = Field(None, description="Reuse this joint sentencepiece .model (e.g. "
                                "joint.model of the reverse direction).")
        vocab_size: int = Field(8000, ge=50, description="Joint sentencepiece vocabulary.")
        d_model: int = Field(256, ge=8, description="Model width.")
        layers: int = Field(3, ge=1, description="Encoder and decoder layers each.")
        heads: int = Field(4, ge=1, description="Attention heads.")
        ffn_dim: int = Field(1024, ge=8, description="Feed-forward width.")
        dropout: float = Field(0.1, ge=0, lt=1, description="Dropout.")
        batch_tokens: int = Field(3000, ge=16, description="Tokens per batch (padded).")
        lr: float = Field(1e-3, gt=0, description="Peak learning rate.")
        schedule: str = Field("budget", pattern="^(budget|inverse-sqrt)$",
                              description="budget: warm-up over warmup_fraction of the budget, "
                                          "linear decay to zero at its end; inverse-sqrt.")
        warmup_fraction: float = Field(0.08, gt=0, lt=1, description="budget schedule: share "
                                       "of the budget spent warming up.")
        warmup: int = Field(1000, ge=1, description="inverse-sqrt schedule: warm-up updates.")
        beam: int = Field(4, ge=1, description="Beam for the test BLEU (greedy is also run).")
        threads: int = Field(2, ge=1, description="torch threads.")
        seed: int = Field(1, description="Random seed.")

    def train(self):
        """Train, keep the best checkpoint, evaluate on the tests."""
        from .train import TrainOptions, train

        c = self.config
        if bool(c.valid_src) != bool(c.valid_tgt):
            from bitextforge import InputError

            raise InputError("nmt_model.v1: give both valid_src and valid_tgt, or neither")
        opts = TrainOptions(
            src_train=c.src_train, tgt_train=c.tgt_train, src_lang=c.src_lang,
            tgt_lang=c.tgt_lang, output=c.output, valid_src=c.valid_src, valid_tgt=c.valid_tgt,
            tests=[tuple(t) for t in c.tests], minutes=c.minutes, max_steps=c.max_steps,
            spm_model=c.spm, vocab_size=c.vocab_size, d_model=c.d_model, layers=c.layers,
            heads=c.heads, ffn_dim=c.ffn_dim, dropout=c.dropout, batch_tokens=c.batch_tokens,
            lr=c.lr, schedule=c.schedule, warmup_fraction=c.warmup_fraction, warmup=c.warmup,
            beam=c.beam, seed=c.seed, threads=c.threads,
            log=lambda m: print(m, file=sys.stderr, flush=True))
        info = train(opts)
        return {k: info[k] for k in ("parameters", "steps", "train_minutes", "tests")
                if k in info}
