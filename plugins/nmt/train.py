"""Offline training of a small Marian translation model on 2 CPU cores (``bitextforge train-nmt``).

The back-translation paraphrasers of Wieting, Mallinson & Gimpel 2017 and ParaNMT-50M (Wieting &
Gimpel 2018), and the round trips of BET (Corbeil & Abdi Ghavidel), need seq2seq models; on a
machine without access to a model hub they must be trained here. This module trains a
Transformer (Vaswani et al. 2017) in the Marian layout of the transformers library from scratch:
a joint sentencepiece vocabulary, token-bucketed batches, AdamW with a learning rate that warms up
and decays to zero at the end of a wall-clock budget, label smoothing 0.1, periodic validation and
optional sentence weights (Marian's ``--data-weighting`` in sentence mode: the weights the
Weighters of a run write to ``corpus.weights``). The result is a normal Hugging Face model
directory (``MarianMTModel.from_pretrained`` and ``MarianTokenizer.from_pretrained`` load it),
evaluated with sacrebleu.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import random
import shutil
import time
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bitextforge import InputError
from bitextforge.io.corpus import read_lines, read_parallel, read_tsv_pairs, write_atomic
from bitextforge.hardware import (Precision, autocast, device_field, resolve_device,
                                  resolve_precision)

# Marian's convention (and MarianTokenizer's defaults): </s> ends every sequence; <pad> is the
# LAST id and starts the decoder from its (zero, never trained) embedding.  CTranslate2's Marian
# converter relies on exactly that layout: it drops the last row and starts from a zero vector.
# The sentencepiece ids are used directly as model ids, so vocab.json is the sentencepiece
# vocabulary plus <pad>.
EOS_ID, UNK_ID = 0, 1


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


def read_weights(path: str | Path, n: int) -> list[float]:
    """The sentence weights of ``path``, one finite non-negative number per line, exactly ``n``
    lines (the training corpus's); anything else is a user error naming the file and line."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such weights file; pass the corpus.weights of a run or a "
                         f"file with one number per training pair")
    lines = read_lines(path)
    if len(lines) != n:
        raise InputError(f"{path} has {len(lines)} weights but the training corpus has {n} "
                         f"pairs; give one weight per line of the corpus")
    out = []
    for k, line in enumerate(lines, 1):
        try:
            w = float(line)
        except ValueError:
            raise InputError(f"{path}:{k}: {line.strip()!r} is not a number") from None
        if not math.isfinite(w) or w < 0:
            raise InputError(f"{path}:{k}: weight {line.strip()} must be a finite number >= 0")
        out.append(w)
    return out


def weighted_loss(torch, logits, labels, weights, label_smoothing: float):
    """Label-smoothed cross-entropy of a batch with each sentence's token losses multiplied by its
    weight (Marian ``--data-weighting-type sentence``), divided by the weighted number of target
    tokens.

    Marian divides by the plain token count; the two agree when a batch's weights average 1, and
    only the weighted count makes weight 0 exactly the same as leaving the pair out and weight 2
    exactly the same as repeating it, whatever else the batch holds. With all weights 1 this is
    the ordinary per-token mean."""
    per_token = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100,
        label_smoothing=label_smoothing, reduction="none").view(labels.shape)
    tok_w = (labels != -100).to(per_token.dtype) * weights.to(per_token.dtype)[:, None]
    return (per_token * tok_w).sum() / tok_w.sum().clamp_min(1e-9)


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


#: the training log has a line at least this often (seconds), besides one every 100 updates
LOG_SECONDS = 30.0
#: the resumable state of an unfinished training, in its output directory
RESUME_FILE = "resume.pt"
#: options that change neither the updates nor the checkpoints kept, so a run resumed with other
#: values of them continues the same training (threads: only the last bits of the sums)
_RESUME_FREE = ("output", "resume_every", "resume_every_steps", "threads", "tests", "beam",
                "test_backend")
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


def resume_key(opts: TrainOptions, src: list[str], tgt: list[str],
               weights: list[float] | None) -> str:
    """What a resumable state must match to be continued: the options that shape the training
    and the pairs it reads (after the empty, held-out and weight-0 ones are left out)."""
    h = hashlib.sha256(json.dumps(opts.model_dump(exclude=set(_RESUME_FREE)), sort_keys=True,
                                  default=str).encode())
    for side in (src, tgt):
        for line in side:
            h.update(line.encode("utf-8", "surrogatepass") + b"\n")
        h.update(b"\0")
    if weights is not None:
        h.update(json.dumps(weights).encode())
    return h.hexdigest()


def has_resume_state(directory: Path) -> bool:
    """Whether ``directory`` (a training's output) holds the resumable state of an unfinished
    training, which whoever cleans up after a kill must keep for the rerun."""
    return (directory / RESUME_FILE).is_file()


