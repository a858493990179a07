"""The ``bitextforge`` command as a user runs it: exit codes, one-line errors, no tracebacks."""

import signal
import subprocess
import sys

import pytest
from conftest import SMALL_DE, SMALL_EN, fake_distribution


def cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def write_recipe(tmp_path, s, t, body):
    p = tmp_path / "r.yaml"
    p.write_text(f"name: cli\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: '{tmp_path / 'out'}'\n{body}")
    return p


STEPS = "steps:\n  - filter: dedupe.v1\n  - filter: length_ratio.v1\n    keep: {max: 2.5}\n"


def test_run_validate_score(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    r = write_recipe(tmp_path, s, t, STEPS)
    res = cli("run", r, "-q")
    assert res.returncode == 0, res.stderr
    assert "8 rows in, 6 rows out, 2 rejected" in res.stdout
    assert res.stdout.strip().splitlines()[-1].startswith("bitextforge:0.1.0|recipe:cli|")
    res = cli("validate", r, "--filled")
    assert res.returncode == 0 and "letters_only: false" in res.stdout
    res = cli("score", r, "-o", tmp_path / "scores.tsv", "-q")
    assert res.returncode == 0, res.stderr
    lines = (tmp_path / "scores.tsv").read_text().splitlines()
    assert lines[0].split("\t")[-3:] == ["dedupe", "length_ratio", "rejected_by"]
    assert len(lines) == 9


def test_user_error_is_one_line_exit_2(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    r = write_recipe(tmp_path, s, t, STEPS.replace("max: 2.5", "max_ratio: 2.5"))
    res = cli("run", r)
    assert res.returncode == 2
    assert res.stderr.strip() == (f"bitextforge: error: {r}: steps[1] (length_ratio).keep.max_ratio: "
                                  f"unknown field; "
                                  f"did you mean max?")
    assert "Traceback" not in res.stderr
    assert not (tmp_path / "out").exists()


def test_set_override_and_missing_input(pair_files, tmp_path):
    s, t = pair_files(SMALL_DE, SMALL_EN)
    r = write_recipe(tmp_path, s, t, STEPS)
    res = cli("run", r, "-q", "--set", "input.src=/nonexistent/x.de")
    assert res.returncode == 2 and "/nonexistent/x.de: no such file" in res.stderr
    assert not (tmp_path / "out" / "corpus.src").exists()


def test_plugins_and_describe():
    res = cli("plugins")
    assert res.returncode == 0
    head, *rows = res.stdout.splitlines()
    assert head.split() == ["name", "kind", "version", "package", "plugin", "summary"]
    assert any(r.split()[:2] == ["distributed.v1", "weighter"] for r in rows)
    res = cli("describe", "length_ratio.v1")
    assert res.returncode == 0 and "| `unit` |" in res.stdout and "filter, from plugin" in res.stdout
    res = cli("describe", "length_ration.v1")
    assert res.returncode == 2 and "did you mean length_ratio.v1" in res.stderr


def test_register_commands_hook_adds_a_command_and_refuses_duplicates(bitextforge_plugin, capsys):
    """A plugin's register_commands adds a subcommand; a name taken by another plugin (or the
    core) is one clear error."""
    import types

    import bitextforge
    from bitextforge.cli.main import main

    def setup(parser):
        parser.add_argument("word")

        def handler(args):
            print(f"hello {args.word}")
            return 0
        return handler

    mod = types.SimpleNamespace()

    @bitextforge.hookimpl
    def register_commands(register):
        register("hello-test", "say hello", setup)

    mod.register_commands = register_commands
    bitextforge_plugin(mod, name="hello")
    assert main(["hello-test", "world"]) == 0
    assert capsys.readouterr().out == "hello world\n"

    @bitextforge.hookimpl
    def register_commands_again(register):
        register("hello-test", "say hello again", setup)

    twin = types.SimpleNamespace(register_commands=register_commands_again)
    bitextforge_plugin(twin, name="hello-twin")
    assert main(["hello-test", "x"]) == 2
    assert "command 'hello-test' is registered twice" in capsys.readouterr().err


def test_generic_train_flags_and_set(tmp_path, capsys):
    """bitextforge train NAME: flags come from the trainer's Config; --set takes any field in
    YAML; an unknown key names the nearest fields; a bad value names its flag."""
    from bitextforge.cli.main import main

    text = tmp_path / "t.txt"
    text.write_text("Ein Hund\nA Dog\n" * 3, encoding="utf-8")
    out = tmp_path / "v.vec"
    args = ["train", "word_vectors.v1", "--text", str(text), "-o", str(out), "--min-count", "1"]
    assert main(args + ["--set", "dimm=2"]) == 2
    assert "--set dimm: unknown field; did you mean dim?" in capsys.readouterr().err
    assert main(args + ["--set", "dim=0"]) == 2
    assert "train word_vectors.v1 --dim:" in capsys.readouterr().err
    assert main(args + ["--set", "dim=2", "--window", "2", "--no-lowercase"]) == 0
    assert "wrote" in capsys.readouterr().out
    words = [ln.split()[0] for ln in out.read_text(encoding="utf-8").splitlines()[1:]]
    assert "Hund" in words and "hund" not in words  # --no-lowercase kept the case
    assert main(["train"]) == 2 and "word_vectors.v1" in capsys.readouterr().err


def test_openmp_spins_briefly_unless_the_user_says_otherwise(monkeypatch, capsys):
    """Long OpenMP spinning made a 2-thread training 11x slower beside other jobs; the command
    shortens it for itself and the processes it starts, and keeps a user's own settings."""
    import os

    from bitextforge.cli.main import main

    monkeypatch.setattr(os, "environ", os.environ.copy())  # nothing leaks into later tests
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    assert main(["plugins"]) == 0
    assert os.environ["GOMP_SPINCOUNT"] == "10000"
    monkeypatch.setenv("GOMP_SPINCOUNT", "300000")
    assert main(["plugins"]) == 0
    assert os.environ["GOMP_SPINCOUNT"] == "300000"
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "PASSIVE")
    assert main(["plugins"]) == 0
    assert "GOMP_SPINCOUNT" not in os.environ
    capsys.readouterr()


# ------------------------------------------------------------ plugins cannot break the CLI
# Each test installs a fake distribution (a module and its .dist-info, found by the real
# entry-point discovery) and runs the command as a user does, in a fresh process.

def cli_with(env, *args):
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", *map(str, args)],
                          capture_output=True, text=True, env=env)


