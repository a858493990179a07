"""Vocabulary shortlists for the CTranslate2 backend: which target tokens a source sentence can need.

Back-translation (Wieting et al. 2017; ParaNMT-50M, Wieting & Gimpel 2018) and BET round trips
(Corbeil & Abdi Ghavidel) decode whole corpora, and a small translation model spends a large share
of every decoding step on its output layer: with ``train-nmt``'s defaults (d_model 256, 8,000
pieces) the vocabulary projection is about 40 % of a decoder step's multiply-adds. A *lexical
shortlist* restricts that projection to the target tokens a batch's source tokens make plausible,
as Marian's ``--shortlist`` and CTranslate2's vocabulary map (``use_vmap``) do. The map is a text
file, one rule a line: ``source_token<TAB>target_token target_token ...``; the rule with an empty
source lists the tokens that are always allowed.

This module builds such a map from a parallel corpus with the model's own tokenizer:

- the ``common`` most frequent target tokens are always allowed (function words, punctuation);
- for every source token, the ``per_source`` target tokens that co-occur with it in the most
  sentence pairs relative to how often either occurs (the Dice coefficient), so that ``Hund``
  lists ``dog`` rather than ``a``;
- every source token that is also a target token lists itself (names and numbers are copied).

A shortlist is an approximation: a token outside the batch's list cannot be produced, and the
scores CTranslate2 returns are normalised over the list. ``bench_nmt.py`` measures how often the
outputs still equal the full-vocabulary ones (docs/benchmarks.md, NMT). The backend that uses the
map is :class:`bitextforge.plugins.nmt.backends.CTranslate2Backend` (``vocab_map``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from bitextforge import InputError

from .backends import VMAP_NAME  # the map's file name in a model directory

#: defaults: on Multi30k test2016 with train-nmt's de-en model these keep 100 % of greedy outputs
#: equal to the full vocabulary's (docs/benchmarks.md, NMT)
PER_SOURCE = 150
COMMON = 500


def _indicator(rows: Sequence[Sequence[int]], vocab: int):
    """A sentence x token 0/1 matrix (scipy CSR): which tokens occur in each sentence."""
    import numpy as np
    from scipy import sparse

    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    cols = []
    for i, ids in enumerate(rows):
        u = sorted(set(ids))
        cols.append(u)
        indptr[i + 1] = indptr[i] + len(u)
    flat = np.fromiter((c for u in cols for c in u), dtype=np.int64, count=int(indptr[-1]))
    data = np.ones(len(flat), dtype=np.float32)
    return sparse.csr_matrix((data, flat, indptr), shape=(len(rows), vocab))


def build_vocab_map(src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]],
                    id_to_token: Sequence[str], *, per_source: int = PER_SOURCE,
                    common: int = COMMON, skip_ids: Sequence[int] = ()) -> list[str]:
    """The lines of a vocabulary map learned from token ids of line-aligned sentence pairs.

    ``id_to_token`` names every id (the model's vocabulary); ``skip_ids`` (padding, end of
    sentence, unknown) appear in no rule, since CTranslate2 always allows them itself.
    """
    import numpy as np

    if len(src_ids) != len(tgt_ids):
        raise ValueError("source and target id lists differ in length")
    vocab = len(id_to_token)
    xs = _indicator(src_ids, vocab)
    xt = _indicator(tgt_ids, vocab)
    skip = set(skip_ids)
    src_count = np.asarray(xs.sum(0)).ravel()
    tgt_count = np.asarray(xt.sum(0)).ravel()
    order = [i for i in np.argsort(-tgt_count, kind="stable") if tgt_count[i] > 0 and i not in skip]
    always = set(order[:common])
    lines = ["\t" + " ".join(id_to_token[i] for i in sorted(always))]
    co = (xs.T @ xt).tocsr()  # sentence pairs in which source token s and target token t co-occur
    is_target = tgt_count > 0
    for s in np.flatnonzero(src_count):
        if s in skip:
            continue
        row = co.getrow(s)
        ts, counts = row.indices, row.data
        keep = [(t, c) for t, c in zip(ts, counts) if t not in always and t not in skip]
        dice = sorted(keep, key=lambda tc: (-2.0 * tc[1] / (src_count[s] + tgt_count[tc[0]]),
                                            tc[0]))
        cands = [t for t, _ in dice[:per_source]]
        if is_target[s] and s not in always and s not in cands:
            cands.append(s)
        if cands:
            lines.append(f"{id_to_token[s]}\t" + " ".join(id_to_token[t] for t in sorted(cands)))
    return lines


def merge_vocab_maps(*maps: Sequence[str]) -> list[str]:
    """The union of vocabulary maps given as lines: each source token (the always-allowed rule
    included) allows every target token any of the maps allows it. A model fine-tuned on new
    pairs keeps what its first training allowed and gains what the new pairs need."""
    rules: dict[str, set[str]] = {}
    for lines in maps:
        for line in lines:
            src, _, tgts = line.rstrip("\n").partition("\t")
            rules.setdefault(src, set()).update(tgts.split())
    always = rules.pop("", set())
    return ["\t" + " ".join(sorted(always))] + [
        f"{src}\t" + " ".join(sorted(tgts)) for src, tgts in sorted(rules.items())]


def build_for_model(model_dir: str | Path, src_texts: Sequence[str], tgt_texts: Sequence[str],
                    output: str | Path | None = None, *, per_source: int = PER_SOURCE,
                    common: int = COMMON) -> Path:
    """Tokenize a parallel corpus with ``model_dir``'s tokenizer and write its vocabulary map.

    Written to ``output`` (default ``model_dir/vmap.txt``) atomically; returns the path.
    """
    from bitextforge.api import write_atomic

    from .backends import load_tokenizer

    model_dir = Path(model_dir)
    if len(src_texts) != len(tgt_texts):
        raise InputError(f"vocabulary map: {len(src_texts)} source lines but {len(tgt_texts)} "
                         f"target lines; give line-aligned translations")
    tok = load_tokenizer(model_dir)
    vocab = tok.get_vocab()
    id_to_token = [""] * (max(vocab.values()) + 1)
    for token, i in vocab.items():
        id_to_token[i] = token
    if any(" " in t or "\t" in t for t in id_to_token):
        raise InputError(f"{model_dir}: a vocabulary token contains a space or tab, which a "
                         f"CTranslate2 vocabulary map cannot hold")
    src = tok(list(src_texts), add_special_tokens=False)["input_ids"]
    tgt = tok(text_target=list(tgt_texts), add_special_tokens=False)["input_ids"]
    skip = [i for i in (tok.pad_token_id, tok.eos_token_id, tok.unk_token_id,
                        getattr(tok, "bos_token_id", None)) if i is not None]
    lines = build_vocab_map(src, tgt, id_to_token, per_source=per_source, common=common,
                            skip_ids=skip)
    out = Path(output) if output else model_dir / VMAP_NAME
    write_atomic(out, "".join(line + "\n" for line in lines))
    return out
