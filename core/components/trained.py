"""What a Trainer has written: the paths it declares, and the options they were trained with.

A recipe's ``prepare:`` reuses a finished model instead of training it again: every path a
trainer writes (:func:`declared_outputs`) exists, and the options kept beside the model
(``.NAME.options.json``, :func:`options_path`) agree with those the recipe asks for, apart from
the options that say how a training runs, not what it learns (:data:`RUN_OPTIONS` and the
trainer's ``run_options``). Validation asks the same before any work starts, and
:mod:`bitextforge.pipeline.prepare` trains and writes the options.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .base import Trainer


def will_train(cls: type[Trainer], cfg, force: bool = False) -> bool:
    """Whether a trainer with ``cfg`` trains: with ``force``, or when a path it writes is missing
    (else its finished outputs are reused, and its inputs are not needed)."""
    return force or not all(p.exists() for p in declared_outputs(cls, cfg))


def declared_outputs(cls: type[Trainer], cfg) -> list[Path]:
    """``outputs()`` of a trainer with ``cfg``, without running its constructor (which may load
    libraries or check inputs); the default is just ``output``."""
    probe = cls.__new__(cls)
    probe.config = cfg
    return [Path(p) for p in probe.outputs()]


#: options of every trainer that say how it runs, not what it learns
RUN_OPTIONS = frozenset({"threads", "device"})


def options_path(output: str | os.PathLike) -> Path:
    """Where the options a model was trained with are kept: ``.NAME.options.json`` beside it."""
    out = Path(output)
    return out.with_name(f".{out.name}.options.json")


def trained_options(cls: type[Trainer], cfg) -> dict[str, Any]:
    """The options of ``cfg`` that decide what ``cls`` learns (JSON values): all but ``output``
    and the run options."""
    skip = RUN_OPTIONS | cls.run_options | {"output"}
    return {k: v for k, v in cfg.model_dump(mode="json").items() if k not in skip}


def _default(cls: type[Trainer], key: str) -> Any:
    """An option's default as a JSON value (what a model trained before the option existed
    was trained with); a marker that equals nothing when the option has no default."""
    from pydantic import TypeAdapter

    field = cls.Config.model_fields.get(key)
    if field is None or field.is_required():
        return object()
    return TypeAdapter(field.annotation).dump_python(
        field.get_default(call_default_factory=True), mode="json")


def options_changed(cls: type[Trainer], cfg) -> str | None:
    """One line saying how ``cfg`` differs from the options its existing ``output`` was
    trained with, and what to do; None when they agree or when no options were kept."""
    path = options_path(cfg.output)
    try:
        old = json.loads(path.read_text(encoding="utf-8"))["options"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{path}: unreadable ({exc}); delete it, or retrain with force: true"
    new = trained_options(cls, cfg)
    diffs = []
    for key, value in new.items():
        before = old[key] if key in old else _default(cls, key)
        if before != value:
            diffs.append(f"{key} {_short(before)} then, {_short(value)} now")
    if not diffs:
        return None
    return (f"{cfg.output} exists but was trained with other options ({'; '.join(diffs)}): "
            f"retrain it with force: true, or give this training its own output")


def _short(value: Any, width: int = 60) -> str:
    text = "not set" if value is None else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[:width - 3] + "..."