HELLO = """
import bitextforge

def _setup(parser):
    parser.add_argument("word")

    def handler(args):
        print(f"{NAME} {args.word}")
        return 0
    return handler

@bitextforge.hookimpl
def register_commands(register):
    for name in NAMES:
        register(name, f"{name} from a plugin", _setup)
"""


def test_plugin_command_named_like_a_builtin_is_refused_and_the_builtin_kept(tmp_path):
    """`serve` and `prepare` (which the old list of core names missed: an argparse crash of
    every command) and `run` (an error of every command): one line each naming the plugin and
    the name; the built-ins and the plugin's other command work."""
    env = fake_distribution(tmp_path, "shadow_plugin", "NAME = 'shadowed'\n"
                            "NAMES = ['serve', 'prepare', 'run', 'shadow-hello']\n" + HELLO)
    origin = "plugin 'shadow_plugin' (entry point shadow_plugin, shadow_plugin 0.1)"
    refused = [f"bitextforge: error: {origin}: command {name!r} is a built-in command; the "
               f"plugin's command is skipped" for name in ("serve", "prepare", "run")]
    res = cli_with(env, "--help")
    assert res.returncode == 0, res.stderr
    assert res.stderr.splitlines() == refused
    assert "shadow-hello" in res.stdout and "serve from a plugin" not in res.stdout
    assert res.stdout.count("\n    serve ") == 1
    res = cli_with(env, "shadow-hello", "world")
    assert (res.returncode, res.stdout, res.stderr.splitlines()) == (0, "shadowed world\n", refused)
    res = cli_with(env, "serve", "--help")  # the built-in's own arguments
    assert res.returncode == 0 and "--scores" in res.stdout, res.stderr
    res = cli_with(env, "plugins")
    assert res.returncode == 0 and "length_ratio.v1" in res.stdout, res.stderr


def test_plugin_whose_register_commands_raises_is_skipped(tmp_path):
    """Like a plugin that fails to import: one line, the whole plugin skipped (its filter too),
    every command still works."""
    env = fake_distribution(tmp_path, "raising_plugin", (
        "import bitextforge\nfrom bitextforge import Filter\n\n"
        "class Never(Filter):\n    name = 'never_listed.v1'\n\n"
        "    def score(self, batch):\n        return [0.0] * len(batch['src'])\n\n"
        "@bitextforge.hookimpl\ndef register_filters(register):\n    register(Never)\n\n"
        "@bitextforge.hookimpl\ndef register_commands(register):\n"
        "    raise RuntimeError('no commands today')\n"))
    line = ("bitextforge: error: plugin 'raising_plugin' (entry point raising_plugin, "
            "raising_plugin 0.1) failed in register_commands: RuntimeError: no commands today; "
            "plugin skipped")
    res = cli_with(env, "--version")
    assert (res.returncode, res.stdout, res.stderr) == (0, "bitextforge 0.1.0\n", "")
    for args in (["plugins"], ["--help"], ["train-lm", "--help"]):
        res = cli_with(env, *args)
        assert res.returncode == 0, res.stderr
        assert res.stderr.splitlines() == [line], args
        assert "never_listed.v1" not in res.stdout
    assert "distributed.v1" in cli_with(env, "plugins").stdout


