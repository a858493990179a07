"""IDF-weighted bilingual lexicon coverage, the dictionary signal of hunalign (Varga et al. 2005,
*Parallel corpora for medium density languages*) and of bicleaner (Sánchez-Cartagena et al. 2018,
*Prompsit's submission to WMT 2018 Parallel Corpus Filtering shared task*): the share of a
sentence's words that have a dictionary translation on the other side, each word weighted by its
inverse document frequency so rare content words count more than function words; both directions.

Identical words on the two sides (numbers, names, most punctuation-free codes) count as
translations of each other, as in hunalign, when they are numbers or in Latin script
(:func:`~.words.copyable`): a Japanese word on both sides is an untranslated copy. Scores are
computed with sparse matrix products, so one call scores every pair of a batch, or every source
against every target for sentence alignment recovery.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Sequence

import numpy as np

from .dictionary import Lexicon
from .words import Vocab, bag_matrix, copyable


class Idf:
    """Smoothed inverse document frequencies ``log((1 + N) / (1 + df)) + 1`` of word keys, counted
    over tokenised sentences; a word never seen gets the highest weight."""

    def __init__(self, sentences: Sequence[Sequence[str]]):
        """Count document frequencies over ``sentences`` (lists of word keys)."""
        df: Counter = Counter()
        for toks in sentences:
            df.update(set(toks))
        self.n = len(sentences)
        self.df = df
        self.unseen = math.log(1 + self.n) + 1

    def weight(self, word: str) -> float:
        """The weight of one word key."""
        d = self.df.get(word, 0)
        return math.log((1 + self.n) / (1 + d)) + 1 if d else self.unseen

    def vector(self, vocab: Vocab) -> np.ndarray:
        """The weights of every word of ``vocab`` in index order."""
        return np.array([self.weight(w) for w in vocab.words], dtype=np.float32)


def link_matrix(vocab_a: Vocab, vocab_b: Vocab, lexicon: Lexicon, identical: bool = True):
    """A binary CSR matrix (|vocab_a| x |vocab_b|): 1 where the lexicon pairs the two words, or
    (``identical``) where they are the same string."""
    from scipy import sparse

    rows, cols = [], []
    ib = vocab_b.index
    for i, w in enumerate(vocab_a.words):
        for u in lexicon.forward.get(w, ()):
            j = ib.get(u)
            if j is not None:
                rows.append(i)
                cols.append(j)
        if identical and copyable(w):
            j = ib.get(w)
            if j is not None:
                rows.append(i)
                cols.append(j)
    m = sparse.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)),
                          shape=(len(vocab_a), len(vocab_b)))
    m.data[:] = 1.0  # duplicates (a lexicon pair that is also identical) summed to 2
    return m


def _weighted(bags, idf: np.ndarray):
    """Rows of ``bags`` scaled by idf and divided by their total weight (empty rows stay 0)."""
    from scipy import sparse

    w = bags @ sparse.diags(idf)
    tot = np.asarray(w.sum(axis=1)).ravel()
    return sparse.diags(1.0 / np.maximum(tot, 1e-12)) @ w


def coverage(src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], lexicon: Lexicon,
             idf_src: Idf, idf_tgt: Idf, identical: bool = True, matrix: bool = False):
    """Coverage of source words by the target (``s2t``) and of target words by the source
    (``t2s``), in [0, 1]: for each pair i (``matrix=False``, needs ``len(src) == len(tgt)``), or
    for every source i and target j as dense ``len(src) x len(tgt)`` arrays (``matrix=True``)."""
    va, vb = Vocab.of(src), Vocab.of(tgt)
    S, T = bag_matrix(src, va), bag_matrix(tgt, vb)
    D = link_matrix(va, vb, lexicon, identical)
    Sw, Tw = _weighted(S, idf_src.vector(va)), _weighted(T, idf_tgt.vector(vb))
    src_covered = (T @ D.T) > 0   # target j has a translation of source word w
    tgt_covered = (S @ D) > 0     # source i has a translation of target word u
    if matrix:
        s2t = (Sw @ src_covered.T.astype(np.float32)).toarray()
        t2s = (tgt_covered.astype(np.float32) @ Tw.T).toarray()
        return s2t, t2s
    s2t = np.asarray(Sw.multiply(src_covered).sum(axis=1)).ravel()
    t2s = np.asarray(Tw.multiply(tgt_covered).sum(axis=1)).ravel()
    return s2t, t2s


def csls(scores: np.ndarray, k: int = 4) -> np.ndarray:
    """The CSLS-style correction of a similarity matrix (Conneau et al. 2018, *Word translation
    without parallel data*): ``2 s(i, j) - r_src(i) - r_tgt(j)``, where ``r`` is the mean of a
    row's (column's) ``k`` highest scores. Sentences that match everything well (long ones, full
    of common words) stop attracting every partner."""
    n, m = scores.shape
    kr, kc = min(k, m), min(k, n)
    r_row = np.sort(np.partition(scores, m - kr, axis=1)[:, m - kr:], axis=1).mean(axis=1)
    r_col = np.sort(np.partition(scores, n - kc, axis=0)[n - kc:, :], axis=0).mean(axis=0)
    return 2 * scores - r_row[:, None] - r_col[None, :]
