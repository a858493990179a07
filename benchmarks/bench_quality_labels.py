"""Quality of the quality filters against human labels, and language-ID throughput, on real data.

Command (from the project root; results copied into docs/benchmarks.md):
    nice -n 10 .venv/bin/python benchmarks/bench_quality_labels.py [--speed]

1. language_id.v1 (heliport, and lingua with 12 candidate languages) on the ParaCrawl human
   evaluations (v3, v6, v7; en-fr and en-cs): ROC-AUC of the score for "not L" (wrong language)
   and for "V" (valid), and how many pairs score below the natural threshold.
2. reference_classifier.v1 (Wieting et al. 2017, 5.6.1) trained on MQM-TED en-de human references
   vs the 13 MT systems, held out by talk (every 4th talk); and as a detector of the ParaCrawl
   `MT` verdict: trained on v3 (V vs MT), tested on v6 + v6-2 + v7 of the same language pair.
3. (with --speed) Throughput of language_id.v1 (heliport) on 100,000 Multi30k de-en pairs in batches of 10,000,
   against heliport's own par_identify_with_score on the same texts (median of 3 runs).
"""

from __future__ import annotations

import statistics
import sys
import time

from _common import shared_data
from bitextforge.api import read_lines

RELEASES = ["paracrawl-v3-validation-data", "paracrawl-v6-validation", "paracrawl-v7-validation"]


def paracrawl(rel: str, pair: str):
    rows = []
    for line in read_lines(shared_data("paracrawl-human-eval", rel, f"sorted.{pair}")):
        f = line.split("\t")
        rows.append((f[2], f[3], (f[7] if "v3" in rel else f[5]).strip()))
    return rows


def langid_table():
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.quality.langid import LanguageIdFilter

    print("## language_id.v1 on ParaCrawl human evaluations\n")
    print("| backend | pair | release | pairs | L | AUC not-L | AUC V | below threshold | L among them | seconds |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    cands = ["en", "fr", "cs", "de", "es", "it", "nl", "pt", "pl", "sk", "sl", "hr"]
    for backend in ("heliport", "lingua"):
        for pair in ("en-fr", "en-cs"):
            extra = {"lingua_candidates": cands} if backend == "lingua" else {}
            f = LanguageIdFilter(LanguageIdFilter.Config(src_lang="en", tgt_lang=pair[3:],
                                                         backend=backend, **extra))
            thr = 0.0 if backend == "heliport" else 0.5
            for rel in RELEASES:
                rows = paracrawl(rel, pair)
                t0 = time.perf_counter()
                s = f.score({"src": [r[0] for r in rows], "tgt": [r[1] for r in rows]})
                dt = time.perf_counter() - t0
                lab = [r[2] for r in rows]
                low = [x < thr for x in s]
                print(f"| {backend} | {pair} | {rel.split('-')[1]} | {len(rows)} | "
                      f"{lab.count('L')} | {roc_auc_score([x != 'L' for x in lab], s):.3f} | "
                      f"{roc_auc_score([x == 'V' for x in lab], s):.3f} | {sum(low)} | "
                      f"{sum(a and b == 'L' for a, b in zip(low, lab))} | {dt:.2f} |")
            f.close()


def refclf_table():
    from sklearn.metrics import accuracy_score, roc_auc_score

    from bitextforge.plugins.quality.classifier import train_reference_classifier
    from bitextforge.testing import mqm_split

    print("\n## reference_classifier.v1\n")
    (tr_r, tr_m), (te_r, te_m) = mqm_split(shared_data("mqm-ted-ende", "mqm_ted_ende.tsv"))
    t0 = time.perf_counter()
    m = train_reference_classifier(tr_r, tr_m)
    dt = time.perf_counter() - t0
    p = m.predict_proba(te_r + te_m)[:, 1]
    y = [1] * len(te_r) + [0] * len(te_m)
    bal = ((p[:len(te_r)] >= 0.5).mean() + (p[len(te_r):] < 0.5).mean()) / 2
    print(f"MQM-TED en-de, held out by talk: train {len(tr_r)} refs / {len(tr_m)} MT "
          f"({dt:.1f} s), test {len(te_r)} refs / {len(te_m)} MT: ROC-AUC "
          f"{roc_auc_score(y, p):.3f}, accuracy {accuracy_score(y, p >= 0.5):.3f}, balanced "
          f"accuracy {bal:.3f}\n")
    print("| ParaCrawl pair | side scored | train (v3) V / MT | test (v6+v6-2+v7) pairs / MT | AUC not-MT |")
    print("|---|---|---|---|---|")
    for pair in ("en-fr", "en-cs"):
        tr = paracrawl(RELEASES[0], pair)
        te = []
        for rel in ("paracrawl-v6-validation", "paracrawl-v6-2-validation",
                    "paracrawl-v7-validation"):
            te += paracrawl(rel, pair)
        for side, name in ((0, "en (src)"), (1, f"{pair[3:]} (tgt)")):
            refs = [r[side] for r in tr if r[2] == "V"]
            mts = [r[side] for r in tr if r[2] == "MT"]
            m = train_reference_classifier(refs, mts)
            p = m.predict_proba([r[side] for r in te])[:, 1]
            y = [r[2] != "MT" for r in te]
            print(f"| {pair} | {name} | {len(refs)} / {len(mts)} | {len(te)} / "
                  f"{len(y) - sum(y)} | {roc_auc_score(y, p):.3f} |")


def langid_speed(runs: int = 3):
    from bitextforge.plugins.quality.langid import LanguageIdFilter

    de = read_lines(shared_data("multi30k", "train.de.gz"))
    en = read_lines(shared_data("multi30k", "train.en.gz"))
    n = 100_000
    de = (de * (n // len(de) + 1))[:n]
    en = (en * (n // len(en) + 1))[:n]
    f = LanguageIdFilter(LanguageIdFilter.Config(src_lang="de", tgt_lang="en"))
    ours, raw = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        for i in range(0, n, 10_000):
            f.score({"src": de[i:i + 10_000], "tgt": en[i:i + 10_000]})
        ours.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        for i in range(0, n, 10_000):
            f.ident.par_identify_with_score(de[i:i + 10_000])
            f.ident.par_identify_with_score(en[i:i + 10_000])
        raw.append(time.perf_counter() - t0)
    mo, mr = statistics.median(ours), statistics.median(raw)
    print(f"\n## language_id.v1 throughput\n\n{n} de-en pairs (Multi30k train repeated), batches "
          f"of 10,000: filter {mo:.2f} s ({n / mo:,.0f} pairs/s), heliport "
          f"par_identify_with_score alone on both sides {mr:.2f} s ({n / mr:,.0f} pairs/s); "
          f"runs filter {[round(x, 2) for x in ours]}, raw {[round(x, 2) for x in raw]}")


if __name__ == "__main__":
    langid_table()
    refclf_table()
    if "--speed" in sys.argv:
        langid_speed()
