"""Benchmark of embedding_cosine.v1 (BET 3.2 / Wieting et al. 2017 5.7 embedding similarity)
against raw sentence-transformers fp32 encoding of the same sentences, on real data.

Command (from the project root; results go to docs/benchmarks.md by hand):
    nice -n 10 .venv/bin/python benchmarks/bench_quality_embedding.py --runs 3 --lines 100 \
        --sts 300 --ct2-types int8 int16 float32
    (add --bf16 to time bf16 autocast too: emulated, hence very slow, on CPUs without native bf16)

Two corpora from $BITEXTFORGE_SHARED_DATA:
- paraphrase-shaped: WMT19 en-de newstest2019, each of the first ``--lines`` official references
  paired with the 7 other human German references of the same source (7 pairs per line; the
  original repeats 7 times, as in a paraphrase run where one original has several candidates);
- plain pairs: the first ``--sts`` STS-B dev pairs (few repeated sentences).
Per corpus and run, side by side: raw = ``SentenceTransformer.encode`` of both columns in fp32
(batch 64, normalised) plus the row-wise dot product; ours = ``EmbeddingCosineFilter.score`` on
the same batch with the torch backend in fp32 (and bf16 with --bf16), and with the ctranslate2
int8 backend (converted once before timing). Median of the runs; pairs/second; Pearson of the
int8 scores against fp32.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from _common import shared_data
from bitextforge.api import read_lines


def paraphrase_corpus(n=300):
    """(left, right) pairs: each WMT reference vs the 7 other German references of its line."""
    d = shared_data("wmt19-ende-multiref")
    ref = read_lines(d / "newstest2019.ref-wmt.de", n)
    others = ["ntrex.de", "google-ar.de", "google-arp.de", "google-wmtp.de", "google-hqall.de",
              "google-hqp.de", "google-hqr.de"]
    cols = [[x.rstrip("\r") for x in read_lines(d / f"newstest2019.ref-{o}", n)] for o in others]
    left, right = [], []
    for i in range(n):
        for c in cols:
            left.append(c[i])
            right.append(ref[i])
    return left, right


def sts_corpus(n=1000):
    rows = [ln.rstrip("\r").split("\t")[:7]
            for ln in read_lines(shared_data("stsbenchmark", "sts-dev.csv"), n)]
    return [r[5] for r in rows], [r[6] for r in rows]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--bf16", action="store_true")
    ap.add_argument("--lines", type=int, default=300)
    ap.add_argument("--sts", type=int, default=1000)
    ap.add_argument("--ct2-types", nargs="+", default=["int8"],
                    help="CTranslate2 quantizations to time (int8, int8_float32, int16, float32)")
    args = ap.parse_args()
    import numpy as np
    import torch

    from bitextforge.plugins.quality.embeddings import EmbeddingCosineFilter

    fp32 = EmbeddingCosineFilter(EmbeddingCosineFilter.Config(precision="fp32"))
    bf16 = EmbeddingCosineFilter(EmbeddingCosineFilter.Config(precision="bf16")) \
        if args.bf16 else None
    ct2s = {t: EmbeddingCosineFilter(EmbeddingCosineFilter.Config(backend="ctranslate2",
                                                                  ct2_quantization=t))
            for t in args.ct2_types}
    model = fp32.encoder.model  # the same weights for the raw baseline
    print(f"torch {torch.__version__}, threads {torch.get_num_threads()}, "
          f"cpu capability {torch.backends.cpu.get_cpu_capability()}")
    for name, (left, right) in (("paraphrase-shaped (wmt19 multiref)", paraphrase_corpus(args.lines)),
                                ("plain pairs (sts-b dev)", sts_corpus(args.sts))):
        n = len(left)
        distinct = len(set(left) | set(right))
        batch = {"src": left, "tgt": right}
        times: dict[str, list[float]] = {"raw fp32": [], "ours fp32": [], "ours bf16": [],
                                         **{f"ours ct2 {t}": [] for t in ct2s}}
        agree = None
        agree_ct2: dict[str, float] = {}
        for _ in range(args.runs):
            t0 = time.perf_counter()
            with torch.inference_mode():
                a = model.encode(left, batch_size=64, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
                b = model.encode(right, batch_size=64, normalize_embeddings=True,
                                 convert_to_numpy=True, show_progress_bar=False)
            raw = np.einsum("ij,ij->i", a, b)
            times["raw fp32"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            ours = fp32.score(batch)
            times["ours fp32"].append(time.perf_counter() - t0)
            if bf16 is not None:
                t0 = time.perf_counter()
                low = bf16.score(batch)
                times["ours bf16"].append(time.perf_counter() - t0)
                agree = float(np.corrcoef(ours, low)[0, 1])
            for t, ct2 in ct2s.items():
                t0 = time.perf_counter()
                q = ct2.score(batch)
                times[f"ours ct2 {t}"].append(time.perf_counter() - t0)
                agree_ct2[t] = float(np.corrcoef(ours, q)[0, 1])
            assert np.allclose(raw, ours, atol=1e-4)
        print(f"\n{name}: {n} pairs, {2 * n} sentences, {distinct} distinct")
        base = statistics.median(times["raw fp32"])
        for k, v in times.items():
            if not v:
                continue
            med = statistics.median(v)
            print(f"  {k:20s} median {med:7.2f} s  {n / med:8.1f} pairs/s  x{base / med:.2f} "
                  f"(runs: {', '.join(f'{x:.2f}' for x in v)})")
        if agree is not None:
            print(f"  Pearson(bf16, fp32) = {agree:.5f}")
        for t, r in agree_ct2.items():
            print(f"  Pearson(ct2 {t}, fp32) = {r:.5f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
