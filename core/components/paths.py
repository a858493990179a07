"""The paths a component declares it reads (:meth:`bitextforge.Component.input_paths`): the
helpers a component uses to declare them, and how the framework reads the declaration.

A declaration is a mapping from a key of the component's ``with:`` to a path, or to lists and
mappings of paths (a trainer reads corpora as lists of ``[src, tgt]`` pairs); :func:`flatten`
gives each path its whole key, as validation reports it and the score cache keys on it. A
model option that may name a local directory or a model-hub id declares its value only when it
is a local directory (:func:`local_model`).
"""

from __future__ import annotations

from pathlib import Path


def flatten(paths: dict) -> list[tuple[str, str | None]]:
    """``(key, path)`` pairs, nested lists and mappings flattened depth-first: a list under one
    key becomes ``key[0]``, ``key[1]``..., a pair inside a list ``key[0][1]``, a mapping
    ``key.name``. Trainers read corpora as lists of ``[src, tgt]`` pairs, so one level is not
    enough."""
    out: list[tuple[str, str | None]] = []
    for key, value in paths.items():
        if isinstance(value, dict):
            out += flatten({f"{key}.{k}": v for k, v in value.items()})
        elif isinstance(value, (list, tuple)):
            out += flatten({f"{key}[{i}]": v for i, v in enumerate(value)})
        else:
            out.append((key, value))
    return out


def local_model(spec: str | None) -> str | None:
    """``spec`` when it names a local model directory, None when it is a model-hub id
    (``org/name``) that is looked up when the component starts, not checked as a path.

    A path that starts with ``.``, ``/`` or ``~``, has more than two parts or an empty one can only
    be local. So can ``models/de-en`` when ``models/`` is a local directory: a recipe that keeps
    its models there and names one that was never trained must fail in ``validate``, not minutes
    later when the hub lookup fails."""
    if not spec:
        return None
    parts = spec.split("/")
    if spec.startswith((".", "/", "~")) or len(parts) > 2 or not all(parts):
        return spec
    if len(parts) == 2 and Path(parts[0]).is_dir():
        return spec
    return None
