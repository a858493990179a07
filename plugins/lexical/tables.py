"""Probabilistic lexical translation tables and IBM Model 1 sentence scores, as classic bicleaner
uses them (Sánchez-Cartagena et al. 2018, *Prompsit's submission to WMT 2018 Parallel Corpus
Filtering shared task*, section 2: "probabilistic bilingual dictionaries" from word alignments and a
length-normalised lexical translation score in both directions; Brown et al. 1993, *The
mathematics of statistical machine translation*, Model 1).

The tables are learned from a parallel corpus with eflomal (Östling & Tiedemann 2017, *Efficient
word alignment with Markov Chain Monte Carlo*), a Bayesian aligner: forward links give
``t(target | source)``, reverse links ``t(source | target)``, unlinked words the NULL word's
translations. A bilingual dictionary enters as a prior: each of its word pairs adds ``prior``
pseudo-links in both directions before the counts are normalised, so words the corpus never saw
still have translations.

A sentence pair's score in one direction is the IBM-1 log-probability divided by the length:
``(1/|t|) sum_j log( (t(t_j | NULL) + sum_i t(t_j | s_i)) / (|s| + 1) )``, each word probability
floored at ``floor``; identical words the tables do not know get ``copy_prob`` when they are
numbers or in Latin script (names; :func:`~.words.copyable`).
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Sequence

import numpy as np

from bitextforge import ComponentError, InputError
from bitextforge.api import phase

from .words import Vocab, Words, copyable

FORMAT = "bitextforge-lexical-tables/1"


def _read_links(path: Path) -> list[list[tuple[int, int]]]:
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            out.append([tuple(int(x) for x in link.split("-")) for link in line.split()])
    return out


def _normalised(counts: dict[tuple[int, int], float], n_rows: int, n_cols: int,
                min_prob: float, top: int):
    """Row-normalised CSR matrix of ``counts`` with entries below ``min_prob`` and beyond the
    ``top`` largest of a row removed (and the row renormalised)."""
    from scipy import sparse

    if counts:
        keys = np.array(list(counts.keys()), dtype=np.int64)
        vals = np.array(list(counts.values()), dtype=np.float64)
    else:
        keys, vals = np.zeros((0, 2), np.int64), np.zeros(0)
    m = sparse.csr_matrix((vals, (keys[:, 0], keys[:, 1])), shape=(n_rows, n_cols))
    for _ in range(2):  # prune, then renormalise what is left
        tot = np.asarray(m.sum(axis=1)).ravel()
        m = sparse.diags(1.0 / np.maximum(tot, 1e-30)) @ m
        m = m.tocsr()
        m.data[m.data < min_prob] = 0
        m.eliminate_zeros()
        if top:
            for r in range(n_rows):
                a, b = m.indptr[r], m.indptr[r + 1]
                if b - a > top:
                    row = m.data[a:b]
                    row[np.argsort(row)[:b - a - top]] = 0
            m.eliminate_zeros()
    return m.astype(np.float32)


def train_tables(src: list[str], tgt: list[str], output: str | Path, langs: tuple[str, str],
                 normalise: str = "stem", lexicon=None, prior: float = 1.0,
                 iterations: int | None = None, max_len: int = 80, min_prob: float = 1e-4,
                 top: int = 50, who: str = "lexical tables") -> dict:
    """Align ``src``/``tgt`` with eflomal, count links in both directions, add the ``lexicon``'s
    word pairs as ``prior`` pseudo-links, normalise and write the tables to the directory
    ``output``. Pairs with an empty side or more than ``max_len`` words are left out. Each phase
    is reported as ``who`` (eflomal runs for minutes and prints nothing itself).

    eflomal's samplers draw from their own unseeded random generator, so two trainings on the same
    corpus give slightly different tables."""
    import eflomal

    t0 = time.perf_counter()
    ws, wt = Words(langs[0], normalise), Words(langs[1], normalise)
    a_toks, b_toks = [], []
    for s, t in zip(src, tgt):
        a, b = ws.tokens(s), wt.tokens(t)
        if a and b and len(a) <= max_len and len(b) <= max_len:
            a_toks.append(a)
            b_toks.append(b)
    if not a_toks:
        raise InputError("lexical translation tables: no usable training pairs (every pair had "
                         "an empty side or was too long)")
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    fwd, rev = out / "links.fwd", out / "links.rev"
    # eflomal takes iterations per stage: IBM-1, HMM, HMM + fertility
    aligner = (eflomal.Aligner(n_iterations=(iterations,) * 3) if iterations
               else eflomal.Aligner())
    with phase(who, f"aligning {len(a_toks):,} pairs with eflomal, both directions"):
        aligner.align([" ".join(a) + "\n" for a in a_toks],
                      [" ".join(b) + "\n" for b in b_toks],
                      links_filename_fwd=str(fwd), links_filename_rev=str(rev), quiet=True)
    align_s = time.perf_counter() - t0
    with phase(who, "counting the links"):
        vs, vt = Vocab(), Vocab()
        c_st: Counter = Counter()   # links for t(target | source)
        c_ts: Counter = Counter()   # links for t(source | target)
        null_t: Counter = Counter()
        null_s: Counter = Counter()
        for a, b, lf, lr in zip(a_toks, b_toks, _read_links(fwd), _read_links(rev)):
            ia, ib = [vs.add(x) for x in a], [vt.add(x) for x in b]
            linked_t, linked_s = set(), set()
            for i, j in lf:
                c_st[ia[i], ib[j]] += 1
                linked_t.add(j)
            for i, j in lr:
                c_ts[ib[j], ia[i]] += 1
                linked_s.add(i)
            null_t.update(ib[j] for j in range(len(ib)) if j not in linked_t)
            null_s.update(ia[i] for i in range(len(ia)) if i not in linked_s)
        fwd.unlink()
        rev.unlink()
    n_prior = 0
    if lexicon is not None and prior > 0:
        for x, y in lexicon.pairs:
            i, j = vs.add(x), vt.add(y)
            c_st[i, j] += prior
            c_ts[j, i] += prior
            n_prior += 1
    p_st = _normalised(c_st, len(vs), len(vt), min_prob, top)
    p_ts = _normalised(c_ts, len(vt), len(vs), min_prob, top)
    pn_t = np.zeros(len(vt), np.float32)
    pn_s = np.zeros(len(vs), np.float32)
    for j, c in null_t.items():
        pn_t[j] = c
    for i, c in null_s.items():
        pn_s[i] = c
    pn_t /= max(pn_t.sum(), 1.0)
    pn_s /= max(pn_s.sum(), 1.0)
    np.savez_compressed(out / "tables.npz", st_data=p_st.data, st_indices=p_st.indices,
                        st_indptr=p_st.indptr, ts_data=p_ts.data, ts_indices=p_ts.indices,
                        ts_indptr=p_ts.indptr, null_t=pn_t, null_s=pn_s)
    facts = {"format": FORMAT, "langs": list(langs), "normalise": normalise,
             "pairs": len(a_toks), "dictionary_pairs": n_prior, "prior": prior,
             "src_words": len(vs), "tgt_words": len(vt), "st_entries": int(p_st.nnz),
             "ts_entries": int(p_ts.nnz), "min_prob": min_prob, "top": top,
             "aligner": f"eflomal {getattr(eflomal, '__version__', '')}".strip(),
             "align_seconds": round(align_s, 1),
             "seconds": round(time.perf_counter() - t0, 1)}
    (out / "vocab.json").write_text(json.dumps({"src": vs.words, "tgt": vt.words},
                                               ensure_ascii=False), encoding="utf-8")
    (out / "tables.json").write_text(json.dumps(facts, indent=2) + "\n", encoding="utf-8")
    return facts


class TranslationTables:
    """Tables written by :func:`train_tables`, loaded for scoring."""

    def __init__(self, path: str | Path):
        """Read the directory ``path``."""
        from scipy import sparse

        p = Path(path)
        meta = p / "tables.json"
        if not meta.exists():
            raise ComponentError(f"{path} is not a lexical translation table directory (no "
                                 f"tables.json); train one with lexical_translation_model.v1")
        self.facts = json.loads(meta.read_text(encoding="utf-8"))
        if self.facts.get("format") != FORMAT:
            raise ComponentError(f"{meta}: format {self.facts.get('format')!r}, expected {FORMAT}")
        self.path = p
        vocab = json.loads((p / "vocab.json").read_text(encoding="utf-8"))
        self.src_vocab, self.tgt_vocab = Vocab(vocab["src"]), Vocab(vocab["tgt"])
        z = np.load(p / "tables.npz")
        ns, nt = len(self.src_vocab), len(self.tgt_vocab)
        self.p_st = sparse.csr_matrix((z["st_data"], z["st_indices"], z["st_indptr"]), (ns, nt))
        self.p_ts = sparse.csr_matrix((z["ts_data"], z["ts_indices"], z["ts_indptr"]), (nt, ns))
        self.null_t, self.null_s = z["null_t"], z["null_s"]
        self.langs = tuple(self.facts["langs"])
        self.words = (Words(self.langs[0], self.facts["normalise"]),
                      Words(self.langs[1], self.facts["normalise"]))

    def oriented(self, src_lang: str, tgt_lang: str):
        """``(table t(b|a), null t(b|NULL), a vocab, b vocab, a words, b words)`` and the same
        for the other direction, for a scored pair whose source is ``src_lang``."""
        fw = (self.p_st, self.null_t, self.src_vocab, self.tgt_vocab) + self.words
        bw = (self.p_ts, self.null_s, self.tgt_vocab, self.src_vocab) + self.words[::-1]
        if (src_lang, tgt_lang) == self.langs:
            return fw, bw
        if (tgt_lang, src_lang) == self.langs:
            return bw, fw
        raise ComponentError(f"the tables in {self.path} are {self.langs[0]}-{self.langs[1]}; "
                             f"they cannot score {src_lang}-{tgt_lang}")


def _sub_table(table, null, vocab_a: Vocab, vocab_b: Vocab, va: Vocab, vb: Vocab,
               copy_prob: float):
    """The table restricted to the batch words ``va`` x ``vb`` (unknown words: empty rows and
    columns), with ``copy_prob`` for identical words the tables do not know."""
    from scipy import sparse

    ia = np.array([vocab_a.index.get(w, -1) for w in va.words], dtype=np.int64)
    ib = np.array([vocab_b.index.get(w, -1) for w in vb.words], dtype=np.int64)
    known_a, known_b = ia >= 0, ib >= 0
    sub = sparse.lil_matrix((len(va), len(vb)), dtype=np.float32)
    if known_a.any() and known_b.any():
        part = table[ia[known_a]][:, ib[known_b]]
        sub[np.flatnonzero(known_a)[:, None], np.flatnonzero(known_b)[None, :]] = part
    sub = sub.tocsr()
    extra_r, extra_c = [], []
    for i, w in enumerate(va.words):
        j = vb.index.get(w)
        if j is not None and (not known_a[i] or not known_b[j]) and copyable(w):
            extra_r.append(i)
            extra_c.append(j)
    if extra_r:
        sub = sub + sparse.csr_matrix((np.full(len(extra_r), copy_prob, np.float32),
                                       (extra_r, extra_c)), shape=sub.shape)
    nb = np.where(known_b, null[np.maximum(ib, 0)], 0).astype(np.float32)
    return sub.tocsr(), nb


def ibm1(src: Sequence[Sequence[str]], tgt: Sequence[Sequence[str]], table, null,
         vocab_a: Vocab, vocab_b: Vocab, floor: float = 1e-5, copy_prob: float = 0.5,
         matrix: bool = False, chunk: int = 256) -> np.ndarray:
    """Length-normalised IBM-1 log-probability of each target given its source: per pair
    (``matrix=False``), or of every target j given every source i (``matrix=True``, an
    ``len(src) x len(tgt)`` array). Empty targets score ``log(floor)``."""
    va, vb = Vocab.of(src), Vocab.of(tgt)
    sub, nb = _sub_table(table, null, vocab_a, vocab_b, va, vb, copy_prob)
    from .words import bag_matrix

    S = bag_matrix(src, va, binary=False)
    src_len = np.array([len(t) for t in src], dtype=np.float32)
    tgt_ids = [np.array([vb.index[t] for t in toks], dtype=np.int64) for toks in tgt]
    empty = float(np.log(floor))
    if matrix:
        T = bag_matrix(tgt, vb, binary=False)
        tgt_len = np.maximum(np.array([len(t) for t in tgt], dtype=np.float32), 1)
        out = np.empty((len(src), len(tgt)), dtype=np.float32)
    else:
        if len(src) != len(tgt):
            raise ComponentError(f"IBM-1 pair scores need as many targets as sources "
                                 f"({len(src)} != {len(tgt)})")
        out = np.empty(len(src), dtype=np.float32)
    for s in range(0, len(src), chunk):
        V = (S[s:s + chunk] @ sub).toarray() + nb[None, :]
        V /= (src_len[s:s + chunk, None] + 1)
        L = np.log(np.maximum(V, floor))
        if matrix:
            out[s:s + chunk] = (T @ L.T).T / tgt_len[None, :]
            for j, ids in enumerate(tgt_ids):
                if not len(ids):
                    out[s:s + chunk, j] = empty
        else:
            for r in range(len(L)):
                ids = tgt_ids[s + r]
                out[s + r] = L[r, ids].mean() if len(ids) else empty
    return out
