"""Saving a recipe from ``bitextforge serve``: the run's recipe with the bounds chosen on the page.

:func:`save_recipe` writes it in one of three forms (the user's recipe edited as text, a short
recipe that ``extends:`` it, or the run's filled recipe), always with absolute input and model
paths, so it runs from any directory, and a header that says where it came from; and never over
a file that serve did not write (:func:`write_saved`).
"""

from __future__ import annotations

import copy
import os
import re
import time
from pathlib import Path
from typing import Any

from ..errors import BitextforgeError
from ..io.corpus import write_atomic
from ..recipe.load import KeepSpec, dump_yaml, parse_recipe, recipe_data
from .data import RunData, RunDataError


#: the first words of every recipe ``bitextforge serve`` saves: a file that starts otherwise was
#: not written by serve, and is never overwritten
SAVED_MARK = "# saved by bitextforge serve"


class SaveRefused(RunDataError):
    """A save that would overwrite a file serve did not write."""


def write_saved(path: Path, text: str) -> Path:
    """Write a saved recipe: a new file, or over a file that starts with :data:`SAVED_MARK`; any
    other file of that name (or a link, a directory) is left alone and :class:`SaveRefused`
    raised. A new file is linked into place, which fails if another appeared meanwhile."""
    import tempfile

    if path.exists() or path.is_symlink():
        first = ""
        if path.is_file() and not path.is_symlink():
            try:
                with open(path, encoding="utf-8") as fh:
                    first = fh.readline()
            except (OSError, UnicodeDecodeError):
                pass
        if not first.startswith(SAVED_MARK):
            raise SaveRefused(f"{path.name}: {path.parent} already has a file of that name that "
                              f"bitextforge serve did not write; choose another name")
        return write_atomic(path, text)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise RunDataError(f"{path.parent}: cannot save a recipe there ({exc.strerror})") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise SaveRefused(f"{path.name}: a file of that name appeared in {path.parent} while "
                              f"saving; choose another name") from None
    finally:
        os.unlink(tmp)
    return path



def run_base(data: RunData) -> Path:
    """The directory the run was started from, as far as the run tells: relative paths in
    its recipe (inputs, models, ``output.dir``) were relative to it. Where the manifest's
    ``output.dir`` is relative, the run directory shown ends with it and what comes before is
    that directory; otherwise the first of serve's own current directory and the run
    directory's parents in which every input file the manifest lists exists; else the
    current directory."""
    candidates: list[Path] = []
    out = (data.manifest.get("output") or {}).get("dir")
    shown = Path(os.path.abspath(data.run_dir)) if data.run_dir is not None else None
    if shown is not None and isinstance(out, str) and out and not Path(out).is_absolute():
        parts = Path(os.path.normpath(out)).parts
        if ".." not in parts and shown.parts[-len(parts):] == parts:
            candidates.append(Path(*shown.parts[:-len(parts)]))
    candidates.append(Path.cwd())
    if shown is not None:
        candidates += list(shown.parents)
    files = [f for f in ((data.manifest.get("input") or {}).get("files") or [])
             if isinstance(f, str) and not Path(f).expanduser().is_absolute()]
    return next((c for c in candidates if all((c / f).exists() for f in files)),
                candidates[0])