def load_resume(path: Path, key: str, log: Callable[[str], None]) -> dict | None:
    """The resumable state in ``path`` when it belongs to the training of ``key`` (and its
    vocabulary is beside it), else None; a state of another training is said and removed."""
    if not path.is_file():
        return None
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unreadable state means starting over
        log(f"train-nmt: {path} cannot be read ({type(e).__name__}: {e}); starting over")
        path.unlink()
        return None
    if not isinstance(state, dict) or state.get("key") != key:
        log(f"train-nmt: {path} is the state of another training (other options or data); "
            f"starting over")
        path.unlink()
        return None
    if not (path.parent / "joint.model").is_file():
        log(f"train-nmt: {path} has no joint.model beside it; starting over")
        path.unlink()
        return None
    return state


def describe_state(directory: Path) -> str | None:
    """One line on the resumable state in ``directory`` (for ``bitextforge status``): the
    update it continues from, of how many, the epoch, the minutes trained and the state's age;
    None when there is none."""
    path = Path(directory) / RESUME_FILE
    if not path.is_file():
        return None
    import torch

    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
        step, epoch, minutes = state["step"], state["epoch"], state["elapsed"] / 60
    except Exception as e:  # noqa: BLE001 - what cannot be read is said, not raised
        return f"{RESUME_FILE} cannot be read ({type(e).__name__}): a rerun starts over"
    of = f"/{state['max_steps']}" if state.get("max_steps") else ""
    age = (time.time() - path.stat().st_mtime) / 60
    ago = f"{age:.0f} min" if age < 120 else f"{age / 60:.1f} h"
    return (f"train-nmt state at update {step}{of} (epoch {epoch}, {minutes:.1f} min trained), "
            f"saved {ago} ago; the same command continues from it")


class SaveOnSigterm:
    """While a training loop runs in the main thread, SIGTERM (``kill``, a batch scheduler's
    time limit or preemption, a worker pool stopped) only sets :attr:`asked`; the loop then
    saves a resumable state after the update in progress and calls :meth:`deliver`, which hands
    the signal to the handler it found (the command's clean-up and exit 143, or the default
    death of a worker process). Marian's ``--sigterm save-and-exit`` does the same. Without a
    resumable state to write (``resume_every: 0``), in another thread, or where SIGTERM is
    ignored, nothing is installed."""

    def __init__(self, enabled: bool):
        import signal
        import threading

        self.asked = False
        self._signal = signal
        self._previous = None
        self._on = (enabled and threading.current_thread() is threading.main_thread()
                    and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN)

    def __enter__(self) -> "SaveOnSigterm":
        if self._on:
            self._previous = self._signal.signal(self._signal.SIGTERM, self._ask)
        return self

    def _ask(self, signum, frame) -> None:
        self.asked = True

    def deliver(self) -> None:
        """Restore the handler found and send it the signal that was held back."""
        self.asked = False
        self._restore()
        os.kill(os.getpid(), self._signal.SIGTERM)

    def _restore(self) -> None:
        if self._previous is not None:
            self._signal.signal(self._signal.SIGTERM, self._previous)
            self._previous = None

    def __exit__(self, *exc) -> None:
        self._restore()
        if self.asked:  # during the last update: the loop ended, and the signal goes on
            self.deliver()


def save_resume(path: Path, state: dict) -> None:
    """Write a resumable state whole or not at all (a kill while saving keeps the previous)."""
    import torch

    tmp = path.with_name(path.name + ".part")
    torch.save(state, tmp)
    os.replace(tmp, path)


def train_spm(texts: list[str], prefix: Path, vocab_size: int, seed: int) -> None:
    """A joint unigram sentencepiece model over both languages (one vocabulary, shared embeddings)."""
    import sentencepiece as spm

    rng = random.Random(seed)
    sample = texts if len(texts) <= 400_000 else rng.sample(texts, 400_000)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sample), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, eos_id=EOS_ID, unk_id=UNK_ID,
        pad_id=-1, bos_id=-1, eos_piece="</s>", unk_piece="<unk>",
        num_threads=2, minloglevel=2, input_sentence_size=0,
        # A tiny corpus may not support the requested size; take what it can give.
        hard_vocab_limit=False)


