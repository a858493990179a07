"""``--set key.path=value``: one value of a recipe replaced from the command line before
validation, and the errors it causes blamed on the ``--set`` rather than the recipe file.

A list item is named by its index (``steps[3]``, ``steps.3``, ``steps[-1]`` for the last) or, in
brackets, by a step's name: its ``as:`` name, or its component's name with or without the version
(``steps[length_ratio]``, ``steps[length_ratio.v1]``), so that a command keeps meaning the same
step when steps are added.
"""

from __future__ import annotations

import re
from typing import Any

from ..components.registry import suggest
from ..errors import RecipeError, clip, quote
from .errors import loc_path
from .kinds import STEP_KINDS
from .yaml_safe import yaml_load

#: a part of a key path: ``[...]`` (an index or a step's name) or a key between dots
_PART = re.compile(r"\[(?P<item>[^\]]*)\]|(?P<key>[^.\[\]]+)")
#: keys of a list item that name its component: the step kinds', an evaluator's, a trainer's
_NAMING_KEYS = (*STEP_KINDS, "evaluator", "train")
#: a component's version suffix (``.v1``)
_VERSION = re.compile(r"\.v\d+$")


def _parts(key: str) -> list[tuple[str, bool]]:
    """``steps[1].keep.min`` -> ``[("steps", False), ("1", True), ("keep", False), ...]``: each
    part and whether it was written in brackets (only a bracketed part may be a step's name)."""
    return [(m.group("item") if m.group("item") is not None else m.group("key"),
             m.group("item") is not None) for m in _PART.finditer(key)]


def component_of(item: Any) -> str | None:
    """The component a recipe list item (a step, an evaluator, a trainer) names, if any."""
    if isinstance(item, str):  # an evaluator given by its name alone
        return item
    if isinstance(item, dict):
        for k in _NAMING_KEYS:
            if isinstance(item.get(k), str):
                return item[k]
    return None


def step_label(item: Any) -> str | None:
    """What a step is called in messages: its ``as:`` name, else its component's name without
    the version (``length_ratio``); None for an item that names neither."""
    if isinstance(item, dict) and isinstance(item.get("as"), str):
        return item["as"]
    name = component_of(item)
    return _VERSION.sub("", name) if name else None


def find_item(items: list, name: str, key: str, here: str) -> int:
    """The index of the item of ``items`` (the list at ``here``) called ``name``: by its ``as:``
    name first, else by its component's name with or without the version. A name that fits
    none, or several, is an error naming the ``--set`` ``key`` and the candidates."""
    by_as = [i for i, it in enumerate(items) if isinstance(it, dict) and it.get("as") == name]
    if len(by_as) == 1:
        return by_as[0]
    found = by_as or [i for i, it in enumerate(items) if (c := component_of(it)) is not None
                      and name in (c, _VERSION.sub("", c))]
    if len(found) == 1:
        return found[0]
    if found:
        where = ", ".join(f"{here}[{i}] ({step_label(items[i])})" for i in found)
        raise RecipeError(f"--set {key}: {quote(name)} names {len(found)} items of {here}: "
                          f"{where}; give the index of one, or its as: name")
    names = [lb for lb in map(step_label, items) if lb]
    known = f" (its names: {', '.join(names)})" if names else ""
    raise RecipeError(f"--set {key}: no item of {here} is called {quote(name)}{known}"
                      f"{suggest(name, names)}")


def apply_override(data: dict, assignment: str, source: str) -> str:
    """Apply ``--set key.path=value`` (``steps[1].keep.min=0.5``, ``steps.1.keep.min=0.5`` or
    ``steps[length].keep.min=0.5``); return the key path it wrote, with indices
    (``steps[1].keep.min``). A path that does not fit the recipe is an error naming the ``--set``
    (``source``, the recipe file, is only what it was applied to)."""
    if "=" not in assignment:
        raise RecipeError(f"--set {quote(assignment)}: expected key.path=value")
    key, raw = assignment.split("=", 1)
    parts = _parts(key)
    if not parts:
        raise RecipeError(f"--set {quote(assignment)}: expected key.path=value")
    key = clip(key, 200)
    value = yaml_load(raw, f"--set {key}") if raw != "" else ""
    cur: Any = data
    done: list[Any] = []  # the resolved path so far: keys and indices
    for i, (part, bracketed) in enumerate(parts):
        last = i == len(parts) - 1
        here = loc_path("", tuple(done)) if done else "the recipe"
        if isinstance(cur, list):
            if re.fullmatch(r"-?\d+", part) and (bracketed or part.isdigit()):
                index = int(part) + (len(cur) if part.startswith("-") else 0)
                if not 0 <= index < len(cur):
                    raise RecipeError(f"--set {key}: {quote(part)} is not an index of {here}, a "
                                      f"list of {len(cur)} (0 to {len(cur) - 1}, or -1 for the "
                                      f"last)")
            elif bracketed and part:
                index = find_item(cur, part, key, here)
            else:
                raise RecipeError(f"--set {key}: {quote(part)} is not an index of {here}, a "
                                  f"list of {len(cur)}")
            done.append(index)
            if last:
                cur[index] = value
                continue
            if done == ["evaluate", index] and isinstance(cur[index], str):
                cur[index] = {"evaluator": cur[index]}  # ``- corpus_stats.v1`` gets its with:
            cur = cur[index]
        elif isinstance(cur, dict):
            done.append(part)
            if last:
                cur[part] = value
            else:
                cur = cur.setdefault(part, {})
        else:
            raise RecipeError(f"--set {key}: cannot descend into {quote(part)}: {here} is "
                              f"{quote(cur)} in {source}, not a mapping")
    return loc_path("", tuple(done))


def blame_overrides(message: str, source: str, applied: list[tuple[str, str]]) -> str:
    """Problems at a key path that a ``--set`` wrote (or at one above it) name that ``--set``
    rather than the recipe file, whose text does not hold the bad value. ``applied``: each
    ``--set`` as ``(key path it wrote, assignment)``."""
    lines = []
    for line in message.splitlines():
        if line.startswith(f"{source}: "):
            path = line[len(source) + 2:].split(": ", 1)[0]
            for opath, assignment in reversed(applied):
                if any(a == b or b.startswith((a + ".", a + "[")) for a, b in
                       ((path, opath), (opath, path))):
                    line = f"--set {clip(assignment, 200)}: {line[len(source) + 2:]}"
                    break
        lines.append(line)
    return "\n".join(lines)


#: the start of an error line about a step: who wrote it (a file or a --set), then ``steps[i]``
_STEP_LINE = re.compile(r"^(?P<head>.*?): steps\[(?P<index>\d+)\](?=[.\[:])")


def name_steps(message: str, source: str, steps: Any) -> str:
    """Each line of ``message`` about ``steps[i]`` of the recipe, blamed on the recipe file
    ``source`` or on a ``--set``, says which step that is: ``steps[3] (length_ratio)``. Lines
    blamed on a base file keep its own numbering, which these ``steps`` do not follow."""
    if not isinstance(steps, list):
        return message
    lines = []
    for line in message.splitlines():
        m = _STEP_LINE.match(line)
        if m and (m.group("head") == source or m.group("head").startswith("--set ")):
            i = int(m.group("index"))
            label = step_label(steps[i]) if i < len(steps) else None
            if label:
                line = f"{line[:m.end()]} ({clip(label, 60)}){line[m.end():]}"
        lines.append(line)
    return "\n".join(lines)
