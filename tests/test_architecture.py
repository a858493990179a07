"""The house's contracts: the plugin surface (one hook for every kind, abstract base classes, the
public API) and the import structure (core's floors run one way, no import circles, plugins
import only the public API). The import checks read the source with ``ast`` and run in well
under a second."""

from __future__ import annotations

import types

import pytest

import bitextforge
from bitextforge import Filter, Paraphraser, RegistryError, Trainer
from bitextforge.components.registry import Registry


class _Agreement(Filter):
    """Scores every pair 1."""

    name = "arch_agreement.v1"

    def score(self, batch):
        return [1.0] * len(batch["src"])


class _Echo(Paraphraser):
    """Offers the sentence itself."""

    name = "arch_echo.v1"

    def paraphrase(self, sentences, side=None):
        return [[(s, 0.0)] for s in sentences]


class _Incomplete(Filter):
    """Forgets to score."""

    name = "arch_incomplete.v1"


def _plugin(**hooks):
    return types.SimpleNamespace(**{name: bitextforge.hookimpl(fn) for name, fn in hooks.items()})


def test_register_components_files_each_class_under_its_own_kind():
    def register_components(register):
        register(_Agreement)
        register(_Echo)

    reg = Registry()
    reg.add_plugin(_plugin(register_components=register_components), name="mixed")
    assert reg.names("filter") == ["arch_agreement.v1"]
    assert reg.names("paraphraser") == ["arch_echo.v1"]
    assert reg.registration("filter", "arch_agreement.v1").plugin == "mixed"


def test_the_kinds_own_hooks_keep_working_beside_it():
    def register_filters(register):
        register(_Agreement)

    def register_components(register):
        register(_Echo)

    reg = Registry()
    reg.add_plugin(_plugin(register_filters=register_filters), name="old")
    reg.add_plugin(_plugin(register_components=register_components), name="new")
    assert reg.names("filter") == ["arch_agreement.v1"]
    assert reg.names("paraphraser") == ["arch_echo.v1"]


def test_a_kinds_own_hook_still_refuses_another_kind():
    def register_filters(register):
        register(_Echo)

    reg = Registry()
    reg.add_plugin(_plugin(register_filters=register_filters), name="wrong")
    with pytest.raises(RegistryError, match="as a filter, but it does not subclass "
                                            "bitextforge.Filter"):
        reg.names("filter")


def test_register_components_refuses_what_is_no_component():
    def register_components(register):
        register(dict)

    reg = Registry()
    reg.add_plugin(_plugin(register_components=register_components), name="odd")
    with pytest.raises(RegistryError) as err:
        reg.names("filter")
    assert str(err.value).startswith("plugin 'odd' registered <class 'dict'>, which subclasses "
                                     "none of bitextforge.Splitter")
    assert "\n" not in str(err.value)


def test_an_incomplete_component_is_refused_at_registration_in_one_line():
    def register_components(register):
        register(_Incomplete)

    reg = Registry()
    reg.add_plugin(_plugin(register_components=register_components), name="half")
    with pytest.raises(RegistryError) as err:
        reg.names("filter")
    assert str(err.value) == ("plugin 'half': _Incomplete does not implement score(), which "
                              "bitextforge.Filter declares abstract")


def test_an_incomplete_component_cannot_be_built_either():
    with pytest.raises(TypeError, match="abstract"):
        _Incomplete()


def test_every_kinds_work_is_abstract_on_its_base():
    from bitextforge.components.kinds import COMPONENT_KINDS

    work = {"splitter": {"split"}, "paraphraser": {"paraphrase"}, "cleaner": {"clean"},
            "generator": {"generate"}, "filter": {"score"}, "weighter": {"weight"},
            "evaluator": {"evaluate"}, "trainer": {"train"}}
    assert {k.name: set(k.base.__abstractmethods__) for k in COMPONENT_KINDS} == work
    assert Trainer.__abstractmethods__ == frozenset({"train"})


def test_a_misspelled_hook_suggests_register_components():
    def register_component(register):
        register(_Agreement)

    with pytest.raises(RegistryError, match="register_component is not a bitextforge hook; "
                                            "did you mean register_components\\?"):
        Registry().add_plugin(_plugin(register_component=register_component), name="typo")
