"""The ``bitextforge`` command as a user runs it: exit codes, one-line errors, no tracebacks."""

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
    assert res.stderr.strip() == (f"bitextforge: error: {r}: steps[1].keep.max_ratio: unknown field; "
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
    from bitextforge.cli import main

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
    from bitextforge.cli import main

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


# ------------------------------------------------------------ plugins cannot break the CLI
# Each test installs a fake distribution (a module and its .dist-info, found by the real
# entry-point discovery) and runs the command as a user does, in a fresh process.

def cli_with(env, *args):
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", *map(str, args)],
                          capture_output=True, text=True, env=env)


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
    for args in (["plugins"], ["--help"], ["train-lm", "--help"]):
        res = cli_with(env, *args)
        assert res.returncode == 0, res.stderr
        assert res.stderr.splitlines() == [line], args
        assert "never_listed.v1" not in res.stdout
    assert "distributed.v1" in cli_with(env, "plugins").stdout


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
