"""The example third-party plugin in docs/example-plugin: installed with pip, discovered through
the entry-point group, used by a recipe."""

import os
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT, pip_install


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """pip-install the example package into a private target directory (the test environment is
    not modified) and return an environment that puts it on the path."""
    target = tmp_path_factory.mktemp("example-plugin") / "site"
    pip_install(target, ROOT / "docs" / "example-plugin")
    env = dict(os.environ, PYTHONPATH=str(target))
    return env


def test_discovered_by_plugins_command(installed):
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "plugins"], capture_output=True,
                         text=True, env=installed)
    assert res.returncode == 0, res.stderr
    names = {ln.split()[0]: ln.split() for ln in res.stdout.splitlines()[1:]}
    assert names["contractions.v1"][1:4] == ["paraphraser", "0.1.0", "bitextforge-example"]
    assert names["number_agreement.v1"][1] == "filter"


def test_recipe_uses_both_components(installed, tmp_path):
    (tmp_path / "a.de").write_text("Ich weiß es nicht.\nEs kostet 12 Euro.\nEs kostet 12 Euro.\n")
    (tmp_path / "a.en").write_text("I do not know.\nIt costs 15 euros.\nIt's 12 euros.\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"""name: example
input: {{src: {tmp_path}/a.de, tgt: {tmp_path}/a.en}}
output: {tmp_path}/out
progress: false
steps:
  - filter: number_agreement.v1
    keep: {{min: 1}}
  - paraphrase: contractions.v1
    side: tgt
  - weight: distributed.v1
    with: {{n: 2}}
""")
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "run", str(recipe)],
                         capture_output=True, text=True, env=installed)
    assert res.returncode == 0, res.stderr
    tgt = (tmp_path / "out" / "corpus.tgt").read_text().splitlines()
    assert tgt == ["I do not know.", "I don't know.", "I do not know.",
                   "It's 12 euros.", "It is 12 euros.", "It's 12 euros."]


def test_trainer_and_command_of_a_third_party_package(installed, tmp_path):
    """The example package adds a trainer (run by the generic train command, flags generated
    from its Config) and a command of its own (through register_commands)."""
    text = tmp_path / "t.txt"
    text.write_text("the dog runs\nthe cat runs\nThe dog sleeps\n", encoding="utf-8")
    vocab = tmp_path / "vocab.txt"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "bitextforge.cli", *map(str, args)],
                              capture_output=True, text=True, env=installed)

    res = cli("train", "vocabulary.v1", "--text", text, "-o", vocab, "--min-count", "2",
              "--lowercase")
    assert res.returncode == 0, res.stderr
    assert vocab.read_text(encoding="utf-8").splitlines() == ["the", "dog", "runs"]
    assert "wrote" in res.stdout and "words 3" in res.stdout
    assert "vocabulary.v1: 3 tokens of 5 kept" in res.stderr  # the component's log channel
    res = cli("train", "vocabulary.v1", "--text", text, "-o", vocab, "--min-count", "0")
    assert res.returncode == 2 and "--min-count" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    res = cli("vocabulary-coverage", vocab, text)
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("6 of 9 tokens covered")  # "The" is not "the"
    res = cli("doctor")
    assert "[ok  ] vocabulary.v1: pure Python, no external tool" in res.stdout


@pytest.mark.parametrize("how", ["pip-installed", "importable only"])
def test_the_example_plugins_own_tests_pass(installed, tmp_path, how):
    """docs/example-plugin/tests, the tests a plugin author copies (the fixture and
    run_recipe_with of docs/plugins.md), run by pytest as their author would, with the plugin
    pip-installed (found through its entry point too) and merely importable. They are run from a
    copy, so that no cache is written into docs/."""
    shutil.copytree(ROOT / "docs" / "example-plugin" / "tests", tmp_path / "tests")
    env = dict(installed)
    if how == "importable only":
        env["PYTHONPATH"] = str(ROOT / "docs" / "example-plugin")
    res = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path / "tests")], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "4 passed" in res.stdout
