"""The ``bitextforge`` command: run, validate, score, serve, plugins, describe, reference, doctor.

User mistakes (``BitextforgeError``) print one line per problem and exit 2 with no traceback;
anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import inspect
import json
import signal
import sys
import threading
from pathlib import Path

from . import __version__
from .errors import BitextforgeError


def _cmd_run(args) -> int:
    from .recipe import load_recipe
    from .run import run_recipe

    overrides = list(args.set)
    if args.runner:
        overrides.append(f"runner={args.runner}")
    if args.address:
        import os

        os.environ["RAY_ADDRESS"] = args.address  # ray.init() reads it
    recipe = load_recipe(args.recipe, overrides)
    res = run_recipe(recipe, progress=False if args.quiet else None, output_dir=args.output,
                     restart=args.restart)
    if res.output_dir is None:
        for entry in res.manifest["prepare"]:
            print(f"{entry['trainer']}: {entry['output']} ({entry['status']})")
        return 0
    print(f"{res.rows_in} rows in, {res.rows_out} rows out, {res.rejected} rejected -> "
          f"{res.output_dir}")
    for name, rep in res.reports.items():
        if isinstance(rep, dict) and rep.get("summary"):
            print(f"{name}: {rep['summary']}")
        elif isinstance(rep, str):
            print(f"note: {rep}")
    print(res.signature)
    return 0


def _cmd_validate(args) -> int:
    from .recipe import dump_yaml, load_recipe

    recipe = load_recipe(args.recipe, args.set)
    if args.filled:
        sys.stdout.write(dump_yaml(recipe.filled()))
    else:
        def count(n: int, what: str) -> str:
            return f"{n} {what}" + ("" if n == 1 else "s")

        parts = ([count(len(recipe.prepare), "trainer")] if recipe.prepare else []) + [
            count(len(recipe.steps), "step"), count(len(recipe.evaluate), "evaluator")]
        print(f"{args.recipe}: valid ({', '.join(parts)})")
    return 0


def _cmd_plugins(args) -> int:
    from .registry import get_registry

    reg = get_registry()
    rows = [(r.cls.name, kind, r.package_version, r.package, r.plugin)
            for kind, r in reg.registrations()]
    if args.json:
        print(json.dumps([dict(zip(("name", "kind", "version", "package", "plugin"), r))
                          for r in rows], indent=2))
        return 0
    widths = [max(len(str(r[i])) for r in rows + [("name", "kind", "version", "package",
                                                   "plugin")]) for i in range(5)]
    head = ("name", "kind", "version", "package", "plugin")
    for r in [head, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip())
    return 0


def _cmd_describe(args) -> int:
    from .docgen import component_section
    from .registry import get_registry

    kind, reg = get_registry().find(args.name)
    print(f"{kind}, from {reg.origin}\n")
    print(component_section(reg.cls))
    return 0


def _cmd_reference(args) -> int:
    from .docgen import render_reference
    from .registry import get_registry

    sys.stdout.write(render_reference(get_registry()))
    return 0


def _cmd_score(args) -> int:
    from .scoring import score_recipe

    recipe_out = score_recipe(args.recipe, args.output, args.set, quiet=args.quiet)
    print(f"{recipe_out.rows} rows scored -> {recipe_out.path}")
    return 0


def _cmd_serve(args) -> int:
    from .serve import serve

    serve(args.target, scores=args.scores, host=args.host, port=args.port,
          save_dir=None if args.no_save else args.save_dir, open_browser=args.open)
    return 0


def _cmd_doctor(args) -> int:
    from .registry import get_registry

    reg = get_registry()
    problems = 0
    checked = 0
    for kind, r in reg.registrations():
        doctor = getattr(r.cls, "doctor", None)
        if doctor is None or not inspect.ismethod(doctor):
            continue
        for ok, what, hint in doctor():
            checked += 1
            mark = "ok  " if ok else "MISSING"
            print(f"[{mark}] {r.cls.name}: {what}")
            if not ok:
                problems += 1
                for line in hint.splitlines():
                    print(f"         {line}")
    if not checked:
        print("no component needs anything external")
    return 1 if problems else 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for the docs and tests)."""
    p = argparse.ArgumentParser(prog="bitextforge", description="Paraphrase, filter, weight and "
                                "evaluate parallel corpora with recipes.")
    p.add_argument("--version", action="version", version=f"bitextforge {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a recipe")
    r.add_argument("recipe")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe value, e.g. steps[1].keep.max=2.5 (repeatable)")
    r.add_argument("-o", "--output", help="output directory (overrides output.dir)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    r.add_argument("--restart", action="store_true", help="discard an unfinished run of a "
                   "different recipe in the output directory instead of refusing")
    r.add_argument("--runner", choices=["local", "ray"], help="execution backend (overrides runner)")
    r.add_argument("--address", help="Ray cluster address for --runner ray (default: start a "
                   "local cluster)")
    r.set_defaults(func=_cmd_run)

    v = sub.add_parser("validate", help="validate a recipe without running it")
    v.add_argument("recipe")
    v.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    v.add_argument("--filled", action="store_true", help="print the recipe with every default")
    v.set_defaults(func=_cmd_validate)

    s = sub.add_parser("score", help="score a corpus with a recipe's filters; decide nothing")
    s.add_argument("recipe")
    s.add_argument("-o", "--output", required=True, help="TSV file of scores to write")
    s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    s.add_argument("-q", "--quiet", action="store_true")
    s.set_defaults(func=_cmd_score)

    sv = sub.add_parser("serve", help="a local web page over a finished run: move thresholds, "
                        "see what they keep, save the recipe")
    sv.add_argument("target", help="a run directory, or a recipe (its output.dir, or --scores)")
    sv.add_argument("--scores", help="with a recipe: the TSV written by bitextforge score")
    sv.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    sv.add_argument("--port", type=int, default=8765, help="port (0 picks a free one)")
    sv.add_argument("--save-dir", default=".", help="directory where saved recipes are written "
                    "(default: the current directory)")
    sv.add_argument("--no-save", action="store_true", help="read-only: no recipe can be saved")
    sv.add_argument("--open", action="store_true", help="open the page in a browser")
    sv.set_defaults(func=_cmd_serve)

    pl = sub.add_parser("plugins", help="list registered components")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=_cmd_plugins)

    d = sub.add_parser("describe", help="show a component's documentation and options")
    d.add_argument("name")
    d.set_defaults(func=_cmd_describe)

    ref = sub.add_parser("reference", help="print the Markdown recipe reference")
    ref.set_defaults(func=_cmd_reference)

    doc = sub.add_parser("doctor", help="check external tools and models components need")
    doc.set_defaults(func=_cmd_doctor)
    _add_extra_commands(sub)
    return p


