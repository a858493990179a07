"""A component whose extra is not installed: listed and marked by ``plugins`` and ``describe``,
refused with one line naming the component and the extra at recipe validation and at component
construction (``bitextforge train``); what an extra holds is read from the package's metadata
(Requires-Dist), so a plugin's own extras work the same way. The built-in components' extras are
the ones pyproject.toml declares, and ``--version`` imports no library of an extra.
"""

import json
import subprocess
import sys
import tomllib

import pytest
from conftest import ROOT, fake_distribution

from bitextforge.errors import ComponentError

PLUGIN = '''
from pydantic import Field
from typing import Literal
import bitextforge


class Heavy(bitextforge.Filter):
    """Scores with a library of the heavy extra."""

    name = "heavy.v1"
    extra = "heavy"

    def score(self, batch):
        return [0.0] * len(batch["src"])


class Choosy(bitextforge.Filter):
    """Light, unless its fancy backend is chosen."""

    name = "choosy.v1"
    default_keep = {"min": 0.0}

    class Config(bitextforge.Filter.Config):
        """Options of choosy.v1."""

        backend: Literal["plain", "fancy"] = Field("plain", description="fancy needs heavy.")

    @classmethod
    def extras(cls, config=None):
        """The heavy extra for the fancy backend."""
        return ("heavy",) if config is not None and config.backend == "fancy" else ()

    def score(self, batch):
        return [0.0] * len(batch["src"])


class Everything(bitextforge.Filter):
    """Needs every extra."""

    name = "everything.v1"
    extra = "all"

    def score(self, batch):
        return [0.0] * len(batch["src"])


class HeavyModel(bitextforge.Trainer):
    """Trains with the heavy extra."""

    name = "heavy_model.v1"
    extra = "heavy"

    def train(self):
        return {}


@bitextforge.hookimpl
def register_filters(register):
    register(Heavy)
    register(Choosy)
    register(Everything)


@bitextforge.hookimpl
def register_trainers(register):
    register(HeavyModel)
'''
#: heavy needs a distribution that is not installed and one that is; all is the plugin itself
#: with its extras (as bitextforge's full = bitextforge[quality,...])
METADATA = ('Provides-Extra: heavy\n'
            'Requires-Dist: bitextforge-no-such-dist>=1; extra == "heavy"\n'
            'Requires-Dist: pluggy>=1; extra == "heavy"\n'
            'Provides-Extra: light\n'
            'Requires-Dist: pluggy>=1; extra == "light"\n'
            'Provides-Extra: all\n'
            'Requires-Dist: extras_plugin[heavy,light]; extra == "all"\n')
NEEDS = ("needs the 'heavy' extra (bitextforge-no-such-dist not installed): "
         "pip install 'extras_plugin[heavy]'")


def cli(*args, env, cwd=None):
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", *map(str, args)],
                          capture_output=True, text=True, env=env, cwd=cwd)


