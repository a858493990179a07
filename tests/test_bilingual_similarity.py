"""Similarity measures, alignment recovery and the MLP similarity of the bilingual plugin
(Kim et al.), on small arrays and texts written here, checked against direct computations."""

import numpy as np
import pytest

from bitextforge import ComponentError
from bitextforge.plugins.bilingual.similarity import (alignment_errors, best_matches,
                                                      knn_mean_cosine, levenshtein_errors,
                                                      pair_scores, recovery_errors, train_mlp,
                                                      worst_slice)

from conftest import read_lines, shared


def _cos(x, y):
    return float(x @ y / np.linalg.norm(x) / np.linalg.norm(y))


@pytest.fixture
def vecs():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(40, 8)).astype(np.float32)
    b = (a + 0.3 * rng.normal(size=a.shape)).astype(np.float32)
    return a, b


def test_pair_measures_match_definitions(vecs):
    a, b = vecs
    cos = pair_scores(a, b, "cosine")
    assert cos[3] == pytest.approx(_cos(a[3], b[3]), abs=1e-5)
    assert pair_scores(a, b, "euclidean")[5] == pytest.approx(-np.linalg.norm(a[5] - b[5]), abs=1e-5)
    k = 3
    # CSLS by brute force (equations 16-18): neighbours of a[i] among b, of b[i] among a
    i = 7
    ra = np.mean(sorted((_cos(a[i], y) for y in b), reverse=True)[:k])
    rb = np.mean(sorted((_cos(x, b[i]) for x in a), reverse=True)[:k])
    assert pair_scores(a, b, "csls", k=k)[i] == pytest.approx(2 * _cos(a[i], b[i]) - ra - rb, abs=1e-5)
    assert pair_scores(a, b, "margin", k=k)[i] == pytest.approx(_cos(a[i], b[i]) / ((ra + rb) / 2),
                                                                abs=1e-5)
    with pytest.raises(ComponentError, match="mlp"):
        pair_scores(a, b, "mlp")


def test_knn_mean_cosine_is_exact(vecs):
    a, b = vecs
    got = knn_mean_cosine(a[:5], b, 4)
    want = [np.mean(sorted((_cos(x, y) for y in b), reverse=True)[:4]) for x in a[:5]]
    assert got == pytest.approx(want, abs=1e-5)


def test_knn_mean_cosine_ivf_close_to_exact(monkeypatch):
    """Above EXACT_MAX base vectors the search is IVF (approximate): on clustered data, as sentence
    embeddings are, its k-NN means stay within a small tolerance of the exact ones."""
    from bitextforge.plugins.bilingual import similarity

    rng = np.random.default_rng(3)
    centres = rng.normal(size=(50, 32))
    base = (centres[rng.integers(0, 50, 4000)] + 0.4 * rng.normal(size=(4000, 32))).astype(np.float32)
    queries = (base[:300] + 0.1 * rng.normal(size=(300, 32))).astype(np.float32)
    exact = knn_mean_cosine(queries, base, 4)
    monkeypatch.setattr(similarity, "EXACT_MAX", 1000)
    index = similarity.knn_index(similarity.normalize(base))
    assert type(index).__name__ == "IndexIVFFlat"
    approx = knn_mean_cosine(queries, base, 4)
    assert np.all(approx <= exact + 1e-5)  # an approximate neighbour is never closer
    assert np.mean(np.abs(approx - exact)) < 0.01


@pytest.mark.parametrize("measure", ["cosine", "euclidean", "csls", "margin"])
def test_best_matches_against_full_matrix(vecs, measure):
    a, b = vecs
    rng = np.random.default_rng(1)
    b = b + rng.normal(size=b.shape).astype(np.float32)  # noisy enough that some matches fail
    n = len(a)
    S = np.array([[pair_scores(a[[i]], b[[j]], "cosine")[0] for j in range(n)] for i in range(n)])
    if measure == "euclidean":
        S = -np.linalg.norm(a[:, None] - b[None], axis=2)
    elif measure in ("csls", "margin"):
        ra, rb = knn_mean_cosine(a, b, 4), knn_mean_cosine(b, a, 4)
        S = 2 * S - ra[:, None] - rb[None] if measure == "csls" else S / ((ra[:, None] + rb[None]) / 2)
    row, col = best_matches(a, b, measure, k=4)
    assert list(row) == list(S.argmax(1)) and list(col) == list(S.argmax(0))


