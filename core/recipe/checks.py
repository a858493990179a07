"""Checks a recipe's files before any work starts, listing every problem at once.

``bitextforge validate`` and the first moments of ``run`` and ``score`` use them: every input file
exists (a missing relative path is reported with its recipe key and the directory it is relative
to), paired plain input files have the same number of lines (counted up front by counting
newlines in 1 MB blocks, far cheaper than reading the corpus, rather than discovered after the
corpus was processed),
every file or model directory a component or trainer declares in
:meth:`bitextforge.Component.input_paths` exists or is written by an earlier ``prepare:`` entry,
the output directory is not a file, and what the steps and evaluators check themselves
(:meth:`bitextforge.Component.preflight`, for example a shared model directory of other settings).
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

from ..components.paths import flatten, local_model  # noqa: F401 - local_model re-exported
from ..errors import BitextforgeError
from ..io.lines import count_lines

def _missing(source: str, key: str, path: str, what: str = "no such file or directory") -> str:
    """One problem line for a path that does not exist; a relative path says what it is
    relative to, since a recipe run from another directory is the usual cause."""
    where = ""
    if not Path(path).expanduser().is_absolute():
        where = f" (relative paths are relative to the current directory, {Path.cwd()})"
    return f"{source}: {key}: {path}: {what}{where}"


def input_problems(recipe) -> list[str]:
    """Problems with the recipe's ``input`` files: missing files, unequal plain line counts."""
    from ..io.corpus import gzip_problem
    from .models import input_specs

    source = recipe.source
    several = isinstance(recipe.input, list)
    problems = []
    for i, spec in enumerate(input_specs(recipe)):
        where = f"input[{i}]" if several else "input"
        keys = [k for k in ("src", "tgt", "path") if getattr(spec, k)]
        found = []
        for key in keys:
            path = getattr(spec, key)
            p = Path(path)
            if not p.exists():
                found.append(_missing(source, f"{where}.{key}", path, "no such file"))
            elif p.is_dir():
                found.append(f"{source}: {where}.{key}: {path}: is a directory, expected a file")
            elif not p.is_file():
                # a pipe (<(zcat ...), /dev/stdin) can be read once, and a run reads an input
                # more than once: its lines are counted here, then read, and hashed to resume
                found.append(f"{source}: {where}.{key}: {path}: is a pipe or device, not a "
                             f"regular file; a run reads each input more than once, so write "
                             f"it to a file first (a .gz file is read as it is)")
            elif p.suffix == ".gz" and (why := gzip_problem(p)):
                found.append(f"{source}: {where}.{key}: {path}: {why}")
        problems += found
        if spec.format == "jsonl" and not found:
            problems += _unread_keys_in_use(recipe, spec, where)
        if (spec.format == "plain" and not spec.one_sided and not found and spec.limit is None
                and not spec.skip):
            ns, nt = count_lines(spec.src), count_lines(spec.tgt)
            if ns is not None and nt is not None and ns != nt:
                problems.append(f"{source}: {where}: line counts differ: {spec.src} has {ns} "
                                f"lines, {spec.tgt} has {nt}")
    return problems


def first_json_keys(path: str | os.PathLike) -> list[str]:
    """The keys of the first JSON object of a JSONL file (``.gz`` read through gzip), in file
    order; empty when the first line is not a JSON object (the reader reports that itself)."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    try:
        with opener(p, "rt", encoding="utf-8", errors="replace") as fh:
            line = fh.readline(1 << 20)
        obj = json.loads(line)
    except (OSError, EOFError, ValueError):
        return []
    return [str(k) for k in obj] if isinstance(obj, dict) else []


def _strings(value) -> list[str]:
    """Every string inside a config value (nested lists and mappings included)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, (list, tuple)):
        return [s for v in value for s in _strings(v)]
    return []


