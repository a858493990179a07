"""``extends:``: a recipe laid over a base recipe, and the base over its own base. Mappings merge
key by key, any other value replaces the base's, ``name+: [...]`` appends to a base's list and
``name[i]: ...`` merges into one of its items. The merge records where each value was written,
so that an error names the file and key path that hold the bad value.

Only YAML recipes may be extended (a ``.yaml`` / ``.yml`` file holding a mapping with recipe
keys), so ``extends:`` cannot be used to print another file back as errors, and a chain is at
most :data:`MAX_EXTENDS_DEPTH` files deep.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..errors import RecipeError, clip, quote
from .models import Recipe
from .moved import moved_hint
from .yaml_safe import yaml_load

#: a key of an extending recipe that adds items to the end of the base's list (``steps+:``)
_APPEND = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)\+$")
#: a key of an extending recipe that merges into one item of the base's list (``steps[3]:``;
#: ``steps[-1]:`` is the last)
_ITEM = re.compile(r"^(?P<name>[A-Za-z_][\w-]*)\[(?P<index>-?\d+)\]$")

#: where each part of a merged recipe was written: key path in the merged recipe -> (file, key
#: path as written there); a path not listed belongs to its longest listed prefix ("" is the
#: recipe the user named)
Origins = dict[str, tuple[str, str]]


def _join(path: str, key: str) -> str:
    return f"{path}{key}" if key.startswith("[") else f"{path}.{key}" if path else key


def _replace(origins: Origins, path: str, where: tuple[str, str]) -> None:
    """``path`` now holds a value written at ``where``: forget what was written below it."""
    for key in [k for k in origins if k.startswith((path + ".", path + "["))]:
        del origins[key]
    origins[path] = where


def _merge(base: Any, child: Any, path: str, origins: Origins, file: str, written: str) -> Any:
    """``child`` (from ``file``, at key path ``written`` there) laid over ``base`` at ``path`` of
    the merged recipe: mappings merge key by key, anything else replaces the base's value;
    ``name+: [...]`` appends to the base's list and ``name[i]: ...`` merges into its item i."""
    if not (isinstance(base, dict) and isinstance(child, dict)):
        _replace(origins, path, (file, written))
        return child
    out = dict(base)
    for key in base:  # what the child leaves alone stays the base's, and the mapping the child's
        sub = _join(path, str(key))
        origins.setdefault(sub, _origin(origins, sub))
    origins[path] = (file, written)
    for key, value in child.items():
        sub_written = _join(written, str(key))
        append, item = _APPEND.match(str(key)), _ITEM.match(str(key))
        if not (append or item):
            out[key] = _merge(base.get(key), value, _join(path, str(key)), origins, file,
                              sub_written)
            continue
        name = (append or item).group("name")
        if name in child:
            raise RecipeError(f"{file}: {sub_written}: {name} is also given whole here; give "
                              f"{name}: (replaces the base's list) or {key}:, not both")
        target = _join(path, name)
        have = out.get(name)
        if have is None and append:
            have = []
        if not isinstance(have, list):
            from_file = _origin(origins, target)[0]
            what = "nothing" if have is None else f"a {type(have).__name__}"
            raise RecipeError(f"{file}: {sub_written}: {from_file} gives {target} as {what}, not "
                              f"a list to {'append to' if append else 'change an item of'}")
        have = list(have)
        if append:
            if not isinstance(value, list):
                raise RecipeError(f"{file}: {sub_written}: expected a list of items to append")
            if target not in origins:  # the items before keep the file they came from
                origins[target] = _origin(origins, target)
            for j, entry in enumerate(value):
                origins[f"{target}[{len(have) + j}]"] = (file, f"{sub_written}[{j}]")
            have += value
        else:
            i = int(item.group("index"))
            i += len(have) if i < 0 else 0
            if not 0 <= i < len(have):
                raise RecipeError(f"{file}: {sub_written}: the base's {name} has {len(have)} "
                                  f"items (0 to {len(have) - 1}, or -1 for the last)")
            have[i] = _merge(have[i], value, f"{target}[{i}]", origins, file, sub_written)
        out[name] = have
    return out


def _origin(origins: Origins, path: str) -> tuple[str, str]:
    """(file, key path in it) where the value at ``path`` of the merged recipe was written."""
    probe = path
    while probe not in origins:
        cut = max(probe.rfind("."), probe.rfind("["))
        probe = probe[:cut] if cut > 0 else ""
    file, written = origins[probe]
    rest = path[len(probe):]
    return file, written + rest if written else rest.lstrip(".")


#: the most ``extends:`` links one recipe may follow (a base of a base of ...): the deepest
#: recipe shipped has five; the bound keeps a long chain from failing deep inside the YAML reader
MAX_EXTENDS_DEPTH = 32