def save_recipe(data: RunData, keeps: dict[int, KeepSpec], path: Path) -> Path:
    """Write a recipe that reruns this run with ``keeps`` as its filter bounds into an
    ``output.dir`` beside the run shown; validated before writing, and never written over a
    file that serve did not write (:class:`SaveRefused`).

    Its input and model paths are absolute (a relative one is resolved against
    :func:`run_base`), so it runs from any directory, and its header says where it came
    from. Its body is one of:

    - the user's recipe file (the manifest's ``recipe_file``), edited as text: only the
      ``keep:`` of each edited step, ``output.dir`` and relative paths change, so comments,
      order and the keys left to their defaults stay as the user wrote them;
    - where that file ``extends:`` another, or cannot be edited exactly: a short recipe that
      ``extends:`` the file (by its absolute path) and sets only the changed bounds,
      ``output.dir`` and relative paths made absolute;
    - where the file is gone or no longer the recipe that ran (edited since, or run with
      ``--set``): the run's filled recipe, every option written out, and the header says
      why."""
    for index in keeps:
        st = data.step(index)
        if not st.decides or not st.editable:
            raise RunDataError(f"steps[{index}] has no bounds to change")
    base = run_base(data)
    # beside the run shown (``run -o DIR`` is not in the filled recipe), never over it
    shown = data.run_dir or (data.manifest.get("output") or {}).get("dir") or (
        data.recipe.output.dir if data.recipe.output else None) or "runs/" + data.recipe.name
    shown = Path(os.path.abspath(base / Path(shown).expanduser()))
    out_dir = f"{shown}-{path.stem}"
    header = [f"{SAVED_MARK} ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}): "
              f"{data.recipe.name} with the filter bounds chosen on its page",
              f"# the run shown: {data.run_dir and os.path.abspath(data.run_dir) or shown}"
              if data.manifest.get("scores_file") is None else
              f"# the scores shown: {os.path.abspath(data.manifest['scores_file'])}",
              f"# its paths are absolute, so it runs from any directory: "
              f"bitextforge run {os.path.abspath(path)}"]
    user = _user_recipe(data, base)
    text = None
    if user is not None:
        user_path, user_text, raw = user
        edits = _path_edits(raw, base)
        if "extends" not in (_plain_yaml(user_text) or {}):
            body = _edit_recipe_text(user_text, keeps, out_dir, edits)
            if body is not None:
                text = "\n".join([*header, f"# from {user_path}, edited: the bounds "
                                  f"changed on the page, output.dir and relative paths"]) \
                    + "\n" + body
        if text is None:
            body = _extends_recipe(user_path, raw, keeps, out_dir, edits)
            text = "\n".join([*header, f"# the recipe that ran, {user_path}, with only the "
                              f"bounds changed on the page, output.dir and relative paths "
                              f"set here"]) + "\n" + body
    if text is None:
        import yaml

        filled = yaml.safe_load(data.recipe_text)
        for index, keep in keeps.items():
            filled["steps"][index]["keep"] = keep.model_dump(exclude_none=True)
        filled["output"] = {**(filled.get("output") or {}), "dir": out_dir}
        for where, value in _path_edits(filled, base):
            _set_at(filled, where, value)
        name = data.manifest.get("recipe_file")
        why = (f"{name} is not the recipe that ran (gone, edited since, or run with --set)"
               if name else "the run names no recipe file")
        text = "\n".join([*header, f"# every option written out: {why}"]) + "\n" + \
            dump_yaml(filled)
    saved = parse_recipe(text, str(path))  # a saved recipe is valid, or nothing is written
    if any(saved.steps[i].keep != keep for i, keep in keeps.items()) or \
            saved.output is None or saved.output.dir != out_dir:
        raise RunDataError(f"{path.name}: the recipe to save does not read back as the "
                           f"bounds chosen; nothing written")
    return write_saved(path, text)

def _user_recipe(data: RunData, base: Path) -> tuple[Path, str, dict] | None:
    """``(absolute path, text, data with extends: merged)`` of the recipe file the run was
    started with (a relative name is relative to ``base``), when it still reads as exactly
    the recipe that ran."""
    name = data.manifest.get("recipe_file")
    if not name:
        return None
    path = Path(os.path.abspath(base / Path(name).expanduser()))
    try:
        text = path.read_text(encoding="utf-8")
        same = parse_recipe(text, str(path)).filled() == data.recipe.filled()
        raw = recipe_data(path) if same else None
    except (OSError, UnicodeDecodeError, BitextforgeError):
        return None
    return (path, text, raw) if same else None


def _plain_yaml(text: str) -> Any:
    import yaml

    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _absolute(value: Any, base: Path) -> Any:
    """``value`` with every string that names an existing file or directory relative to
    ``base`` made absolute (lists and mappings walked); other values as they are. A string that
    names nothing there (a column, a language, a hub model id) is not a path of this run."""
    if isinstance(value, dict):
        return {k: _absolute(v, base) for k, v in value.items()}
    if isinstance(value, list):
        return [_absolute(v, base) for v in value]
    if not isinstance(value, str) or not value or value != value.strip() or "\n" in value \
            or "://" in value or value.startswith("~") or Path(value).is_absolute():
        return value
    try:
        found = (base / value).exists()
    except (OSError, ValueError):
        found = False
    return os.path.abspath(base / value) if found else value


def _path_edits(raw: dict, base: Path) -> list[tuple[str, Any]]:
    """``(key path, value)`` for every relative path in a recipe's data that ``base`` resolves:
    input files, and each top-level key of a ``with:`` of ``prepare``, ``steps`` and
    ``evaluate`` that holds one (trainers' outputs and models included), made absolute."""
    edits: list[tuple[str, Any]] = []
    inp = raw.get("input")
    items = [(f"input[{i}]", x) for i, x in enumerate(inp)] if isinstance(inp, list) \
        else [("input", inp)]
    for where, spec in items:
        if isinstance(spec, dict):
            for key in ("src", "tgt", "path"):
                value = spec.get(key)
                new = _absolute(value, base)
                if new != value:
                    edits.append((f"{where}.{key}", new))
    for section in ("prepare", "steps", "evaluate"):
        for i, entry in enumerate(raw.get(section) or []):
            options = entry.get("with") if isinstance(entry, dict) else None
            for key, value in (options.items() if isinstance(options, dict) else ()):
                new = _absolute(value, base)
                if new != value:
                    edits.append((f"{section}[{i}].with.{key}", new))
    return edits


_KEY_PATH = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def _set_at(data: Any, where: str, value: Any) -> None:
    """Set the value at key path ``where`` (``steps[2].with.model``) of plain data."""
    parts = [int(i) if i else k for k, i in _KEY_PATH.findall(where)]
    for part in parts[:-1]:
        data = data[part]
    data[parts[-1]] = value


