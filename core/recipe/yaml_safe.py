"""Recipe YAML read safely: plain data only, YAML 1.2 booleans, no duplicate keys, and a bound on
the size of the tree once aliases are expanded, all checked on the composed document before any
value is built. Also the YAML text of plain data, as recipes are written."""

from __future__ import annotations

import re
from typing import Any

import yaml

from ..errors import RecipeError, clip


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
            sub = f"{path}.{clip(str(key), 60)}" if path else clip(str(key), 60)
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


def yaml_load(text: str, source: str) -> Any:
    """Plain data of recipe YAML text read from ``source``: YAML 1.2 booleans, no Python tags,
    no key given twice, at most :data:`MAX_YAML_NODES` nodes with aliases expanded; any problem
    is one :class:`RecipeError` naming ``source`` (and the line where YAML gives one)."""
    try:
        node = yaml.compose(text, Loader=_RecipeLoader)  # noqa: S506 - a SafeLoader subclass
        if node is not None:
            if _expanded_size(node, {}, set()) > MAX_YAML_NODES:
                raise RecipeError(f"{source}: invalid YAML: more than {MAX_YAML_NODES:,} nodes "
                                  f"once its aliases are expanded (each *alias counts as a copy "
                                  f"of what it names)")
            dups = _duplicate_keys(node, "", source)
            if dups:
                more = [f"{source}: and {len(dups) - 20:,} more duplicate keys"] \
                    if len(dups) > 20 else []
                raise RecipeError("\n".join(dups[:20] + more))
        return yaml.load(text, Loader=_RecipeLoader)  # noqa: S506 - a SafeLoader subclass
    except _Endless as exc:
        raise RecipeError(f"{source}:{exc.node.start_mark.line + 1}: invalid YAML: an alias inside "
                          f"the node it names (a structure without end)") from None
    except RecursionError:
        raise RecipeError(f"{source}: invalid YAML: nested too deeply") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark is not None else ""
        problem = clip(getattr(exc, "problem", None) or str(exc).splitlines()[0], 200)
        if isinstance(exc, yaml.constructor.ConstructorError):
            problem = (f"{problem} (recipes are plain YAML: tags that construct Python objects "
                       f"are refused)")
        raise RecipeError(f"{source}{where}: invalid YAML: {problem}") from None


def dump_yaml(data: Any) -> str:
    """YAML text of plain data, keys in insertion order."""
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, default_flow_style=False)
