"""Choose the design of recipes/paracrawl-filter.yaml without looking at ParaCrawl's labels: train
pair classifiers on Multi30k (image captions) with several feature sets and score a synthetic
validation set from another domain, FLORES-200 devtest (Wikipedia-style general text): the even
lines as clean pairs, the odd lines turned into noise by the classifier's negative kinds. The
feature set that transfers best from captions to FLORES is the one the recipe uses.

    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/bench_paracrawl_design.py fr cs

The IBM-1 features need tables: the script trains models/lexical-enfr and models/lexical-encs
(lexical_translation_model.v1, eflomal on the 30,014 Multi30k train + val pairs, no dictionary)
when they are missing.

Features are scored once per language pair for the largest set (kept in
runs/paracrawl-design-LANG.npz); each variant fits the same histogram gradient boosting classifier
as pair_classifier_model.v1 on its columns. On a busy machine run it with OMP_NUM_THREADS=1:
scikit-learn's threads wait for each other.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from bitextforge.plugins.lexical.pair_classifier import (ALL_SURFACE, EXTRA_SURFACE, NEGATIVES,
                                                         SURFACE, FeatureFilter, FeatureScorer,
                                                         make_negatives)
from bitextforge.io.corpus import read_tsv_pairs

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data"
FLORES = {"en": "eng_Latn", "fr": "fra_Latn", "cs": "ces_Latn"}
KINDS = NEGATIVES + ("appended",)
TRANSFER = tuple(n for n in SURFACE if n not in ("src_chars_log", "tgt_chars_log")) + EXTRA_SURFACE
LID = ["language_id.v1", "language_id.v1#1"]
LEX = ["lexical_translation.v1", "lexical_translation.v1#3"]
VARIANTS = {
    "surface(10) + LID": list(SURFACE) + LID,
    "transfer(14) + LID": list(TRANSFER) + LID,
    "surface(10) + LID + IBM-1": list(SURFACE) + LID + LEX,
    "transfer(14) + LID + IBM-1": list(TRANSFER) + LID + LEX,
}


def flores(lang: str) -> list[str]:
    """FLORES-200 devtest lines of ``lang``."""
    p = DATA / "flores200-devtest" / f"{FLORES[lang]}.devtest"
    return p.read_text(encoding="utf-8").split("\n")[:-1]


def print_variants(variants: dict[str, list[str]], names: list[str], X, y, V, yv, wk,
                   kinds: tuple[str, ...]) -> None:
    """Fit pair_classifier_model.v1's classifier on the training features ``X`` / ``y`` with
    each variant's columns and print a table row per variant: ROC-AUC on the validation rows
    ``V`` / ``yv`` (clean rows first), overall and against each noise kind of ``wk``."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    n_clean = int(yv.sum())
    print("| features | FLORES AUC | " + " | ".join(kinds) + " |")
    print("|---|---|" + "---|" * len(kinds))
    for label, cols in variants.items():
        idx = [names.index(c) for c in cols]
        clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=1)
        clf.fit(X[:, idx], y)
        p = clf.predict_proba(V[:, idx])[:, 1]
        pos = p[:n_clean]
        per = [roc_auc_score(np.r_[np.ones(n_clean), np.zeros((wk == k).sum())],
                             np.r_[pos, p[n_clean:][wk == k]]) for k in kinds]
        print(f"| {label} | {roc_auc_score(yv, p):.3f} | " + " | ".join(f"{a:.3f}" for a in per)
              + " |")


def design_data(lang: str, limit: int, kinds: tuple[str, ...]):
    """The training and validation pairs of a design round: ``limit`` Multi30k training pairs
    (seeded sample) and one negative each, FLORES devtest's even lines as clean validation pairs
    and its odd lines made into negatives. Returns ``(src, tgt, ns, nt, vs, vt, ws, wt, wk)``,
    ``wk`` the validation negatives' kinds."""
    m = DATA / "multi30k"
    src, tgt = read_tsv_pairs([(str(m / "train.en.gz"), str(m / f"train.{lang}.gz"))])
    order = np.random.default_rng(1).permutation(len(src))[:limit]
    src, tgt = [src[i] for i in order], [tgt[i] for i in order]
    ns, nt, _ = make_negatives(src, tgt, kinds, 1)
    en, xx = flores("en"), flores(lang)
    ws, wt, wk = make_negatives(en[1::2], xx[1::2], kinds, 7)
    return src, tgt, ns, nt, en[0::2], xx[0::2], ws, wt, np.array(wk)