def _unread_keys_in_use(recipe, spec, where: str) -> list[str]:
    """A JSONL input carries only ``src``/``tgt`` and its ``extra_fields`` as columns; every other
    key of its objects is dropped. A step or evaluator whose options name such a key (a column
    to read) would fail, or find nothing, only once the run reached it: one problem each, read
    from the file's first object."""
    read = {spec.side} if spec.one_sided else {"src", "tgt"}
    dropped = [k for k in first_json_keys(spec.path)
               if k not in read and k not in (spec.extra_fields or [])]
    if not dropped:
        return []
    users = [(f"steps[{i}] ({step.label})",
              [getattr(step, "read", None), *_strings(cfg.model_dump() if cfg else {})])
             for i, (step, cfg) in enumerate(zip(recipe.steps, recipe.configs))]
    users += [(f"evaluate[{i}] ({ev.evaluator})", _strings(cfg.model_dump() if cfg else {}))
              for i, (ev, cfg) in enumerate(zip(recipe.evaluate, recipe.eval_configs))]
    problems = []
    for who, values in users:
        named = [k for k in dropped if k in values]
        if named:
            listed = ", ".join(repr(k) for k in named)
            problems.append(f"{recipe.source}: {where}.extra_fields: {who} names {listed}, a key "
                            f"of {spec.path}'s JSON objects that is not read as a column (only "
                            f"src, tgt and extra_fields are); add it to extra_fields")
    return problems


def unread_jsonl_keys(recipe) -> list[str]:
    """One note per JSONL input whose first object holds keys that are not read (neither
    ``src``/``tgt`` nor in ``extra_fields``): they are dropped, which ``validate`` says."""
    from .models import input_specs

    several = isinstance(recipe.input, list)
    notes = []
    for i, spec in enumerate(input_specs(recipe)):
        if spec.format != "jsonl" or not Path(spec.path).is_file():
            continue
        read = {spec.side} if spec.one_sided else {"src", "tgt"}
        dropped = [k for k in first_json_keys(spec.path)
                   if k not in read and k not in (spec.extra_fields or [])]
        if dropped:
            where = f"input[{i}]" if several else "input"
            notes.append(f"{recipe.source}: {where}: {spec.path}: the keys "
                         f"{', '.join(repr(k[:40]) for k in dropped[:10])} of its JSON objects "
                         f"are not read (list them in extra_fields to keep them as columns)")
    return notes


def _written_by_prepare(path: str, outputs: list[Path]) -> bool:
    p = Path(path).expanduser().resolve()
    return any(p == o or o in p.parents for o in outputs)


def component_problems(recipe, registry, trainers: list[int] | None = None) -> list[str]:
    """Paths that trainers and components declare with ``input_paths`` and that neither exist nor
    are written by an earlier ``prepare:`` entry: of every entry, or with ``trainers`` only of
    those ``prepare:`` indices (what ``bitextforge prepare`` is about to train). A trainer whose
    outputs all exist (and without ``force``) will not train, so its inputs are not needed: a
    model trained on another run's corpus stays usable after that corpus is gone, unless it was
    trained with other options than the recipe asks for (also a problem here)."""
    from ..components.trained import declared_outputs, options_changed, will_train

    source = recipe.source
    problems: list[str] = []
    outputs: list[Path] = []
    entries = []
    for i, (p, cfg) in enumerate(zip(recipe.prepare, recipe.prepare_configs)):
        cls = registry.get("trainer", p.train)
        selected, trains = trainers is None or i in trainers, will_train(cls, cfg, p.force)
        if selected and not trains:
            changed = options_changed(cls, cfg)  # a reused model must be the one asked for
            if changed:
                problems.append(f"{source}: prepare[{i}] {p.train}: {changed}")
        entries.append((f"prepare[{i}]", "trainer", p.train, cfg, True, selected and trains))
    later = [(f"steps[{i}] ({step.label})", step_kind(step), step_name(step), cfg, False,
              trainers is None)
             for i, (step, cfg) in enumerate(zip(recipe.steps, recipe.configs))]
    later += [(f"evaluate[{i}]", "evaluator", ev.evaluator, cfg, False, trainers is None)
              for i, (ev, cfg) in enumerate(zip(recipe.evaluate, recipe.eval_configs))]
    for where, kind, name, cfg, trains, checked in entries + later:
        cls = registry.get(kind, name)
        if not checked:
            if trains:  # not checked, but later paths it writes are still not missing
                outputs += [p.expanduser().resolve() for p in declared_outputs(cls, cfg)]
            continue
        for key, path in flatten(cls.input_paths(cfg)):
            if path is None or Path(path).expanduser().exists():
                continue
            if _written_by_prepare(path, outputs):
                continue
            problems.append(_missing(source, f"{where}.with.{key}", str(path)))
        if trains:
            outputs += [p.expanduser().resolve() for p in declared_outputs(cls, cfg)]
    return problems


