"""Choose the lexical features of recipes/paracrawl-filter.yaml without ParaCrawl's labels: the
second design round after bench_paracrawl_design.py, which found that IBM-1 tables learned from
image captions alone poison a classifier that must judge other text.

Two things are new here: a bilingual dictionary for en-fr and en-cs (FreeDict, from Debian's
packages; scripts/freedict_tsv.py), as coverage feature and as eflomal prior, and the margin
correction of the lexical scores (``margin: k``: a pair's score minus its sides' mean score with k
chance partners), which should let a feature learned on captions transfer to text whose words the
model knows less well. Everything is measured the way the first round was: classifiers trained on
20,000 Multi30k pairs and their synthetic negatives, ROC-AUC of clean against noisy on FLORES-200
devtest (even lines clean, odd lines made into the same negative kinds).

Tables: ``m30k+dict`` are learned from Multi30k train + val with the FreeDict prior;
``+target`` adds the (unlabelled) FLORES validation pairs themselves, as the recipe adds the
unlabelled ParaCrawl pairs it scores (transductive: the aligner sees the text, never a label).

    apt-get install dict-freedict-eng-fra dict-freedict-fra-eng dict-freedict-eng-ces dict-freedict-ces-eng
    .venv/bin/python scripts/freedict_tsv.py en fr models/freedict-en-fr.tsv.gz
    .venv/bin/python scripts/freedict_tsv.py en cs models/freedict-en-cs.tsv.gz
    OMP_NUM_THREADS=1 .venv/bin/python tests/bench/bench_paracrawl_lexical.py fr cs
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

from bitextforge.corpus import read_tsv_pairs
from bitextforge.plugins.lexical.pair_classifier import (EXTRA_SURFACE, NEGATIVES, SURFACE,
                                                         FeatureFilter, FeatureScorer,
                                                         make_negatives)

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_paracrawl_design import DATA, flores, print_variants  # noqa: E402

KINDS = NEGATIVES + ("appended",)
TRANSFER = [n for n in SURFACE if n not in ("src_chars_log", "tgt_chars_log")] + list(EXTRA_SURFACE)
MARGIN = 4


def tables(lang: str, out: str, extra: list[tuple[str, str]] | None) -> str:
    """Train (once) eflomal tables on Multi30k train + val with the FreeDict prior, plus the
    ``extra`` pairs written to a TSV beside the tables."""
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
    LexicalTranslationTrainer(LexicalTranslationTrainer.Config(
        output=out, langs=("en", lang), corpus=corpus,
        dictionary=f"models/freedict-en-{lang}.tsv.gz", dictionary_langs=("en", lang))).train()
    return out


def run(lang: str, limit: int = 20000) -> None:
    """Print the validation table of en-``lang``."""
    from sklearn.metrics import roc_auc_score

    t0 = time.perf_counter()
    m = DATA / "multi30k"
    src, tgt = read_tsv_pairs([(str(m / "train.en.gz"), str(m / f"train.{lang}.gz"))])
    order = np.random.default_rng(1).permutation(len(src))[:limit]
    src, tgt = [src[i] for i in order], [tgt[i] for i in order]
    ns, nt, _ = make_negatives(src, tgt, KINDS, 1)
    en, xx = flores("en"), flores(lang)
    vs, vt = en[0::2], xx[0::2]
    ws, wt, wk = make_negatives(en[1::2], xx[1::2], KINDS, 7)
    base = tables(lang, f"models/lexical-en{lang}-dict", None)
    trans = tables(lang, f"models/lexical-en{lang}-dict-flores", list(zip(vs + ws, vt + wt)))
    dic = f"models/freedict-en-{lang}.tsv.gz"
    lx = {"src_lang": "en", "tgt_lang": lang}
    specs = [("lid_en", "language_id.v1", {"src_lang": "en"}),
             ("lid_xx", "language_id.v1", {"tgt_lang": lang}),
             ("cov", "lexical_coverage.v1", {**lx, "dictionary": dic, "dictionary_langs": ["en", lang]}),
             ("cov_m", "lexical_coverage.v1", {**lx, "dictionary": dic, "dictionary_langs": ["en", lang],
                                               "margin": MARGIN})]
    for tag, tab in (("ibm", base), ("ibmT", trans)):
        for d in ("src2tgt", "tgt2src"):
            specs.append((f"{tag}_{d}", "lexical_translation.v1", {**lx, "tables": tab, "direction": d}))
            specs.append((f"{tag}_{d}_m", "lexical_translation.v1",
                          {**lx, "tables": tab, "direction": d, "margin": MARGIN}))
    cache = Path(f"runs/paracrawl-lexical-{lang}.npz")
    if cache.exists():
        z = np.load(cache)
        X, V, names = z["X"], z["V"], list(z["names"])
    else:
        scorer = FeatureScorer([FeatureFilter(filter=f, with_=w) for _, f, w in specs], TRANSFER)
        # one batch each: the margin's chance partners come from the whole set
        X = scorer.features(src + ns, tgt + nt, batch=10 ** 9)
        V = scorer.features(vs + ws, vt + wt, batch=10 ** 9)
        scorer.close()
        names = TRANSFER + [n for n, _, _ in specs]
        cache.parent.mkdir(parents=True, exist_ok=True)
        np.savez(cache, X=X, V=V, names=np.array(names))
    y = np.r_[np.ones(len(src)), np.zeros(len(ns))]
    yv = np.r_[np.ones(len(vs)), np.zeros(len(ws))]
    wk = np.array(wk)
    print(f"\nen-{lang}: {len(src)} Multi30k pairs + {len(ns)} negatives; FLORES validation "
          f"{len(vs)} clean + {len(ws)} noisy ({time.perf_counter() - t0:.0f} s)")
    base_cols = TRANSFER + ["lid_en", "lid_xx"]
    variants = {
        "transfer(14) + LID (the recipe so far)": base_cols,
        "+ coverage": base_cols + ["cov"],
        "+ coverage, margin": base_cols + ["cov_m"],
        "+ IBM-1 (m30k+dict)": base_cols + ["ibm_src2tgt", "ibm_tgt2src"],
        "+ IBM-1 (m30k+dict), margin": base_cols + ["ibm_src2tgt_m", "ibm_tgt2src_m"],
        "+ IBM-1 (+target), margin": base_cols + ["ibmT_src2tgt_m", "ibmT_tgt2src_m"],
        "+ coverage, margin + IBM-1 (m30k+dict), margin": base_cols + ["cov_m", "ibm_src2tgt_m",
                                                                       "ibm_tgt2src_m"],
        "+ coverage, margin + IBM-1 (+target), margin": base_cols + ["cov_m", "ibmT_src2tgt_m",
                                                                     "ibmT_tgt2src_m"],
    }
    print_variants(variants, names, X, y, V, yv, wk, KINDS)
    for c in [n for n, _, _ in specs if n.startswith(("cov", "ibm"))]:
        j = names.index(c)
        print(f"| {c} alone | {roc_auc_score(yv, V[:, j]):.3f} (Multi30k held in: "
              f"{roc_auc_score(y, X[:, j]):.3f}) |")


if __name__ == "__main__":
    for lang in sys.argv[1:] or ["fr", "cs"]:
        run(lang)