def test_missing_extra_is_listed_marked_and_refused_in_one_line(tmp_path, pair_files):
    env = fake_distribution(tmp_path, "extras_plugin", PLUGIN, METADATA)
    res = cli("plugins", env=env)
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line for line in res.stdout.splitlines()[1:]}
    assert rows["heavy.v1"].endswith("[needs the 'heavy' extra] Scores with a library of the "
                                     "heavy extra.")
    assert "[needs" not in rows["choosy.v1"]  # only a chosen option needs the extra
    assert "[needs the 'all' extra]" in rows["everything.v1"]
    res = cli("plugins", "--json", env=env)
    by_name = {row["name"]: row for row in json.loads(res.stdout)}
    assert by_name["heavy.v1"]["unavailable"] == f"heavy.v1 {NEEDS}"
    assert "unavailable" not in by_name["choosy.v1"] and "unavailable" not in by_name["dedupe.v1"]
    res = cli("describe", "heavy.v1", env=env)
    assert res.returncode == 0
    assert f"Not usable in this install: heavy.v1 {NEEDS}" in res.stdout
    assert "Needs the `heavy` extra: `pip install 'extras_plugin[heavy]'`." in res.stdout

    res = cli("doctor", env=env)
    lines = res.stdout.splitlines()
    at = lines.index("[MISSING] extras_plugin[heavy]: bitextforge-no-such-dist not installed, "
                     "for heavy.v1, heavy_model.v1")
    assert lines[at + 1].strip() == "pip install 'extras_plugin[heavy]'"
    assert res.returncode == 1

    s, t = pair_files(["Hallo"], ["Hello"])
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: x\ninput: {{src: {s}, tgt: {t}}}\nsteps:\n"
                      f"  - filter: heavy.v1\n"
                      f"  - filter: choosy.v1\n    with: {{backend: fancy}}\n"
                      f"  - filter: choosy.v1\n"
                      f"  - filter: everything.v1\n"
                      f"output: {tmp_path / 'out'}\n")
    res = cli("run", recipe, env=env)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {recipe}: steps[0] (heavy): heavy.v1 {NEEDS}",
        f"bitextforge: error: {recipe}: steps[1] (choosy): choosy.v1 {NEEDS}",
        f"bitextforge: error: {recipe}: steps[3] (everything): everything.v1 needs the 'all' extra "
        f"(bitextforge-no-such-dist not installed): pip install 'extras_plugin[all]'"]
    assert not (tmp_path / "out").exists()
    res = cli("validate", recipe, "--set", "steps=[{filter: choosy.v1}]", env=env)
    assert res.returncode == 0, res.stderr

    # a trainer built outside a recipe (bitextforge train) is refused by the same check
    res = cli("train", "heavy_model.v1", "--output", tmp_path / "m", env=env)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [f"bitextforge: error: heavy_model.v1 {NEEDS}"]
    assert not (tmp_path / "m").exists()


def test_build_component_refuses_a_missing_extra(tmp_path, monkeypatch):
    fake_distribution(tmp_path, "extras_plugin2", PLUGIN,
                      METADATA.replace("extras_plugin[", "extras_plugin2["))
    monkeypatch.syspath_prepend(str(tmp_path))
    from importlib import import_module

    from bitextforge.pipeline.plan import build_component
    from bitextforge.components.registry import Registry

    reg = Registry()
    reg.add_plugin(import_module("extras_plugin2"), name="x", package="extras_plugin2")
    with pytest.raises(ComponentError) as err:
        build_component(reg, "filter", "heavy.v1", None)
    assert str(err.value) == NEEDS.join(["heavy.v1 ", ""]).replace("extras_plugin[",
                                                                   "extras_plugin2[")
    choosy = reg.get("filter", "choosy.v1")
    assert build_component(reg, "filter", "choosy.v1", choosy.Config()).name == "choosy.v1"
    with pytest.raises(ComponentError):
        build_component(reg, "filter", "choosy.v1", choosy.Config(backend="fancy"))


def test_builtin_extras_are_declared_in_pyproject():
    """Every extra a built-in component names is in pyproject.toml, and ``full`` installs every
    extra but ``test`` (so does ``all``)."""
    from bitextforge.components.registry import get_registry

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    named = {r.cls.extra for _, r in get_registry().registrations() if r.package == "bitextforge"}
    named.discard(None)
    assert named and named <= set(extras), named - set(extras)
    # the options that choose another library: lingua, and scikit-learn's IDF
    assert {"langid", "quality", "lexical", "embeddings"} <= set(extras)
    full = extras["full"][0]
    assert full.startswith("bitextforge[")
    assert set(full[len("bitextforge["):-1].split(",")) == set(extras) - {"full", "all", "test"}
    assert extras["all"] == ["bitextforge[full]"]


def test_version_and_help_import_no_library_of_an_extra():
    code = ("import sys\nfrom bitextforge.cli.main import main\n"
            "for argv in (['--version'], ['--help'], ['plugins'],\n"
            "             ['describe', 'kenlm_perplexity.v1']):\n"
            "    try:\n        main(argv)\n    except SystemExit:\n        pass\n"
            "heavy = ('torch', 'transformers', 'kenlm', 'delphin', 'sentencepiece', 'sklearn',\n"
            "         'scipy', 'lingua', 'ctranslate2', 'heliport', 'pyarrow', 'faiss', 'ray')\n"
            "print(' '.join(m for m in heavy if m in sys.modules), file=sys.stderr)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stderr.strip() == ""