def write_tokenizer(out: Path, spm_model: Path, src_lang: str, tgt_lang: str) -> int:
    """The files MarianTokenizer loads: source.spm, target.spm (the same joint model), vocab.json.

    Returns the model's vocabulary size (sentencepiece pieces plus ``<pad>`` as the last id)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    shutil.copyfile(spm_model, out / "source.spm")
    shutil.copyfile(spm_model, out / "target.spm")
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    vocab["<pad>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "MarianTokenizer", "source_lang": src_lang, "target_lang": tgt_lang,
        "unk_token": "<unk>", "eos_token": "</s>", "pad_token": "<pad>",
        "model_max_length": 512, "separate_vocabs": False}, indent=2), encoding="utf-8")
    return len(vocab)


def check_spm_ids(path: str) -> None:
    """Refuse a reused sentencepiece model whose special ids differ from train_spm's.

    The model's config and the Marian tokenizer assume ``</s>`` = 0, ``<unk>`` = 1 and no ``<s>``
    or ``<pad>`` piece; a model trained with sentencepiece's defaults (``<unk>`` = 0, ``<s>`` = 1,
    ``</s>`` = 2) trains without complaint but ends every sentence with ``<unk>``, so its outputs
    are garbage at decoding time."""
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_file=path)
    except (RuntimeError, OSError) as e:
        raise InputError(f"--spm {path}: not a sentencepiece model ({e})") from None
    got = {"eos": sp.eos_id(), "unk": sp.unk_id(), "bos": sp.bos_id(), "pad": sp.pad_id()}
    want = {"eos": EOS_ID, "unk": UNK_ID, "bos": -1, "pad": -1}
    if got != want:
        raise InputError(
            f"--spm {path}: special ids {got} differ from those train-nmt needs {want}; reuse "
            f"the joint.model that train-nmt wrote into another model's directory, or train it "
            f"with eos_id={EOS_ID} unk_id={UNK_ID} bos_id=-1 pad_id=-1")


def encode(sp, texts: list[str], max_len: int, alpha: float = 0.0, nbest: int = 64,
           seed: int = 0) -> list[list[int]]:
    """Sentencepiece ids plus </s>, truncated like MarianTokenizer(truncation=True) would.

    With ``alpha`` > 0 each segmentation is sampled among the ``nbest`` best (Kudo 2018's subword
    regularization). The same ``seed`` then gives the same ids within one process:
    sentencepiece's sampler is seeded globally and run on one thread, since its thread pool draws
    in an order that differs from call to call. Another process draws other samples from the same
    seed: sentencepiece 0.2 seeds an ``absl::BitGen``, which Abseil salts with per-process
    entropy, so such a training is not reproducible across runs."""
    if alpha > 0:
        import sentencepiece as spm

        spm.set_random_generator_seed(seed)
        pieces = sp.encode(texts, enable_sampling=True, alpha=alpha, nbest_size=nbest,
                           num_threads=1)
    else:
        pieces = sp.encode(texts)
    return [ids[: max_len - 1] + [EOS_ID] for ids in pieces]


class WeightAverage:
    """An exponential moving average of a model's trainable weights (Marian's
    ``--exponential-smoothing``; Polyak averaging), kept beside the model in fp32 on its device.

    The decay at update ``n`` is ``min(decay, (1 + n) / (10 + n))``, so the average of a short
    run is not dominated by its random initial weights."""

    def __init__(self, torch, model, decay: float):
        """Start the average at the model's current weights."""
        self.torch, self.decay = torch, decay
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.avg = [p.detach().clone() for p in self.params]

    def update(self, step: int) -> None:
        """Fold the weights after update ``step`` into the average."""
        d = min(self.decay, (1 + step) / (10 + step))
        with self.torch.no_grad():
            for a, p in zip(self.avg, self.params):
                a.lerp_(p, 1 - d)

    def _swap(self) -> None:
        with self.torch.no_grad():
            for a, p in zip(self.avg, self.params):
                tmp = p.detach().clone()
                p.copy_(a)
                a.copy_(tmp)

    @contextlib.contextmanager
    def swapped_in(self):
        """A context in which the model holds the averaged weights (to validate or save them);
        the training weights come back on exit."""
        self._swap()
        try:
            yield
        finally:
            self._swap()


def make_batches(src: list[list[int]], tgt: list[list[int]], batch_tokens: int,
                 rng: random.Random) -> list[list[int]]:
    """Token-bucketed batches: pairs sorted by length, cut so padded tokens stay near the budget."""
    order = sorted(range(len(src)), key=lambda i: (len(src[i]), len(tgt[i]), rng.random()))
    batches, cur, longest = [], [], 0
    for i in order:
        longest_new = max(longest, len(src[i]), len(tgt[i]))
        if cur and longest_new * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, longest_new = [], max(len(src[i]), len(tgt[i]))
        cur.append(i)
        longest = longest_new
    if cur:
        batches.append(cur)
    return batches


def collate(torch, src, tgt, idx, pad):
    """Padded tensors for one batch; decoder inputs are the labels shifted right after <pad>."""
    n = len(idx)
    ls = max(len(src[i]) for i in idx)
    lt = max(len(tgt[i]) for i in idx)
    x = torch.full((n, ls), pad, dtype=torch.long)
    y = torch.full((n, lt), -100, dtype=torch.long)
    d = torch.full((n, lt), pad, dtype=torch.long)
    for r, i in enumerate(idx):
        s, t = src[i], tgt[i]
        x[r, : len(s)] = torch.tensor(s)
        y[r, : len(t)] = torch.tensor(t)
        d[r, 1: len(t)] = torch.tensor(t[:-1])
    return x, (x != pad).long(), d, y


