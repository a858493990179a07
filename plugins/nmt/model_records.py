"""How ``train_and_test.v1`` knows its models again: where they live, the settings and data that
make each one (its fingerprint), the record of a run's models and the stamp beside each model, and
why a shared model directory is not trained over."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from bitextforge import InputError


#: the train-nmt options a train_and_test.v1 step passes on unchanged (defaults included)
TRAIN_SETTINGS = ("vocab_size", "spm", "d_model", "layers", "heads", "ffn_dim", "dropout",
                  "batch_tokens", "lr", "warmup_fraction", "min_warmup_steps",
                  "label_smoothing", "max_len", "subword_alpha", "subword_nbest", "threads")


#: settings that must agree for two models to be compared fairly (threads change speed only;
#: precision is the arithmetic the training ran in, read from each model's training facts,
#: since ``auto`` means bf16 on one day's CPU and fp32 on another's)
FAIR_SETTINGS = tuple(k for k in TRAIN_SETTINGS if k != "threads") + ("max_steps", "precision",
                                                                     "ema")


RECORD = "train_and_test.json"


#: in each model's directory: its seed, fingerprint, settings and training facts, written with
#: the model, so a model whose run stopped before the record was written is still reused
STAMP = "train_and_test.model.json"


#: fair settings recorded only when on, with their value when off: a record without one (of a
#: model older than the option) trained without it
OFF_UNLESS_RECORDED = {"ema": 0.0, "subword_alpha": 0.0}


def models_root(model_dir: str | Path | None, run_dir: str | Path) -> Path:
    """Where train_and_test.v1 keeps its training data, models, hypotheses and record
    (:data:`RECORD`) for the run in ``run_dir``: ``model_dir`` when the recipe gives one (runs
    of one seed each may share it), else ``<run_dir>/train_and_test``."""
    return Path(model_dir) if model_dir else Path(run_dir) / "train_and_test"


def models_of(path: str | Path) -> Path:
    """Where the train_and_test.v1 models named by ``path`` are: ``path`` itself when it is a
    model_dir (it holds the record), else the run directory's models, in the ``model_dir`` its
    ``recipe.filled.yaml`` gave (so a run whose seeds shared one is named by its run directory)
    or ``<run>/train_and_test``. The directory is returned whether or not it holds a record."""
    p = Path(path)
    if (p / RECORD).is_file():
        return p
    model_dir = None
    filled = p / "recipe.filled.yaml"
    if filled.is_file():
        import yaml

        for ev in (yaml.safe_load(filled.read_text(encoding="utf-8")) or {}).get("evaluate") or []:
            if ev.get("evaluator") == "train_and_test.v1":
                model_dir = (ev.get("with") or {}).get("model_dir")
                break
    return models_root(model_dir, p)


def sha256_files(paths: list[Path]) -> str:
    """One hash of the names and contents of ``paths``, in order (the training data of a model)."""
    h = hashlib.sha256()
    for p in paths:
        h.update(p.name.encode())
        with open(p, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    return h.hexdigest()


def unfinished_dir(out: Path) -> Path:
    """Where a model is trained before it is renamed to ``out``, so that ``out`` is whole."""
    return out.with_name(f".{out.name}.tmp")


def read_stamp(model: Path) -> dict[str, Any] | None:
    """The stamp :meth:`TrainAndTestEvaluator._train` left in ``model`` (its seed, fingerprint,
    settings and training facts), or None for a model without one (older, or trained
    elsewhere) or an unreadable one (then the record alone decides)."""
    try:
        stamp = json.loads((model / STAMP).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return stamp if isinstance(stamp, dict) else None


def settings_of(c) -> dict[str, Any]:
    """The settings of a train_and_test.v1 config that make its models (with the training data
    and the seed, their fingerprint)."""
    settings = {k: getattr(c, k) for k in (*TRAIN_SETTINGS, "max_steps")}
    if not c.subword_alpha:
        # off: the records of models trained before the option existed keep their
        # fingerprints and are still reused (and the n-best size then means nothing)
        del settings["subword_alpha"], settings["subword_nbest"]
    if c.precision != "auto":
        # only when chosen: the records of models trained before the option existed (all
        # with auto) keep their fingerprints and are still reused
        settings["precision"] = c.precision
    if c.ema:
        settings["ema"] = c.ema  # likewise: absent from the records of models without it
    return settings


def _unlike(was: dict[str, Any], now: dict[str, Any]) -> str:
    """How a model's recorded settings differ from this run's, in words (the corpus or the
    model continued when the settings agree)."""
    differ = [f"{k} {was.get(k)} (this run: {now.get(k)})" for k in sorted(set(was) | set(now))
              if was.get(k) != now.get(k)]
    return ("with other settings: " + ", ".join(differ) if differ
            else "on another corpus or from another model continued")


def shared_model_dir(model_dir: str | None, run_dir: Path) -> bool:
    """Whether a run into ``run_dir`` keeps its models in a ``model_dir`` outside it, which runs
    share (models in the run's own directory belong to that run alone)."""
    return model_dir is not None and not models_root(model_dir, run_dir).resolve().is_relative_to(
        Path(run_dir).resolve())


def made_with(made: dict[str, Any], record: dict[str, Any]) -> dict[str, Any]:
    """The settings a model was trained with: its stamp's, else its run record's."""
    return made.get("settings") or record.get("settings") or {}


def shared_refusal(root: Path, out: Path, was: dict[str, Any], now: dict[str, Any]) -> str:
    """Why a run may not train over ``out`` in the shared model directory ``root``."""
    return (f"{root} holds {out.name} trained {_unlike(was, now)}; give this run its own "
            f"model_dir, or set retrain: true to replace it")


def model_fingerprint(data_hash: str, settings: dict[str, Any], seed: int | None) -> str:
    """What makes a model: the training files, the settings and the seed."""
    return hashlib.sha256(json.dumps([data_hash, settings, seed], sort_keys=True).encode()
                          ).hexdigest()


def record_model(record: Path, seed: int) -> tuple[Path, dict[str, Any] | None]:
    """The model of ``seed`` in a train_and_test.json record, or its first model when it has
    none of that seed (model directories are named relative to the record, so a run directory
    can be moved), and its settings with the precision it was trained in (None when the record
    predates that fact)."""
    try:
        data = json.loads(record.read_text(encoding="utf-8"))
        model = next((m for m in data["models"] if m.get("seed") == seed), data["models"][0])
        settings = {**data["settings"], "precision": model.get("training", {}).get("precision")}
        return record.parent / model["dir"], settings
    except (ValueError, KeyError, IndexError, TypeError):
        raise InputError(f"{record}: not a train_and_test.v1 record (models[0].dir and "
                         f"settings)") from None
