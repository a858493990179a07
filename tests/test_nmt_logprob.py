"""nmt_logprob.v1: the teacher-forced log-probability of one side given the other, and the dual
conditional cross-entropy (Junczys-Dowmunt 2018), on tiny models trained here in seconds.

The models learn a handful of pairs by heart, so the true pairs must score above misaligned
ones; both backends must give the same numbers."""

from __future__ import annotations

import math

import pytest

from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import read_tsv

pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")

DE = ["Der Hund schläft im Garten.", "Ich trinke morgens gern Kaffee.", "Wo ist der Bahnhof?",
      "Sie hat drei Katzen und zwei Hunde.", "Das Wetter ist heute schön.",
      "Wir fahren morgen nach Berlin.", "Das Buch liegt auf dem Tisch.",
      "Meine Schwester spielt Klavier."]
EN = ["The dog is sleeping in the garden.", "I like to drink coffee in the morning.",
      "Where is the train station?", "She has three cats and two dogs.",
      "The weather is nice today.", "We are going to Berlin tomorrow.",
      "The book is on the table.", "My sister plays the piano."]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """de->en and en->de models (1+1 layers, 32 wide) that have memorised the eight pairs."""
    from bitextforge.plugins.nmt.train import TrainOptions, train

    d = tmp_path_factory.mktemp("logprob")
    (d / "t.de").write_text("\n".join(DE * 25) + "\n", encoding="utf-8")
    (d / "t.en").write_text("\n".join(EN * 25) + "\n", encoding="utf-8")
    out = {}
    for src, tgt in (("de", "en"), ("en", "de")):
        opts = TrainOptions(src_train=str(d / f"t.{src}"), tgt_train=str(d / f"t.{tgt}"),
                            src_lang=src, tgt_lang=tgt, output=str(d / f"{src}-{tgt}"),
                            max_steps=300, vocab_size=120, d_model=32, layers=1, heads=2,
                            ffn_dim=64, batch_tokens=400, lr=1e-2, min_warmup_steps=10,
                            threads=1, max_len=24, dropout=0.0, label_smoothing=0.0,
                            precision="fp32")
        train(opts, log=lambda m: None)
        out[f"{src}-{tgt}"] = str(d / f"{src}-{tgt}")
    return out


def test_both_backends_agree_and_true_pairs_score_higher(models):
    from bitextforge.plugins.nmt.backends import make_backend

    wrong = EN[1:] + EN[:1]  # every German sentence with another one's translation
    scores = {}
    for backend in ("transformers", "ctranslate2"):
        kw = {"compute_type": "float32"} if backend == "ctranslate2" else {}
        be = make_backend(backend, models["de-en"], threads=1, batch_size=3, **kw)
        try:
            scores[backend] = (be.score(DE, EN), be.score(DE, wrong))
        finally:
            be.close()
    for a, b in zip(scores["transformers"][0] + scores["transformers"][1],
                    scores["ctranslate2"][0] + scores["ctranslate2"][1]):
        assert a == pytest.approx(b, abs=2e-3)
    true, mis = scores["ctranslate2"]
    assert all(s <= 0 for s in true + mis)
    # a half-trained tiny model: most pairs, and clearly on average
    assert sum(t > m for t, m in zip(true, mis)) >= 6
    assert sum(true) / len(true) > sum(mis) / len(mis) + 0.25


