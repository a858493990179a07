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
import json
import math
import random
import shutil
import time
from pathlib import Path
from typing import Callable

from bitextforge import InputError
from bitextforge.api import (read_lines, read_parallel, read_tsv_pairs,  # noqa: F401
                                   write_atomic)
from bitextforge.api import (Precision, autocast, device_field, resolve_device,  # noqa: F401
                                  resolve_precision)

# The training's parts, each in its own module; every name train-nmt ever had here is still
# importable from here (the recipes' trainer, the benchmarks and users' scripts import them).
from .train_data import (EOS_ID, UNK_ID, check_init_model, check_spm_ids, collate,  # noqa: F401
                         detokenize, encode, make_batches, read_weights, train_spm,
                         write_tokenizer)
from .train_model import (WeightAverage, build_model, evaluate_bleu, translate,  # noqa: F401
                          valid_loss, weighted_loss)
from .train_options import (NEAR_UNIFORM, TrainOptions, budget_lr_factor,  # noqa: F401
                            budget_warning, option_paths, time_to_go, training_warnings,
                            warmup_steps)
from .train_resume import (_RESUME_FREE, RESUME_FILE, SaveOnSigterm, describe_state,  # noqa: F401
                           has_resume_state, load_resume, resume_key, save_resume)


#: the training log has a line at least this often (seconds), besides one every 100 updates
LOG_SECONDS = 30.0


