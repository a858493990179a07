"""The plugin registry: discovery, duplicate and typo errors, the plugin-author fixture."""

import subprocess
import sys
import types

import pytest
from conftest import fake_distribution

import bitextforge
from bitextforge import Filter, RegistryError
from bitextforge.components.registry import Registry, get_registry

BUILTIN = {
    "splitter": {"nichols_split.v1"},
    "paraphraser": {"backtranslate.v1", "roundtrip.v1", "erg.v1"},
    "filter": {"dedupe.v1", "length.v1", "length_ratio.v1", "column.v1", "combine.v1",
               "language_id.v1", "ngram_overlap.v1",
               "sentence_bleu.v1", "sentence_chrf.v1", "kenlm_perplexity.v1",
               "embedding_cosine.v1", "paraphrase_score.v1", "translation_cost.v1",
               "reference_classifier.v1", "bilingual_similarity.v1", "lexical_coverage.v1",
               "lexical_translation.v1", "pair_classifier.v1", "multilingual_embedding.v1"},
    "weighter": {"distributed.v1", "first.v1", "varying.v1", "sentence_weights.v1"},
    "evaluator": {"bleu.v1", "chrf.v1", "corpus_stats.v1", "label_auc.v1",
                  "alignment_recovery.v1", "paraphrastic_embeddings.v1", "mrpc.v1"},
}


def test_builtin_components_snapshot():
    """No built-in component disappears unnoticed (spaCy-style snapshot)."""
    reg = get_registry()
    for kind, names in BUILTIN.items():
        assert names <= set(reg.names(kind)), kind


def test_builtins_come_through_entry_points():
    reg = get_registry()
    for kind, r in reg.registrations():
        if r.cls.name in BUILTIN.get(kind, ()):
            assert r.package == "bitextforge"
            assert r.plugin in ("basic_filters", "weighters", "quality", "evaluation", "nmt",
                                "erg", "bilingual", "lexical")


def _plugin_with(cls, hook="register_filters"):
    mod = types.SimpleNamespace()

    @bitextforge.hookimpl
    def impl(register):
        register(cls)

    setattr(mod, hook, impl)
    return mod


class _Twin(Filter):
    name = "length.v1"

    def score(self, batch):
        return [0.0] * len(batch["src"])


def test_duplicate_name_names_both_origins(bitextforge_plugin):
    reg = bitextforge_plugin(_plugin_with(_Twin), name="twin")
    with pytest.raises(RegistryError) as err:
        reg.names("filter")
    msg = str(err.value)
    assert "length.v1" in msg and "basic_filters" in msg and "twin" in msg


def test_misspelled_hook_fails_loudly():
    reg = Registry()
    mod = types.SimpleNamespace()

    @bitextforge.hookimpl
    def register_filter(register):  # missing "s"
        pass

    mod.register_filter = register_filter
    with pytest.raises(RegistryError) as err:
        reg.add_plugin(mod, name="typo")
    assert str(err.value) == ("plugin 'typo': register_filter is not a bitextforge hook; did you "
                              "mean register_filters?")
    assert reg.pm.get_plugin("typo") is None  # not half-registered


def test_misspelled_hook_of_an_installed_plugin_skips_only_that_plugin(tmp_path):
    env = fake_distribution(tmp_path, "typo_plugin", (
        "import bitextforge\n\n@bitextforge.hookimpl\ndef register_filter(register):\n"
        "    pass\n"))
    for cmd in (["plugins"], ["describe", "length.v1"]):
        res = subprocess.run([sys.executable, "-m", "bitextforge.cli", *cmd], capture_output=True,
                             text=True, env=env)
        assert res.returncode == 0, res.stderr
        assert res.stderr.splitlines() == [
            "bitextforge: error: plugin 'typo_plugin': register_filter is not a bitextforge "
            "hook; did you mean register_filters?; plugin skipped"]
        assert "Traceback" not in res.stderr
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "plugins"],
                         capture_output=True, text=True, env=env)
    assert "length_ratio.v1" in res.stdout and "distributed.v1" in res.stdout


