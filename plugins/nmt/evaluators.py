"""``train_and_test.v1``: does a recipe make MT better? Train a small NMT model on the run's output
corpus, translate a test set, score it, and compare with a baseline model with significance.

The model is trained by the project's own trainer (:mod:`bitextforge.plugins.nmt.train`) on the
corpus as the run wrote it: rows replicated by a Weighter (Nichols et al.'s distributed, first
and varying expansions) are repeated lines, fractional weights are sentence weights (Marian's
``--data-weighting`` in sentence mode). The comparison is fair by construction: a fixed seed, a
fixed budget in updates rather than minutes (a slow or busy machine trains the same model, only
later), and the same model and vocabulary settings; a baseline trained with other settings is
reported as such. Test translations are decoded with the CTranslate2 backend (greedy by default)
and scored with sacrebleu's BLEU (Papineni et al. 2002) and chrF (Popović 2015); the significance
test is sacrebleu's paired bootstrap resampling (Koehn 2004; Post 2018). Several ``seeds`` train
one model each and report the seed-to-seed spread, and a difference smaller than a measured spread
is reported as within it: a single training run's noise can exceed what a data recipe changes.
With ``workers`` > 1 the seeds train side by side in processes of their own, to the same models.
With ``init_models`` each seed's model of another run is continued on this run's corpus instead
(continued training, Luong & Manning 2015: for example a back-translation model fine-tuned on the
real pairs alone).
"""

from __future__ import annotations

import json
import shutil
import statistics
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, create_model, field_validator

from bitextforge import Evaluator, InputError, Report
from bitextforge.api import read_parallel, write_atomic
from bitextforge.api import Precision, device_field
from bitextforge.api import stop_pool, worker_pool
from bitextforge.api import stop_pool as stop_workers  # noqa: F401 (its name here before)

from .model_records import (FAIR_SETTINGS, OFF_UNLESS_RECORDED, RECORD, STAMP,  # noqa: F401
                            TRAIN_SETTINGS, made_with, model_fingerprint, models_of, models_root,
                            read_stamp, record_model, settings_of, sha256_files, shared_model_dir,
                            shared_refusal, unfinished_dir)
from .real_views import RealPairs, real_pairs, views_warning
from .train import TrainOptions, has_resume_state

#: what a training worker imports before its first update (about 7 s of CPU): its pool's fork
#: server imports them once
TRAINING_MODULES = ("torch", "transformers.models.marian.modeling_marian", "sentencepiece",
                    "sacrebleu", __name__)

_SettingsBase = create_model(
    "_TrainSettings", __base__=Evaluator.Config,
    **{k: (TrainOptions.model_fields[k].annotation, TrainOptions.model_fields[k])
       for k in TRAIN_SETTINGS})


#: put before every message of a worker process, which trains one seed among several
_log_prefix = ""


def _log(message: str) -> None:
    """train_and_test.v1's messages, and its trainer's, on the run's one log channel."""
    from bitextforge.api import say

    say("train_and_test.v1", _log_prefix + message)