def _recipe(tmp_path, rows, filter_with, keep):
    (tmp_path / "in.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in rows), encoding="utf-8")
    return parse_recipe(
        f"name: lp\ninput: {{path: '{tmp_path / 'in.tsv'}', format: tsv, columns: [src, tgt]}}\n"
        f"output: {{dir: '{tmp_path / 'out'}', write_rejected: true}}\nprogress: false\n"
        f"steps:\n  - filter: nmt_logprob.v1\n    with: {filter_with}\n    keep: {keep}\n",
        "r.yaml")


def test_dual_cross_entropy_in_a_recipe_keeps_the_translations(models, tmp_path):
    from bitextforge.plugins.nmt.backends import make_backend

    rows = list(zip(DE, EN)) + list(zip(DE[:4], EN[4:]))  # 8 true pairs, 4 misaligned
    with_ = (f"{{model: '{models['de-en']}', reverse_model: '{models['en-de']}', "
             f"threads: 1}}")
    res = run_recipe(_recipe(tmp_path, rows, with_, "{top: 8}"))
    kept = (tmp_path / "out" / "corpus.tgt").read_text(encoding="utf-8").splitlines()
    assert res.rejected == 4  # of the 12 rows, the best 8 kept: at least 7 of them true pairs
    assert sum((s, t) in rows[:8] for s, t in zip(
        (tmp_path / "out" / "corpus.src").read_text(encoding="utf-8").splitlines(), kept)) >= 7
    # the score is exp(-(|H_f - H_b| + (H_f + H_b) / 2)) of the two directions' cross-entropies
    fwd = make_backend("ctranslate2", models["de-en"], threads=1, compute_type="float32")
    bwd = make_backend("ctranslate2", models["en-de"], threads=1, compute_type="float32")
    try:
        hf, hb = -fwd.score(DE[:1], EN[:1])[0], -bwd.score(EN[:1], DE[:1])[0]
    finally:
        fwd.close()
        bwd.close()
    expected = math.exp(-(abs(hf - hb) + (hf + hb) / 2))
    from bitextforge.plugins.nmt.filters import NmtLogprobFilter

    flt = NmtLogprobFilter(NmtLogprobFilter.Config(model=models["de-en"],
                                                   reverse_model=models["en-de"], threads=1))
    try:
        got = flt.score({"src": DE[:1], "tgt": EN[:1]})[0]
    finally:
        flt.close()
    assert got == pytest.approx(expected, rel=1e-6) and 0 < got <= 1


def test_reads_tgt_scores_the_source_given_the_target(models, tmp_path):
    """reads: tgt with an en->de model scores P(src | tgt) of a de-en corpus."""
    from bitextforge.plugins.nmt.filters import NmtLogprobFilter

    flt = NmtLogprobFilter(NmtLogprobFilter.Config(model=models["en-de"], reads="tgt", threads=1))
    try:
        true = flt.score({"src": DE, "tgt": EN})
        mis = flt.score({"src": DE, "tgt": EN[1:] + EN[:1]})
    finally:
        flt.close()
    assert all(t > m for t, m in zip(true, mis))


def test_cross_fitted_scoring_never_uses_a_model_that_saw_the_row(models, tmp_path):
    """Two models trained with folds: 2 (each leaves out every other training line); in a recipe
    with model: [fold 0, fold 1], row i is scored by the model that left line i out, so a pair
    the models learned by heart is scored as unseen: lower than the other fold's model scores
    it."""
    from bitextforge.plugins.nmt.backends import make_backend
    from bitextforge.plugins.nmt.train import TrainOptions, train

    (tmp_path / "t.de").write_text("\n".join(DE * 25) + "\n", encoding="utf-8")
    (tmp_path / "t.en").write_text("\n".join(EN * 25) + "\n", encoding="utf-8")
    folds = []
    for k in (0, 1):  # line i is pair i % 8: fold k leaves out the pairs of parity k
        out = tmp_path / f"fold{k}"
        train(TrainOptions(src_train=str(tmp_path / "t.de"), tgt_train=str(tmp_path / "t.en"),
                           src_lang="de", tgt_lang="en", output=str(out), folds=2, fold=k,
                           max_steps=200, vocab_size=120, d_model=32, layers=1, heads=2,
                           ffn_dim=64, batch_tokens=400, lr=1e-2, min_warmup_steps=10,
                           threads=1, max_len=24, dropout=0.0, label_smoothing=0.0,
                           precision="fp32"), log=lambda m: None)
        folds.append(str(out))
    res = run_recipe(_recipe(tmp_path, list(zip(DE, EN)),
                             f"{{model: ['{folds[0]}', '{folds[1]}'], threads: 1}}",
                             "{min: -.inf}"))
    assert res.rejected == 0
    got = [float(r["nmt_logprob"]) for r in read_tsv(tmp_path / "out" / "corpus.tsv")]
    by = [make_backend("ctranslate2", f, threads=1, compute_type="float32") for f in folds]
    try:
        unseen = [by[i % 2].score([DE[i]], [EN[i]])[0] for i in range(8)]
        seen = [by[1 - i % 2].score([DE[i]], [EN[i]])[0] for i in range(8)]
    finally:
        for be in by:
            be.close()
    assert got == pytest.approx(unseen, abs=1e-4)
    assert sum(u < s for u, s in zip(unseen, seen)) >= 7


def test_cross_fitting_mistakes(models):
    """A list of models takes no reverse model and needs row ids; a fold outside the folds is
    refused."""
    from pydantic import ValidationError

    from bitextforge import ComponentError
    from bitextforge.plugins.nmt.filters import NmtLogprobFilter
    from bitextforge.plugins.nmt.train import TrainOptions

    with pytest.raises(ValidationError, match="takes no reverse_model"):
        NmtLogprobFilter.Config(model=[models["de-en"]] * 2, reverse_model=models["en-de"])
    flt = NmtLogprobFilter(NmtLogprobFilter.Config(model=[models["de-en"]] * 2, threads=1))
    try:
        with pytest.raises(ComponentError, match="needs each row's id"):
            flt.score({"src": DE[:2], "tgt": EN[:2]})
    finally:
        flt.close()
    with pytest.raises(ValidationError, match="fold 2 is not one of the 2 folds"):
        TrainOptions(src_train="a", tgt_train="b", src_lang="de", tgt_lang="en", output="o",
                     folds=2, fold=2)
