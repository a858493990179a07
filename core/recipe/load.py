"""YAML recipes: safe loading, whole-tree validation before anything runs, a filled copy with every
default written out, and a reproducibility signature.

Validation follows explosion/confection: each component's ``with:`` mapping is checked against its
``Config`` model, unknown keys are refused with the nearest valid names, and every error names the
recipe file and the key path (``steps[2].with.max_ratoi``).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

import yaml
from pydantic import (BaseModel, ConfigDict, Field, ValidationError,
                      model_validator)

from ..components.base import ComponentConfig
from .moved import moved_hint
from ..errors import RecipeError, RegistryError, check_message
from ..pipeline.kinds import STEP_KINDS
from ..components.registry import Registry, get_registry, suggest
from .step_models import (FilterStep, GenerateStep, KeepSpec, ParaphraseStep,  # noqa: F401
                          Resources, SplitStep, StepModel, TagToken, WeightStep)

_Strict = ConfigDict(extra="forbid", populate_by_name=True)



class InputSpec(BaseModel):
    """One input of the corpus: paired plain files, a TSV file or JSONL, or a monolingual file that
    holds one side only (``src:`` or ``tgt:`` alone, or ``path:`` with ``side:``), whose other
    side stays empty until a ``generate:`` step fills it (back-translation, Sennrich et al. 2016).

    ``input:`` is one such mapping, or a list of them, each with a ``name`` (the rows' ``origin``),
    read one after the other."""

    model_config = _Strict
    #: what to write instead of a key users reach for that is no field (too far from any for
    #: a nearest-name hint)
    unknown_hints: ClassVar[dict[str, str]] = {
        **dict.fromkeys(("tsv", "jsonl", "file", "files", "filename"),
                        "give the file as path: (its format is inferred from the name)"),
        **dict.fromkeys(("mono", "monolingual", "lang", "language"),
                        "a monolingual input is src: or tgt: alone, or path: with side:")}
    name: str | None = Field(None, pattern=r"^[A-Za-z0-9_.-]+$", description="The input's name, "
                             "written to each row's `origin` (default `input`); required and "
                             "unique when `input:` is a list.")
    format: Literal["plain", "tsv", "jsonl"] | None = Field(
        None, description="plain (src + tgt files), tsv or jsonl; inferred when omitted.")
    src: str | None = Field(None, description="Source-side file, one sentence per line (.gz ok).")
    tgt: str | None = Field(None, description="Target-side file, line-aligned with src (.gz ok).")
    path: str | None = Field(None, description="The TSV or JSONL file (.gz ok); or, with `side`, "
                             "a plain monolingual file.")
    side: Literal["src", "tgt"] | None = Field(
        None, description="A monolingual input: the side its text is (inferred for a plain input "
        "with only src or only tgt); the other side is empty until a generate step fills it.")
    columns: list[str] | None = Field(None, description="TSV column names by position; must "
                                      "include src and tgt (or the `side` of a monolingual TSV). "
                                      "Default: the header line.")
    header: bool = Field(False, description="TSV: the first line is a header (skipped).")
    extra_fields: list[str] | None = Field(None, description="JSONL: extra keys to carry as columns.")
    extra_fields_policy: Literal["error", "drop-extra"] = Field(
        "error", description="TSV rows with more fields than columns: error, or keep the first ones.")
    on_invalid_utf8: Literal["error", "replace"] = Field(
        "error", description="Invalid UTF-8: stop with file and line, or replace and count.")
    skip: int = Field(0, ge=0, description="Skip the first N rows (e.g. the lines another input "
                      "reads as bitext).")
    limit: int | None = Field(None, gt=0, description="Read only the first N rows (after skip).")
    max_ratio: float | None = Field(None, gt=0, description="Read at most this many rows per row "
                                    "of the two-sided inputs listed before this one (after "
                                    "repeat): a cap on monolingual text as a multiple of the "
                                    "bitext size.")
    sample: Literal["first", "random"] = Field(
        "first", description="With limit or max_ratio: take the first rows, or a random sample "
        "(seeded by the recipe's seed; the file is counted once first; input order kept).")
    repeat: int = Field(1, ge=1, description="Read the input this many times (upsampling real "
                        "bitext against synthetic rows); each copy gets fresh ids.")
    weight: float = Field(1.0, ge=0, description="Initial sentence weight of the input's rows "
                          "(the `weight` column, Marian's --data-weighting).")
    tag: dict[Literal["src", "tgt"], TagToken] | None = Field(
        None, description="Tokens written in front of this input's text, by side, when the corpus "
        "is written (Caswell et al. 2019's tagging of a whole input), e.g. `{tgt: <LEX>}`; steps "
        "score the text without it, and a generate step's own `tag` replaces it on the side the "
        "step fills.")

    #: fields a one-input recipe leaves out of its filled copy while they hold their default, so
    #: recipes written before several inputs existed keep their signature
    NEW_FIELDS: ClassVar[dict[str, Any]] = {"name": None, "side": None, "skip": 0,
                                            "max_ratio": None, "sample": "first", "repeat": 1,
                                            "weight": 1.0, "tag": None}

    @model_validator(mode="after")
    def _check(self):
        fmt = self.format
        if fmt is None:
            if self.src or self.tgt:
                fmt = "plain"
            elif self.path and self.side:
                fmt = "plain" if not re.search(r"\.(tsv|jsonl)(\.gz)?$", self.path) else (
                    "jsonl" if re.search(r"\.jsonl(\.gz)?$", self.path) else "tsv")
            elif self.path:
                fmt = "jsonl" if re.search(r"\.jsonl(\.gz)?$", self.path) else "tsv"
            else:
                raise ValueError("give src and tgt files, or a path to a TSV/JSONL file")
            object.__setattr__(self, "format", fmt)
        if fmt == "plain":
            if self.src and self.tgt:
                if self.side:
                    raise ValueError("side is for a monolingual input; this one has src and tgt")
            elif self.src or self.tgt:
                given = "src" if self.src else "tgt"
                if self.side not in (None, given):
                    raise ValueError(f"side: {self.side}, but the file is given as {given}")
                object.__setattr__(self, "side", given)
                if self.path:
                    raise ValueError("give the monolingual file as src, tgt or path, not two")
            elif self.path and self.side:
                object.__setattr__(self, self.side, self.path)
                object.__setattr__(self, "path", None)
            else:
                raise ValueError("format plain needs both src and tgt (or one of them alone for "
                                 "a monolingual input)")
        if fmt in ("tsv", "jsonl") and not self.path:
            raise ValueError(f"format {fmt} needs path")
        if fmt == "tsv" and not self.columns and not self.header:
            raise ValueError("a TSV input needs columns: [...] or header: true")
        return self

    @property
    def one_sided(self) -> bool:
        """True for a monolingual input (one side only)."""
        return self.side is not None

    @property
    def label(self) -> str:
        """The input's name, as written to ``origin``."""
        return self.name or "input"

    def files(self) -> list[str]:
        """The files this input reads."""
        if self.format == "plain":
            return [f for f in (self.src, self.tgt) if f]
        return [self.path] if self.path else []


def input_specs(recipe: "Recipe") -> list[InputSpec]:
    """The recipe's inputs as a list (one ``input:`` mapping is a list of one; none: empty)."""
    if recipe.input is None:
        return []
    return list(recipe.input) if isinstance(recipe.input, list) else [recipe.input]


class OutputSpec(BaseModel):
    """Where and how the run writes its results."""

    model_config = _Strict
    dir: str = Field(description="Run directory (created; files inside are replaced atomically).")
    formats: list[Literal["plain", "tsv", "jsonl", "opustrainer"]] = Field(
        default_factory=lambda: ["plain", "tsv"],
        description="plain: corpus.src/corpus.tgt; tsv: corpus.tsv with every column; jsonl; "
        "opustrainer: opustrainer/config.yml with one dataset per origin, mixed in the "
        "proportions of the output (needs tsv).")
    write_rejected: bool = Field(True, description="Write rejected.tsv: each rejected row with "
                                 "the step and score that rejected it.")
    shard_size: int | None = Field(100_000, ge=1, description="Input rows per shard: each finished "
                                   "shard is recorded so a killed run resumes after it (empty: "
                                   "one pass). Runs with keep top/words are never sharded.")
    report: bool = Field(True, description="Write report.html, a snapshot of the `bitextforge "
                         "serve` page: rows in and out per step, score histograms, samples, "
                         "evaluator tables (read back from corpus.tsv and rejected.tsv with "
                         "pyarrow, part of the core install).")


class EvaluateStep(BaseModel):
    """Evaluate the final corpus."""

    model_config = _Strict
    evaluator: str = Field(description="Registered Evaluator name, e.g. corpus_stats.v1.")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                  description="The component's configuration.")


