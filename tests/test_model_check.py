"""A generating model whose own test record says it cannot translate is refused before it
generates (or only warned about, when the recipe says so): back-translations of such a model are
fluent sentences unrelated to their sources, which filters keep and which cost the model trained
on them BLEU."""

import json

import pytest

pytest.importorskip("ctranslate2")

from bitextforge import ComponentError  # noqa: E402
from bitextforge.plugins.nmt.paraphrasers import check_model_record  # noqa: E402

from conftest import run_cli as cli  # noqa: E402


def model_with_record(tmp_path, *bleus):
    d = tmp_path / "model"
    d.mkdir()
    (d / "train_log.json").write_text(json.dumps(
        {"tests": [{"test": "val.de", "beam": b, "bleu": x} for b, x in enumerate(bleus, 1)]}))
    return d


def test_a_model_below_the_floor_is_refused_in_one_line_naming_step_and_score(tmp_path):
    model = model_with_record(tmp_path, 0.61, 0.87)
    mono = tmp_path / "mono.en"
    mono.write_text("a sentence\n")
    recipe = tmp_path / "bt.yaml"
    recipe.write_text(
        f"name: bt\ninput: {{tgt: '{mono}', side: tgt}}\noutput: {{dir: '{tmp_path / 'out'}'}}\n"
        f"progress: false\nsteps:\n  - generate: translate.v1\n    side: src\n"
        f"    with: {{model: '{model}'}}\n")
    res = cli("run", recipe, "-q")
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "scored BLEU 0.87 on its test set val.de" in lines[0]
    assert "weak_model: warn" in lines[0]
    assert not (tmp_path / "out").exists()


def test_the_floor_warns_when_asked_and_passes_a_good_or_unrecorded_model(tmp_path, capsys):
    weak = model_with_record(tmp_path, 0.87)
    assert check_model_record(str(weak), 5.0, "warn", "translate.v1") == 0.87
    assert "warning" in capsys.readouterr().err
    with pytest.raises(ComponentError):
        check_model_record(str(weak), 5.0, "refuse", "translate.v1")
    assert check_model_record(str(weak), 0, "refuse", "translate.v1") is None  # turned off
    good = tmp_path / "good"
    good.mkdir()
    (good / "train_log.json").write_text(json.dumps({"tests": [{"bleu": 27.9}, {"bleu": 3.0}]}))
    assert check_model_record(str(good), 5.0, "refuse", "translate.v1") == 27.9
    assert check_model_record("Helsinki-NLP/opus-mt-de-en", 5.0, "refuse", "x") is None