@pytest.mark.parametrize("body, why", [
    ("raise RuntimeError('boom')", "RuntimeError: boom"),
    ("raise SystemExit(4)", "SystemExit: 4"),
    ("register('--bad', 'help', lambda parser: None)",
     "RegistryError: command name '--bad' is not a word"),
    ("register('fine', 'help', 'not callable')",
     "RegistryError: command 'fine': setup 'not callable' is not callable"),
])
def test_failing_register_commands_refuses_the_plugin_whole(body, why):
    """register_commands runs when the plugin is added (its setups do not): a plugin whose hook
    raises, or registers what cannot be a command, is refused and left unregistered, its
    components with it."""
    reg = Registry()
    mod = types.SimpleNamespace()
    namespace = {}
    exec(f"def register_commands(register):\n    {body}\n", namespace)
    mod.register_commands = bitextforge.hookimpl(namespace["register_commands"])
    mod.register_filters = bitextforge.hookimpl(lambda register: register(_Twin))
    with pytest.raises(RegistryError) as err:
        reg.add_plugin(mod, name="cmds")
    assert str(err.value) == f"plugin 'cmds' failed in register_commands: {why}"
    assert reg.pm.get_plugin("cmds") is None and reg.names("filter") == [] and reg.commands() == []


def test_unknown_name_suggests_closest():
    with pytest.raises(RegistryError, match="did you mean length_ratio.v1"):
        get_registry().get("filter", "length_ration.v1")


def test_fixture_registers_and_removes(bitextforge_plugin):
    class Mine(Filter):
        """Scores zero."""

        name = "mine.v1"

        def score(self, batch):
            return [0.0] * len(batch["src"])

    reg = bitextforge_plugin(_plugin_with(Mine), name="mine")
    assert "mine.v1" in reg.names("filter")
    reg.remove_plugin("mine")
    assert "mine.v1" not in reg.names("filter")


def test_class_checks():
    class NoVersion(Filter):
        name = "noversion"

    reg = Registry()
    reg.add_plugin(_plugin_with(NoVersion), name="nv")
    with pytest.raises(RegistryError, match="versioned"):
        reg.names("filter")

    class NotAFilter:
        name = "x.v1"

    reg = Registry()
    reg.add_plugin(_plugin_with(NotAFilter), name="naf")
    with pytest.raises(RegistryError, match="does not subclass"):
        reg.names("filter")


def test_load_plugins_env_restricts(monkeypatch):
    monkeypatch.setenv("BITEXTFORGE_LOAD_PLUGINS", "weighters")
    reg = Registry()
    reg.load_entry_points()
    assert reg.names("filter") == []
    assert "distributed.v1" in reg.names("weighter")


def test_plugin_module_registers_classes_under_the_hook_of_their_kind(bitextforge_plugin):
    """The fixture takes component classes: each is registered under its kind's hook; anything
    else is refused before the registry sees it."""
    from bitextforge import Evaluator, Report
    from bitextforge.testing import plugin_module

    class One(Filter):
        """Scores 1."""
        name = "one_test.v1"

        def score(self, batch):
            return [1.0] * len(batch["src"])

    class Rows(Evaluator):
        """Counts rows."""
        name = "rows_test.v1"

        def evaluate(self, corpus):
            return Report(numbers={"rows": float(len(corpus))})

    mod = plugin_module(One, Rows)
    assert sorted(vars(mod)) == ["register_evaluators", "register_filters"]
    reg = bitextforge_plugin(One, Rows, name="inline")
    assert "one_test.v1" in reg.names("filter") and "rows_test.v1" in reg.names("evaluator")

    class NotAComponent:
        name = "x.v1"

    with pytest.raises(TypeError, match="component classes"):
        bitextforge_plugin(NotAComponent, name="bad")


def test_builtin_index_lists_what_each_builtin_plugin_registers():
    """bitextforge.plugins.COMPONENTS stands in for a built-in plugin until a command needs it:
    it must name exactly what the plugin registers, and every built-in must have an entry (one
    without would be imported at every start-up)."""
    from importlib import metadata

    from bitextforge.plugins import COMPONENTS

    reg = Registry()
    reg.load_entry_points()
    found: dict[str, dict[str, set[str]]] = {}
    for kind, r in reg.registrations():  # imports every plugin
        found.setdefault(r.plugin, {}).setdefault(kind, set()).add(r.cls.name)
    builtin = {ep.name: ep.value for ep in metadata.entry_points(group="bitextforge")
               if ep.value.startswith("bitextforge.plugins.")}
    assert set(builtin.values()) == set(COMPONENTS)
    for plugin, value in builtin.items():
        assert {k: set(v) for k, v in COMPONENTS[value].items()} == found[plugin], plugin