def _keep_written(keep: KeepSpec, given: Any) -> dict[str, Any]:
    """The ``keep:`` mapping to write for ``keep``: the keys the user gave, and the others that
    differ from their defaults; whole numbers as a user writes them (4, not 4.0)."""
    given = given if isinstance(given, dict) else {}
    new = {k: v for k, v in given.items() if getattr(keep, k, None) is not None}
    for k, v in keep.model_dump().items():
        default = KeepSpec.model_fields[k].default
        if v is not None and (k in new or v != default):
            # 4.0 from the page's JSON reads as 4, as a user writes it
            new[k] = int(v) if isinstance(v, float) and v.is_integer() else v
    return new


def _extends_recipe(user_path: Path, raw: dict, keeps: dict[int, KeepSpec], out_dir: str,
                    edits: list[tuple[str, Any]]) -> str:
    """A short recipe that ``extends:`` the recipe that ran (``raw``: its data, extends merged)
    and sets only the edited bounds, ``output.dir`` and the path ``edits``. An extending
    recipe's mappings merge key by key into the base's, so a bound the base sets and the page
    cleared is written as null."""
    doc: dict[str, Any] = {"extends": str(user_path)}
    if isinstance(raw.get("input"), list) and any(w.startswith("input[") for w, _ in edits):
        doc["input"] = copy.deepcopy(raw["input"])  # a list is replaced whole: the base's
        for where, value in edits:
            if where.startswith("input["):
                _set_at(doc, where, value)
    inputs = {w.split(".", 1)[1]: v for w, v in edits if w.startswith("input.")}
    if inputs:
        doc["input"] = inputs
    doc["output"] = {"dir": out_dir}  # merged into the base's output (or replacing ``output: DIR``)
    items: dict[str, dict[str, Any]] = {}
    for index in sorted(keeps):
        given = (raw["steps"][index] or {}).get("keep")
        written = _keep_written(keeps[index], given)
        for k in (given if isinstance(given, dict) else {}):
            written.setdefault(k, None)  # cleared on the page: null, or the base's stays
        items.setdefault(f"steps[{index}]", {})["keep"] = written
    for where, value in edits:
        m = re.match(r"(\w+\[\d+\])\.with\.(.+)$", where)
        if m:
            items.setdefault(m.group(1), {}).setdefault("with", {})[m.group(2)] = value
    doc.update(items)
    return dump_yaml(doc)


def _flow(value: Any) -> str:
    """``value`` as one line of YAML flow style (``{max: 1.5}``, ``runs/x``)."""
    import yaml

    return yaml.safe_dump([value], default_flow_style=True, width=1 << 30,
                          sort_keys=False).strip()[1:-1]


def _span(node) -> tuple[int, int]:
    """Where ``node`` stands in the text. A block mapping's own end lies after its trailing
    comments and the next line's indent; it ends here with its last value."""
    import yaml

    end = node.end_mark.index
    if isinstance(node, yaml.MappingNode) and not node.flow_style and node.value:
        end = _span(node.value[-1][1])[1]
    return node.start_mark.index, end


def _edit_recipe_text(text: str, keeps: dict[int, KeepSpec], out_dir: str,
                      paths: list[tuple[str, Any]] = ()) -> str | None:
    """``text`` with each ``steps[i].keep`` replaced by ``keeps[i]`` (the keys the user gave
    kept, a bound now unset dropped, other defaults not added), ``output.dir`` by ``out_dir`` and
    the value at each key path of ``paths`` by its new value; None where the text's shape does
    not allow an exact edit (no ``keep:`` to replace, an alias, ...), or the edited text does
    not parse to what was asked."""
    import yaml

    def get(node, key):
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value == key:
                    return v
        return None

    def at(node, where: str):
        for key, index in _KEY_PATH.findall(where):
            if index:
                node = node.value[int(index)] if isinstance(node, yaml.SequenceNode) and \
                    int(index) < len(node.value) else None
            else:
                node = get(node, key)
            if node is None:
                return None
        return node

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        raw = yaml.safe_load(text)
    except yaml.YAMLError:
        return None
    edits: list[tuple[int, int, str]] = []
    steps = get(root, "steps")
    for index, keep in keeps.items():
        if not isinstance(steps, yaml.SequenceNode) or index >= len(steps.value):
            return None
        node = get(steps.value[index], "keep")
        given = raw["steps"][index].get("keep")
        if node is None or not isinstance(given, dict):
            return None
        edits.append((*_span(node), _flow(_keep_written(keep, given))))
    output = get(root, "output")
    node = output if isinstance(output, yaml.ScalarNode) else get(output, "dir")
    if not isinstance(node, yaml.ScalarNode):
        return None
    edits.append((*_span(node), _flow(out_dir)))
    for where, value in paths:
        node = at(root, where)
        if node is None:
            return None
        edits.append((*_span(node), _flow(value)))
    for start, end, value in sorted(edits, reverse=True):
        text = text[:start] + value + text[end:]
    try:
        edited = parse_recipe(text, "<saved>")
    except BitextforgeError:
        return None
    if edited.output is None or edited.output.dir != out_dir or any(
            edited.steps[i].keep != keep for i, keep in keeps.items()):
        return None
    return text