def test_plugin_command_whose_setup_raises_breaks_only_itself(tmp_path):
    """A command's setup runs only when that command is called: there it is one line naming
    the plugin and the command; every other command (and --help) works."""
    env = fake_distribution(tmp_path, "badsetup_plugin", HELLO.replace(
        "    parser.add_argument(\"word\")\n", "    if parser.prog.endswith('broken'):\n"
        "        raise ValueError('cannot set up')\n    parser.add_argument('word')\n")
        + "NAME = 'fine'\nNAMES = ['broken', 'fine']\n")
    res = cli_with(env, "broken", "x")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [
        "bitextforge: error: plugin 'badsetup_plugin' (entry point badsetup_plugin, "
        "badsetup_plugin 0.1): command 'broken' failed to set up: ValueError: cannot set up; "
        "command skipped"]
    for args, out in ((["fine", "y"], "fine y\n"), (["--version"], "bitextforge 0.1.0\n")):
        res = cli_with(env, *args)
        assert (res.returncode, res.stdout, res.stderr) == (0, out, "")
    res = cli_with(env, "--help")
    assert (res.returncode, res.stderr) == (0, "") and "broken from a plugin" in res.stdout
    res = cli_with(env, "plugins")
    assert (res.returncode, res.stderr) == (0, "") and "length_ratio.v1" in res.stdout


@pytest.mark.parametrize("stop, what", [
    ("import no_such_module_here\n", "No module named 'no_such_module_here'"),
    ("import sys\nsys.exit(3)\n", "SystemExit: 3"),
    ("class Stop(BaseException):\n    pass\n\nraise Stop('halt')\n", "Stop: halt")])
def test_plugin_that_exits_at_import_is_skipped(tmp_path, stop, what):
    """sys.exit or another BaseException at import is a failed import: skipped and reported
    (an ImportError's line as it always was)."""
    env = fake_distribution(tmp_path, "exiting_plugin", stop)
    for args in (["plugins"], ["describe", "length.v1"]):
        res = cli_with(env, *args)
        assert res.returncode == 0, res.stderr
        assert res.stderr.splitlines() == [
            f"bitextforge: error: plugin 'exiting_plugin' (entry point exiting_plugin) failed to "
            f"import: {what}; plugin skipped"]
    assert "distributed.v1" in cli_with(env, "plugins").stdout


def test_keyboard_interrupt_at_plugin_import_still_interrupts(tmp_path):
    """Ctrl-C (a real SIGINT) while plugins load stops the command, as it does anywhere else; a
    plugin that raises KeyboardInterrupt by itself is a broken plugin, skipped
    (tests/test_data_safety.py)."""
    env = fake_distribution(tmp_path, "interrupted_plugin",
                            "import os, signal, time\nos.kill(os.getpid(), signal.SIGINT)\n"
                            "time.sleep(5)\n")
    # a command started in the background by a shell inherits SIGINT ignored, and then Ctrl-C
    # never reaches it; the user's terminal gives the command the default disposition
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "plugins"], capture_output=True,
                         text=True, env=env,
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert res.returncode == 130 and "interrupted" in res.stderr


def test_version_and_help_load_no_more_than_they_need(tmp_path):
    """--version and a built-in command's --help import no plugin; the top-level --help imports
    the plugins to list their commands but sets none of them up (no setup runs)."""
    marker = tmp_path / "imported"
    setup_marker = tmp_path / "set-up"
    env = fake_distribution(tmp_path, "marking_plugin", (
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n" + HELLO.replace(
            "    parser.add_argument(\"word\")\n",
            f"    pathlib.Path({str(setup_marker)!r}).touch()\n    parser.add_argument('word')\n")
        + "NAME = 'mark'\nNAMES = ['mark']\n"))
    probe = ("import sys\nfrom bitextforge.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\nprint(sorted(m for m in sys.modules if "
             "m.startswith('bitextforge.plugins')), file=sys.stderr)\n")
    for args in (["--version"], ["validate", "--help"], ["serve", "--help"]):
        res = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True,
                             text=True, env=env)
        assert res.stderr.splitlines() == ["[]"], args
        assert not marker.exists(), args
    res = cli_with(env, "--help")
    assert res.returncode == 0 and "mark from a plugin" in res.stdout
    assert marker.exists() and not setup_marker.exists()
    res = cli_with(env, "mark", "--help")
    assert res.returncode == 0 and "word" in res.stdout and setup_marker.exists()
