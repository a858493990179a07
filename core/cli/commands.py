"""Commands of the ``bitextforge`` CLI that plugins contribute, and the generic trainer command.

A plugin adds commands through the ``register_commands`` hook, exactly like the built-in plugins:
``register(name, help, setup)`` where ``setup(parser)`` adds the arguments and returns the
handler ``handler(args) -> int``. ``bitextforge train <trainer>`` runs any registered Trainer
with flags generated from its ``Config`` (one per field) or ``--set key=value``; a plugin may
register a short alias for one of its trainers with :func:`trainer_command`.
"""

from __future__ import annotations

import argparse
import sys
import typing
from typing import Any, Callable

from pydantic import BaseModel, ValidationError

from ..components.commands import Command, Setup, collect_commands  # noqa: F401 - re-exported
from ..errors import BitextforgeError, InputError, RecipeError, check_message


def plugin_commands(registry) -> list[Command]:
    """Every command the loaded plugins register, refusing two with one name. (A name that a
    built-in command has is the CLI's to refuse: only its parser knows every built-in.)"""
    seen: dict[str, Command] = {}
    for cmd in registry.commands():
        if cmd.name in seen:
            raise BitextforgeError(f"command {cmd.name!r} is registered twice: by plugin "
                                   f"{seen[cmd.name].plugin} and by plugin {cmd.plugin}")
        seen[cmd.name] = cmd
    return list(seen.values())


# ------------------------------------------------------------------------- flags from a Config
def _bool(text: str) -> bool:
    low = text.lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _scalar(tp) -> bool:
    return tp in (str, int, float) or getattr(tp, "__name__", "") == "Path"