def step_kind(step) -> str:
    """The registry kind of a recipe step's component."""
    from .kinds import kind_of

    return kind_of(step).component


def step_name(step) -> str:
    """The component name a recipe step uses."""
    return step.component


def not_a_directory(path: str | os.PathLike) -> str | None:
    """Why ``path`` cannot be (made) a directory, when it or a directory above it is a file:
    ``mkdir`` would only say "File exists" or "Not a directory". None when all is well."""
    p = Path(path).expanduser()
    for q in (p, *p.parents):
        if q.exists() and not q.is_dir():
            return ("is a file, expected a directory" if q == p
                    else f"{q} is a file, not a directory")
    return None


def output_problems(recipe, output_dir: str | None = None) -> list[str]:
    """The run's output directory (``output_dir``, from ``run -o``, else the recipe's
    ``output.dir``) when it is a file or lies under one."""
    if output_dir is not None:
        why = not_a_directory(output_dir)
        return [f"--output: {output_dir}: {why}"] if why else []
    if recipe.input is None or recipe.output is None:
        return []  # a recipe that only trains models writes no output directory
    why = not_a_directory(recipe.output.dir)
    return [f"{recipe.source}: output.dir: {recipe.output.dir}: {why}"] if why else []


def config_problems(recipe, registry, output_dir: str | os.PathLike | None = None,
                    evaluators: bool = True) -> list[str]:
    """What the steps' and evaluators' own :meth:`bitextforge.Component.preflight` checks find,
    with their recipe keys; ``output_dir``: the run's (default: the recipe's ``output.dir``);
    without ``evaluators``, the steps' alone (``bitextforge score`` runs no evaluator)."""
    if recipe.input is None:
        return []  # a recipe that only trains models runs no step or evaluator
    if output_dir is None and recipe.output is not None:
        output_dir = recipe.output.dir
    out = Path(output_dir).expanduser() if output_dir is not None else None
    entries = [(f"steps[{i}] ({step.label})", step_kind(step), step_name(step), cfg)
               for i, (step, cfg) in enumerate(zip(recipe.steps, recipe.configs))]
    entries += [(f"evaluate[{i}]", "evaluator", ev.evaluator, cfg)
                for i, (ev, cfg) in enumerate(zip(recipe.evaluate, recipe.eval_configs))
                if evaluators]
    problems = []
    for where, kind, name, cfg in entries:
        for key, message in registry.get(kind, name).preflight(cfg, out):
            problems.append(f"{recipe.source}: {where}" + (f".with.{key}" if key else "")
                            + f": {message}")
    return problems


def preflight(recipe, registry, output_dir: str | os.PathLike | None = None,
              evaluators: bool = True) -> list[str]:
    """Every problem with the files a recipe will read and what its components can check before
    the run (:func:`config_problems`), one line each (empty when all is well)."""
    # asked in this order so that the calls into io/ and the trainers come last (one descent
    # down the floors); the lines keep the recipe's order: input, declared files, own checks
    own = config_problems(recipe, registry, output_dir, evaluators)
    declared = component_problems(recipe, registry)
    return input_problems(recipe) + declared + own


def check_prepare_files(recipe, registry, only: list[int] | None = None) -> list[str]:
    """For ``bitextforge prepare``: raise one error listing the files the ``prepare:`` trainers
    to run (``only``: these indices, else all) lack; return every other problem (the other
    trainers', the input's, the steps' and the evaluators'), which does not stop this training
    (their models may come from another recipe, or a later prepare) but will stop the run."""
    chosen = list(range(len(recipe.prepare))) if only is None else only
    problems = component_problems(recipe, registry, trainers=chosen)
    if problems:
        raise BitextforgeError("\n".join(problems))
    return input_problems(recipe) + component_problems(recipe, registry)


def check_recipe_files(recipe, registry, output: bool = False,
                       output_dir: str | os.PathLike | None = None,
                       evaluators: bool = True) -> None:
    """Raise one error listing every problem :func:`preflight` finds (``output_dir``: the run's,
    default the recipe's ``output.dir``); with ``output``, also the output directory's
    (:func:`output_problems`; ``validate`` and ``run`` ask for it); without ``evaluators``, not
    the evaluators' own checks."""
    output_dir_problems = output_problems(recipe, output_dir) if output else []
    problems = preflight(recipe, registry, output_dir, evaluators) + output_dir_problems
    if problems:
        raise BitextforgeError("\n".join(problems))