def test_csls_demotes_a_hub():
    # b[0] is close to every a (a hub); a[1]'s own translation b[1] is slightly less close than
    # the hub by cosine, so cosine picks the hub and CSLS, which penalises dense areas, does not
    a = np.array([[1, 0.2, 0], [1, 0, 0.25], [1, -0.2, 0], [1, 0, -0.2]], np.float32)
    b = np.array([[1, 0, 0], [1, 0.1, 0.6], [1, -0.5, 0], [1, 0, -0.5]], np.float32)
    cos_row, _ = best_matches(a, b, "cosine")
    csls_row, _ = best_matches(a, b, "csls", k=2)
    assert cos_row[1] == 0 and csls_row[1] == 1


def test_alignment_errors_shuffle_and_directions(vecs):
    a, b = vecs
    res = alignment_errors(a, b, "cosine")
    assert res["error"] == 0.0 and len(res["src2tgt_wrong"]) == len(a)
    # every target equal: all sources pick the same target, so all but one are wrong
    same = np.ones_like(b)
    res = alignment_errors(a, same + np.arange(len(b))[:, None] * 1e-7, "euclidean")
    assert res["src2tgt_error"] >= (len(a) - 1) / len(a)
    perm = np.array([2, 0, 1])
    r = recovery_errors(np.array([1, 2, 0]), np.array([2, 0, 1]), perm)
    assert r["error"] == 0.0
    r = recovery_errors(np.array([0, 2, 0]), np.array([2, 0, 0]), perm)
    assert r["src2tgt_error"] == pytest.approx(1 / 3) and r["tgt2src_error"] == pytest.approx(1 / 3)


def test_mlp_similarity_learns_and_matrix_matches_sklearn(vecs, tmp_path):
    a, b = vecs
    rng = np.random.default_rng(2)
    neg = rng.permutation(len(b))
    mlp = train_mlp(a, b, a, b[neg], hidden=(16, 16), max_iter=400, seed=0)
    assert mlp.pairs(a, b).mean() > mlp.pairs(a, b[neg]).mean() + 0.3
    L = mlp.logit_matrix(a[:6], b[:9])
    probs = np.array([[mlp.pairs(a[[i]], b[[j]])[0] for j in range(9)] for i in range(6)])
    assert 1 / (1 + np.exp(-L)) == pytest.approx(probs, abs=1e-4)
    from bitextforge.plugins.bilingual.similarity import MLPSimilarity
    back = MLPSimilarity.load(mlp.save(tmp_path / "m.joblib"))
    assert back.pairs(a, b) == pytest.approx(mlp.pairs(a, b))
    with pytest.raises(ComponentError, match="8-dimensional"):
        back.check(16, "x")


def test_worst_slice_follows_section_5_2():
    scores = np.arange(10, dtype=float)  # line i has score i; best first is 9, 8, ..., 0
    assert sorted(worst_slice(scores, 40, 2)) == [6, 7]  # last 2 lines of the top-40% cut
    assert sorted(worst_slice(scores, 100, 3)) == [0, 1, 2]


def test_levenshtein_baseline_on_near_copies():
    src = ["Berlin 2019: 45 Prozent", "Paris, 12. Mai", "Tokyo Olympics 2020", "NATO und EU"]
    tgt = ["Berlin 2019: 45 percent", "Paris, May 12", "Tokyo Olympics 2020", "NATO and EU"]
    assert levenshtein_errors(src, tgt)["error"] == 0.0


def test_levenshtein_baseline_on_flores_beats_chance():
    de = read_lines(shared("flores200-devtest", "deu_Latn.devtest"), 300)
    en = read_lines(shared("flores200-devtest", "eng_Latn.devtest"), 300)
    err = levenshtein_errors(de, en)["error"]
    assert err < 0.9  # chance is 299/300; names and numbers carry across languages
