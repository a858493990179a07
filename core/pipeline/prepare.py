"""Running trainers: a recipe's ``prepare:`` list (the models its steps load) and
``bitextforge train``.

A recipe such as ``benchmarks/studies/bet/recipes/roundtrip.yaml`` builds its own NMT models from ``../shared/data``
the first time it runs and reuses them afterwards. In a recipe a trainer is skipped when every path it writes exists; it
trains into temporary names beside the final ones, which are moved into place only when training
succeeds, so an interrupted run never leaves a half-written model that a later run would take for
a finished one.

Reuse by name alone hands a recipe whose trainer options changed (another tilt, another corpus)
the model of the old options, and every figure after it is wrong without a word. So each
training writes its options beside the model (``.NAME.options.json``), and a trainer whose
outputs exist but whose options differ from those (apart from its ``run_options``, which say how
it runs, not what it learns) is refused with the differences named: retrain with ``force: true``,
or give the new model its own ``output``. A model without that file (trained before it existed,
or copied without it) is reused as before.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Callable

from ..components.base import Trainer
from ..components.trained import (RUN_OPTIONS, declared_outputs, options_changed,  # noqa: F401
                                  options_path, trained_options, will_train)
from ..errors import ComponentError, RecipeError
from ..log import say as _say


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _partial(path: Path, tag: str) -> Path:
    return path.with_name(f".{path.name}.partial-{tag}")


def check_only(recipe, only: list[int] | None) -> None:
    """Refuse indices of ``--only`` that ``prepare:`` does not have, in one line."""
    n = len(recipe.prepare)
    bad = [i for i in only or [] if not 0 <= i < n]
    if bad:
        raise RecipeError(f"{recipe.source}: prepare has {n} trainer{'s' if n != 1 else ''} "
                          f"(indices 0-{n - 1}); no prepare[{bad[0]}]")


def run_prepare(recipe, registry, log: Callable[[str], None] | None = None,
                only: list[int] | None = None) -> list[dict[str, Any]]:
    """Run the recipe's trainers in order (``only``: just these indices of ``prepare:``, so that
    independent trainings can run side by side in separate processes); return one manifest entry
    per trainer run. The trainings start from the recipe's ``seed``, in a run as in
    ``bitextforge prepare``."""
    from .plan import seed_everything

    check_only(recipe, only)
    seed_everything(recipe.seed)
    done: list[dict[str, Any]] = []
    for i, (prep, cfg) in enumerate(zip(recipe.prepare, recipe.prepare_configs)):
        if only is not None and i not in only:
            continue
        where = f"prepare[{i}] {prep.train}"
        done.append(train_one(registry, prep.train, cfg, where, prep.force, log))
    return done


def train_one(registry, name: str, cfg, where: str, force: bool = False,
              log: Callable[[str], None] | None = None, announce: bool = True) -> dict[str, Any]:
    """Train one trainer (or skip it when its outputs exist and not ``force``), moving its
    outputs into place atomically; the manifest entry. ``announce`` reports the start and end
    of the training."""
    from .plan import build_component

    say = log or (lambda m: _say("", m))
    cls = registry.get("trainer", name)
    final_out = Path(cfg.output)
    # the outputs a trainer declares depend only on its config: ask a throwaway instance
    finals = declared_outputs(cls, cfg)
    entry: dict[str, Any] = {"trainer": name, "output": str(final_out),
                             "outputs": [str(p) for p in finals]}
    if not will_train(cls, cfg, force):
        changed = options_changed(cls, cfg)
        if changed:
            raise RecipeError(f"{where}: {changed}")
        say(f"{where}: {final_out} exists, not retrained (force: true retrains)")
        return {**entry, "status": "exists"}
    tmp_out = _partial(final_out, str(os.getpid()))
    tmp_cfg = cfg.model_copy(update={"output": str(tmp_out)})
    for p in declared_outputs(cls, tmp_cfg):
        _remove(p)
    _remove_stale_partials(final_out, say, adopt=tmp_out if cls.resumable else None)
    final_out.parent.mkdir(parents=True, exist_ok=True)
    if announce:
        say(f"{where}: training {final_out}")
    t0 = time.perf_counter()
    trainer: Trainer = build_component(registry, "trainer", name, tmp_cfg)  # type: ignore
    try:
        info = trainer.train() or {}
        temps = trainer.outputs()
        missing = [str(p) for p in temps if not p.exists()]
        if missing:
            raise ComponentError(f"{name}: training finished without writing "
                                 f"{', '.join(missing)}")
        for tmp, final in zip(temps, finals):
            if final.exists() or final.is_symlink():
                _remove(final)
            os.replace(tmp, final)
        _write_options(cls, name, cfg)
    except BaseException as exc:
        # an interrupted resumable training keeps its state for the next run to continue (an
        # error removes it: the same inputs would fail again)
        keep = {tmp_out} if cls.resumable and not isinstance(exc, Exception) else set()
        for p in trainer.outputs():
            if p not in keep:
                _remove(p)
        raise
    finally:
        trainer.close()
    seconds = round(time.perf_counter() - t0, 1)
    if announce:
        say(f"{where}: wrote {final_out} in {seconds} s")
    return {**entry, "status": "trained", "seconds": seconds, "info": info}


def _remove_stale_partials(final_out: Path, say, adopt: Path | None = None) -> None:
    """Remove the temporary outputs of earlier trainings of ``final_out`` whose process is gone
    (killed with SIGKILL or by the out-of-memory killer, which no handler can catch); those of a
    training still running elsewhere are left alone. With ``adopt`` (a resumable trainer's
    temporary output), the latest such output is moved there instead, for the trainer to
    continue the state it holds."""
    prefix = _partial(final_out, "").name
    if not final_out.parent.is_dir():
        return
    stale = []
    for p in final_out.parent.iterdir():
        if not p.name.startswith(prefix):
            continue
        pid = p.name[len(prefix):].split(".", 1)[0]
        if pid.isdigit() and not pid_alive(int(pid)):
            stale.append((p, pid))
    outs = [p for p, pid in stale if p == _partial(final_out, pid) and p.is_dir()]
    kept = max(outs, key=lambda p: p.stat().st_mtime) if adopt is not None and outs else None
    for p, _ in stale:
        if p == kept:
            os.replace(p, adopt)
            say(f"moved {p}, left by a training that was stopped, to {adopt}: the trainer "
                f"resumes from it if it holds a state of this training")
        else:
            _remove(p)
            say(f"removed {p}, left by a training that was stopped")


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` runs (one of another user's counts; a number that is no pid at
    all is taken as running, so that what carries it is left alone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError):
        return True  # exists under another user; or not a pid at all: leave it alone
    return True


def _write_options(cls: type[Trainer], name: str, cfg) -> None:
    path = options_path(cfg.output)
    tmp = path.with_name(path.name + f".{os.getpid()}")
    tmp.write_text(json.dumps({"trainer": name, "options": trained_options(cls, cfg)},
                              indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
