"""Similarity measures between bilingual sentence embeddings and sentence alignment recovery, after
Kim, Rosendahl, Rossenbach, Rosendahl, Khadivi & Ney, *Learning Bilingual Sentence Embeddings via
Autoencoding and Neural Machine Translation*: cosine (equation 13), negated Euclidean distance
(equation 14), CSLS with k nearest neighbours (equations 16-18, from Conneau et al. 2018), the
trainable MLP similarity (equation 15, section 5.2), plus the ratio margin of Artetxe & Schwenk
(*Margin-based Parallel Corpus Mining with Multilingual Sentence Embeddings*, 2019) and the
character Levenshtein baseline of the paper's Table 1 (section 4.1).

Nearest neighbours come from faiss (inner-product search on normalised vectors: exact for up to
20,000 base vectors, an IVF index above), full similarity matrices are computed in row chunks so
100k x 100k never sits in memory.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bitextforge import ComponentError

MEASURES = ("cosine", "euclidean", "csls", "margin", "mlp")
MLP_FORMAT = "bitextforge-mlp-similarity/1"
ROW_CHUNK = 1024


def normalize(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float32 and C-contiguous for faiss."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    n = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.maximum(n, 1e-12)


#: up to this many base vectors the neighbour search is exact (IndexFlatIP); above it an inverted
#: file index (IndexIVFFlat) searches ``NPROBE`` of about 2 sqrt(n) k-means cells, which is what
#: makes 100k x 100k a matter of seconds instead of a minute on a CPU (k-means on 40 points per
#: cell, 10 iterations: training must not cost more than the search it saves)
EXACT_MAX = 20_000
NPROBE = 8


def knn_index(base: np.ndarray, exact: bool | None = None):
    """A faiss inner-product index over the unit vectors ``base``: exact for small bases (or
    ``exact=True``), IVF-Flat trained on a sample of the base otherwise."""
    import faiss

    n, d = base.shape
    if exact or (exact is None and n <= EXACT_MAX):
        index = faiss.IndexFlatIP(d)
    else:
        nlist = max(1, min(int(2 * np.sqrt(n)), n // 39))
        index = faiss.IndexIVFFlat(faiss.IndexFlatIP(d), d, nlist, faiss.METRIC_INNER_PRODUCT)
        index.cp.niter = 10
        # faiss wants at least 39 training points per cell; a seeded sample keeps runs repeatable
        rng = np.random.default_rng(0)
        sample = base[np.sort(rng.choice(n, min(n, nlist * 40), replace=False))]
        index.train(sample)
        index.nprobe = min(NPROBE, nlist)
    index.add(base)
    return index


def knn_mean_cosine(queries: np.ndarray, base: np.ndarray, k: int,
                    exact: bool | None = None) -> np.ndarray:
    """For each query, the mean cosine to its ``k`` nearest neighbours in ``base`` (the penalty
    terms 17-18 of CSLS and the denominators of the margin), by faiss search: exact up to
    :data:`EXACT_MAX` base vectors, approximate (IVF) above unless ``exact``."""
    q, b = normalize(queries), normalize(base)
    k = max(1, min(k, len(b)))
    sims, ids = knn_index(b, exact).search(q, k)
    if (ids < 0).any():  # IVF found fewer than k in its probed cells: those slots do not count
        valid = ids >= 0
        return np.where(valid, sims, 0).sum(axis=1) / np.maximum(valid.sum(axis=1), 1)
    return sims.mean(axis=1)


class MLPSimilarity:
    """The paper's MLP similarity q(a, b) (equation 15): a binary classifier on [a; b] trained with
    scikit-learn, loaded from a file written by :func:`train_mlp`."""

    def __init__(self, clf, meta: dict):
        """Wrap a fitted ``sklearn.neural_network.MLPClassifier`` and its metadata."""
        self.clf = clf
        self.meta = meta
        self.dim = int(meta["sentence_dim"])

    @classmethod
    def load(cls, path: str | Path) -> "MLPSimilarity":
        """Read a file written by ``bitextforge train-mlp-similarity``."""
        import joblib

        p = Path(path)
        if not p.is_file():
            raise ComponentError(f"{p}: no such MLP similarity file; train one with `bitextforge "
                                 f"train-mlp-similarity`")
        data = joblib.load(p)
        if not isinstance(data, dict) or data.get("format") != MLP_FORMAT:
            raise ComponentError(f"{p}: not an MLP similarity file written by bitextforge")
        return cls(data["classifier"], data["meta"])

    def save(self, path: str | Path) -> Path:
        """Write the classifier and its metadata with joblib."""
        import joblib

        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        joblib.dump({"format": MLP_FORMAT, "classifier": self.clf, "meta": self.meta}, p)
        return p

    def check(self, dim: int, where: str) -> None:
        """Refuse embeddings of another size than the classifier was trained on."""
        if dim != self.dim:
            raise ComponentError(f"{where}: MLP was trained on {self.dim}-dimensional embeddings "
                                 f"but the model gives {dim}; train the MLP with this model")

    def pairs(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Probability that each row pair (a[i], b[i]) is a translation pair."""
        return self.clf.predict_proba(np.hstack([a, b]))[:, 1]

    def logit_matrix(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Pre-sigmoid scores of every pair (a[i], b[j]), ``[len(a), len(b)]``.

        The first layer is linear in [a; b], so a's and b's halves are multiplied once each and
        only the deeper layers run per pair; the sigmoid is monotone, so argmaxes are unchanged.
        """
        import torch

        W = [torch.from_numpy(np.asarray(w, dtype=np.float32)) for w in self.clf.coefs_]
        B = [torch.from_numpy(np.asarray(x, dtype=np.float32)) for x in self.clf.intercepts_]
        D = a.shape[1]
        out = np.empty((len(a), len(b)), dtype=np.float32)
        with torch.inference_mode():
            A1 = torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)) @ W[0][:D]
            B1 = torch.from_numpy(np.ascontiguousarray(b, dtype=np.float32)) @ W[0][D:] + B[0]
            rows = max(1, 65536 // max(1, len(b)))
            for s in range(0, len(a), rows):
                h = torch.relu(A1[s:s + rows, None, :] + B1[None, :, :])
                for w, c in zip(W[1:-1], B[1:-1]):
                    h = torch.relu(h @ w + c)
                out[s:s + rows] = (h @ W[-1] + B[-1]).squeeze(-1).numpy()
        return out


def pair_scores(a: np.ndarray, b: np.ndarray, measure: str, k: int = 4,
                mlp: MLPSimilarity | None = None) -> np.ndarray:
    """Similarity of each row pair (a[i], b[i]). For ``csls`` and ``margin`` the neighbourhoods
    are the other rows given: each a's neighbours among all b, each b's among all a."""
    if measure == "cosine":
        return np.einsum("ij,ij->i", normalize(a), normalize(b))
    if measure == "euclidean":
        return -np.linalg.norm(a - b, axis=1)
    if measure in ("csls", "margin"):
        cos = np.einsum("ij,ij->i", normalize(a), normalize(b))
        ra, rb = knn_mean_cosine(a, b, k), knn_mean_cosine(b, a, k)
        if measure == "csls":
            return 2 * cos - ra - rb
        return cos / np.maximum((ra + rb) / 2, 1e-6)
    if measure == "mlp":
        if mlp is None:
            raise ComponentError("measure 'mlp' needs an MLP similarity file (the `mlp` option)")
        return mlp.pairs(a, b)
    raise ComponentError(f"unknown measure {measure!r}; choose one of {', '.join(MEASURES)}")


def best_matches(a: np.ndarray, b: np.ndarray, measure: str, k: int = 4,
                 mlp: MLPSimilarity | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Index of the most similar b for every a, and of the most similar a for every b.

    The full matrix is never held: rows are scored in chunks. Per-row constant terms (CSLS's and
    the margin's penalty of the query itself) do not change a row's argmax but are kept anyway so
    the matrix is the measure's true value.
    """
    n, m = len(a), len(b)
    if measure in ("cosine", "csls", "margin"):
        A, B = normalize(a), normalize(b)
    else:
        A, B = np.ascontiguousarray(a, np.float32), np.ascontiguousarray(b, np.float32)
    ra = rb = None
    if measure in ("csls", "margin"):
        ra, rb = knn_mean_cosine(a, b, k), knn_mean_cosine(b, a, k)
    if measure == "mlp":
        if mlp is None:
            raise ComponentError("measure 'mlp' needs an MLP similarity file (the `mlp` option)")
        mlp.check(a.shape[1], "alignment")
    sqb = (B * B).sum(axis=1) if measure == "euclidean" else None
    row_best = np.empty(n, dtype=np.int64)
    col_best = np.zeros(m, dtype=np.int64)
    col_val = np.full(m, -np.inf, dtype=np.float64)
    for s in range(0, n, ROW_CHUNK):
        if measure == "mlp":
            S = mlp.logit_matrix(a[s:s + ROW_CHUNK], b)
        else:
            S = A[s:s + ROW_CHUNK] @ B.T
            if measure == "euclidean":
                sqa = (A[s:s + ROW_CHUNK] ** 2).sum(axis=1)
                S = -np.sqrt(np.maximum(sqa[:, None] + sqb[None, :] - 2 * S, 0))
            elif measure == "csls":
                S = 2 * S - ra[s:s + ROW_CHUNK, None] - rb[None, :]
            elif measure == "margin":
                S = S / np.maximum((ra[s:s + ROW_CHUNK, None] + rb[None, :]) / 2, 1e-6)
            elif measure != "cosine":
                raise ComponentError(f"unknown measure {measure!r}; choose one of "
                                     f"{', '.join(MEASURES)}")
        row_best[s:s + len(S)] = S.argmax(axis=1)
        cmax = S.max(axis=0)
        better = cmax > col_val
        col_val[better] = cmax[better]
        col_best[better] = s + S.argmax(axis=0)[better]
    return row_best, col_best


def levenshtein_best(src: list[str], tgt: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Best matches by smallest character Levenshtein distance (the paper's Table 1 baseline),
    computed with rapidfuzz."""
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    D = process.cdist(src, tgt, scorer=Levenshtein.distance, dtype=np.int32, workers=1)
    return D.argmin(axis=1), D.argmin(axis=0)


def recovery_errors(row_best: np.ndarray, col_best: np.ndarray, perm: np.ndarray) -> dict:
    """Error rates of alignment recovery when target j of the shuffled side is source ``perm[j]``:
    source->target, target->source and their average (Kim et al., section 4.1)."""
    n = len(perm)
    inv = np.empty(n, dtype=np.int64)
    inv[perm] = np.arange(n)
    s2t = float((row_best != inv).mean()) if n else 0.0
    t2s = float((col_best != perm).mean()) if n else 0.0
    return {"src2tgt_error": s2t, "tgt2src_error": t2s, "error": (s2t + t2s) / 2,
            "src2tgt_wrong": (row_best != inv).astype(float).tolist(),
            "tgt2src_wrong": (col_best != perm).astype(float).tolist()}


def alignment_errors(a: np.ndarray, b: np.ndarray, measure: str, k: int = 4,
                     mlp: MLPSimilarity | None = None, seed: int = 1) -> dict:
    """Shuffle the target embeddings (row i of ``b`` is the translation of row i of ``a``),
    recover each sentence's partner by the highest similarity and return the error rates.

    Shuffling matters: ties broken towards the lower index would otherwise favour the truth.
    """
    if len(a) != len(b):
        raise ComponentError(f"alignment recovery needs as many targets as sources "
                             f"({len(a)} != {len(b)})")
    perm = np.random.default_rng(seed).permutation(len(b))
    row, col = best_matches(a, b[perm], measure, k, mlp)
    return recovery_errors(row, col, perm)


def levenshtein_errors(src: list[str], tgt: list[str], seed: int = 1) -> dict:
    """:func:`alignment_errors` for the character Levenshtein baseline on raw text."""
    perm = np.random.default_rng(seed).permutation(len(tgt))
    row, col = levenshtein_best(src, [tgt[j] for j in perm])
    return recovery_errors(row, col, perm)


def train_mlp(pos_a: np.ndarray, pos_b: np.ndarray, neg_a: np.ndarray, neg_b: np.ndarray,
              hidden: tuple[int, ...] = (512, 512), max_iter: int = 30, seed: int = 1,
              meta: dict | None = None) -> MLPSimilarity:
    """Fit the MLP similarity on positive and negative embedding pairs (equation 15) with
    scikit-learn's ``MLPClassifier`` (ReLU hidden layers, logistic output, Adam)."""
    from sklearn.neural_network import MLPClassifier

    X = np.vstack([np.hstack([pos_a, pos_b]), np.hstack([neg_a, neg_b])]).astype(np.float32)
    y = np.r_[np.ones(len(pos_a)), np.zeros(len(neg_a))]
    clf = MLPClassifier(hidden_layer_sizes=hidden, activation="relu", max_iter=max_iter,
                        random_state=seed, early_stopping=len(y) >= 200, n_iter_no_change=5)
    clf.fit(X, y)
    info = dict(meta or {})
    info.update({"sentence_dim": pos_a.shape[1], "hidden": list(hidden), "positives": len(pos_a),
                 "negatives": len(neg_a), "iterations": int(clf.n_iter_)})
    return MLPSimilarity(clf, info)


def worst_slice(scores: np.ndarray, percent: float, count: int) -> np.ndarray:
    """Indices of the paper's x%-worst negative set (section 5.2): sort by score best first, cut
    the top ``percent`` %, take the last ``count`` lines of that cut (the lines just above the
    cut-off; 100 % takes the very worst lines)."""
    order = np.argsort(-scores, kind="stable")
    cut = int(round(len(order) * percent / 100))
    return order[max(0, cut - count):cut]