def build_model(opts: TrainOptions, vocab: int):
    """A MarianMTModel from a MarianConfig of the requested size, with tied embeddings."""
    from transformers import MarianConfig, MarianMTModel

    pad = vocab - 1
    cfg = MarianConfig(
        vocab_size=vocab, decoder_vocab_size=vocab, d_model=opts.d_model,
        encoder_layers=opts.layers, decoder_layers=opts.layers,
        encoder_attention_heads=opts.heads, decoder_attention_heads=opts.heads,
        encoder_ffn_dim=opts.ffn_dim, decoder_ffn_dim=opts.ffn_dim, dropout=opts.dropout,
        attention_dropout=0.0, activation_dropout=0.0, activation_function="relu",
        max_position_embeddings=max(256, opts.max_len * 2), scale_embedding=True,
        pad_token_id=pad, eos_token_id=EOS_ID, decoder_start_token_id=pad,
        forced_eos_token_id=EOS_ID, share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True, num_beams=opts.beam, max_length=opts.max_len * 2)
    return MarianMTModel(cfg)


def translate(model, tok, texts: list[str], beam: int, batch_size: int = 64,
              max_len: int = 256) -> list[str]:
    """Translate with transformers ``generate``, in batches sorted by length, in input order."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[str] = [""] * len(texts)
    # neither the source nor the output may run past the model's position table (news sentences
    # can be longer than anything in Multi30k)
    table = getattr(model.config, "max_position_embeddings", None) or max_len + 1
    from bitextforge.log import progress

    model.eval()
    with torch.inference_mode():
        for b in progress(range(0, len(order), batch_size), f"translating {len(texts)} sentences",
                          unit=" batches"):
            idx = order[b: b + batch_size]
            enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True,
                      truncation=True, max_length=min(max_len, table)).to(model.device)
            new = min(int(enc["input_ids"].shape[1] * 2 + 10), table - 1)
            gen = model.generate(**enc, num_beams=beam, do_sample=False, max_new_tokens=new)
            for i, t in zip(idx, tok.batch_decode(gen, skip_special_tokens=True)):
                out[i] = t
    return out


def evaluate_bleu(model_dir: str | Path, src_file: str, ref_file: str, beam: int,
                  limit: int | None = None, backend: str = "transformers",
                  threads: int = 2, device: str = "cpu") -> dict:
    """sacrebleu BLEU and chrF of a saved model on a test set, with the signature and timing.

    ``backend``: ``transformers`` (the reference implementation) or ``ctranslate2`` (float32, the
    model converted on the fly: the same greedy output, several times faster); ``device``: a
    resolved device (``cpu`` or ``cuda:N``)."""
    import sacrebleu

    src, ref = read_parallel(src_file, ref_file)
    if limit:
        src, ref = src[:limit], ref[:limit]
    t0 = time.perf_counter()
    if backend == "ctranslate2":
        from .backends import Decoding, make_backend

        be = make_backend("ctranslate2", str(model_dir), threads=threads, compute_type="float32",
                          device=device, option="train-nmt test")
        try:
            hyp = [r[0][0] if r else "" for r in be.translate(src, Decoding(beam=beam, k=1))]
        finally:
            be.close()
    else:
        import torch
        from transformers import MarianMTModel, MarianTokenizer

        tok = MarianTokenizer.from_pretrained(str(model_dir))
        model = MarianMTModel.from_pretrained(str(model_dir)).to(device)
        torch.manual_seed(0)
        hyp = translate(model, tok, src, beam)
    secs = time.perf_counter() - t0
    metric = sacrebleu.metrics.BLEU()
    bleu = metric.corpus_score(hyp, [ref])
    return {"test": str(src_file), "backend": backend, "device": device, "beam": beam,
            "sentences": len(src),
            "bleu": round(bleu.score, 2), "chrf": round(sacrebleu.corpus_chrf(hyp, [ref]).score, 2),
            "signature": str(metric.get_signature()), "seconds": round(secs, 1)}


def valid_loss(torch, model, src, tgt, batches, pad, device: str = "cpu") -> float:
    """Per-token cross-entropy (no smoothing) of the validation set."""
    model.eval()
    tot, n = 0.0, 0
    with torch.inference_mode():
        for idx in batches:
            x, m, d, y = (t.to(device) for t in collate(torch, src, tgt, idx, pad))
            logits = model(input_ids=x, attention_mask=m, decoder_input_ids=d).logits
            tot += torch.nn.functional.cross_entropy(
                logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-100,
                reduction="sum").item()
            n += int((y != -100).sum())
    model.train()
    return tot / max(n, 1)


def check_init_model(opts: TrainOptions) -> Path:
    """The directory of ``opts.init_model``, checked: a train-nmt model (config.json and
    joint.model) of this run's direction, and no other vocabulary asked for."""
    init = Path(opts.init_model)
    missing = [n for n in ("config.json", "joint.model") if not (init / n).is_file()]
    if missing:
        raise InputError(f"init_model {init}: no {' or '.join(missing)}; give a model directory "
                         f"that train-nmt wrote")
    if opts.spm:
        raise InputError(f"init_model {init}: give init_model or spm, not both (a continued "
                         f"model keeps its vocabulary)")
    log_file = init / "train_log.json"
    if log_file.is_file():
        info = json.loads(log_file.read_text(encoding="utf-8"))
        theirs = (info.get("src_lang"), info.get("tgt_lang"))
        if theirs != (opts.src_lang, opts.tgt_lang):
            raise InputError(f"init_model {init} translates {theirs[0]}->{theirs[1]}; this "
                             f"training is {opts.src_lang}->{opts.tgt_lang}")
    return init