def register_command(name: str, help: str):
    """Decorator for plugins' extra subcommands (train-nmt, train-lm, ...): ``fn(subparser)``
    adds arguments and returns the handler ``handler(args) -> int``."""
    def deco(fn):
        _EXTRA_COMMANDS.append((name, help, fn))
        return fn
    return deco


_EXTRA_COMMANDS: list = []


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's time limit) raised in the main thread, so the
    clean-up that Ctrl-C gets (temporary outputs and half-trained models removed) runs for it too;
    without a handler Python dies at once and leaves them behind."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``bitextforge`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        return int(args.func(args) or 0)
    except BitextforgeError as exc:
        for line in str(exc).splitlines() or [type(exc).__name__]:
            print(f"bitextforge: error: {line}", file=sys.stderr)
        return exc.exit_code
    except Terminated:
        print("bitextforge: terminated (SIGTERM); no output was written under a final name",
              file=sys.stderr)
        return 143
    except KeyboardInterrupt:
        print("bitextforge: interrupted; no output was written under a final name", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 141
    finally:
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous)


def _add_extra_commands(sub) -> None:
    """Subcommands (train-nmt, train-lm, ...) that built-in plugin packages declare in a ``cli``
    module with :func:`register_command`; imported only to add their arguments."""
    import importlib
    import importlib.util
    import pkgutil

    import bitextforge.plugins as builtin

    for info in pkgutil.iter_modules(builtin.__path__):
        name = f"bitextforge.plugins.{info.name}.cli"
        if info.ispkg and importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
    for name, help_, fn in _EXTRA_COMMANDS:
        sp = sub.add_parser(name, help=help_)
        sp.set_defaults(func=fn(sp))


if __name__ == "__main__":
    sys.exit(main())
