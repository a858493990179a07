"""Batches per epoch of a stand-in of the best back-translation recipe's corpus, counted with the
trainer's own vocabulary, encoding and batching: what turns its update budgets into views of
each real pair (plugins/nmt/real_views.py).

The stand-in has the recipe's row counts (recipes/backtranslate-multi30k.yaml: the 5,000 real
pairs read 4 times, 54,000 back-translated rows, 22,721 dictionary rows; 96,721 in all) with
Multi30k's real German in place of the synthetic German, since the runs did not record their
batches per epoch. Usage (from the repository root, about 3 minutes on 2 busy cores):

    .venv/bin/python benchmarks/studies/bt-multi30k/batches_per_epoch.py [--vocab 8000]
"""

from __future__ import annotations

import argparse
import gzip
import random
import tempfile
from pathlib import Path

from bitextforge.plugins.nmt.train_data import encode, make_batches, train_spm

REAL, COPIES, BT_ROWS, LEX_ROWS = 5000, 4, 54000, 22721


def main() -> None:
    """Print rows, batches per epoch and pairs per batch of the stand-in and of the real pairs
    alone, and the views of each real pair at 1,500 and 24,000 updates."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--vocab", type=int, default=8000, help="sentencepiece pieces (the recipe's)")
    ap.add_argument("--batch-tokens", type=int, default=800, help="the recipe's batch_tokens")
    ap.add_argument("--data", default="../shared/data/multi30k")
    a = ap.parse_args()
    de = gzip.open(Path(a.data) / "train.de.gz", "rt", encoding="utf-8").read().splitlines()
    en = gzip.open(Path(a.data) / "train.en.gz", "rt", encoding="utf-8").read().splitlines()
    src, tgt = de[:REAL] * COPIES, en[:REAL] * COPIES
    rng = random.Random(0)
    mono = list(range(REAL, len(de))) * 3  # three samples per English sentence
    rng.shuffle(mono)
    rows = mono[:BT_ROWS] + list(range(REAL, len(de)))[:LEX_ROWS]
    src += [de[i] for i in rows]
    tgt += [en[i] for i in rows]
    with tempfile.TemporaryDirectory() as tmp:
        import sentencepiece as spm

        prefix = Path(tmp) / "joint"
        train_spm(src + tgt, prefix, a.vocab, 1)
        sp = spm.SentencePieceProcessor(model_file=str(prefix.with_suffix(".model")))
        s, t = encode(sp, src, 128), encode(sp, tgt, 128)
    n = len(make_batches(s, t, a.batch_tokens, random.Random(0)))
    alone = len(make_batches(s[:REAL], t[:REAL], a.batch_tokens, random.Random(0)))
    print(f"{len(s):,} rows, {a.vocab:,} pieces, {a.batch_tokens} tokens a batch: {n:,} batches "
          f"per epoch ({len(s) / n:.1f} pairs a batch); the {REAL:,} real pairs alone, same "
          f"vocabulary: {alone:,}")
    for updates in (1500, 24000):
        print(f"{updates:,} updates: each real pair seen {updates / n * COPIES:.1f} times")


if __name__ == "__main__":
    main()