def detokenize(lines: list[str], lang: str) -> list[str]:
    """Moses-detokenized lines (sacremoses; HTML escapes such as ``&apos;`` undone), for
    corpora released tokenized (IWSLT14, the MLQE-PE post-edits)."""
    from sacremoses import MosesDetokenizer

    md = MosesDetokenizer(lang=lang)
    return [md.detokenize(line.split()) for line in lines]


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


def train(opts: TrainOptions, log: Callable[[str], None] = print,
          where: str = "train-nmt") -> dict:
    """Train, save the best checkpoint (by validation loss) to ``opts.output``, evaluate; return
    the facts written to ``train_log.json``, plus ``train_seconds`` (its ``train_minutes``
    unrounded). ``where`` names the caller in errors (the command, or the recipe's trainer)."""
    if bool(opts.valid_src) != bool(opts.valid_tgt):
        raise InputError("train-nmt: give both valid_src and valid_tgt (--valid-src, --valid-tgt), "
                         "or neither")
    # every file is checked before the first update: a wrong test path must not cost the training
    missing = [f"{key}: {path}" for key, path in option_paths(opts).items()
               if path is not None and not Path(path).exists()]
    if missing:
        raise InputError(f"train-nmt: no such file: {'; '.join(missing)}")
    if opts.spm:
        if not Path(opts.spm).is_file():
            raise InputError(f"--spm {opts.spm}: no such sentencepiece model file")
        check_spm_ids(opts.spm)
    init = check_init_model(opts) if opts.init_model else None
    # before any file is read: a missing GPU must not cost the reading of a large corpus
    device = resolve_device(opts.device, where)
    early = budget_warning(opts)
    if early:
        log(f"train-nmt: warning: {early}")
    import sentencepiece as spm
    import torch

    torch.set_num_threads(opts.threads)
    torch.manual_seed(opts.seed)
    rng = random.Random(opts.seed)
    precision = resolve_precision(opts.precision, device)
    out = Path(opts.output)
    t_start = time.perf_counter()

    if opts.train_tsv:
        swap = bool(opts.tsv_langs) and opts.tsv_langs.split("-")[0] != opts.src_lang
        src_txt, tgt_txt = read_tsv_pairs(opts.train_tsv, swap=swap)
    else:
        src_txt, tgt_txt = read_parallel(opts.src_train, opts.tgt_train)
    if opts.train_limit:
        src_txt, tgt_txt = src_txt[:opts.train_limit], tgt_txt[:opts.train_limit]
    if opts.detokenize:
        src_txt = detokenize(src_txt, opts.src_lang)
        tgt_txt = detokenize(tgt_txt, opts.tgt_lang)
    weights = read_weights(opts.train_weights, len(src_txt)) if opts.train_weights else None
    keep = [i for i in range(len(src_txt)) if src_txt[i].strip() and tgt_txt[i].strip()]
    if len(keep) < len(src_txt):
        log(f"train-nmt: {len(src_txt) - len(keep)} pairs with an empty side left out")
    if opts.folds > 1:
        held = sum(1 for i in keep if i % opts.folds == opts.fold)
        keep = [i for i in keep if i % opts.folds != opts.fold]
        log(f"train-nmt: fold {opts.fold} of {opts.folds} ({held} pairs) left out")
    if weights is not None:
        # A weight-0 pair must not shape the model at all, the vocabulary included.
        nonzero = [i for i in keep if weights[i] > 0]
        if len(nonzero) < len(keep):
            log(f"train-nmt: {len(keep) - len(nonzero)} pairs of weight 0 left out")
        keep = nonzero
        weights = [weights[i] for i in keep]
    src_txt = [src_txt[i] for i in keep]
    tgt_txt = [tgt_txt[i] for i in keep]
    if len(src_txt) < 10:
        what = "non-empty pairs of weight > 0" if weights is not None else "non-empty pairs"
        raise InputError(f"{opts.corpus_files()[0]}: only {len(src_txt)} {what}; a model needs "
                         f"at least a few hundred")
    # read and check every input before the output directory exists
    out.mkdir(parents=True, exist_ok=True)
    spm_prefix = out / "joint"
    resume_path = out / RESUME_FILE
    key = resume_key(opts, src_txt, tgt_txt, weights)
    state = load_resume(resume_path, key, log)
    reuse = opts.spm or (init / "joint.model" if init else None)
    if state is not None:
        pass  # the vocabulary the state was trained with is already in out
    elif reuse:
        # Reuse a joint vocabulary (the reverse direction's, or the model being continued): same
        # pieces, no retraining.
        if Path(reuse).resolve() != spm_prefix.with_suffix(".model").resolve():
            shutil.copyfile(reuse, spm_prefix.with_suffix(".model"))
    else:
        train_spm(src_txt + tgt_txt, spm_prefix, opts.vocab_size, opts.seed)
    vocab = write_tokenizer(out, spm_prefix.with_suffix(".model"), opts.src_lang, opts.tgt_lang)
    sp = spm.SentencePieceProcessor(model_file=str(spm_prefix.with_suffix(".model")))
    src = encode(sp, src_txt, opts.max_len)
    tgt = encode(sp, tgt_txt, opts.max_len)
    log(f"train-nmt: {len(src)} pairs, vocabulary {vocab}, "
        f"{sum(map(len, src))} + {sum(map(len, tgt))} tokens")

    vsrc = vtgt = None
    if opts.valid_src and opts.valid_tgt:
        vs, vt = read_parallel(opts.valid_src, opts.valid_tgt)
        vsrc, vtgt = encode(sp, vs, opts.max_len), encode(sp, vt, opts.max_len)
        vbatches = make_batches(vsrc, vtgt, opts.batch_tokens, random.Random(0))

    if init is not None:
        from transformers import MarianMTModel

        # the dropout of this run (a small in-domain set may want more than the first training)
        model = MarianMTModel.from_pretrained(str(init), dropout=opts.dropout)
        if model.config.vocab_size != vocab:
            raise InputError(f"init_model {init}: its model has {model.config.vocab_size} "
                             f"vocabulary entries but its joint.model {vocab}")
        log(f"train-nmt: continuing {init} (its vocabulary and size)")
    else:
        model = build_model(opts, vocab)
    pad = vocab - 1
    # The decoder starts from the <pad> embedding; Marian (and CTranslate2's conversion) start
    # from a zero vector.  padding_idx keeps the input side's gradient at zero, so zeroing the row
    # once keeps both backends close (the tied output layer still moves it a little).  A
    # continued model keeps its row: zeroing it would change its output layer.
    if init is None:
        with torch.no_grad():
            model.get_input_embeddings().weight[pad].zero_()
    n_params = sum(p.numel() for p in model.parameters())
    model.to(device)
    on = (f"{opts.threads} thread{'s' if opts.threads > 1 else ''}" if device == "cpu"
          else device)
    log(f"train-nmt: MarianMTModel with {n_params / 1e6:.1f}M parameters, {precision} forward "
        f"pass on {on}")
    opt = torch.optim.AdamW(model.parameters(), lr=opts.lr, betas=(0.9, 0.98), eps=1e-9,
                            weight_decay=1e-4)
    budget = opts.minutes * 60.0
    t_train = time.perf_counter()
    warm = max(1, opts.warmup)

    def progress(s: int) -> float:
        """Fraction of the run done: of the time budget or of --max-steps, whichever is ahead."""
        frac = (time.perf_counter() - t_train) / budget if budget > 0 else 0.0
        if opts.max_steps:
            frac = max(frac, s / opts.max_steps)
        return min(frac, 1.0)

    def lr_factor(s: int) -> float:
        if opts.schedule == "inverse-sqrt":
            return min((s + 1) / warm, math.sqrt(warm / (s + 1)))
        return budget_lr_factor(progress(s), opts.warmup_fraction, s, opts.min_warmup_steps)

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    ema = WeightAverage(torch, model, opts.ema) if opts.ema else None

    t_train = time.perf_counter()
    next_valid = opts.valid_every * 60.0
    step, epoch, best = 0, 0, math.inf
    history: list[dict] = []
    run_loss, run_n = 0.0, 0
    done = False
    last_log = 0.0
    skip = 0  # batches of the first epoch already trained before the resumed state
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["schedule"])
        if ema is not None:
            with torch.no_grad():
                for a, v in zip(ema.avg, state["ema"]):
                    a.copy_(v)
        step, epoch, best = state["step"], state["epoch"] - 1, state["best"]
        history, run_loss, run_n = state["history"], state["run_loss"], state["run_n"]
        next_valid, last_log, skip = state["next_valid"], state["last_log"], state["batch"]
        t_train -= state["elapsed"]
        rng.setstate(state["epoch_rng"])
        torch.set_rng_state(state["torch_rng"])
        if device.startswith("cuda") and state.get("cuda_rng") is not None:
            torch.cuda.set_rng_state(state["cuda_rng"])
        log(f"train-nmt: resuming from {resume_path} at update {step} (epoch {epoch + 1}, "
            f"{state['elapsed'] / 60:.1f} min trained)")
    last_resume = time.perf_counter() - t_train
    resumable = opts.resume_every > 0 or bool(opts.resume_every_steps)
    step0, elapsed0 = step, last_resume  # where this process began, for the time to go

    def resume_due(elapsed: float) -> bool:
        if opts.resume_every_steps:
            return step % opts.resume_every_steps == 0
        return opts.resume_every > 0 and elapsed - last_resume >= opts.resume_every * 60.0

    def save_state(batch: int, epoch_rng) -> None:
        """The training as it stands after ``batch`` batches of the current epoch."""
        save_resume(resume_path, {
            "key": key, "model": model.state_dict(), "optimizer": opt.state_dict(),
            "schedule": sched.state_dict(),
            "ema": [a.detach().cpu() for a in ema.avg] if ema is not None else None,
            "step": step, "max_steps": opts.max_steps, "epoch": epoch, "best": best,
            "history": history,
            "run_loss": run_loss, "run_n": run_n, "next_valid": next_valid,
            "last_log": last_log, "batch": batch, "elapsed": time.perf_counter() - t_train,
            "epoch_rng": epoch_rng, "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state() if device.startswith("cuda") else None})

    def checkpoint(reason: str) -> None:
        with ema.swapped_in() if ema is not None else contextlib.nullcontext():
            _checkpoint(reason)

    def _checkpoint(reason: str) -> None:
        nonlocal best
        elapsed = time.perf_counter() - t_train
        entry = {"step": step, "epoch": epoch, "minutes": round(elapsed / 60, 2),
                 "train_loss": round(run_loss / max(run_n, 1), 4)}
        if vsrc is not None:
            vl = valid_loss(torch, model, vsrc, vtgt, vbatches, pad, device)
            entry["valid_loss"] = round(vl, 4)
            better = vl < best
        else:
            vl, better = 0.0, True
        if better:
            best = vl
            model.save_pretrained(out)
            entry["saved"] = True
        if opts.snapshots:
            snap = out / "snapshots" / f"step-{step}"
            model.save_pretrained(snap)
            write_tokenizer(snap, spm_prefix.with_suffix(".model"), opts.src_lang, opts.tgt_lang)
            entry["snapshot"] = str(snap)
        history.append(entry)
        log(f"train-nmt: {reason} {json.dumps(entry)}")

    def stop_for_sigterm(batch: int, epoch_rng) -> None:
        save_state(batch, epoch_rng)
        log(f"train-nmt: SIGTERM after update {step}: saved {resume_path}; the same command "
            f"continues from it")
        term.deliver()

    if opts.max_steps and step >= opts.max_steps:
        # a state saved after the last update (SIGTERM): nothing is left to train, and the
        # epoch is the one the loop would have counted on entering it
        done, epoch = True, epoch + 1
    model.train()
    with SaveOnSigterm(resumable) as term:
        while not done:
            epoch += 1
            epoch_rng = rng.getstate()  # what makes this epoch's batches, for a resumed run
            if opts.subword_alpha > 0:
                # a fresh segmentation every epoch, from the epoch's seed (repeatable within a
                # process only: encode's docstring says why)
                src, tgt = (encode(sp, txt, opts.max_len, opts.subword_alpha, opts.subword_nbest,
                                   opts.seed * 100003 + 2 * epoch + side)
                            for side, txt in enumerate((src_txt, tgt_txt)))
            batches = make_batches(src, tgt, opts.batch_tokens, rng)
            rng.shuffle(batches)
            for pos, idx in enumerate(batches):
                if pos < skip:
                    continue
                x, m, d, y = (t.to(device) for t in collate(torch, src, tgt, idx, pad))
                with autocast(torch, device, precision):
                    logits = model(input_ids=x, attention_mask=m, decoder_input_ids=d).logits
                logits = logits.float()  # the loss and its gradient in fp32 whatever the forward pass
                # one loss for weighted and unweighted corpora: a weight-0 pair then trains exactly
                # like a corpus without it
                w = torch.ones(len(idx)) if weights is None else torch.tensor([weights[i] for i in idx])
                w = w.to(device)
                loss = weighted_loss(torch, logits, y, w, opts.label_smoothing)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                step += 1
                if ema is not None:
                    ema.update(step)
                run_loss += loss.item()
                run_n += 1
                elapsed = time.perf_counter() - t_train
                if step == 50 and not early:  # the speed is known: can the time budget warm up?
                    late = budget_warning(opts, step / max(elapsed, 1e-9))
                    if late:
                        log(f"train-nmt: warning: {late}")
                # every 100 updates, and at least every half minute: a slow machine may take
                # minutes over the first hundred
                if step % 100 == 0 or elapsed - last_log >= LOG_SECONDS:
                    last_log = elapsed
                    of = f"/{opts.max_steps}" if opts.max_steps else ""
                    log(f"train-nmt: step {step}{of} epoch {epoch} {elapsed / 60:.1f} min "
                        f"loss {run_loss / run_n:.3f} lr {sched.get_last_lr()[0]:.2e}"
                        + time_to_go(step - step0, elapsed - elapsed0, opts.max_steps - step
                                     if opts.max_steps else None, budget - elapsed))
                if elapsed >= budget or (opts.max_steps and step >= opts.max_steps):
                    done = True
                    break
                if opts.valid_every_steps:
                    due = step % opts.valid_every_steps == 0
                else:
                    due = elapsed >= next_valid
                if due:
                    checkpoint("validation")
                    run_loss, run_n = 0.0, 0
                    next_valid += opts.valid_every * 60.0
                if resume_due(elapsed):
                    save_state(pos + 1, epoch_rng)
                    last_resume = time.perf_counter() - t_train
                    # so that whoever watches the log knows what a kill now would cost
                    log(f"train-nmt: resumable state of update {step} saved ({resume_path})")
                if term.asked:
                    stop_for_sigterm(pos + 1, epoch_rng)
            skip = 0
        if term.asked and step > step0:  # during the last update: its state, then the signal
            stop_for_sigterm(pos + 1, epoch_rng)
    checkpoint("final")
    train_minutes = (time.perf_counter() - t_train) / 60
    warnings = training_warnings(opts, step, history[-1]["train_loss"] if run_n else None, vocab)
    for w in warnings:
        log(f"train-nmt: warning: {w}")
    # A final checkpoint that was worse than an earlier one is not saved; the directory holds the
    # best model.  generation defaults (beam) travel with it.
    results: list[dict] = []

    def write_log() -> dict:
        info = {"src_lang": opts.src_lang, "tgt_lang": opts.tgt_lang, "pairs": len(src),
                "weighted": weights is not None,
                "weight_sum": round(sum(weights), 4) if weights is not None else len(src),
                "parameters": n_params, "vocab": vocab, "precision": precision,
                "device": device,
                "steps": step, "epochs": epoch,
                "train_minutes": round(train_minutes, 2),
                "total_minutes": round((time.perf_counter() - t_start) / 60, 2),
                "options": opts.model_dump(), "warnings": warnings,
                "history": history, "tests": results}
        (out / "train_log.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
        return info

    # The lexical shortlist of the CTranslate2 backend's `vocab_map: model`, from the ids at hand.
    from .vocab_map import VMAP_NAME, build_vocab_map, merge_vocab_maps

    id_to_token = [sp.id_to_piece(i) for i in range(sp.get_piece_size())] + ["<pad>"]
    lines = build_vocab_map(src, tgt, id_to_token, skip_ids=[EOS_ID, UNK_ID, pad])
    if init is not None and (init / VMAP_NAME).is_file():
        lines = merge_vocab_maps(
            (init / VMAP_NAME).read_text(encoding="utf-8").splitlines(), lines)
    write_atomic(out / VMAP_NAME, "".join(line + "\n" for line in lines))
    log(f"train-nmt: vocabulary map {out / VMAP_NAME} ({len(lines) - 1} source tokens)")
    write_log()  # the training is on record even if a test set fails
    # the tests decode on the training device when the decoder sees it there too (CTranslate2 may
    # be built without the CUDA that torch has), else on the CPU
    from bitextforge.hardware import visible_gpus

    test_device = (device if device == "cpu" or opts.test_backend == "transformers"
                   or visible_gpus("ctranslate2") else "cpu")
    for ts, tt in opts.tests:
        for beam in sorted({1, opts.beam}):
            r = evaluate_bleu(out, ts, tt, beam, backend=opts.test_backend,
                              threads=opts.threads, device=test_device)
            log(f"train-nmt: BLEU {r['bleu']} beam {beam} on {ts} ({r['seconds']} s)")
            results.append(r)
            write_log()
    resume_path.unlink(missing_ok=True)  # the training is whole: nothing is left to resume
    # the record rounds to 0.01 min (0.6 s): updates per second of a short run need the clock's own
    return {**write_log(), "train_seconds": train_minutes * 60}
