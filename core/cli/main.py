"""The ``bitextforge`` command: run, prepare, validate, score, serve, plugins, describe, reference, doctor,
cache, train, and the commands plugins add through the ``register_commands`` hook.

User mistakes (``BitextforgeError``) print one line per problem and exit 2 with no traceback;
anything else is a bug and keeps its traceback. Plugins cannot break the built-in commands: they
are imported only when a command needs them, and a broken plugin command is one line (see
:func:`build_parser`).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import traceback

from .. import __version__
from .commands import add_train_command, plugin_commands
from ..errors import BitextforgeError, RegistryError, StepError
from ..components.registry import describe_failure, get_registry
from ..recipe.runners import RUNNERS


def _cmd_run(args) -> int:
    from ..recipe.checks import output_problems
    from ..recipe.load import load_recipe
    from ..run import run_recipe
    from ..report.summary import summary_table

    overrides = list(args.set)
    if args.runner:
        overrides.append(f"runner={args.runner}")
    if args.address:
        os.environ["RAY_ADDRESS"] = args.address  # ray.init() reads it
    recipe = load_recipe(args.recipe, overrides)
    problems = output_problems(recipe, args.output)  # run_recipe checks the recipe's files
    if problems:
        raise BitextforgeError("\n".join(problems))
    res = run_recipe(recipe, progress=False if args.quiet else None, output_dir=args.output,
                     restart=args.restart, force=args.force)
    if res.output_dir is None:
        _print_prepared(res.manifest["prepare"])
        return 0
    print(f"{res.rows_in} rows in, {res.rows_out} rows out, {res.rejected} rejected -> "
          f"{res.output_dir}")
    if res.manifest.get("steps"):
        print(summary_table(res.manifest["steps"]))
    for warning in res.manifest.get("warnings", []):
        print(f"bitextforge: warning: {warning}", file=sys.stderr)
    for name, rep in res.reports.items():
        if isinstance(rep, dict) and rep.get("summary"):
            summary = rep["summary"]
            if rep.get("seconds") is not None:
                name = f"{name} ({rep['seconds']:.1f} s)"
            # a multi-line summary is a table: its header must start a line of its own
            print(f"{name}:\n{summary}" if "\n" in summary else f"{name}: {summary}")
        elif isinstance(rep, str):
            print(f"note: {rep}")
    print(res.signature)
    return 0


def _cmd_prepare(args) -> int:
    from ..recipe.checks import check_prepare_files
    from ..pipeline.prepare import check_only, run_prepare
    from ..recipe.load import load_recipe

    recipe = load_recipe(args.recipe, args.set)
    registry = get_registry()
    check_only(recipe, args.only)
    for line in check_prepare_files(recipe, registry, args.only):
        print(f"bitextforge: note (prepare goes on, the run will need it): {line}",
              file=sys.stderr)
    _print_prepared(run_prepare(recipe, registry, only=args.only))
    return 0


def _print_prepared(entries) -> None:
    """One line per prepare: entry: trainer, output, and whether it was trained or existed."""
    for entry in entries:
        print(f"{entry['trainer']}: {entry['output']} ({entry['status']})")


def _cmd_validate(args) -> int:
    from ..recipe.checks import check_recipe_files, unread_jsonl_keys
    from ..recipe.load import dump_yaml, load_recipe
    from ..components.registry import get_registry

    recipe = load_recipe(args.recipe, args.set)
    check_recipe_files(recipe, get_registry(), output=True)
    for note in unread_jsonl_keys(recipe):
        print(f"bitextforge: note: {note}", file=sys.stderr)
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
    from .docgen import summary_line
    from ..components.registry import get_registry

    reg = get_registry()
    kind_filter = _kind_argument(args.kind)
    head = ("name", "kind", "version", "package", "plugin", "summary")
    # a component whose extra is missing is listed all the same, marked with the extra it needs
    regs = [(kind, r, r.missing_extra()) for kind, r in reg.registrations()
            if kind_filter in (None, kind)]
    rows = [(r.cls.name, kind, r.package_version, r.package, r.plugin,
             (f"[needs the '{extra}' extra] " if extra else "") + summary_line(r.cls))
            for kind, r, extra in regs]
    if args.json:
        print(json.dumps([dict(zip(head, row), **({"unavailable": r.unavailable()} if extra
                                                   else {}))
                          for row, (_, r, extra) in zip(rows, regs)], indent=2))
        return 0
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    for r in [head, *rows]:
        print("  ".join(str(v).ljust(w) for v, w in zip(r[:5], widths)) + "  " + r[5])
    return 0


def _kind_argument(value: str | None) -> str | None:
    """``filter``, ``filters`` or ``Filters`` -> ``filter``; a wrong kind is a one-line error."""
    from ..components.kinds import KINDS
    from ..components.registry import suggest

    if value is None:
        return None
    v = value.lower()
    kind = v if v in KINDS else v[:-1] if v.endswith("s") and v[:-1] in KINDS else None
    if kind is None:
        raise BitextforgeError(f"plugins: unknown kind {value!r}{suggest(v, KINDS)}")
    return kind


def _cmd_describe(args) -> int:
    from .docgen import component_section
    from ..components.registry import get_registry

    kind, reg = get_registry().find(args.name)
    print(f"{kind}, from {reg.origin}\n")
    why = reg.unavailable()
    if why:
        print(f"Not usable in this install: {why}\n")
    print(component_section(reg.cls, reg.package))
    return 0


def _cmd_reference(args) -> int:
    from .docgen import render_reference
    from ..components.registry import get_registry

    sys.stdout.write(render_reference(get_registry()))
    return 0


def _cmd_score(args) -> int:
    from ..pipeline.scoring import score_recipe
    from ..report.summary import summary_table

    recipe_out = score_recipe(args.recipe, args.output, args.set, quiet=args.quiet,
                              force=args.force)
    print(f"{recipe_out.rows} rows scored -> {recipe_out.path} (nothing removed; rejected_by "
          f"names the step that would reject each row)")
    if recipe_out.steps:
        print(summary_table(recipe_out.steps))
    return 0


def _cmd_serve(args) -> int:
    from ..serve import serve

    serve(args.target, scores=args.scores, host=args.host, port=args.port,
          save_dir=None if args.no_save else args.save_dir, open_browser=args.open,
          allow_hosts=args.allow_hosts)
    return 0


#: what needs an extra of bitextforge besides the components that declare it whatever their
#: options (an option that picks a backend, a command, the runner, the aggregates)
_EXTRA_USES = {"langid": "language_id.v1 with backend: lingua", "serve": "bitextforge serve",
               "ray": "--runner ray", "full": "every extra above", "all": "every extra above",
               "test": "the test suite"}


def _cmd_doctor(args) -> int:
    from ..components.extras import install_hint, missing_distributions, package_extras
    from ..components.registry import get_registry

    reg = get_registry()
    problems = 0
    checked = 0
    # (package, extra) -> the components needing it; every extra bitextforge's metadata declares
    # is listed, those of other packages where a component of theirs names one
    users: dict[tuple[str, str], list[str]] = {("bitextforge", extra): []
                                               for extra in package_extras("bitextforge")}
    for kind, r in reg.registrations():
        for extra in r.cls.extras(None):
            users.setdefault((r.package, extra), []).append(r.cls.name)
    for (package, extra), names in users.items():
        checked += 1
        missing = missing_distributions(package, extra)
        uses = ", ".join(names + ([_EXTRA_USES[extra]] if package == "bitextforge"
                                  and extra in _EXTRA_USES else []))
        print(f"[{'MISSING' if missing else 'ok  '}] {package}[{extra}]: "
              f"{', '.join(missing) + ' not installed' if missing else ''}"
              f"{', ' if missing and uses else ''}{'for ' + uses if uses else ''}")
        if missing:
            problems += 1
            print(f"         {install_hint(package, extra)}")
    for kind, r in reg.registrations():
        for ok, what, hint in r.cls.doctor():
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


def _size(n: int) -> str:
    """Bytes in a short human form (``512 B``, ``1.5 MB``)."""
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    raise AssertionError  # the loop returns at GB


def _cmd_status(args) -> int:
    from .status import status_lines

    for line in status_lines(args.directories):
        print(line)
    return 0


def _cmd_cache(args) -> int:
    import time

    from ..cache.scores import cache_dir, cache_files, prune

    where = cache_dir()
    if args.action == "info":
        files = cache_files()
        print(f"score cache: {where}: {len(files)} file(s), "
              f"{_size(sum(f.size for f in files))}")
        if files:
            print(f"{'last used':<16}  {'days':>5}  {'rows':>10}  {'size':>9}  file")
        for f in files:
            used = time.strftime("%Y-%m-%d %H:%M", time.localtime(f.used))
            rows = "unreadable" if f.rows is None else f"{f.rows:,}"
            print(f"{used:<16}  {(time.time() - f.used) / 86400:>5.0f}  {rows:>10}  "
                  f"{_size(f.size):>9}  {f.path.name}")
        return 0
    # NaN fails every comparison and 1e309 reads as infinity: neither is a number of days
    if args.older_than is None or not 0 <= args.older_than < float("inf"):
        got = "" if args.older_than is None else f"; got {args.older_than:g}"
        raise BitextforgeError("cache prune: --older-than DAYS is required (a number of days, "
                               f"0 or more{got})")
    gone = prune(args.older_than, dry_run=args.dry_run)
    verb = "would remove" if args.dry_run else "removed"
    for f in gone:
        print(f"{verb} {f.path.name} ({_size(f.size)})")
    print(f"score cache: {where}: {verb} {len(gone)} file(s) unused for {args.older_than:g} "
          f"days, {_size(sum(f.size for f in gone))}")
    return 0


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The argument parser for the command line ``argv``, or with every command set up when
    ``argv`` is None (exposed for the docs and tests).

    Plugins are imported only when ``argv`` needs their commands (``--help``, a plugin command,
    a misspelt one): ``--version`` and the built-in commands start without them. Plugin commands
    are listed by name and help, and only the one ``argv`` calls is set up (its ``setup`` adds
    its arguments), so a broken setup breaks that command alone, with one line. A plugin command
    named like a built-in is refused with one line, and the built-in kept.
    """
    p, sub = _builtin_parser()
    word = _plugin_command_word(argv, sub.choices) if argv is not None else None
    if argv is not None and word is None:
        return p
    registry = get_registry()
    for cmd in plugin_commands(registry):
        if cmd.name in sub.choices:
            print(f"bitextforge: error: {registry.plugin_label(cmd.plugin)}: command "
                  f"{cmd.name!r} is a built-in command; the plugin's command is skipped",
                  file=sys.stderr)
            continue
        sp = sub.add_parser(cmd.name, help=cmd.help)
        if argv is None or cmd.name == word:
            sp.set_defaults(func=_set_up(cmd, sp, registry))
    return p