#: the largest file ``extends:`` reads: a recipe is a few KB, and a base is read whole
MAX_BASE_BYTES = 4 << 20

#: the suffixes of a file ``extends:`` may name: a YAML recipe, never any other file
_RECIPE_SUFFIXES = (".yaml", ".yml")


def _recipe_keys() -> set[str]:
    """The top-level keys a recipe may hold (``extends`` included)."""
    return {f.alias or name for name, f in Recipe.model_fields.items() if not f.exclude} | {
        "extends"}


def _is_recipe(data: dict) -> bool:
    """Whether a mapping holds at least one recipe key (``steps+`` and ``steps[2]`` count as
    ``steps``): a file of other keys is not a recipe, and its content must not be echoed back
    as a list of unknown fields."""
    keys = _recipe_keys()
    for key in data:
        m = isinstance(key, str) and (_APPEND.match(key) or _ITEM.match(key))
        if (m.group("name") if m else key) in keys:
            return True
    return False


def layered(data: Any, source: str, chain: tuple[str, ...] = ()) -> tuple[Any, Origins]:
    """The recipe ``data`` (read from ``source``) with its ``extends:`` chain merged in, and where
    each part of it was written. ``extends`` is a path relative to the directory of the file
    that names it, of a YAML recipe (``.yaml`` / ``.yml``, a mapping with recipe keys); a file
    that extends itself, directly or through others, is refused, and so is a chain of more than
    :data:`MAX_EXTENDS_DEPTH` links. ``chain``: the files read so far, the user's first, as
    ``(name as given, resolved path)`` pairs."""
    if not isinstance(data, dict) or "extends" not in data:
        return data, {"": (source, "")}
    data = dict(data)
    ref = data.pop("extends")
    if not isinstance(ref, str) or not ref:
        raise RecipeError(f"{source}: extends: expected the path of a recipe file (relative to "
                          f"this file's directory), got {quote(ref)}")
    shown = clip(ref, 200)
    here = Path(source).parent if not source.startswith("<") else Path()
    base_path = here / ref
    key = str(base_path.resolve())
    chain = chain or ((source, str(Path(source).resolve())),)
    if key in [resolved for _, resolved in chain]:
        names = " -> ".join(Path(c).name for c in (*(r for _, r in chain), key))
        raise RecipeError(f"{source}: extends: {shown} makes a cycle ({names})")
    if len(chain) > MAX_EXTENDS_DEPTH:
        names = [Path(r).name for _, r in chain]
        raise RecipeError(f"{chain[0][0]}: extends: a chain of more than {MAX_EXTENDS_DEPTH} "
                          f"files ({' -> '.join(names[:3])} -> ... -> {names[-1]}); a recipe "
                          f"may extend at most {MAX_EXTENDS_DEPTH} others in a row")
    if base_path.suffix.lower() not in _RECIPE_SUFFIXES:
        raise RecipeError(f"{source}: extends: {shown}: not a recipe file (extends names a YAML "
                          f"recipe, a .yaml or .yml file)")
    if not base_path.is_file():
        raise RecipeError(f"{source}: extends: {shown}: " + (moved_hint(base_path) or (
            f"no such recipe file ({clip(str(base_path.resolve()), 200)})")))
    if base_path.stat().st_size > MAX_BASE_BYTES:
        raise RecipeError(f"{source}: extends: {shown}: not a recipe file (over "
                          f"{MAX_BASE_BYTES >> 20} MB; the largest shipped recipe is a few KB)")
    base_source = str(base_path)
    base = yaml_load(base_path.read_text(encoding="utf-8", errors="replace"), base_source)
    if not isinstance(base, dict):
        raise RecipeError(f"{base_source}: a recipe is a YAML mapping (extended by {source})")
    if not _is_recipe(base):
        raise RecipeError(f"{source}: extends: {shown}: not a recipe (none of its keys is a "
                          f"recipe key such as name, input, steps or output)")
    base, origins = layered(base, base_source, (*chain, (base_source, key)))
    return _merge(base, data, "", origins, source, ""), origins


_ERROR_PATH = re.compile(r"(?P<path>\(top\)|[A-Za-z_][\w-]*(?:\[\d+\]|\.[\w-]+)*)"
                         r"(?P<rest>:.*)$", re.S)


def attribute(message: str, source: str, origins: Origins) -> str:
    """Point each ``source: key.path: ...`` line of a merged recipe's errors at the file and key
    path where the value was written (the base file for a value from the base)."""
    lines = []
    for line in message.split("\n"):
        m = _ERROR_PATH.match(line[len(source) + 2:]) if line.startswith(source + ": ") else None
        if m:
            path = "" if m.group("path") == "(top)" else m.group("path")
            file, written = _origin(origins, path)
            line = f"{file}: {written or '(top)'}{m.group('rest')}"
        lines.append(line)
    return "\n".join(lines)
