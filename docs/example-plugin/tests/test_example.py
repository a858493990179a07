"""Tests of the example plugin, to copy for a plugin of one's own: each component on its own, then
a whole recipe run in-process with the plugin registered (``run_recipe_with``), whether or not the
package is pip-installed. Run them with ``pytest tests`` from the plugin's folder."""

from bitextforge.testing import run_recipe_with

import bitextforge_example
from bitextforge_example import ContractionParaphraser, NumberAgreementFilter


def test_components_are_registered(bitextforge_plugin):
    registry = bitextforge_plugin(bitextforge_example)
    assert "number_agreement.v1" in registry.names("filter")
    assert "contractions.v1" in registry.names("paraphraser")


def test_number_agreement_scores_a_batch():
    scores = NumberAgreementFilter().score({"src": ["Es kostet 12 Euro.", "Hallo"],
                                            "tgt": ["It costs 15 euros.", "Hello"]})
    assert scores == [0.0, 1.0]


def test_contractions_offer_both_directions():
    (cands,) = ContractionParaphraser().paraphrase(["I do not know, it's late."])
    assert [text for text, _ in cands] == ["I don't know, it's late.",
                                           "I do not know, it is late."]


def test_a_recipe_with_the_plugin(tmp_path):
    (tmp_path / "a.de").write_text("Ich weiß es nicht.\nEs kostet 12 Euro.\n", encoding="utf-8")
    (tmp_path / "a.en").write_text("I do not know.\nIt costs 15 euros.\n", encoding="utf-8")
    recipe = {"name": "example",
              "input": {"src": str(tmp_path / "a.de"), "tgt": str(tmp_path / "a.en")},
              "steps": [{"filter": "number_agreement.v1", "keep": {"min": 1}},
                        {"paraphrase": "contractions.v1", "side": "tgt"}]}
    res = run_recipe_with(bitextforge_example, recipe, tmp_path / "out")
    assert (res.rows_in, res.rows_out, res.rejected) == (2, 2, 1)
    tgt = (tmp_path / "out" / "corpus.tgt").read_text(encoding="utf-8").splitlines()
    assert tgt == ["I do not know.", "I don't know."]
    # a --set value changes the recipe as on the command line
    res = run_recipe_with(bitextforge_example, recipe, tmp_path / "out2",
                          overrides=["steps[0].keep.min=0"])
    assert (res.rows_out, res.rejected) == (3, 0)  # the price pair kept, with no paraphrase