class PrepareStep(BaseModel):
    """Build a model the steps load (a Trainer), before the first line is read; skipped when its
    outputs exist."""

    model_config = _Strict
    train: str = Field(description="Registered Trainer name, e.g. nmt_model.v1.")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                  description="The trainer's configuration (always an `output`).")
    force: bool = Field(False, description="Train even when the outputs exist (they are replaced "
                        "only when training succeeds).")


Step = Union[tuple(kind.model for kind in STEP_KINDS.values())]  # type: ignore[valid-type]


class Recipe(BaseModel):
    """A whole recipe, validated; ``configs`` holds each step's validated component Config."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)
    name: str = Field(description="Name of the recipe (used in the signature).")
    description: str = Field("", description="Free text.")
    input: InputSpec | list[InputSpec] | None = Field(
        None, description="The corpus: one input, or a list of named inputs read one after the "
        "other (bitext and monolingual text); only a recipe that just trains models (prepare: "
        "alone) has none.")
    prepare: list[PrepareStep] = Field(default_factory=list, description="Trainers run before "
                                       "the steps, each skipped when its outputs exist.")
    steps: list[Step] = Field(default_factory=list)
    evaluate: list[EvaluateStep] = Field(default_factory=list)
    output: OutputSpec | None = Field(None, description="Where results go; required with "
                                      "steps or evaluate.")
    runner: Literal["local", "ray"] = Field("local", description="Execution backend: local "
                                            "(streaming, in-process) or ray (Ray Data).")
    seed: int = Field(1234, description="Seed for every random choice (sampling, shuffles).")
    batch_size: int = Field(5000, gt=0, description="Rows per columnar batch.")
    progress: bool = Field(True, description="Show a progress bar with rows per second.")

    # filled in by load_recipe (not part of the YAML)
    source: str = Field("<recipe>", exclude=True)
    configs: list[ComponentConfig] = Field(default_factory=list, exclude=True)
    eval_configs: list[ComponentConfig] = Field(default_factory=list, exclude=True)
    prepare_configs: list[ComponentConfig] = Field(default_factory=list, exclude=True)

    def filled(self) -> dict[str, Any]:
        """The recipe with every default written out, component configs included."""
        data = self.model_dump(by_alias=True, exclude={"source", "configs", "eval_configs",
                                                       "prepare_configs"})
        for prep, cfg in zip(data["prepare"], self.prepare_configs):
            prep["with"] = cfg.model_dump(mode="json")
        for i, (step, cfg) in enumerate(zip(data["steps"], self.configs)):
            step["with"] = cfg.model_dump(mode="json")
            # the component's key first, the shared with/resources last, as a user writes a step
            data["steps"][i] = {k: step[k] for k in sorted(
                step, key=lambda k: (k != self.steps[i].key, k in ("with", "resources")))}
        for ev, cfg in zip(data["evaluate"], self.eval_configs):
            ev["with"] = cfg.model_dump(mode="json")
        if isinstance(data.get("input"), dict):
            for key, default in InputSpec.NEW_FIELDS.items():
                if data["input"].get(key, default) == default:
                    data["input"].pop(key, None)
        return data

    def signature(self, version: str) -> str:
        """A one-line string that identifies what produced an output (sacrebleu style)."""
        filled = json.dumps(self.filled(), sort_keys=True, default=str)
        digest = hashlib.sha256(filled.encode()).hexdigest()[:12]
        names = "+".join(s.component for s in self.steps) or "none"
        return (f"bitextforge:{version}|recipe:{self.name}|steps:{names}|seed:{self.seed}"
                f"|config:{digest}")


# ---------------------------------------------------------------------------------------------
def _is_branch(part) -> bool:
    """A pydantic location part that names a union branch or a validator, not a recipe key."""
    return isinstance(part, str) and part.startswith(("function-", "union[", "list["))


#: pydantic's complaints that a value is not of a union branch's type
_BRANCH_TYPE_ERRORS = ("model_type", "dict_type", "model_attributes_type", "list_type")


def _keys(err: dict) -> tuple:
    return tuple(p for p in err["loc"] if not _is_branch(p))


def _other_branch(err: dict, errs: list[dict]) -> bool:
    """True for the complaint of the branch a value did not take: ``input:`` is one mapping or a
    list of them, and a list with a bad entry also fails the mapping branch ("should be a valid
    dictionary"), a mapping with a bad key or a failed check the list branch ("should be a valid
    list"); an error deeper inside the same value, or one of the taken branch's own checks at the
    same key, says what is wrong."""
    if err["type"] not in _BRANCH_TYPE_ERRORS:
        return False
    head = _keys(err)
    for e in errs:
        keys = _keys(e)
        if keys[:len(head)] != head or e is err:
            continue
        if len(keys) > len(head) or e["type"] not in _BRANCH_TYPE_ERRORS:
            return True
    return False


_BRANCH_NAMES = {"list_type": "a list"}


def _merge_branches(errs: list[dict]) -> list[dict]:
    """One error per key where every branch of a union refused the value by its type (``input:
    bad.tsv`` is neither a mapping nor a list): "should be a mapping or a list", not two lines."""
    out, seen = [], {}
    for err in errs:
        if err["type"] in _BRANCH_TYPE_ERRORS:
            key, kind = _keys(err), _BRANCH_NAMES.get(err["type"], "a mapping")
            if key in seen:
                if kind not in seen[key]["kinds"]:
                    seen[key]["kinds"].append(kind)
                continue
            err = seen[key] = dict(err, kinds=[kind])
        out.append(err)
    for err in seen.values():
        if len(err["kinds"]) > 1:
            err["msg"] = "should be " + " or ".join(err["kinds"])
    return out


def _loc_path(prefix: str, loc: tuple) -> str:
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _is_branch(part):
            continue
        else:
            out += ("." if out else "") + str(part)
    return out or "(top)"


def _model_fields(model: type[BaseModel]) -> list[str]:
    names = []
    for fname, f in model.model_fields.items():
        if f.exclude:
            continue
        names.append(f.alias or fname)
    return names


def _resolve_model(model: type[BaseModel], loc: tuple) -> type[BaseModel] | None:
    """The pydantic model that owns the field at ``loc`` (for nearest-name suggestions)."""
    cur: Any = model
    for part in loc[:-1]:
        if isinstance(part, int) or _is_branch(part) or cur is None:
            continue
        field = None
        for fname, f in getattr(cur, "model_fields", {}).items():
            if part in (fname, f.alias):
                field = f
        if field is None:
            return None
        ann = field.annotation
        cur = None
        for cand in (ann, *getattr(ann, "__args__", ())):
            for c in (cand, *getattr(cand, "__args__", ())):
                if isinstance(c, type) and issubclass(c, BaseModel):
                    cur = c
    return cur


def format_validation_error(source: str, prefix: str, exc: ValidationError,
                            model: type[BaseModel]) -> str:
    """Turn pydantic errors into ``file: key.path: message`` lines with nearest-name hints."""
    lines = []
    errs = exc.errors(include_url=False)
    for err in _merge_branches([e for e in errs if not _other_branch(e, errs)]):
        loc = tuple(err["loc"])
        path = _loc_path(prefix, loc)
        if err["type"] == "extra_forbidden":
            owner = _resolve_model(model, loc)
            hint = suggest(str(loc[-1]), _model_fields(owner)) if owner else ""
            if owner and str(loc[-1]) in getattr(owner, "unknown_hints", {}):
                hint = "; " + owner.unknown_hints[str(loc[-1])]
            msg = f"unknown field{hint}"
        elif err["type"] == "missing":
            msg = "required field missing"
        else:
            msg = check_message(err)
            if "input" in err and err["type"] not in ("value_error",):
                msg += f" (got {err['input']!r})"
        lines.append(f"{source}: {path}: {msg}")
    return "\n".join(lines)


class _RecipeLoader(yaml.SafeLoader):
    """SafeLoader with YAML 1.2 booleans: only true/false, so ``on:``, ``yes``, ``no`` and ``off``
    stay strings (YAML 1.1 would turn the key ``on`` of dedupe.v1 into True)."""


_RecipeLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:bool"]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
_RecipeLoader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"),
    list("tTfF"))


#: Nodes a recipe may hold once every alias is expanded: recipes have hundreds; an "alias bomb"
#: (nine aliases of nine aliases of ...) has billions from a few hundred bytes, and every walk of
#: the tree (the duplicate-key check, validation, the signature) would expand them all.
MAX_YAML_NODES = 1_000_000


class _Endless(Exception):
    """A node that contains an alias of itself (a recursive structure)."""

    def __init__(self, node: yaml.Node):
        super().__init__()
        self.node = node


def _expanded_size(node: yaml.Node, sizes: dict[int, int], open_: set[int]) -> int:
    """Nodes of the tree ``node`` stands for with its aliases expanded (a node reached through n
    aliases counts n times), at most :data:`MAX_YAML_NODES` + 1. The composed document is a graph
    in which an alias is the very node it names, so each node's size is computed once, in time
    linear in the YAML text, never by expanding it."""
    if isinstance(node, yaml.ScalarNode):
        return 1
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in open_:
        raise _Endless(node)
    open_.add(key)
    children = node.value if isinstance(node, yaml.SequenceNode) \
        else [n for pair in node.value for n in pair]
    total = 1
    for child in children:
        total += _expanded_size(child, sizes, open_)
        if total > MAX_YAML_NODES:
            total = MAX_YAML_NODES + 1
            break
    open_.discard(key)
    sizes[key] = total
    return total


def _duplicate_keys(node: yaml.Node, path: str, source: str) -> list[str]:
    """Every key given twice in one mapping of a composed YAML tree, with its key path: YAML
    loaders keep the last silently, which would make e.g. one of two ``keep:`` vanish."""
    out: list[str] = []
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            sub = f"{path}.{key}" if path else str(key)
            if key is not None:
                line = key_node.start_mark.line + 1
                if key in seen:
                    out.append(f"{source}:{line}: {sub}: duplicate key (also given on line "
                               f"{seen[key]}; YAML would keep only the last)")
                else:
                    seen[key] = line
            out += _duplicate_keys(value_node, sub, source)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            out += _duplicate_keys(item, f"{path}[{i}]", source)
    return out


def _yaml_load(text: str, source: str) -> Any:
    try:
        node = yaml.compose(text, Loader=_RecipeLoader)  # noqa: S506 - a SafeLoader subclass
        if node is not None:
            if _expanded_size(node, {}, set()) > MAX_YAML_NODES:
                raise RecipeError(f"{source}: invalid YAML: more than {MAX_YAML_NODES:,} nodes "
                                  f"once its aliases are expanded (each *alias counts as a copy "
                                  f"of what it names)")
            dups = _duplicate_keys(node, "", source)
            if dups:
                raise RecipeError("\n".join(dups))
        return yaml.load(text, Loader=_RecipeLoader)  # noqa: S506 - a SafeLoader subclass
    except _Endless as exc:
        raise RecipeError(f"{source}:{exc.node.start_mark.line + 1}: invalid YAML: an alias inside "
                          f"the node it names (a structure without end)") from None
    except RecursionError:
        raise RecipeError(f"{source}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if isinstance(exc, yaml.constructor.ConstructorError):
            problem = (f"{problem} (recipes are plain YAML: tags that construct Python objects "
                       f"are refused)")
        raise RecipeError(f"{source}{where}: invalid YAML: {problem}") from None


def _override_parts(key: str) -> list[str]:
    """``steps[1].keep.min`` or ``steps.1.keep.min`` -> ``["steps", "1", "keep", "min"]``."""
    return [p for p in re.split(r"\.|\[(\d+)\]", key) if p]


def _override_path(key: str) -> str:
    """The key path of ``--set key=...`` as validation errors spell it (``steps[1].keep.min``)."""
    return _loc_path("", tuple(int(p) if p.isdigit() else p for p in _override_parts(key)))


def apply_override(data: dict, assignment: str, source: str) -> None:
    """Apply ``--set key.path=value`` (``steps[1].keep.min=0.5`` or ``steps.1.keep.min=0.5``).
    A path that does not fit the recipe is an error naming the ``--set`` (``source``, the recipe
    file, is only what it was applied to)."""
    if "=" not in assignment:
        raise RecipeError(f"--set {assignment!r}: expected key.path=value")
    key, raw = assignment.split("=", 1)
    parts = _override_parts(key)
    if not parts:
        raise RecipeError(f"--set {assignment!r}: expected key.path=value")
    value = _yaml_load(raw, f"--set {key}") if raw != "" else ""
    cur: Any = data
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        here = _override_path(".".join(parts[:i])) if i else "the recipe"
        if isinstance(cur, list):
            if not part.isdigit() or int(part) >= len(cur):
                raise RecipeError(f"--set {key}: {part!r} is not an index of {here}, a list of "
                                  f"{len(cur)}")
            if last:
                cur[int(part)] = value
            else:
                cur = cur[int(part)]
        elif isinstance(cur, dict):
            if last:
                cur[part] = value
            else:
                cur = cur.setdefault(part, {})
        else:
            raise RecipeError(f"--set {key}: cannot descend into {part!r}: {here} is "
                              f"{cur!r} in {source}, not a mapping")


def _blame_overrides(message: str, source: str, overrides: list[str]) -> str:
    """Problems at a key path that a ``--set`` wrote (or at one above it) name that ``--set``
    rather than the recipe file, whose text does not hold the bad value."""
    paths = [(_override_path(a.split("=", 1)[0]), a) for a in overrides]
    lines = []
    for line in message.splitlines():
        if line.startswith(f"{source}: "):
            path = line[len(source) + 2:].split(": ", 1)[0]
            for opath, assignment in reversed(paths):
                if any(a == b or b.startswith((a + ".", a + "[")) for a, b in
                       ((path, opath), (opath, path))):
                    line = f"--set {assignment}: {line[len(source) + 2:]}"
                    break
        lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------------- extends
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


def _layered(data: Any, source: str, chain: tuple[str, ...] = ()) -> tuple[Any, Origins]:
    """The recipe ``data`` (read from ``source``) with its ``extends:`` chain merged in, and where
    each part of it was written. ``extends`` is a path relative to the directory of the file
    that names it; a file that extends itself, directly or through others, is refused."""
    if not isinstance(data, dict) or "extends" not in data:
        return data, {"": (source, "")}
    data = dict(data)
    ref = data.pop("extends")
    if not isinstance(ref, str) or not ref:
        raise RecipeError(f"{source}: extends: expected the path of a recipe file (relative to "
                          f"this file's directory), got {ref!r}")
    here = Path(source).parent if not source.startswith("<") else Path()
    base_path = here / ref
    key = str(base_path.resolve())
    chain = chain or (str(Path(source).resolve()),)
    if key in chain:
        names = " -> ".join(Path(c).name for c in (*chain, key))
        raise RecipeError(f"{source}: extends: {ref} makes a cycle ({names})")
    if not base_path.is_file():
        raise RecipeError(f"{source}: extends: {ref}: " + (moved_hint(base_path) or (
            f"no such recipe file ({base_path.resolve()})")))
    base_source = str(base_path)
    base = _yaml_load(base_path.read_text(encoding="utf-8"), base_source)
    if not isinstance(base, dict):
        raise RecipeError(f"{base_source}: a recipe is a YAML mapping (extended by {source})")
    base, origins = _layered(base, base_source, (*chain, key))
    return _merge(base, data, "", origins, source, ""), origins


_ERROR_PATH = re.compile(r"(?P<path>\(top\)|[A-Za-z_][\w-]*(?:\[\d+\]|\.[\w-]+)*)"
                         r"(?P<rest>:.*)$", re.S)


def _attribute(message: str, source: str, origins: Origins) -> str:
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


def recipe_data(path: str | Path) -> dict:
    """A recipe file's plain data with its ``extends:`` chain merged in (not validated), for
    code that reads parts of a recipe itself."""
    p = Path(path)
    if not p.is_file():
        raise RecipeError(moved_hint(p) or f"{p}: no such recipe file")
    data, _ = _layered(_yaml_load(p.read_text(encoding="utf-8"), str(p)), str(p))
    if not isinstance(data, dict):
        raise RecipeError(f"{p}: a recipe is a YAML mapping with name, input, steps, output")
    return data


def load_recipe(path: str | Path, overrides: list[str] | None = None,
                registry: Registry | None = None) -> Recipe:
    """Read, override and validate a recipe file; raise one :class:`RecipeError` listing problems."""
    p = Path(path)
    if not p.exists():
        raise RecipeError(moved_hint(p) or f"{p}: no such recipe file")
    return parse_recipe(p.read_text(encoding="utf-8"), str(p), overrides, registry)


def parse_recipe(text: str, source: str = "<recipe>", overrides: list[str] | None = None,
                 registry: Registry | None = None) -> Recipe:
    """Validate recipe text; every step's component and config is checked before anything runs.
    A recipe with ``extends:`` is first merged with its base (see :func:`_layered`); errors then
    name the file and key path where each bad value was written."""
    data, origins = _layered(_yaml_load(text, source), source)
    if len(origins) == 1:
        return _parse_data(data, source, overrides, registry)
    try:
        return _parse_data(data, source, overrides, registry)
    except RecipeError as exc:
        raise RecipeError(_attribute(str(exc), source, origins)) from None


def _parse_data(data: Any, source: str, overrides: list[str] | None,
                registry: Registry | None) -> Recipe:
    """Validate a recipe's data (its ``extends:`` already merged)."""
    if not isinstance(data, dict):
        raise RecipeError(f"{source}: a recipe is a YAML mapping with name, input, steps, output")
    for ov in overrides or []:
        apply_override(data, ov, source)
    try:
        return _validate_recipe(data, source, registry)
    except RecipeError as exc:
        if not overrides:
            raise
        raise RecipeError(_blame_overrides(str(exc), source, overrides)) from None


def _validate_recipe(data: dict, source: str, registry: Registry | None) -> Recipe:
    """The recipe mapping (overrides applied) validated; every problem listed in one error."""
    if isinstance(data.get("output"), str):
        data["output"] = {"dir": data["output"]}
    steps_raw = data.get("steps") or []
    if not isinstance(steps_raw, list):
        raise RecipeError(f"{source}: steps: expected a list of steps")
    evals_raw = data.get("evaluate") or []
    if not isinstance(evals_raw, list):
        raise RecipeError(f"{source}: evaluate: expected a list")
    prep_raw = data.get("prepare") or []
    if not isinstance(prep_raw, list):
        raise RecipeError(f"{source}: prepare: expected a list of {{train: name, with: ...}}")
    errors: list[str] = []
    registry = registry or get_registry()
    registry.check()  # a duplicate component name is one error, not one per step using it

    top = {k: v for k, v in data.items() if k not in ("steps", "evaluate", "prepare")}
    top["steps"], top["evaluate"], top["prepare"] = [], [], []
    recipe = None
    try:
        recipe = Recipe.model_validate(top)
    except ValidationError as exc:
        errors.append(format_validation_error(source, "", exc, Recipe))

    preps, prep_cfgs = [], []
    outputs_seen: dict[str, int] = {}
    for i, raw in enumerate(prep_raw):
        where = f"prepare[{i}]"
        entry = _validate_entry(registry, PrepareStep, "trainer", "train", raw, source, where,
                                errors)
        if entry is None:
            continue
        prep, cfg = entry
        if cfg is not None:
            given = getattr(cfg, "output")
            out = str(Path(given).resolve())
            if out in outputs_seen:
                errors.append(f"{source}: {where}.with.output: {given} is also written by "
                              f"prepare[{outputs_seen[out]}]")
            outputs_seen[out] = i
        preps.append(prep)
        prep_cfgs.append(cfg)

    steps, configs = [], []
    for i, raw in enumerate(steps_raw):
        where = f"steps[{i}]"
        if not isinstance(raw, dict):
            errors.append(f"{source}: {where}: expected a mapping like {{filter: length.v1, ...}}")
            continue
        kinds = [k for k in STEP_KINDS if k in raw]
        if len(kinds) != 1:
            keys = ", ".join(map(str, raw)) or "nothing"
            hint = "" if kinds else suggest(next(iter(raw), ""), STEP_KINDS)
            errors.append(f"{source}: {where}: a step names exactly one of "
                          f"{', '.join(STEP_KINDS)} (found {keys}){hint}")
            continue
        kind = STEP_KINDS[kinds[0]]
        try:
            step = kind.model.model_validate(raw)
        except ValidationError as exc:
            errors.append(format_validation_error(source, where, exc, kind.model))
            # a bad keep: must not hide a bad with: of the same step: report both at once
            name, with_ = raw.get(kinds[0]), raw.get("with", {})
            bad = {str(e["loc"][0]) for e in exc.errors() if e["loc"]}
            if (isinstance(name, str) and isinstance(with_, dict)
                    and not bad & {kinds[0], "with"}):
                _validate_component(registry, kind.component, name, with_, source, where,
                                    errors, key=kind.key)
            continue
        cfg = _validate_component(registry, kind.component, step.component, step.with_, source,
                                  where, errors, key=kind.key)
        earlier = [j for j, prev in enumerate(steps) if prev.key in kind.before]
        if earlier:
            errors.append(f"{source}: {where}: {kind.key} steps must come before "
                          f"{' and '.join(kind.before)} steps (steps[{earlier[0]}] is one)")
        if cfg is not None:
            step, problems = step.check(registry.get(kind.component, step.component), cfg,
                                        source, where)
            errors.extend(problems)
        steps.append(step)
        configs.append(cfg)

    evals, eval_cfgs = [], []
    for i, raw in enumerate(evals_raw):
        where = f"evaluate[{i}]"
        if isinstance(raw, str):
            raw = {"evaluator": raw}
        entry = _validate_entry(registry, EvaluateStep, "evaluator", "evaluator", raw, source,
                                where, errors)
        if entry is None:
            continue
        ev, cfg = entry
        evals.append(ev)
        eval_cfgs.append(cfg)

    if recipe is not None:
        for key in ("input", "output"):
            if getattr(recipe, key) is None and (steps_raw or evals_raw):
                errors.append(f"{source}: {key}: required field missing (a recipe with steps or "
                              f"evaluate needs an input and an output)")
        if recipe.input is None and not (steps_raw or evals_raw or prep_raw):
            errors.append(f"{source}: nothing to do: give input, steps and output, or a "
                          f"prepare: list of models to train")
    if errors:
        raise RecipeError("\n".join(errors))
    assert recipe is not None  # no errors means the top level validated
    recipe.steps = steps
    recipe.prepare = preps
    recipe.prepare_configs = prep_cfgs
    recipe.evaluate = evals
    recipe.configs = configs
    recipe.eval_configs = eval_cfgs
    recipe.source = source
    _check_columns(recipe, source)
    _check_inputs(recipe, source)
    if recipe.output is not None and "opustrainer" in recipe.output.formats \
            and "tsv" not in recipe.output.formats:
        raise RecipeError(f"{source}: output.formats: opustrainer is made from corpus.tsv; add "
                          f"tsv to the formats")
    return recipe


def _validate_entry(registry: Registry, model: type[BaseModel], kind: str, name_key: str, raw: Any,
                    source: str, where: str, errors: list[str]):
    """Validate a ``prepare`` or ``evaluate`` entry and its component config: ``(entry, config)``
    (config None when it is wrong), or None when the entry itself is; errors are collected."""
    try:
        entry = model.model_validate(raw)
    except ValidationError as exc:
        errors.append(format_validation_error(source, where, exc, model))
        return None
    cfg = _validate_component(registry, kind, getattr(entry, name_key), entry.with_, source,
                              where, errors, key=name_key)
    return entry, cfg


def _validate_component(registry: Registry, kind: str, name: str, with_: dict, source: str,
                        where: str, errors: list[str], key: str) -> ComponentConfig | None:
    try:
        reg = registry.registration(kind, name)
    except RegistryError as exc:
        errors.append(f"{source}: {where}.{key}: {exc}")
        return None
    try:
        cfg = reg.cls.Config.model_validate(with_)
    except ValidationError as exc:
        errors.append(format_validation_error(source, f"{where}.with", exc, reg.cls.Config))
        return None
    why = reg.unavailable(cfg)
    if why:
        errors.append(f"{source}: {where}: {why}")
        return None
    return cfg


def _check_columns(recipe: Recipe, source: str) -> None:
    """Score column names must be unique across steps."""
    seen: dict[str, int] = {}
    for i, step in enumerate(recipe.steps):
        col = step.score_column()
        if col is None:
            continue
        if col in seen:
            raise RecipeError(f"{source}: steps[{i}]: score column {col!r} is already written by "
                              f"steps[{seen[col]}]; give this step `as: other_name`")
        seen[col] = i


def _check_inputs(recipe: Recipe, source: str) -> None:
    """Several inputs need unique names; a monolingual input needs a generate step that fills its
    empty side, or the output could hold rows with an empty side."""
    specs = input_specs(recipe)
    problems = []
    if isinstance(recipe.input, list):
        if not specs:
            problems.append(f"{source}: input: an empty list; give at least one input")
        seen: dict[str, int] = {}
        for i, spec in enumerate(specs):
            if spec.name is None:
                problems.append(f"{source}: input[{i}].name: required field missing (several "
                                f"inputs are told apart by their names, written to `origin`)")
            elif spec.name in seen:
                problems.append(f"{source}: input[{i}].name: {spec.name!r} is also the name of "
                                f"input[{seen[spec.name]}]")
            else:
                seen[spec.name] = i
    for i, spec in enumerate(specs):
        where = f"input[{i}]" if isinstance(recipe.input, list) else "input"
        if spec.one_sided:
            empty = "tgt" if spec.side == "src" else "src"
            fillers = [step for step in recipe.steps if empty in step.fills()]
            if not any(step.fills_origin(spec.label) for step in fillers):
                hint = (f" (the generate steps that fill {empty} have `origins:` without "
                        f"{spec.label!r})" if fillers else
                        f" (add e.g. `- generate: translate.v1` with `side: {empty}`)")
                problems.append(
                    f"{source}: {where}: input {spec.label!r} holds {spec.side} text only, and no "
                    f"generate step fills its empty {empty} side{hint}, so the output would hold "
                    f"rows with an empty side")
    problems += _origin_problems(recipe, source, specs)
    if problems:
        raise RecipeError("\n".join(problems))


def _origin_problems(recipe: Recipe, source: str, specs) -> list[str]:
    """A step's ``origins`` must name an input, or a paraphraser of an earlier step (the origin of
    the rows it adds): a misspelt name would leave the step deciding, weighting or paraphrasing
    no row at all, silently."""
    known = {spec.label: None for spec in specs}
    problems = []
    for i, step in enumerate(recipe.steps):
        unknown = [o for o in getattr(step, "origins", None) or () if o not in known]
        if unknown:
            problems.append(f"{source}: steps[{i}].origins: {', '.join(map(repr, unknown))} "
                            f"{'is' if len(unknown) == 1 else 'are'} not the name of an input "
                            f"(inputs: {', '.join(known)})")
        made = getattr(step, "paraphrase", None)
        if made:
            known.setdefault(made, None)
    return problems


def score_column(step: StepModel) -> str | None:
    """The column a step writes its scores to (None for split and weight steps)."""
    return step.score_column()


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, keys in insertion order."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