def _field_shape(annotation) -> tuple[str, Any]:
    """``("bool" | "list" | "value" | "complex", item type)`` of a Config field's annotation."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if annotation is bool:
        return "bool", bool
    if origin in (list, tuple) and origin is list:
        item = args[0] if args else str
        return ("list", item) if _scalar(item) else ("complex", None)
    if origin is typing.Union or str(origin) == "<class 'types.UnionType'>":
        if len(args) == 1:
            return _field_shape(args[0])
        lists = [a for a in args if typing.get_origin(a) is list]
        if len(lists) == 1 and all(_scalar(a) for a in args if a is not lists[0]):
            return _field_shape(lists[0])  # ``str | list[str]``: one or more values
        return ("value", str) if all(_scalar(a) for a in args) else ("complex", None)
    if origin is typing.Literal or _scalar(annotation):
        return "value", annotation
    return "complex", None


def flag_name(field: str) -> str:
    """The command-line flag of a Config field: ``max_iter`` -> ``--max-iter``."""
    return "--" + field.replace("_", "-")


def add_config_flags(parser: argparse.ArgumentParser, config: type[BaseModel],
                     skip: tuple[str, ...] = ()) -> list[str]:
    """Add one flag per field of ``config`` (booleans as ``--x [true|false]`` and ``--no-x``,
    lists as repeatable or multi-value flags, numbers in lists also comma-separated); fields of
    other types are set with ``--set``. Returns the field names that got a flag."""
    added = []
    for name, f in config.model_fields.items():
        if name in skip:
            continue
        shape, item = _field_shape(f.annotation)
        if shape == "complex":
            continue
        default = "required" if f.is_required() else f"default {f.get_default(call_default_factory=True)}"
        help_ = f"{f.description or ''} ({default})".replace("%", "%%")
        flags = [flag_name(name)] + (["-o"] if name == "output" else [])
        if shape == "bool":
            parser.add_argument(*flags, dest=name, nargs="?", const=True, default=None,
                                type=_bool, metavar="true|false", help=help_)
            parser.add_argument(f"--no-{name.replace('_', '-')}", dest=name,
                                action="store_false", help=argparse.SUPPRESS)
        elif shape == "list":
            parser.add_argument(*flags, dest=name, nargs="+", action="extend", default=None,
                                metavar=name.upper(), help=help_ + " Repeatable.")
        else:
            parser.add_argument(*flags, dest=name, default=None, metavar=name.upper(),
                                help=help_)
        added.append(name)
    return added


def config_from_args(config: type[BaseModel], args: argparse.Namespace, fields: list[str],
                     sets: list[str], where: str, extra: dict[str, Any] | None = None):
    """Validate the given flags and ``--set`` assignments against ``config``; every problem is
    one line naming its flag."""
    from ..recipe.yaml_safe import yaml_load

    values: dict[str, Any] = dict(extra or {})
    for name in fields:
        v = getattr(args, name, None)
        if v is None:
            continue
        shape, item = _field_shape(config.model_fields[name].annotation)
        if shape == "list" and item in (int, float):
            v = [x for part in v for x in str(part).split(",") if x != ""]
        values[name] = v
    for assignment in sets:
        if "=" not in assignment:
            raise RecipeError(f"{where}: --set {assignment!r}: expected key=value")
        key, raw = assignment.split("=", 1)
        if key not in config.model_fields:
            from ..components.registry import suggest

            raise RecipeError(f"{where}: --set {key}: unknown field"
                              f"{suggest(key, config.model_fields)}")
        values[key] = yaml_load(raw, f"{where}: --set {key}") if raw != "" else ""
    try:
        return config.model_validate(values)
    except ValidationError as exc:
        lines = []
        for err in exc.errors(include_url=False):
            loc = err["loc"]
            flag = f" {flag_name(str(loc[0]))}" if loc else ""
            msg = check_message(err)
            if err["type"] == "missing":
                msg = "required"
            lines.append(f"{where}{flag}: {msg}")
        raise InputError("\n".join(lines)) from None


# ------------------------------------------------------------------------------ train
def run_trainer(name: str, config, registry=None) -> dict[str, Any]:
    """Train ``name`` with a validated ``config`` into temporary names and move the outputs into
    place when training succeeds (as a recipe's ``prepare:`` does); the manifest entry."""
    from ..pipeline.prepare import train_one
    from ..components.registry import get_registry

    # the command prints its own one-line summary: no "training ..."/"wrote ..." messages
    return train_one(registry or get_registry(), name, config, f"train {name}", force=True,
                     announce=False)


def summary(entry: dict[str, Any]) -> str:
    """One line for a finished training: what was written, how long it took, the trainer's facts
    (scalars only; the manifest entry holds everything)."""
    facts = ", ".join(f"{k} {_fmt(v)}" for k, v in (entry.get("info") or {}).items()
                      if isinstance(v, (int, float, str)) and not isinstance(v, bool))
    return (f"wrote {', '.join(entry['outputs'])} in {entry.get('seconds', 0)} s"
            + (f" ({facts})" if facts else ""))


def _fmt(v) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def trainer_command(trainer: str, add_extra: Callable | None = None,
                    adapt: Callable | None = None) -> Setup:
    """The setup of a command that runs one trainer, with flags generated from its Config.

    ``add_extra(parser)`` may add flags that are not Config fields and ``adapt(args) -> dict``
    turn them into Config values (e.g. paired ``--test-src``/``--test-tgt`` into ``tests``).
    """
    def setup(parser: argparse.ArgumentParser):
        from ..components.registry import get_registry

        cls = get_registry().get("trainer", trainer)
        fields = add_config_flags(parser, cls.Config)
        parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                            help="set any Config field, the value in YAML (repeatable)")
        if add_extra is not None:
            add_extra(parser)

        def handler(args) -> int:
            where = parser.prog.removeprefix("bitextforge ")
            extra = adapt(args) if adapt is not None else None
            cfg = config_from_args(cls.Config, args, fields, args.set, where, extra)
            entry = run_trainer(trainer, cfg)
            print(summary(entry))
            return 0
        return handler
    return setup


def add_train_command(sub) -> None:
    """``bitextforge train <trainer> [flags]``: the trainer's flags are generated from its Config
    once the trainer is named, so ``bitextforge train NAME --help`` lists them."""
    p = sub.add_parser("train", help="train a model with a registered Trainer "
                       "(bitextforge train NAME --help lists its options)", add_help=False)
    p.add_argument("trainer", nargs="?", help="registered trainer name, e.g. kenlm_model.v1")
    p.add_argument("rest", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.add_argument("-h", "--help", action="store_true")

    def handler(args) -> int:
        from ..components.registry import get_registry

        reg = get_registry()
        if args.trainer is None:
            p.print_usage(sys.stdout if args.help else sys.stderr)
            print("trainers: " + ", ".join(reg.names("trainer")),
                  file=sys.stdout if args.help else sys.stderr)
            return 0 if args.help else 2
        reg.get("trainer", args.trainer)  # an unknown name lists the close ones
        tp = argparse.ArgumentParser(prog=f"bitextforge train {args.trainer}",
                                     description=reg.get("trainer", args.trainer).__doc__)
        run = trainer_command(args.trainer)(tp)
        targs = tp.parse_args(args.rest + (["--help"] if args.help else []))
        return run(targs)

    p.set_defaults(func=handler)