class TrainAndTestEvaluator(Evaluator):
    """Train a small Marian model on the run's output corpus with ``bitextforge train-nmt``
    (replicated rows and sentence weights honoured), translate a test set with CTranslate2
    (greedy by default) and report BLEU and chrF; against a ``baseline`` model (a model
    directory, another run's directory, or a ``baseline_recipe`` run first) also sacrebleu's
    paired bootstrap p-values, and whether the difference is within the seed-to-seed spread.

    Training uses a fixed budget in updates (``max_steps``) and fixed seeds, so a busy machine
    trains the same model as a quiet one; the models, test translations and a record of how
    they were trained are kept in ``model_dir`` (default ``<run>/train_and_test``), and a model
    already trained on the same corpus with the same settings is reused: named by the record, or
    by the stamp written beside each model as it is finished, so the seeds a stopped run had
    finished are not trained again. A ``model_dir`` outside the run directory is shared, and
    its models are not trained over with other settings unless ``retrain`` says so.
    """

    name = "train_and_test.v1"
    extra = "nmt"

    class Config(_SettingsBase):
        """Options of train_and_test.v1: the test set, the training budget, the train-nmt model
        and vocabulary settings (same names and defaults as ``bitextforge train-nmt``), decoding,
        the baseline and the seed-to-seed spread."""

        test_src: str = Field(description="Test source file (.gz ok), in the corpus's src "
                              "language.")
        test_ref: str = Field(description="Test reference file, line-aligned with test_src.")
        valid_src: str | None = Field(None, description="A development set's source, decoded "
                                      "by every model beside the test set: its BLEU and chrF "
                                      "choose settings such as the update budget without "
                                      "reading the test set. Not part of the training "
                                      "settings (models trained without it are reused).")
        valid_ref: str | None = Field(None, description="The development set's reference, "
                                      "line-aligned with valid_src (needed with it).")
        src_lang: str = Field("src", description="Source language code written into the "
                              "model's tokenizer config.")
        tgt_lang: str = Field("tgt", description="Target language code written into the "
                              "model's tokenizer config.")
        max_steps: int = Field(1000, gt=0, description="Training budget in updates (not "
                               "minutes), the same for every model compared.")
        seeds: list[int] = Field([1], min_length=1, description="One model per seed; the first "
                                 "is compared with the baseline's model of the same seed (its "
                                 "first model where it has none), and with several the report "
                                 "gives the seed-to-seed spread (max - min) of BLEU and chrF.")
        model_dir: str | None = Field(None, description="Where models, translations and "
                                      "train_and_test.json go (default: train_and_test/ in the "
                                      "run directory). One outside the run directory is shared "
                                      "by runs (one seed each, say): a run whose settings or "
                                      "corpus differ from its models' is refused, not trained "
                                      "over them.")
        retrain: bool = Field(False, description="Train even when model_dir holds a model of "
                              "the same corpus, settings and seed; replaces a shared "
                              "model_dir's models of other settings.")
        backend: Literal["ctranslate2", "transformers"] = Field(
            "ctranslate2", description="Decoder for the test set (ctranslate2: fast; "
            "transformers: the reference implementation).")
        compute_type: str | None = Field(None, description="ctranslate2 quantization (default "
                                         "int8 on CPU).")
        beam: int = Field(1, ge=1, description="Beam size (1: greedy).")
        device: str = device_field("the training and the test decoding")
        baseline: str | None = Field(None, description="Baseline model: a model directory (e.g. "
                                     "from train-nmt), or the directory of another run whose "
                                     "train_and_test.v1 model is reused.")
        baseline_recipe: str | None = Field(None, description="A recipe file whose run (with a "
                                            "train_and_test.v1 evaluator) gives the baseline "
                                            "model; run first unless its output already holds "
                                            "that model.")
        baseline_budget: Literal["same", "own"] = Field(
            "same", description="same: a baseline trained for another max_steps is UNFAIR; "
            "own: the baseline was trained at its own update budget (each arm at the budget its "
            "dev set chose), so max_steps may differ and is reported, not flagged (the same as "
            "max_steps in baseline_own).")
        baseline_own: list[str] = Field(
            [], description="Training settings that the baseline and this run each chose on "
            "their own validation set (valid_src / valid_ref), e.g. [max_steps, dropout]: a "
            "difference in them is reported with both values, not flagged UNFAIR; every other "
            "setting is still checked.")
        seed_spread: str | None = Field(None, description="The report of a multi-seed "
                                        "train_and_test.v1 run (its reports/train_and_test.v1."
                                        "json, or its run directory): its bleu_spread and "
                                        "chrf_spread mark differences smaller than seed noise.")
        bleu_spread: float | None = Field(None, ge=0, description="Seed-to-seed BLEU spread "
                                          "(overrides seed_spread's).")
        chrf_spread: float | None = Field(None, ge=0, description="Seed-to-seed chrF spread "
                                          "(overrides seed_spread's).")
        bootstrap_samples: int = Field(1000, gt=0, description="Paired bootstrap resamples "
                                       "(sacrebleu --paired-bs-n).")
        bootstrap_seed: int = Field(12345, description="Seed of the resampling (sacrebleu's "
                                    "SACREBLEU_SEED).")
        init_models: str | None = Field(
            None, description="Continue training instead of starting afresh: each seed's model "
            "of this train_and_test.v1 run (its run directory or model_dir) is trained on this "
            "run's corpus for max_steps more updates, keeping its vocabulary and size (the size "
            "options are ignored). With a corpus of the real pairs alone this is fine-tuning a "
            "model trained on back-translated data on the authentic data (continued training, "
            "Luong & Manning 2015; Popel et al. 2020). The budget of such a model is its first "
            "training's plus max_steps.")
        workers: int = Field(1, ge=1, description="Train this many seeds' models at once, one "
                             "process each with `threads` torch threads (3 seeds on 2 cores: "
                             "workers 3, threads 1); the corpus is made once and testing stays "
                             "sequential. A model does not depend on it: training is "
                             "deterministic given corpus, settings and seed (with subword_alpha "
                             "> 0 each process draws its own segmentations).")
        ema: float = Field(0.0, ge=0, lt=1, description="Exponential moving average of the "
                           "weights, as train-nmt's --ema (e.g. 0.999; 0: off). A model and its "
                           "baseline must agree on it to be compared fairly.")
        precision: Precision = Field(
            "auto", description="Arithmetic of the training's forward pass, as train-nmt's "
            "--precision (auto: bf16 where the CPU or GPU computes it natively). fp32 is faster "
            "for very small models, where bf16 casts cost more than they save.")

        @field_validator("baseline_own")
        @classmethod
        def _known_settings(cls, v):
            unknown = [k for k in v if k not in FAIR_SETTINGS]
            if unknown:
                raise ValueError(f"{unknown[0]!r} is not a training setting; choose among "
                                 f"{', '.join(FAIR_SETTINGS)}")
            return v

    # -- inputs -------------------------------------------------------------------------------

    def _settings(self) -> dict[str, Any]:
        return settings_of(self.config)

    @classmethod
    def preflight(cls, config, output_dir):
        """A shared ``model_dir`` (outside the run directory) whose models of this run's seeds
        were trained with other settings is refused before the corpus is made, as
        :meth:`evaluate` would refuse it after (a model there of other training data is found
        only then, when the corpus exists)."""
        if (output_dir is None or config.retrain
                or not shared_model_dir(config.model_dir, output_dir)):
            return []
        root = models_root(config.model_dir, output_dir)
        rec = root / RECORD
        try:
            old = json.loads(rec.read_text(encoding="utf-8")) if rec.is_file() else {}
        except (OSError, ValueError):
            old = {}
        old_models = {m.get("seed"): m for m in old.get("models", []) if isinstance(m, dict)}
        settings = settings_of(config)
        for seed in config.seeds:
            out = root / f"model-seed{seed}"
            made = read_stamp(out) or old_models.get(seed)
            if not made or not (out / "config.json").is_file():
                continue
            # the model continued shows in the fingerprint alone, checked once the corpus exists
            was = {k: v for k, v in made_with(made, old).items() if k != "init_models"}
            if was != settings:
                return [("model_dir", shared_refusal(root, out, was, settings))]
        return []

    def _init_models(self) -> dict[int, tuple[Path, str]]:
        """With ``init_models``: each seed's model to continue and its fingerprint, checked
        before any training starts (every seed of this run must have one)."""
        c = self.config
        rec = models_of(c.init_models) / RECORD
        if not rec.is_file():
            raise InputError(f"{self.name} init_models: {c.init_models} is not the run directory "
                             f"or model_dir of a {self.name} run (no {RECORD})")
        try:
            found = {m["seed"]: (rec.parent / m["dir"], m["fingerprint"])
                     for m in json.loads(rec.read_text(encoding="utf-8"))["models"]}
        except (ValueError, KeyError, TypeError):
            raise InputError(f"{rec}: not a {self.name} record (models with seed, dir and "
                             f"fingerprint)") from None
        missing = [s for s in c.seeds if s not in found
                   or not (found[s][0] / "config.json").is_file()]
        if missing:
            raise InputError(f"{self.name} init_models: {rec} has no model for seed "
                             f"{', '.join(map(str, missing))}; train those seeds there first")
        return {s: found[s] for s in c.seeds}

    def _spread(self) -> tuple[float | None, float | None]:
        c = self.config
        bleu = chrf = None
        if c.seed_spread:
            p = Path(c.seed_spread)
            if p.is_dir():
                p = p / "reports" / f"{self.name}.json"
            if not p.is_file():
                raise InputError(f"{self.name} seed_spread: {c.seed_spread}: no such report; give "
                                 f"reports/{self.name}.json of a multi-seed run or its directory")
            try:
                numbers = json.loads(p.read_text(encoding="utf-8"))["numbers"]
                bleu, chrf = float(numbers["bleu_spread"]), float(numbers["chrf_spread"])
            except (ValueError, KeyError, TypeError):
                raise InputError(f"{self.name} seed_spread: {p} has no bleu_spread and "
                                 f"chrf_spread; it must be the report of a train_and_test.v1 "
                                 f"run with two or more seeds") from None
        return (c.bleu_spread if c.bleu_spread is not None else bleu,
                c.chrf_spread if c.chrf_spread is not None else chrf)

    def _baseline_model(self) -> tuple[Path, dict[str, Any] | None] | None:
        """The baseline's model directory and the settings it was trained with (when known)."""
        c = self.config
        if c.baseline and c.baseline_recipe:
            raise InputError(f"{self.name}: give baseline or baseline_recipe, not both")
        if c.baseline_recipe:
            return self._baseline_from_recipe(c.baseline_recipe)
        if not c.baseline:
            return None
        p = Path(c.baseline)
        if (p / "config.json").is_file():
            log = p / "train_log.json"
            if not log.is_file():
                return p, None
            facts = json.loads(log.read_text(encoding="utf-8"))
            opts = facts.get("options")
            if opts is not None and facts.get("precision"):
                # the arithmetic the training ran in, as for this evaluator's own models: the
                # option says "auto", which is bf16 on one machine and fp32 on another
                opts = {**opts, "precision": facts["precision"]}
            return p, opts
        rec = models_of(p) / RECORD
        if rec.is_file():
            self._baseline_record = rec
            # the model of this run's first seed where the baseline has one: like with like
            return record_model(rec, c.seeds[0])
        raise InputError(f"{self.name} baseline: {c.baseline} is neither a model directory "
                         f"(config.json) nor a run directory with a {self.name} model "
                         f"(train_and_test/{RECORD})")

    def _baseline_from_recipe(self, path: str) -> tuple[Path, dict[str, Any] | None]:
        from bitextforge.api import load_recipe

        recipe = load_recipe(path)
        cfgs = [cfg for ev, cfg in zip(recipe.evaluate, recipe.eval_configs)
                if ev.evaluator == self.name]
        if not cfgs or recipe.output is None:
            raise InputError(f"{self.name} baseline_recipe: {path} has no {self.name} evaluator; "
                             f"its run must train the baseline model")
        if cfgs[0].baseline_recipe:
            raise InputError(f"{self.name} baseline_recipe: {path} names a baseline_recipe "
                             f"itself; give the baseline a recipe without one")
        rec = models_root(cfgs[0].model_dir, recipe.output.dir) / RECORD
        if not rec.is_file():
            from bitextforge.api import run_recipe

            _log(f"running the baseline recipe {path} first")
            run_recipe(recipe)
        if not rec.is_file():
            raise InputError(f"{self.name} baseline_recipe: the run of {path} wrote no {rec}")
        self._baseline_record = rec
        return record_model(rec, self.config.seeds[0])

    # -- training and decoding ----------------------------------------------------------------

    def _write_training_data(self, corpus, data_dir: Path) -> tuple[list[Path], dict[str, Any]]:
        src = [str(s) for s in corpus.column("src")]
        tgt = [str(t) for t in corpus.column("tgt")]
        weights = [float(w) for w in corpus.column("weight")] if "weight" in corpus.columns \
            else [1.0] * len(src)
        if len(src) < 10:
            raise InputError(f"{self.name}: the run's corpus {corpus.path} has {len(src)} rows; "
                             f"a translation model needs at least a few hundred")
        data_dir.mkdir(parents=True, exist_ok=True)
        files = [data_dir / "train.src", data_dir / "train.tgt"]
        write_atomic(files[0], "".join(s.replace("\n", " ") + "\n" for s in src))
        write_atomic(files[1], "".join(t.replace("\n", " ") + "\n" for t in tgt))
        weighted = any(w != 1.0 for w in weights)
        if weighted:
            files.append(data_dir / "train.weights")
            write_atomic(files[2], "".join(f"{w!r}\n" for w in weights))
        elif (data_dir / "train.weights").exists():
            (data_dir / "train.weights").unlink()
        facts = {"rows": len(src), "weighted": weighted, "weight_sum": round(sum(weights), 4)}
        return files, facts

    def _train(self, files: list[Path], out: Path, seed: int, init: Path | None = None,
               fingerprint: str | None = None,
               pairs: RealPairs | None = None) -> dict[str, Any]:
        """Train one seed's model into ``out`` (whole or not at all) and return its training
        facts; with ``fingerprint``, a stamp in the model's directory (:data:`STAMP`) lets a
        later run reuse it even when this run stops before writing its record. With ``pairs``
        (the corpus's real and synthetic rows) a budget that shows each real pair fewer times
        than expansion was measured to need is warned of before the first update, and the
        warning stays in the facts."""
        from .train import train

        c = self.config
        opts = TrainOptions(init_model=str(init) if init else None,
            src_train=str(files[0]), tgt_train=str(files[1]),
            train_weights=str(files[2]) if len(files) > 2 else None,
            src_lang=c.src_lang, tgt_lang=c.tgt_lang, output=str(out), seed=seed,
            max_steps=c.max_steps,
            # the update budget alone ends the run and validation never interrupts it, so the
            # model depends on the data, settings and seed, not on the machine's speed
            minutes=1e9, valid_every=1e9, beam=c.beam, device=c.device, precision=c.precision,
            ema=c.ema, **{k: getattr(c, k) for k in TRAIN_SETTINGS})
        tmp = unfinished_dir(out)
        if tmp.exists() and not has_resume_state(tmp):
            shutil.rmtree(tmp)
        elif tmp.exists():
            _log(f"{tmp} holds the state of a killed training: train-nmt continues it if it "
                 f"is this one's")
        warnings: list[str] = []

        def check_views(batches_per_epoch: int) -> None:
            w = views_warning(pairs, c.max_steps, batches_per_epoch) if pairs else None
            if w:
                warnings.append(w)
                _log(f"warning: {w}")

        info = train(opts.model_copy(update={"output": str(tmp)}), log=_log, where=self.name,
                     before_updates=check_views)
        facts = {"steps": info["steps"], "train_minutes": info["train_minutes"],
                 "pairs": info["pairs"], "parameters": info["parameters"],
                 "precision": info.get("precision"), "device": info.get("device"),
                 **({"warnings": warnings} if warnings else {})}
        if fingerprint:
            (tmp / STAMP).write_text(json.dumps(
                {"seed": seed, "fingerprint": fingerprint, "settings": self._settings(),
                 "training": facts}, indent=2) + "\n", encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
        return facts

    def _train_in_processes(self, files: list[Path],
                            jobs: list[tuple[int, Path, Path | None, str]]
                            ) -> dict[int, dict[str, Any]]:
        """Train each (seed, output, init, fingerprint) job in one of ``workers`` worker
        processes (:func:`bitextforge.api.worker_pool`); return each seed's training facts. The
        first failure stops the others and is raised here (the models already finished keep
        their stamps)."""
        from concurrent.futures import FIRST_EXCEPTION, wait

        c = self.config
        n = min(c.workers, len(jobs))
        _log(f"training {len(jobs)} models in {n} processes, {c.threads} thread(s) each")
        cfg = c.model_dump()
        pool = worker_pool(n, TRAINING_MODULES)
        try:
            futures = {pool.submit(_train_seed, cfg, [str(f) for f in files], str(out), seed,
                                   str(init) if init else None, fingerprint,
                                   getattr(self, "_real_pairs", None)): seed
                       for seed, out, init, fingerprint in jobs}
            done, _ = wait(futures, return_when=FIRST_EXCEPTION)
            failed = next((f for f in done if f.exception() is not None), None)
            if failed is not None:
                raise failed.exception()
            return {futures[f]: f.result() for f in futures}
        except BaseException as exc:
            stop_pool(pool)
            for _, out, _, _ in jobs:  # what the stopped workers had half written
                tmp = unfinished_dir(out)
                # but an interrupt keeps the states a rerun resumes (an error would recur)
                if isinstance(exc, Exception) or not has_resume_state(tmp):
                    shutil.rmtree(tmp, ignore_errors=True)
            raise
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _translate(self, model: Path, src: list[str]) -> list[str]:
        from .backends import Decoding, backend_device, make_backend

        c = self.config
        be = make_backend(c.backend, str(model), threads=c.threads, compute_type=c.compute_type,
                          device=backend_device(c.backend, c.device, self.name),
                          option=f"{self.name} model {model}")
        try:
            res = be.translate(src, Decoding(beam=c.beam, k=1))
        finally:
            be.close()
        return [r[0][0] if r else "" for r in res]

    # -- the report ---------------------------------------------------------------------------

    def manifest_info(self) -> dict[str, Any]:
        """The warnings of its models' trainings (a budget too small for the real pairs of an
        expanded corpus), for the manifest's ``warnings``."""
        warnings = getattr(self, "_warnings", [])
        return {"warnings": warnings} if warnings else {}

    @classmethod
    def input_paths(cls, config):
        """The test files, and the baseline model, recipe and seed-spread report when given."""
        return {"test_src": config.test_src, "test_ref": config.test_ref,
                "valid_src": config.valid_src, "valid_ref": config.valid_ref,
                "baseline": config.baseline, "baseline_recipe": config.baseline_recipe,
                "seed_spread": config.seed_spread, "spm": config.spm,
                "init_models": config.init_models}

    def evaluate(self, corpus) -> Report:
        """Train (or reuse) one model per seed, translate and score the test set, compare with
        the baseline; write the models' record and a text report into ``model_dir``."""
        c = self.config
        test_src, test_ref, valid_src, valid_ref = self._read_test_sets()
        bleu_spread, chrf_spread = self._spread()
        baseline = self._baseline_model()  # checked before any training starts

        run_dir = Path(corpus.path).parent
        root = models_root(c.model_dir, run_dir)
        files, data_facts = self._write_training_data(corpus, root / "data")
        # a continued model has had its own budget: its views of the real pairs are not these
        self._real_pairs = None if c.init_models else real_pairs(corpus)
        settings = self._settings()
        data_hash = sha256_files(files)
        rec_path = root / RECORD
        old = json.loads(rec_path.read_text(encoding="utf-8")) if rec_path.is_file() else {}

        inits = self._init_models() if c.init_models else {}

        def fingerprint_of(seed, init_fingerprint=None):
            # the model continued is part of what makes this one; only this seed's, so that
            # seeds trained in separate processes keep their fingerprints
            extra = {"init_model": init_fingerprint} if init_fingerprint else {}
            return model_fingerprint(data_hash, {**settings, **extra}, seed)

        plan = []  # each seed's model directory, the model it continues, their fingerprints
        for seed in c.seeds:
            init, init_fp = inits.get(seed, (None, None))
            plan.append((seed, root / f"model-seed{seed}", init, init_fp,
                         fingerprint_of(seed, init_fp)))
        trained = self._train_or_reuse(plan, files, root, run_dir, old, settings, data_facts)
        self._warnings = list(dict.fromkeys(w for facts in trained.values()
                                            for w in facts.get("warnings", [])))
        models = self._score_models(plan, trained, root, test_src, test_ref, valid_src,
                                    valid_ref)
        # Models of other seeds on the same corpus and settings stay on record (read again now:
        # another process may have trained one meanwhile), so seeds can be trained one per
        # process and a later run with all of them reuses every model.
        latest = json.loads(rec_path.read_text(encoding="utf-8")) if rec_path.is_file() else {}
        others = [m for m in latest.get("models", []) if m.get("seed") not in c.seeds
                  and m.get("fingerprint") == fingerprint_of(m.get("seed"),
                                                             m.get("init_fingerprint"))]
        record = {"settings": {**settings, **({"init_models": c.init_models} if inits else {})},
                  "corpus": data_facts, "corpus_sha256": data_hash,
                  "test_src": c.test_src, "test_ref": c.test_ref,
                  **({"valid_src": c.valid_src, "valid_ref": c.valid_ref} if valid_src else {}),
                  "backend": c.backend,
                  "beam": c.beam,
                  "models": [{k: v for k, v in m.items() if k not in ("hyp", "scores")}
                             for m in models] + others}
        write_atomic(rec_path, json.dumps(record, indent=2) + "\n")
        return self._report(models, root, test_src, test_ref, valid_src, data_facts, settings,
                            baseline, bleu_spread, chrf_spread)

    def _read_test_sets(self) -> tuple[list[str], list[str], list[str], list[str]]:
        """The test set's sources and references, and the development set's (empty without
        one), checked."""
        c = self.config
        test_src, test_ref = read_parallel(c.test_src, c.test_ref)
        if not test_src:
            raise InputError(f"{self.name} test_src: {c.test_src} is empty")
        if (c.valid_src is None) != (c.valid_ref is None):
            raise InputError(f"{self.name}: give valid_src and valid_ref together")
        valid_src, valid_ref = (read_parallel(c.valid_src, c.valid_ref) if c.valid_src
                                else ([], []))
        if c.valid_src and not valid_src:
            raise InputError(f"{self.name} valid_src: {c.valid_src} is empty")
        return test_src, test_ref, valid_src, valid_ref

    def _train_or_reuse(self, plan, files: list[Path], root: Path, run_dir: Path,
                        old: dict[str, Any], settings: dict[str, Any],
                        data_facts: dict[str, Any]) -> dict[int, dict[str, Any]]:
        """The training facts of every seed's model of ``plan``: of the model on disk when it
        was made from the same corpus, settings and seed, else of a model trained now."""
        c = self.config
        old_models = {m["seed"]: m for m in old.get("models", [])}
        trained: dict[int, dict[str, Any]] = {}
        to_train = []
        shared = shared_model_dir(c.model_dir, run_dir)
        for seed, out, init, _, fingerprint in plan:
            # the stamp travels with the model, so it says what is on disk even when a run
            # trained over the model and stopped before rewriting the record; the record
            # speaks only for models older than stamps
            made = read_stamp(out) or old_models.get(seed)
            if (not c.retrain and made and made.get("fingerprint") == fingerprint
                    and (out / "config.json").is_file()):
                _log(f"reusing {out} (same corpus, settings and seed)")
                trained[seed] = made["training"]
            else:
                if shared and made and not c.retrain and (out / "config.json").is_file():
                    # a model_dir outside the run is shared by runs whose records name its
                    # models: training over one would change another run's figures unseen
                    raise InputError(f"{self.name} model_dir: " + shared_refusal(
                        root, out, made_with(made, old), settings))
                _log(f"training {out}: {c.max_steps} updates, seed {seed}, "
                     f"{data_facts['rows']} rows{' (weighted)' if data_facts['weighted'] else ''}"
                     + (f", continuing {init}" if init else ""))
                to_train.append((seed, out, init, fingerprint))
        if c.workers > 1 and len(to_train) > 1:
            trained.update(self._train_in_processes(files, to_train))
        else:
            for seed, out, init, fingerprint in to_train:
                trained[seed] = self._train(files, out, seed, init, fingerprint,
                                            getattr(self, "_real_pairs", None))
        return trained

    def _score_models(self, plan, trained: dict[int, dict[str, Any]], root: Path,
                      test_src: list[str], test_ref: list[str], valid_src: list[str],
                      valid_ref: list[str]) -> list[dict[str, Any]]:
        """Each seed's model's record entry: its test (and development) translations, written
        beside the models, with their BLEU and chrF."""
        import sacrebleu

        models = []
        for seed, out, _, init_fp, fingerprint in plan:
            facts = trained[seed]
            entry = {"seed": seed, "dir": out.name, "fingerprint": fingerprint,
                     **({"init_fingerprint": init_fp} if init_fp else {}),
                     "training": facts, "scores": {}}
            for prefix, name, src, ref in (("", "hyp", test_src, test_ref),
                                           ("valid_", "valid-hyp", valid_src, valid_ref)):
                if not src:
                    continue
                hyp = self._translate(out, src)
                write_atomic(root / f"{name}-seed{seed}.txt", "".join(h + "\n" for h in hyp))
                for key, metric in (("bleu", sacrebleu.metrics.BLEU()),
                                    ("chrf", sacrebleu.metrics.CHRF())):
                    value = metric.corpus_score(hyp, [ref]).score
                    entry[prefix + key] = round(value, 2)
                    entry["scores"][prefix + key] = value
                if not prefix:
                    entry["hyp"] = hyp
            models.append(entry)
        return models

    def _report(self, models, root: Path, test_src: list[str], test_ref: list[str],
                valid_src: list[str], data_facts: dict[str, Any], settings: dict[str, Any],
                baseline, bleu_spread: float | None, chrf_spread: float | None) -> Report:
        """The numbers and summary of the first seed's model, the seed-to-seed spread and the
        comparison with the baseline; the same as text in ``report.txt``."""
        import sacrebleu

        c = self.config
        first = models[0]
        hyp = first["hyp"]
        bleu_m, chrf_m = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
        bleu_score, chrf_score = bleu_m.corpus_score(hyp, [test_ref]), chrf_m.corpus_score(
            hyp, [test_ref])
        numbers: dict[str, float] = {
            "bleu": float(bleu_score.score), "chrf": float(chrf_score.score),
            "test_sentences": float(len(test_src)), "train_rows": float(data_facts["rows"]),
            "train_weight_sum": float(data_facts["weight_sum"]),
            "steps": float(first["training"]["steps"]), "seeds": float(len(models))}
        lines = [f"{self.name}: {data_facts['rows']} training rows"
                 f"{' (sentence-weighted)' if data_facts['weighted'] else ''}, "
                 f"{c.max_steps} updates, test {c.test_src} ({len(test_src)} sentences), "
                 f"{c.backend} beam {c.beam}",
                 f"{'seed':>6} {'BLEU':>7} {'chrF':>7}"]
        if valid_src:
            lines[-1] += f" {'valid BLEU':>11} {'valid chrF':>11}"
            numbers.update({"valid_bleu": first["scores"]["valid_bleu"],
                            "valid_chrf": first["scores"]["valid_chrf"],
                            "valid_sentences": float(len(valid_src))})
        lines += [f"{m['seed']:>6} {m['bleu']:>7.2f} {m['chrf']:>7.2f}"
                  + (f" {m['valid_bleu']:>11.2f} {m['valid_chrf']:>11.2f}" if valid_src else "")
                  for m in models]
        if len(models) > 1:
            for metric in ("bleu", "chrf") + (("valid_bleu", "valid_chrf") if valid_src else ()):
                vals = [m["scores"][metric] for m in models]
                numbers[f"{metric}_mean"] = statistics.fmean(vals)
                numbers[f"{metric}_sd"] = statistics.stdev(vals)
                numbers[f"{metric}_spread"] = max(vals) - min(vals)
            lines.append(f"seed-to-seed: BLEU mean {numbers['bleu_mean']:.2f} sd "
                         f"{numbers['bleu_sd']:.2f} spread {numbers['bleu_spread']:.2f}; chrF mean "
                         f"{numbers['chrf_mean']:.2f} sd {numbers['chrf_sd']:.2f} spread "
                         f"{numbers['chrf_spread']:.2f}")
            if valid_src:
                lines.append(f"valid (choosing settings, not a result): BLEU mean "
                             f"{numbers['valid_bleu_mean']:.2f} sd {numbers['valid_bleu_sd']:.2f}, "
                             f"chrF mean {numbers['valid_chrf_mean']:.2f}")
        summary = (f"BLEU {bleu_score.score:.2f} chrF {chrf_score.score:.2f} (seed {first['seed']}"
                   f", {first['training']['steps']} updates, {data_facts['rows']} rows)")
        if len(models) > 1:
            summary += (f"; over {len(models)} seeds BLEU {numbers['bleu_mean']:.2f} ± "
                        f"{numbers['bleu_sd']:.2f} (spread {numbers['bleu_spread']:.2f}), chrF "
                        f"{numbers['chrf_mean']:.2f} ± {numbers['chrf_sd']:.2f} (spread "
                        f"{numbers['chrf_spread']:.2f})")
        if baseline is not None:
            ran = {**settings, "precision": first["training"].get("precision")}
            extra, text = self._compare(baseline, test_src, test_ref, hyp, ran,
                                        bleu_spread, chrf_spread)
            numbers.update(extra)
            summary += "; " + text
            lines.append(text)
            per_seed, text = self._compare_seeds(models, test_src, test_ref, ran)
            if per_seed:
                numbers.update(per_seed)
                summary += "; " + text
                lines.append(text)
        lines.append(f"BLEU signature: {bleu_m.get_signature()}")
        lines.append(f"chrF signature: {chrf_m.get_signature()}")
        write_atomic(root / "report.txt", "\n".join(lines) + "\n")
        sent = sacrebleu.metrics.BLEU(effective_order=True)
        items = {"sentence_bleu": [sent.sentence_score(h, [r]).score
                                   for h, r in zip(hyp, test_ref)]}
        return Report(numbers=numbers, items=items, summary=summary)

    def _compare(self, baseline, test_src, test_ref, hyp, settings, bleu_spread,
                 chrf_spread) -> tuple[dict[str, float], str]:
        c = self.config
        model, base_settings = baseline
        base_hyp = self._translate(model, test_src)
        from bitextforge.plugins.evaluation.mt_metrics import paired_bootstrap

        _, results = paired_bootstrap(base_hyp, hyp, [test_ref], samples=c.bootstrap_samples,
                                      seed=c.bootstrap_seed)
        numbers: dict[str, float] = {}
        parts = []
        for (metric, (bl, sysr)), key, spread in zip(results.items(), ("bleu", "chrf"),
                                                     (bleu_spread, chrf_spread)):
            delta = float(sysr.score - bl.score)
            numbers.update({f"baseline_{key}": float(bl.score), f"{key}_delta": delta,
                            f"{key}_p_value": float(sysr.p_value),
                            # not {key}_mean: that is the mean over the seeds
                            f"{key}_bootstrap_mean": float(sysr.mean),
                            f"{key}_ci": float(sysr.ci)})
            part = (f"{metric} {delta:+.2f} vs baseline {bl.score:.2f} (paired bootstrap p = "
                    f"{sysr.p_value:.4f})")
            if spread is not None:
                within = abs(delta) < spread
                numbers[f"{key}_within_seed_spread"] = float(within)
                if within:
                    part += f", within the seed-to-seed spread {spread:.2f}: not a real difference"
                else:
                    part += f", beyond the seed-to-seed spread {spread:.2f}"
            parts.append(part)
        text = "; ".join(parts)
        if base_settings is not None:
            # a setting one side did not record (models of older versions) is not compared,
            # unless its absence means off
            base_settings = {**OFF_UNLESS_RECORDED, **base_settings}
            settings = {**OFF_UNLESS_RECORDED, **settings}
            differ = sorted(k for k in FAIR_SETTINGS
                            if base_settings.get(k) is not None and settings.get(k) is not None
                            and base_settings[k] != settings[k])
            own = set(c.baseline_own) | ({"max_steps"} if c.baseline_budget == "own" else set())
            if "max_steps" in own and "max_steps" in differ:
                differ.remove("max_steps")
                text += (f"; the baseline at its own budget of {base_settings['max_steps']} "
                         f"updates, this run at {settings['max_steps']}")
            for k in sorted(own & set(differ)):
                differ.remove(k)
                text += (f"; {k} chosen on each side's validation set: the baseline "
                         f"{base_settings[k]}, this run {settings[k]}")
            if c.init_models:
                # a continued training has its own schedule; what it adds is said instead
                differ = [k for k in differ if k not in ("lr", "warmup_fraction",
                                                         "min_warmup_steps", "max_steps")]
                text += (f"; this run continues the models of {c.init_models} for "
                         f"{settings['max_steps']} more updates at lr {settings['lr']}")
            numbers["baseline_same_settings"] = float(not differ)
            if differ:
                text += ("; UNFAIR: the baseline was trained with other "
                         + ", ".join(f"{k} ({base_settings[k]} vs {settings[k]})" for k in differ))
        return numbers, f"baseline {model}: {text}"


    def _compare_seeds(self, models, test_src, test_ref, settings) -> tuple[dict[str, float], str]:
        """Each seed's model against the baseline run's model of the same seed (when the
        baseline is a run or recipe whose record has it): the paired bootstrap per seed, and the
        median over seeds of the BLEU and chrF differences. Empty when no seed has a partner."""
        rec = getattr(self, "_baseline_record", None)
        if rec is None:
            return {}, ""
        try:
            base = {m["seed"]: m for m in json.loads(rec.read_text(encoding="utf-8"))["models"]}
        except (ValueError, KeyError, TypeError):
            return {}, ""
        numbers: dict[str, float] = {}
        parts, deltas, chrf_deltas, significant = [], [], [], 0
        for m in models:
            partner = base.get(m["seed"])
            if partner is None or not (rec.parent / partner["dir"] / "config.json").is_file():
                continue
            extra, _ = self._compare((rec.parent / partner["dir"], None), test_src, test_ref,
                                     m["hyp"], settings, None, None)
            s = m["seed"]
            d, p = extra["bleu_delta"], extra["bleu_p_value"]
            numbers.update({f"seed{s}_bleu_delta": d, f"seed{s}_bleu_p_value": p,
                            f"seed{s}_chrf_delta": extra["chrf_delta"],
                            f"seed{s}_chrf_p_value": extra["chrf_p_value"]})
            deltas.append(d)
            chrf_deltas.append(extra["chrf_delta"])
            significant += d > 0 and p < 0.05
            parts.append(f"seed {s} {d:+.2f} BLEU (p = {p:.4f})")
        if not deltas:
            return {}, ""
        numbers.update({"seed_pairs": float(len(deltas)),
                        "bleu_delta_median": statistics.median(deltas),
                        "chrf_delta_median": statistics.median(chrf_deltas),
                        "seeds_significantly_better": float(significant)})
        return numbers, (f"per seed against the baseline's same seed: {', '.join(parts)}; median "
                         f"{statistics.median(deltas):+.2f} BLEU, {significant} of {len(deltas)} "
                         f"seeds better with p < 0.05")


def _train_seed(config: dict[str, Any], files: list[str], out: str, seed: int,
                init: str | None, fingerprint: str | None = None,
                pairs: RealPairs | None = None) -> dict[str, Any]:
    """Train one seed's model in a worker process (``workers`` > 1); its messages name the seed,
    since several trainings share the log."""
    global _log_prefix
    _log_prefix = f"seed {seed}: "
    ev = TrainAndTestEvaluator(TrainAndTestEvaluator.Config(**config))
    return ev._train([Path(f) for f in files], Path(out), seed, Path(init) if init else None,
                     fingerprint, pairs)