class Training:
    """One ``train-nmt`` training, from the options to the saved, tested model directory.

    :meth:`run` is the plan: check every input, read the corpus, make the vocabulary, build the
    model and its optimizer, continue a resumable state if one is there, run the update loop
    (validating, checkpointing and saving resumable states on the way), then write the vocabulary
    map, the record and the test scores. Each of those is a method; what they share lives on the
    trainer."""

    def __init__(self, opts: TrainOptions, log: Callable[[str], None] = print,
                 where: str = "train-nmt",
                 before_updates: Callable[[int], None] | None = None):
        """A training of ``opts`` that says what it does through ``log``; ``where`` names the
        caller in errors (the command, or the recipe's trainer); ``before_updates``, when given,
        hears the number of batches in one epoch once the pairs are encoded, before the model
        is built."""
        self.opts, self.log, self.where = opts, log, where
        self.before_updates = before_updates
        self.out = Path(opts.output)
        self.spm_prefix = self.out / "joint"
        self.resume_path = self.out / RESUME_FILE

    def run(self) -> dict:
        """Train, save the best checkpoint (by validation loss) to ``opts.output``, evaluate;
        return the facts written to ``train_log.json``, plus ``train_seconds``."""
        self.check_inputs()
        self.start()
        self.read_corpus()
        self.make_vocabulary()
        self.read_validation()
        if self.before_updates is not None:
            # a generator of its own: the epochs' batches must not depend on whether anyone asked
            self.before_updates(len(make_batches(self.src, self.tgt, self.opts.batch_tokens,
                                                 random.Random(0))))
        self.make_model()
        self.restore()
        self.loop()
        self.checkpoint("final")
        return self.finish()

    # -- data ------------------------------------------------------------------------------------

    def check_inputs(self) -> None:
        """Every file, the reused vocabulary, the model to continue and the device, checked before
        any file is read: a wrong test path must not cost the training, nor a missing GPU the
        reading of a large corpus."""
        opts = self.opts
        if bool(opts.valid_src) != bool(opts.valid_tgt):
            raise InputError("train-nmt: give both valid_src and valid_tgt (--valid-src, "
                             "--valid-tgt), or neither")
        missing = [f"{key}: {path}" for key, path in option_paths(opts).items()
                   if path is not None and not Path(path).exists()]
        if missing:
            raise InputError(f"train-nmt: no such file: {'; '.join(missing)}")
        if opts.spm:
            if not Path(opts.spm).is_file():
                raise InputError(f"--spm {opts.spm}: no such sentencepiece model file")
            check_spm_ids(opts.spm)
        self.init = check_init_model(opts) if opts.init_model else None
        self.device = resolve_device(opts.device, self.where)
        self.early = budget_warning(opts)
        if self.early:
            self.log(f"train-nmt: warning: {self.early}")

    def start(self) -> None:
        """Seed torch and the data order, and pick the arithmetic of the forward pass."""
        import torch

        self.torch = torch
        torch.set_num_threads(self.opts.threads)
        torch.manual_seed(self.opts.seed)
        self.rng = random.Random(self.opts.seed)
        self.precision = resolve_precision(self.opts.precision, self.device)
        self.t_start = time.perf_counter()

    def read_corpus(self) -> None:
        """The training pairs and their weights, without the empty, held-out and weight-0 ones."""
        opts, log = self.opts, self.log
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
        self.src_txt = [src_txt[i] for i in keep]
        self.tgt_txt = [tgt_txt[i] for i in keep]
        self.weights = weights
        if len(self.src_txt) < 10:
            what = "non-empty pairs of weight > 0" if weights is not None else "non-empty pairs"
            raise InputError(f"{opts.corpus_files()[0]}: only {len(self.src_txt)} {what}; a "
                             f"model needs at least a few hundred")

    def make_vocabulary(self) -> None:
        """The output directory, the resumable state found there, the joint vocabulary (the
        state's, a reused one or a new one) and the training pairs' ids."""
        import sentencepiece as spm

        opts = self.opts
        # read and check every input before the output directory exists
        self.out.mkdir(parents=True, exist_ok=True)
        self.key = resume_key(opts, self.src_txt, self.tgt_txt, self.weights)
        self.state = load_resume(self.resume_path, self.key, self.log)
        reuse = opts.spm or (self.init / "joint.model" if self.init else None)
        model_file = self.spm_prefix.with_suffix(".model")
        if self.state is not None:
            pass  # the vocabulary the state was trained with is already in out
        elif reuse:
            # Reuse a joint vocabulary (the reverse direction's, or the model being continued):
            # same pieces, no retraining.
            if Path(reuse).resolve() != model_file.resolve():
                shutil.copyfile(reuse, model_file)
        else:
            train_spm(self.src_txt + self.tgt_txt, self.spm_prefix, opts.vocab_size, opts.seed)
        self.vocab = write_tokenizer(self.out, model_file, opts.src_lang, opts.tgt_lang)
        self.pad = self.vocab - 1
        self.sp = spm.SentencePieceProcessor(model_file=str(model_file))
        self.src = encode(self.sp, self.src_txt, opts.max_len)
        self.tgt = encode(self.sp, self.tgt_txt, opts.max_len)
        self.log(f"train-nmt: {len(self.src)} pairs, vocabulary {self.vocab}, "
                 f"{sum(map(len, self.src))} + {sum(map(len, self.tgt))} tokens")

    def read_validation(self) -> None:
        """The validation pairs' ids and batches, when there are any."""
        opts = self.opts
        self.vsrc = self.vtgt = self.vbatches = None
        if opts.valid_src and opts.valid_tgt:
            vs, vt = read_parallel(opts.valid_src, opts.valid_tgt)
            self.vsrc = encode(self.sp, vs, opts.max_len)
            self.vtgt = encode(self.sp, vt, opts.max_len)
            self.vbatches = make_batches(self.vsrc, self.vtgt, opts.batch_tokens, random.Random(0))

    # -- model -----------------------------------------------------------------------------------

    def make_model(self) -> None:
        """The model (new, or the one continued), its optimizer, schedule and weight average."""
        opts, torch = self.opts, self.torch
        if self.init is not None:
            from transformers import MarianMTModel

            # the dropout of this run (a small in-domain set may want more than the first training)
            model = MarianMTModel.from_pretrained(str(self.init), dropout=opts.dropout)
            if model.config.vocab_size != self.vocab:
                raise InputError(f"init_model {self.init}: its model has "
                                 f"{model.config.vocab_size} vocabulary entries but its "
                                 f"joint.model {self.vocab}")
            self.log(f"train-nmt: continuing {self.init} (its vocabulary and size)")
        else:
            model = build_model(opts, self.vocab)
        # The decoder starts from the <pad> embedding; Marian (and CTranslate2's conversion) start
        # from a zero vector.  padding_idx keeps the input side's gradient at zero, so zeroing the
        # row once keeps both backends close (the tied output layer still moves it a little).  A
        # continued model keeps its row: zeroing it would change its output layer.
        if self.init is None:
            with torch.no_grad():
                model.get_input_embeddings().weight[self.pad].zero_()
        self.n_params = sum(p.numel() for p in model.parameters())
        model.to(self.device)
        on = (f"{opts.threads} thread{'s' if opts.threads > 1 else ''}" if self.device == "cpu"
              else self.device)
        self.log(f"train-nmt: MarianMTModel with {self.n_params / 1e6:.1f}M parameters, "
                 f"{self.precision} forward pass on {on}")
        self.model = model
        self.opt = torch.optim.AdamW(model.parameters(), lr=opts.lr, betas=(0.9, 0.98), eps=1e-9,
                                     weight_decay=1e-4)
        self.budget = opts.minutes * 60.0
        self.t_train = time.perf_counter()
        self.sched = torch.optim.lr_scheduler.LambdaLR(self.opt, self.lr_factor)
        self.ema = WeightAverage(torch, model, opts.ema) if opts.ema else None

    def progress(self, s: int) -> float:
        """Fraction of the run done: of the time budget or of --max-steps, whichever is ahead."""
        frac = (time.perf_counter() - self.t_train) / self.budget if self.budget > 0 else 0.0
        if self.opts.max_steps:
            frac = max(frac, s / self.opts.max_steps)
        return min(frac, 1.0)

    def lr_factor(self, s: int) -> float:
        """The learning-rate multiplier before update ``s`` (0-based)."""
        opts = self.opts
        if opts.schedule == "inverse-sqrt":
            warm = max(1, opts.warmup)
            return min((s + 1) / warm, math.sqrt(warm / (s + 1)))
        return budget_lr_factor(self.progress(s), opts.warmup_fraction, s, opts.min_warmup_steps)

    # -- checkpoints -----------------------------------------------------------------------------

    def restore(self) -> None:
        """The counters of a new training, or those of the resumable state found, with its
        weights, optimizer, schedule, average and random states."""
        opts, torch, state = self.opts, self.torch, self.state
        self.t_train = time.perf_counter()
        self.next_valid = opts.valid_every * 60.0
        self.step, self.epoch, self.best = 0, 0, math.inf
        self.history: list[dict] = []
        self.run_loss, self.run_n = 0.0, 0
        self.last_log = 0.0
        self.skip = 0  # batches of the first epoch already trained before the resumed state
        if state is not None:
            self.model.load_state_dict(state["model"])
            self.opt.load_state_dict(state["optimizer"])
            self.sched.load_state_dict(state["schedule"])
            if self.ema is not None:
                with torch.no_grad():
                    for a, v in zip(self.ema.avg, state["ema"]):
                        a.copy_(v)
            self.step, self.epoch, self.best = state["step"], state["epoch"] - 1, state["best"]
            self.history, self.run_loss, self.run_n = (state["history"], state["run_loss"],
                                                       state["run_n"])
            self.next_valid, self.last_log = state["next_valid"], state["last_log"]
            self.skip = state["batch"]
            self.t_train -= state["elapsed"]
            self.rng.setstate(state["epoch_rng"])
            torch.set_rng_state(state["torch_rng"])
            if self.device.startswith("cuda") and state.get("cuda_rng") is not None:
                torch.cuda.set_rng_state(state["cuda_rng"])
            self.log(f"train-nmt: resuming from {self.resume_path} at update {self.step} (epoch "
                     f"{self.epoch + 1}, {state['elapsed'] / 60:.1f} min trained)")
        self.last_resume = time.perf_counter() - self.t_train
        self.resumable = opts.resume_every > 0 or bool(opts.resume_every_steps)
        # where this process began, for the time to go
        self.step0, self.elapsed0 = self.step, self.last_resume

    def resume_due(self, elapsed: float) -> bool:
        """Whether a resumable state is due after this update."""
        opts = self.opts
        if opts.resume_every_steps:
            return self.step % opts.resume_every_steps == 0
        return opts.resume_every > 0 and elapsed - self.last_resume >= opts.resume_every * 60.0

    def save_state(self, batch: int, epoch_rng) -> None:
        """The training as it stands after ``batch`` batches of the current epoch."""
        torch, ema = self.torch, self.ema
        save_resume(self.resume_path, {
            "key": self.key, "model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
            "schedule": self.sched.state_dict(),
            "ema": [a.detach().cpu() for a in ema.avg] if ema is not None else None,
            "step": self.step, "max_steps": self.opts.max_steps, "epoch": self.epoch,
            "best": self.best, "history": self.history,
            "run_loss": self.run_loss, "run_n": self.run_n, "next_valid": self.next_valid,
            "last_log": self.last_log, "batch": batch,
            "elapsed": time.perf_counter() - self.t_train,
            "epoch_rng": epoch_rng, "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state() if self.device.startswith("cuda") else None})

    def checkpoint(self, reason: str) -> None:
        """Validate (the averaged weights, with ``ema``), keep the model if it is the best yet,
        save a snapshot if asked, and record it all in the history."""
        with self.ema.swapped_in() if self.ema is not None else contextlib.nullcontext():
            self._checkpoint(reason)

    def _checkpoint(self, reason: str) -> None:
        opts = self.opts
        elapsed = time.perf_counter() - self.t_train
        entry = {"step": self.step, "epoch": self.epoch, "minutes": round(elapsed / 60, 2),
                 "train_loss": round(self.run_loss / max(self.run_n, 1), 4)}
        if self.vsrc is not None:
            vl = valid_loss(self.torch, self.model, self.vsrc, self.vtgt, self.vbatches, self.pad,
                            self.device)
            entry["valid_loss"] = round(vl, 4)
            better = vl < self.best
        else:
            vl, better = 0.0, True
        if better:
            self.best = vl
            self.model.save_pretrained(self.out)
            entry["saved"] = True
        if opts.snapshots:
            snap = self.out / "snapshots" / f"step-{self.step}"
            self.model.save_pretrained(snap)
            write_tokenizer(snap, self.spm_prefix.with_suffix(".model"), opts.src_lang,
                            opts.tgt_lang)
            entry["snapshot"] = str(snap)
        self.history.append(entry)
        self.log(f"train-nmt: {reason} {json.dumps(entry)}")

    def stop_for_sigterm(self, batch: int, epoch_rng, term: SaveOnSigterm) -> None:
        """Save the state after ``batch`` batches of this epoch and let SIGTERM go on."""
        self.save_state(batch, epoch_rng)
        self.log(f"train-nmt: SIGTERM after update {self.step}: saved {self.resume_path}; the "
                 f"same command continues from it")
        term.deliver()

    # -- loop ------------------------------------------------------------------------------------

    def loop(self) -> None:
        """Epochs of updates until the time or update budget is spent; SIGTERM stops it after
        the update in progress, with a resumable state saved."""
        done = False
        if self.opts.max_steps and self.step >= self.opts.max_steps:
            # a state saved after the last update (SIGTERM): nothing is left to train, and the
            # epoch is the one the loop would have counted on entering it
            done, self.epoch = True, self.epoch + 1
        self.model.train()
        pos = epoch_rng = None
        with SaveOnSigterm(self.resumable) as term:
            while not done:
                self.epoch += 1
                epoch_rng = self.rng.getstate()  # what makes this epoch's batches, when resumed
                done, pos = self.epoch_of_updates(epoch_rng, term)
                self.skip = 0
            if term.asked and self.step > self.step0:
                # during the last update: its state, then the signal
                self.stop_for_sigterm(pos + 1, epoch_rng, term)

    def epoch_batches(self) -> list[list[int]]:
        """This epoch's batches in their random order (with subword regularization, over a fresh
        segmentation of the pairs)."""
        opts = self.opts
        if opts.subword_alpha > 0:
            # a fresh segmentation every epoch, from the epoch's seed (repeatable within a
            # process only: encode's docstring says why)
            self.src, self.tgt = (encode(self.sp, txt, opts.max_len, opts.subword_alpha,
                                         opts.subword_nbest, opts.seed * 100003 + 2 * self.epoch
                                         + side)
                                  for side, txt in enumerate((self.src_txt, self.tgt_txt)))
        batches = make_batches(self.src, self.tgt, opts.batch_tokens, self.rng)
        self.rng.shuffle(batches)
        return batches

    def epoch_of_updates(self, epoch_rng, term: SaveOnSigterm) -> tuple[bool, int | None]:
        """One epoch's updates (after those a resumed state already made); returns whether the
        budget is spent, and the position of the last batch trained."""
        pos = None
        for pos, idx in enumerate(self.epoch_batches()):
            if pos < self.skip:
                continue
            self.update(idx)
            elapsed = time.perf_counter() - self.t_train
            self.report(elapsed)
            if elapsed >= self.budget or (self.opts.max_steps and self.step >= self.opts.max_steps):
                return True, pos
            self.between_updates(elapsed, pos, epoch_rng, term)
        return False, pos

    def update(self, idx: list[int]) -> None:
        """One optimizer update on the batch of rows ``idx``."""
        torch, device = self.torch, self.device
        x, m, d, y = (t.to(device) for t in collate(torch, self.src, self.tgt, idx, self.pad))
        with autocast(torch, device, self.precision):
            logits = self.model(input_ids=x, attention_mask=m, decoder_input_ids=d).logits
        logits = logits.float()  # the loss and its gradient in fp32 whatever the forward pass
        # one loss for weighted and unweighted corpora: a weight-0 pair then trains exactly like
        # a corpus without it
        w = (torch.ones(len(idx)) if self.weights is None
             else torch.tensor([self.weights[i] for i in idx]))
        w = w.to(device)
        loss = weighted_loss(torch, logits, y, w, self.opts.label_smoothing)
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.sched.step()
        self.step += 1
        if self.ema is not None:
            self.ema.update(self.step)
        self.run_loss += loss.item()
        self.run_n += 1

    def report(self, elapsed: float) -> None:
        """The step log line, and the budget warning once the speed is known."""
        opts, step = self.opts, self.step
        if step == 50 and not self.early:  # the speed is known: can the time budget warm up?
            late = budget_warning(opts, step / max(elapsed, 1e-9))
            if late:
                self.log(f"train-nmt: warning: {late}")
        # every 100 updates, and at least every half minute: a slow machine may take minutes
        # over the first hundred
        if step % 100 == 0 or elapsed - self.last_log >= LOG_SECONDS:
            self.last_log = elapsed
            of = f"/{opts.max_steps}" if opts.max_steps else ""
            self.log(f"train-nmt: step {step}{of} epoch {self.epoch} {elapsed / 60:.1f} min "
                     f"loss {self.run_loss / self.run_n:.3f} lr {self.sched.get_last_lr()[0]:.2e}"
                     + time_to_go(step - self.step0, elapsed - self.elapsed0,
                                  opts.max_steps - step if opts.max_steps else None,
                                  self.budget - elapsed))

    def between_updates(self, elapsed: float, pos: int, epoch_rng, term: SaveOnSigterm) -> None:
        """Validation, a resumable state, or the stop SIGTERM asked for, when due."""
        opts = self.opts
        if opts.valid_every_steps:
            due = self.step % opts.valid_every_steps == 0
        else:
            due = elapsed >= self.next_valid
        if due:
            self.checkpoint("validation")
            self.run_loss, self.run_n = 0.0, 0
            self.next_valid += opts.valid_every * 60.0
        if self.resume_due(elapsed):
            self.save_state(pos + 1, epoch_rng)
            self.last_resume = time.perf_counter() - self.t_train
            # so that whoever watches the log knows what a kill now would cost
            self.log(f"train-nmt: resumable state of update {self.step} saved "
                     f"({self.resume_path})")
        if term.asked:
            self.stop_for_sigterm(pos + 1, epoch_rng, term)

    # -- the finished model ----------------------------------------------------------------------

    def finish(self) -> dict:
        """Warnings, the vocabulary map, the record and the test scores of the finished model;
        the resumable state goes, since nothing is left to resume."""
        opts = self.opts
        self.train_minutes = (time.perf_counter() - self.t_train) / 60
        last_loss = self.history[-1]["train_loss"] if self.run_n else None
        self.warnings = training_warnings(opts, self.step, last_loss, self.vocab)
        for w in self.warnings:
            self.log(f"train-nmt: warning: {w}")
        # A final checkpoint that was worse than an earlier one is not saved; the directory holds
        # the best model.  generation defaults (beam) travel with it.
        self.results: list[dict] = []
        self.write_vocab_map()
        self.write_log()  # the training is on record even if a test set fails
        self.run_tests()
        self.resume_path.unlink(missing_ok=True)  # the training is whole: nothing to resume
        # the record rounds to 0.01 min (0.6 s): updates per second of a short run need the
        # clock's own
        return {**self.write_log(), "train_seconds": self.train_minutes * 60}

    def write_log(self) -> dict:
        """Write ``train_log.json`` as the training stands and return its facts."""
        opts, weights, n = self.opts, self.weights, len(self.src)
        info = {"src_lang": opts.src_lang, "tgt_lang": opts.tgt_lang, "pairs": n,
                "weighted": weights is not None,
                "weight_sum": round(sum(weights), 4) if weights is not None else n,
                "parameters": self.n_params, "vocab": self.vocab, "precision": self.precision,
                "device": self.device,
                "steps": self.step, "epochs": self.epoch,
                "train_minutes": round(self.train_minutes, 2),
                "total_minutes": round((time.perf_counter() - self.t_start) / 60, 2),
                "options": opts.model_dump(), "warnings": self.warnings,
                "history": self.history, "tests": self.results}
        (self.out / "train_log.json").write_text(json.dumps(info, indent=2), encoding="utf-8")
        return info

    def write_vocab_map(self) -> None:
        """The lexical shortlist of the CTranslate2 backend's ``vocab_map: model``, from the ids
        at hand (merged with the continued model's)."""
        from .vocab_map import VMAP_NAME, build_vocab_map, merge_vocab_maps

        sp, init = self.sp, self.init
        id_to_token = [sp.id_to_piece(i) for i in range(sp.get_piece_size())] + ["<pad>"]
        lines = build_vocab_map(self.src, self.tgt, id_to_token,
                                skip_ids=[EOS_ID, UNK_ID, self.pad])
        if init is not None and (init / VMAP_NAME).is_file():
            lines = merge_vocab_maps(
                (init / VMAP_NAME).read_text(encoding="utf-8").splitlines(), lines)
        write_atomic(self.out / VMAP_NAME, "".join(line + "\n" for line in lines))
        self.log(f"train-nmt: vocabulary map {self.out / VMAP_NAME} ({len(lines) - 1} source "
                 f"tokens)")

    def run_tests(self) -> None:
        """BLEU of the saved model on each test set, greedy and with the beam; the record is
        rewritten after each."""
        from bitextforge.api import visible_gpus

        opts, device = self.opts, self.device
        # the tests decode on the training device when the decoder sees it there too
        # (CTranslate2 may be built without the CUDA that torch has), else on the CPU
        test_device = (device if device == "cpu" or opts.test_backend == "transformers"
                       or visible_gpus("ctranslate2") else "cpu")
        for ts, tt in opts.tests:
            for beam in sorted({1, opts.beam}):
                r = evaluate_bleu(self.out, ts, tt, beam, backend=opts.test_backend,
                                  threads=opts.threads, device=test_device)
                self.log(f"train-nmt: BLEU {r['bleu']} beam {beam} on {ts} ({r['seconds']} s)")
                self.results.append(r)
                self.write_log()


def train(opts: TrainOptions, log: Callable[[str], None] = print,
          where: str = "train-nmt", before_updates: Callable[[int], None] | None = None) -> dict:
    """Train, save the best checkpoint (by validation loss) to ``opts.output``, evaluate; return
    the facts written to ``train_log.json``, plus ``train_seconds`` (its ``train_minutes``
    unrounded). ``where`` names the caller in errors (the command, or the recipe's trainer);
    ``before_updates`` hears the batches per epoch before the first update (train_and_test.v1
    checks there how often the budget shows each real pair)."""
    return Training(opts, log, where, before_updates).run()