def _plugin_command_word(argv: list[str], builtins) -> str | None:
    """What a command line needs of the plugins' commands: None when the built-in parser
    suffices (``--version``, a built-in command); the command word when it is no built-in (a
    plugin command to set up, or a misspelt one); ``""`` for a help or usage message, which
    lists every command."""
    for arg in argv:
        if arg == "--version":
            return None
        if arg in ("-h", "--help"):
            return ""
        if not arg.startswith("-"):  # the options before a command take no values
            return None if arg in builtins else arg
    return ""


def _set_up(cmd, parser: argparse.ArgumentParser, registry):
    """Run a plugin command's setup on its parser and return its handler; a setup that raises
    (or returns no handler) is one line naming the plugin and the command."""
    try:
        handler = cmd.setup(parser)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - foreign code, even a sys.exit in it
        why = describe_failure(exc)
    else:
        if callable(handler):
            return handler
        why = f"setup returned {handler!r}, not a handler"
    raise RegistryError(f"{registry.plugin_label(cmd.plugin)}: command {cmd.name!r} failed to "
                        f"set up: {why}; command skipped")


def _builtin_parser() -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    """The parser of the built-in commands and its subcommand action (which plugin commands
    join)."""
    p = argparse.ArgumentParser(prog="bitextforge", description="Paraphrase, filter, weight and "
                                "evaluate parallel corpora with recipes.")
    p.add_argument("--version", action="version", version=f"bitextforge {__version__}")
    p.add_argument("--debug", action="store_true", help="print the traceback of an exception "
                   "raised inside a component (otherwise written to a log file)")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a recipe")
    r.add_argument("recipe")
    r.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="override a recipe value, e.g. steps[1].keep.max=2.5 (repeatable)")
    r.add_argument("-o", "--output", help="output directory (overrides output.dir)")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    r.add_argument("--restart", action="store_true", help="discard an unfinished run of a "
                   "different recipe in the output directory instead of refusing")
    r.add_argument("--force", action="store_true", help="write into a directory that holds files "
                   "but no bitextforge run (refused otherwise)")
    r.add_argument("--runner", choices=list(RUNNERS), help="execution backend (overrides runner)")
    r.add_argument("--address", help="Ray cluster address for --runner ray (default: start a "
                   "local cluster)")
    r.set_defaults(func=_cmd_run)

    pr = sub.add_parser("prepare", help="train the models of a recipe's prepare: list (those "
                        "not yet written) and stop")
    pr.add_argument("recipe")
    pr.add_argument("--only", type=int, nargs="+", metavar="I", help="only prepare[I] (0-based; "
                    "several allowed): independent trainings can then run side by side, e.g. "
                    "one process per model with threads: 1 each")
    pr.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    pr.set_defaults(func=_cmd_prepare)

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
    s.add_argument("--force", action="store_true", help="overwrite a file that is not a score TSV")
    s.set_defaults(func=_cmd_score)

    sv = sub.add_parser("serve", help="a local web page over a finished run: move thresholds, "
                        "see what they keep, save the recipe")
    sv.add_argument("target", help="a run directory, or a recipe (its output.dir, or --scores)")
    sv.add_argument("--scores", help="with a recipe: the TSV written by bitextforge score")
    sv.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    sv.add_argument("--port", type=int, default=8765, help="port (0 picks a free one)")
    sv.add_argument("--allow-host", action="append", default=[], dest="allow_hosts",
                    metavar="HOST", help="also answer requests whose Host header names HOST (a "
                    "name or address, no port; repeatable), e.g. behind a proxy or under a DNS "
                    "name; other names are refused")
    sv.add_argument("--save-dir", default=".", help="directory where saved recipes are written "
                    "(default: the current directory)")
    sv.add_argument("--no-save", action="store_true", help="read-only: no recipe can be saved")
    sv.add_argument("--open", action="store_true", help="open the page in a browser")
    sv.set_defaults(func=_cmd_serve)

    pl = sub.add_parser("plugins", help="list registered components with a one-line summary")
    pl.add_argument("kind", nargs="?", help="only this kind: splitter, paraphraser, cleaner, "
                    "filter, weighter, evaluator or trainer (plural accepted)")
    pl.add_argument("--json", action="store_true")
    pl.set_defaults(func=_cmd_plugins)

    d = sub.add_parser("describe", help="show a component's documentation and options")
    d.add_argument("name")
    d.set_defaults(func=_cmd_describe)

    ref = sub.add_parser("reference", help="print the Markdown recipe reference")
    ref.set_defaults(func=_cmd_reference)

    doc = sub.add_parser("doctor", help="check external tools and models components need")
    doc.set_defaults(func=_cmd_doctor)

    st = sub.add_parser("status", help="what run and model directories hold: a finished run, "
                        "the finished shards of an unfinished one, and the unfinished trainings "
                        "the same command continues (from which update)")
    st.add_argument("directories", nargs="+", metavar="DIR",
                    help="a run's output directory, a model directory (models/), or any folder "
                         "above them")
    st.set_defaults(func=_cmd_status)
    ca = sub.add_parser("cache", help="see the score cache (info) or remove its files that no "
                        "run has used for a while (prune --older-than DAYS)")
    ca.add_argument("action", choices=("info", "prune"))
    ca.add_argument("--older-than", type=float, metavar="DAYS", help="prune: remove the files "
                    "no run has opened in DAYS days")
    ca.add_argument("--dry-run", action="store_true", help="prune: list what would be removed")
    ca.set_defaults(func=_cmd_cache)
    add_train_command(sub)
    return p, sub


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's time limit) raised in the main thread, so the
    clean-up that Ctrl-C gets (temporary outputs and half-trained models removed) runs for it too;
    without a handler Python dies at once and leaves them behind."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``bitextforge`` command."""
    # Offline, the only bar Hugging Face libraries draw is transformers' "Loading weights" (done in
    # a blink), which breaks into the run's own progress line; HF_HUB_DISABLE_PROGRESS_BARS=0
    # brings their bars back (downloads of hub models, where the network allows).
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    # GNU OpenMP (bundled by the torch and CTranslate2 wheels) spins up to 300,000 times while it
    # waits for its other threads. With more busy threads than cores (a 2-thread prepare: model
    # beside train_and_test.v1's single-thread workers) the spinning thread holds the core the
    # other one needs: a 2-thread training ran 11 times slower than on one thread. 10,000 spins
    # cost nothing measurable on an idle machine and were 2.4 times faster on a busy one
    # (passive waiting was faster still there but 30 % slower idle; docs/nmt.md). Set before
    # torch is imported, as OpenMP reads it once; a user's own setting of either wins.
    if "OMP_WAIT_POLICY" not in os.environ:
        os.environ.setdefault("GOMP_SPINCOUNT", "10000")
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv  # accepted anywhere on the line, before or after the command
    argv = [a for a in argv if a != "--debug"]
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _raise_terminated) if in_main_thread else None
    try:
        # inside the handlers: loading plugins (for a plugin command or --help) can be
        # interrupted, and a plugin command that cannot be set up is one line
        args = build_parser(argv).parse_args(argv)
        return int(args.func(args) or 0)
    except BitextforgeError as exc:
        lines = str(exc).splitlines() or [type(exc).__name__]
        cause = exc.__cause__
        if isinstance(exc, StepError) and cause is not None:
            trace = "".join(traceback.format_exception(cause))
            if debug:
                sys.stderr.write(trace)
            else:
                lines[-1] += f" (traceback in {_write_log(trace)}; --debug prints it)"
        for line in lines:
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


def _write_log(text: str) -> str:
    """Write a traceback to a log file in the temporary directory; return its path."""
    import tempfile
    import time

    fd, path = tempfile.mkstemp(prefix=f"bitextforge-{time.strftime('%Y%m%d-%H%M%S')}-",
                                suffix=".log")
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


if __name__ == "__main__":
    sys.exit(main())