def multi30k_tables(lang: str, out: str, dictionary: str | None = None,
                    extra: list[tuple[str, str]] | None = None) -> str:
    """Train (once) eflomal tables on Multi30k train + val, with ``dictionary`` as prior and the
    ``extra`` pairs (written to a TSV beside the tables) when given; returns ``out``."""
    from bitextforge.plugins.lexical.components import LexicalTranslationTrainer

    if Path(out, "tables.json").exists():
        return out
    m = DATA / "multi30k"
    corpus: list = [(str(m / f"{p}.en.gz"), str(m / f"{p}.{lang}.gz")) for p in ("train", "val")]
    if extra:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        tsv = Path(f"{out}.extra.tsv")
        tsv.write_text("".join(f"{s}\t{t}\n" for s, t in extra), encoding="utf-8")
        corpus.append(str(tsv))
    prior = {"dictionary": dictionary, "dictionary_langs": ("en", lang)} if dictionary else {}
    LexicalTranslationTrainer(LexicalTranslationTrainer.Config(
        output=out, langs=("en", lang), corpus=corpus, **prior)).train()
    return out


def cached_features(cache: Path, specs: list[FeatureFilter], surface, train, valid,
                    batch: int = 2000, names: list[str] | None = None):
    """``(X, V, names)``: the features of the ``train`` and ``valid`` (sources, targets) pairs,
    scored in batches of ``batch`` rows, or those an earlier run kept in ``cache`` (refit
    without rescoring). ``names`` overrides the scorer's column names."""
    if cache.exists():
        z = np.load(cache)
        return z["X"], z["V"], list(z["names"])
    scorer = FeatureScorer(specs, surface)
    try:
        X = scorer.features(*train, batch=batch)
        V = scorer.features(*valid, batch=batch)
    finally:
        scorer.close()
    names = names or scorer.names
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, X=X, V=V, names=np.array(names))
    return X, V, names


def run(lang: str, limit: int, kinds: tuple[str, ...]) -> None:
    """Print the validation table of en-``lang``."""
    from sklearn.metrics import roc_auc_score

    t0 = time.perf_counter()
    src, tgt, ns, nt, vs, vt, ws, wt, wk = design_data(lang, limit, kinds)
    tables = multi30k_tables(lang, f"models/lexical-en{lang}")
    specs = [FeatureFilter(filter="language_id.v1", with_={"src_lang": "en"}),
             FeatureFilter(filter="language_id.v1", with_={"tgt_lang": lang}),
             FeatureFilter(filter="lexical_translation.v1",
                           with_={"tables": tables, "src_lang": "en", "tgt_lang": lang,
                                  "direction": "src2tgt"}),
             FeatureFilter(filter="lexical_translation.v1",
                           with_={"tables": tables, "src_lang": "en", "tgt_lang": lang,
                                  "direction": "tgt2src"})]
    X, V, names = cached_features(Path(f"runs/paracrawl-design-{lang}.npz"), specs, ALL_SURFACE,
                                  (src + ns, tgt + nt), (vs + ws, vt + wt))
    y = np.r_[np.ones(len(src)), np.zeros(len(ns))]
    yv = np.r_[np.ones(len(vs)), np.zeros(len(ws))]
    print(f"\nen-{lang}: {len(src)} Multi30k pairs + {len(ns)} negatives; FLORES validation "
          f"{len(vs)} clean + {len(ws)} noisy ({time.perf_counter() - t0:.0f} s to score)")
    print_variants(VARIANTS, names, X, y, V, yv, wk, kinds)
    for c in LID + LEX:
        j = names.index(c)
        print(f"| {c} alone | {roc_auc_score(yv, V[:, j]):.3f} | |")


if __name__ == "__main__":
    for lang in sys.argv[1:] or ["fr", "cs"]:
        run(lang, 20000, KINDS)
