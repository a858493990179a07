"""The options of ``train-nmt`` (one definition for the command's flags and the ``nmt_model.v1``
trainer's Config) and what follows from them alone: the learning-rate schedule, the warm-up a
budget must reach, and the warnings about a budget too short or a loss near uniform guessing."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bitextforge.api import Precision, device_field


class TrainOptions(BaseModel):
    """Everything ``train-nmt`` can be told, with the documented 2-core defaults.

    This is the one definition of the options: the ``train-nmt`` flags and the Config of the
    ``nmt_model.v1`` trainer are both built from these fields."""

    model_config = ConfigDict(extra="forbid")

    src_train: str | None = Field(None, description="Source side of the training corpus (.gz "
                                  "ok); or give train_tsv.")
    tgt_train: str | None = Field(None, description="Target side, line-aligned.")
    train_tsv: list[str] = Field(default_factory=list, description="Training corpora as "
                                 "two-field TSV files (.gz ok), read in this order; a file named "
                                 "twice is read twice (oversampling).")
    train_limit: int | None = Field(None, gt=0, description="Read only the first N pairs of "
                                    "the training corpus (a low-resource slice of a larger "
                                    "file, e.g. 5,000 of Multi30k's 29,000).")
    train_weights: str | None = Field(None, description="Sentence weights, one number per line "
                                      "of the training corpus (the corpus.weights a run writes): "
                                      "each sentence's loss is multiplied by its weight, as "
                                      "Marian's --data-weighting-type sentence; weight 0 leaves "
                                      "the pair out, weight 2 counts it twice.")
    tsv_langs: str | None = Field(None, pattern=r"^[A-Za-z_]+-[A-Za-z_]+$", description="The "
                                  "languages of the TSV fields, e.g. de-en, so one corpus serves "
                                  "both directions (default: source first).")
    src_lang: str = Field(description="Source language code, e.g. de.")
    tgt_lang: str = Field(description="Target language code, e.g. en.")
    output: str = Field(description="Model directory to write (created).")
    valid_src: str | None = Field(None, description="Validation source (the best checkpoint by "
                                  "validation loss is kept).")
    valid_tgt: str | None = Field(None, description="Validation target.")
    tests: list[tuple[str, str]] = Field(default_factory=list, description="[source, reference] "
                                         "files scored with sacrebleu after training (greedy and "
                                         "beam).")
    minutes: float = Field(45.0, gt=0, description="Training time budget in minutes.")
    max_steps: int = Field(0, ge=0, description="Stop after this many updates (0: no limit).")
    spm: str | None = Field(None, description="Reuse this joint sentencepiece .model (e.g. "
                            "joint.model of the reverse direction) instead of training one.")
    init_model: str | None = Field(None, description="Continue training this train-nmt model "
                                   "directory of the same direction (domain adaptation: a "
                                   "general model fine-tuned on in-domain pairs); its vocabulary "
                                   "and architecture are kept, so the size options are ignored, "
                                   "and its vocabulary map is extended with the new pairs.")
    folds: int = Field(1, ge=1, description="Cross-fitting: with n > 1 folds, the training "
                       "lines i (0-based, over the corpus as read) with i % n == fold are left "
                       "out, so that each line has a model that never saw it (nmt_logprob.v1 "
                       "scores row i with the i % n-th of its models).")
    fold: int = Field(0, ge=0, description="With folds: which fold to leave out (0..folds-1).")
    detokenize: bool = Field(False, description="Moses-detokenize both sides of the training "
                             "pairs first (sacremoses), for corpora released tokenized.")
    vocab_size: int = Field(8000, ge=50, description="Joint sentencepiece vocabulary.")
    subword_alpha: float = Field(0.0, ge=0, description="Subword regularization (Kudo 2018): "
                                 "with alpha > 0 the training pairs are segmented anew every "
                                 "epoch, each sentence's segmentation sampled from the "
                                 "sentencepiece model with this smoothing (larger: closer to the "
                                 "best segmentation; Kudo uses 0.1-0.5); validation, tests and "
                                 "decoding keep the best segmentation. 0: off.")
    subword_nbest: int = Field(64, ge=-1, description="Subword regularization: sample among the "
                               "n best segmentations (-1: all of them).")
    d_model: int = Field(256, ge=8, description="Model width.")
    layers: int = Field(3, ge=1, description="Encoder and decoder layers each.")
    heads: int = Field(4, ge=1, description="Attention heads.")
    ffn_dim: int = Field(1024, ge=8, description="Feed-forward width.")
    dropout: float = Field(0.1, ge=0, lt=1, description="Dropout.")
    batch_tokens: int = Field(1500, ge=16, description="Tokens per batch (padded).")
    lr: float = Field(2e-3, gt=0, description="Peak learning rate.")
    schedule: str = Field("budget", pattern="^(budget|inverse-sqrt)$",
                          description="budget: linear warm-up over warmup_fraction of the time "
                                      "(or step) budget, then linear decay to zero at its end; "
                                      "inverse-sqrt: warmup updates, then inverse square root "
                                      "decay.")
    warmup_fraction: float = Field(0.08, gt=0, lt=1, description="budget schedule: share of the "
                                   "budget spent warming up.")
    min_warmup_steps: int = Field(300, ge=0, description="budget schedule: warm up over at least "
                                  "this many updates, however short the budget.")
    warmup: int = Field(1000, ge=1, description="inverse-sqrt schedule: warm-up updates.")
    label_smoothing: float = Field(0.1, ge=0, lt=1, description="Label smoothing.")
    max_len: int = Field(128, ge=8, description="Longest sequence in subwords (longer ones are "
                         "cut).")
    valid_every: float = Field(5.0, gt=0, description="Minutes between validations.")
    valid_every_steps: int | None = Field(
        None, ge=1, description="Updates between validations, instead of valid_every's minutes: "
        "which checkpoint is kept then does not depend on the machine's speed or load.")
    resume_every: float = Field(
        10.0, ge=0, description="Minutes between resumable states (the weights, optimizer, "
        "schedule, averaged weights, data order and random state) written to resume.pt in the "
        "output directory: started again on the same data with the same options after a kill, "
        "the training continues from the latest one, to the same model as an uninterrupted run "
        "(with subword_alpha, to a model as good: encode's docstring says why). The file is "
        "removed when the training ends. 0: none.")
    resume_every_steps: int | None = Field(
        None, ge=1, description="Updates between resumable states, instead of resume_every's "
        "minutes.")
    snapshots: bool = Field(False, description="Also save the model at every validation to "
                            "snapshots/step-N in the output directory, to measure BLEU against "
                            "training time afterwards.")
    ema: float = Field(0.0, ge=0, lt=1, description="Exponential moving average of the weights "
                       "(Marian's --exponential-smoothing): with a decay d > 0, e.g. 0.999, "
                       "validation, checkpoints and the saved model use the average, updated "
                       "after every update as avg = d * avg + (1 - d) * weights (d is "
                       "min(d, (1 + n) / (10 + n)) at update n, so the first updates do not "
                       "linger). 0: off.")
    beam: int = Field(4, ge=1, description="Beam for the test BLEU (greedy is also run).")
    test_backend: Literal["ctranslate2", "transformers"] = Field(
        "ctranslate2", description="Decoder of the test sets: ctranslate2 (float32; the same "
        "greedy output as transformers, several times faster) or transformers.")
    threads: int = Field(2, ge=1, description="torch threads.")
    device: str = device_field("the training (and the test decoding)")
    precision: Precision = Field(
        "auto", description="Arithmetic of the forward pass: bf16 autocast (weights, optimizer "
        "and loss stay fp32) or fp32; auto takes bf16 where the device computes it natively "
        "(a CPU with avx512_bf16 or amx_bf16, where it trains about 1.75x faster; a GPU of "
        "compute capability 8.0 or later) and fp32 elsewhere, where emulated bf16 would be "
        "slower.")
    seed: int = Field(1, description="Random seed.")

    @model_validator(mode="after")
    def _one_corpus(self):
        if bool(self.src_train) != bool(self.tgt_train):
            raise ValueError("give both src_train and tgt_train, or neither")
        if bool(self.src_train) == bool(self.train_tsv):
            raise ValueError("give the training corpus either as src_train and tgt_train or "
                             "as train_tsv")
        if self.tsv_langs and {self.src_lang, self.tgt_lang} != set(self.tsv_langs.split("-")):
            raise ValueError(f"tsv_langs {self.tsv_langs} does not name src_lang "
                             f"{self.src_lang} and tgt_lang {self.tgt_lang}")
        if bool(self.valid_src) != bool(self.valid_tgt):
            raise ValueError("give both valid_src and valid_tgt (--valid-src, --valid-tgt), or "
                             "neither")
        if self.fold >= self.folds:
            raise ValueError(f"fold {self.fold} is not one of the {self.folds} folds "
                             f"(0..{self.folds - 1})")
        if self.subword_alpha > 0 and self.subword_nbest in (0, 1):
            raise ValueError(f"subword_nbest {self.subword_nbest} samples nothing: give -1 (all "
                             f"segmentations) or 2 or more, or subword_alpha 0")
        return self

    def corpus_files(self) -> list[str]:
        """Every training file this run reads, to check before any work starts."""
        files = [*self.train_tsv] if self.train_tsv else [self.src_train, self.tgt_train]
        return files + ([self.train_weights] if self.train_weights else [])


def budget_lr_factor(frac: float, warmup_fraction: float, step: int = 0,
                     min_warmup_steps: int = 0) -> float:
    """Learning-rate multiplier at ``frac`` (0..1) of a fixed budget: linear warm-up over the first
    ``warmup_fraction``, then linear decay to zero at the end. A run that stops at a fixed time
    does best with a schedule that knows where it ends (Li, Yumer & Ramanan 2020, *Budgeted
    Training*); the floor of 1e-3 keeps the first and last updates from being no-ops.

    ``min_warmup_steps`` also caps the multiplier at ``(step + 1) / min_warmup_steps``: a short
    budget, or a slow machine under a time budget, would otherwise reach the peak rate within a
    few dozen updates, and such post-LN runs at peak 2e-3 stalled as language models that ignore
    their source (docs/benchmarks.md, 2026-11-23)."""
    w = min(max(warmup_fraction, 1e-6), 1 - 1e-6)
    factor = min(frac / w, (1.0 - frac) / (1.0 - w))
    if min_warmup_steps > 0:
        factor = min(factor, (step + 1) / min_warmup_steps)
    return max(factor, 1e-3)


#: a final loss above this share of uniform guessing's (ln of the vocabulary size) is "near uniform"
NEAR_UNIFORM = 0.9


def training_warnings(opts: TrainOptions, steps: int, loss: float | None,
                      vocab: int) -> list[str]:
    """What makes a finished training suspect: it stopped before its warm-up ended (the learning
    rate never reached its peak), or its loss is still near that of uniform guessing over the
    vocabulary (such a model back-translates to ".", ".." and "...")."""
    out = []
    # under the budget schedule the time share of the warm-up is always reached by the end; the
    # minimum number of warm-up updates is what a short run misses
    warm = warmup_steps(opts)
    if steps < warm:
        out.append(f"training stopped after {steps} updates, before its {warm}-update warm-up "
                   f"ended (the learning rate never reached its peak); train longer (minutes, "
                   f"max_steps) or warm up over fewer updates")
    uniform = math.log(vocab)
    if loss is not None and loss >= NEAR_UNIFORM * uniform:
        out.append(f"final training loss {loss:.2f} is near uniform guessing over the "
                   f"{vocab:,}-token vocabulary ({uniform:.2f}): the model has learnt little and "
                   f"its translations will be degenerate")
    return out


def warmup_steps(opts: TrainOptions) -> int:
    """The updates the learning rate takes to reach its peak (at least; the budget schedule's
    time share may take longer)."""
    return opts.warmup if opts.schedule == "inverse-sqrt" else opts.min_warmup_steps


def budget_warning(opts: TrainOptions, updates_per_second: float | None = None) -> str | None:
    """Why the budget cannot pass the warm-up, said before training (``max_steps`` below the
    warm-up) or once the speed is known (``minutes`` at ``updates_per_second`` reach fewer
    updates than the warm-up); None when it can."""
    warm = warmup_steps(opts)
    if opts.max_steps and opts.max_steps < warm:
        return (f"max_steps {opts.max_steps} is below the {warm}-update warm-up: the learning rate "
                f"never reaches its peak and the model stays near a language model of the target "
                f"(raise max_steps or lower min_warmup_steps / warmup)")
    if updates_per_second:
        reach = int(opts.minutes * 60 * updates_per_second)
        if reach < warm and not (opts.max_steps and opts.max_steps < reach):
            return (f"at {updates_per_second:.1f} updates/s, {opts.minutes:g} minutes give about "
                    f"{reach:,} updates, fewer than the {warm}-update warm-up (raise minutes or "
                    f"lower min_warmup_steps / warmup)")
    return None


def time_to_go(steps: int, seconds: float, steps_left: int | None, budget_left: float) -> str:
    """", about N min to go" for the step log: the update budget left at the rate of this
    process's ``steps`` in ``seconds`` (an ETA for runs of hours), or the time budget left if that
    ends the run first; empty before 50 updates, when the rate is not yet known."""
    if steps < 50 or seconds <= 0:
        return ""
    left = budget_left
    if steps_left is not None:
        left = min(left, steps_left * seconds / steps)
    left = max(left, 0.0)
    return f", about {left / 60:.0f} min to go" if left >= 60 else f", about {left:.0f} s to go"


def option_paths(opts: TrainOptions) -> dict[str, str | None]:
    """Every file a training reads, by option name: corpora, validation and test files, a reused
    sentencepiece model."""
    out = {"src_train": opts.src_train, "tgt_train": opts.tgt_train,
           "valid_src": opts.valid_src, "valid_tgt": opts.valid_tgt, "spm": opts.spm,
           "init_model": opts.init_model}
    out.update({f"train_tsv[{i}]": p for i, p in enumerate(opts.train_tsv)})
    for i, (src, ref) in enumerate(opts.tests):
        out[f"tests[{i}][0]"], out[f"tests[{i}][1]"] = src, ref
    return out