def test_a_builtin_imported_on_demand_gives_the_same_duplicate_error():
    """A plugin registering a built-in's name meets the same one-line error, naming the plugins in
    the same order, whether the built-in was imported before it or only when needed."""
    messages = []
    for import_all_first in (True, False):
        reg = Registry()
        reg.load_entry_points()
        if import_all_first:
            reg.names("filter")
        reg.add_plugin(_plugin_with(_Twin), name="twin")
        with pytest.raises(RegistryError) as err:
            reg.check()
        messages.append(str(err.value))
    assert messages[0] == messages[1]
    assert "by plugin basic_filters" in messages[0] and "and by plugin twin" in messages[0]


def test_startup_imports_only_what_the_command_needs(tmp_path):
    """--version imports no plugin, NumPy or YAML; validating and running a recipe of
    basic filters imports that one plugin, not the model plugins (torch, transformers) nor the
    libraries other plugins need (regex, html.parser, sqlite3)."""
    (tmp_path / "in.tsv").write_text("Ein Hund .\tA dog .\nEin Hund .\tA dog .\n")
    (tmp_path / "r.yaml").write_text(
        "name: t\ninput: {path: in.tsv, columns: [src, tgt]}\nprogress: false\nsteps:\n"
        "  - filter: length.v1\n    keep: {min: 1, max: 100}\n"
        "  - filter: length_ratio.v1\n    keep: {max: 3.0}\n  - filter: dedupe.v1\n"
        "output: {dir: out, formats: [plain], report: false}\n")
    code = ("import sys\nfrom bitextforge.cli.main import main\ntry:\n    sys.exit(main(sys.argv[1:]))\n"
            "finally:\n    open('mods.txt', 'w').write('\\n'.join(sorted(sys.modules)))\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "BITEXTFORGE_LOAD_PLUGINS"}
    heavy = {"torch", "transformers", "regex", "html.parser", "sqlite3"}
    for argv in (["--version"], ["validate", "r.yaml"], ["run", "-q", "r.yaml"]):
        res = subprocess.run([sys.executable, "-c", code, *argv], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        mods = set((tmp_path / "mods.txt").read_text().split())
        plugins = {m for m in mods if m.startswith("bitextforge.plugins.")}
        assert not mods & heavy, (argv, mods & heavy)
        if argv == ["--version"]:
            assert not plugins and not mods & {"numpy", "yaml"}, argv
        else:
            # spilled_keys is dedupe.v1's own key store (a module of the basic filters)
            assert plugins == {"bitextforge.plugins.basic_filters",
                               "bitextforge.plugins.spilled_keys",
                               "bitextforge.plugins.combine"}, (argv, plugins)
    assert (tmp_path / "out" / "corpus.src").read_text() == "Ein Hund .\n"


def test_components_asked_for_from_threads_at_once(monkeypatch):
    """serve's request threads may look components up at once: none may find a built-in plugin
    another thread is importing neither pending nor registered (and call its component unknown)."""
    import threading
    import time

    reg = Registry()
    reg.load_entry_points()
    register = Registry.add_plugin

    def slow_add_plugin(self, *args, **kwargs):
        time.sleep(0.05)  # a plugin slow to import: the other threads ask meanwhile
        return register(self, *args, **kwargs)

    monkeypatch.setattr(Registry, "add_plugin", slow_add_plugin)
    wanted = [("filter", "length.v1"), ("filter", "urls.v1"), ("evaluator", "bleu.v1"),
              ("weighter", "distributed.v1")] * 3
    errors: list[str] = []

    def ask(kind, name):
        try:
            assert reg.get(kind, name).name == name
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(repr(exc))

    threads = [threading.Thread(target=ask, args=pair) for pair in wanted]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


def test_plugin_helpers_come_from_the_top_level_package_lazily():
    """Plugins import the core's text helpers from ``bitextforge`` itself (their module path may
    move, as it did when core/ was split into sub-packages); importing ``bitextforge`` alone still
    loads no numpy, so ``--version`` stays light."""
    code = ("import sys, bitextforge\n"
            "assert 'numpy' not in sys.modules\n"
            "from bitextforge import AtomicFile, CorpusView, read_lines, text_lines, write_atomic\n"
            "from bitextforge.io import corpus\n"
            "assert text_lines is corpus.text_lines and AtomicFile is corpus.AtomicFile\n"
            "try:\n"
            "    bitextforge.no_such_helper\n"
            "except AttributeError:\n"
            "    pass\n"
            "else:\n"
            "    raise SystemExit('an unknown name must raise AttributeError')\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
