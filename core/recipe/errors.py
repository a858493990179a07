"""How recipe errors quote what a user wrote, and pydantic's errors turned into ``file: key.path:
message`` lines with nearest-name hints.

Every value an error quotes goes through :func:`bitextforge.errors.quote`, so a message stays
one short line whatever the value: a few hundred bytes of YAML aliases can stand for half a
million nodes, and a file named by ``extends:`` may hold anything, which an error must not print
back whole.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from ..components.registry import suggest
from ..errors import check_message, clip, quote


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


def loc_path(prefix: str, loc: tuple) -> str:
    """A key path as errors spell it (``steps[1].keep.min``) from ``prefix`` and a pydantic
    location; each key cut short, as it may come from the user's file."""
    out = prefix
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _is_branch(part):
            continue
        else:
            out += ("." if out else "") + clip(str(part), 60)
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


#: the most pydantic errors of one value turned into lines (the rest are counted)
MAX_ERRORS_SHOWN = 20


def format_validation_error(source: str, prefix: str, exc: ValidationError,
                            model: type[BaseModel]) -> str:
    """Turn pydantic errors into ``file: key.path: message`` lines with nearest-name hints."""
    lines = []
    errs = exc.errors(include_url=False)
    # one aliased list can stand for half a million wrong items: judge and print a bounded few
    more = max(0, len(errs) - MAX_ERRORS_SHOWN)
    errs = errs[:MAX_ERRORS_SHOWN]
    for err in _merge_branches([e for e in errs if not _other_branch(e, errs)]):
        loc = tuple(err["loc"])
        path = loc_path(prefix, loc)
        if err["type"] == "extra_forbidden":
            owner = _resolve_model(model, loc)
            hint = suggest(str(loc[-1]), _model_fields(owner)) if owner else ""
            if owner and str(loc[-1]) in getattr(owner, "unknown_hints", {}):
                hint = "; " + owner.unknown_hints[str(loc[-1])]
            msg = f"unknown field{hint}"
        elif err["type"] == "missing":
            msg = "required field missing"
        else:
            msg = clip(check_message(err))
            if "input" in err and err["type"] not in ("value_error",):
                msg += f" (got {quote(err['input'])})"
        lines.append(f"{source}: {path}: {msg}")
    if more:
        lines.append(f"{source}: {prefix + ': ' if prefix else ''}and {more:,} more problems "
                     f"like these")
    return "\n".join(lines)
