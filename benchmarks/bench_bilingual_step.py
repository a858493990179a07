"""Step-time probe of train-bilingual (Kim et al., section 3.2 objectives): the training step as
it was before 2026-11-23 (random autoencoding draws, vocabulary projection over padding too)
against the current one (length-matched autoencoding runs, projection of real tokens only), on
the same real parallel batches, alternating the two in one process so machine noise hits both
alike. Prints the median seconds per update of each and their ratio.

    .venv/bin/python benchmarks/bench_bilingual_step.py --steps 40
"""

from __future__ import annotations

import argparse
import gzip
import random
import statistics
import time

import torch
from torch import nn

from _common import shared_data


def padded_loss(net, s0, out_ids):
    """The old decode loss: every padded position projected, padding ignored by the loss."""
    logits = net.bridge(net.decoder_states(s0, out_ids)) @ net.embed["dec"].weight.T
    return nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), out_ids.reshape(-1),
                                       ignore_index=net.cfg.pad_id, reduction="sum")


def main() -> None:
    """Time both step variants on the same batches."""
    from bitextforge.plugins.bilingual.model import (BilingualEmbedder, BilingualModel,
                                                     ModelConfig, pad)
    from bitextforge.plugins.bilingual.train import train_sentencepiece

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", help="German training text (default: shared Multi30k train)")
    ap.add_argument("--tgt", help="English training text (default: shared Multi30k train)")
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    args.src = args.src or str(shared_data("multi30k", "train.de.gz"))
    args.tgt = args.tgt or str(shared_data("multi30k", "train.en.gz"))
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    rng = random.Random(1)
    with gzip.open(args.src, "rt") as f, gzip.open(args.tgt, "rt") as g:
        src = [x.strip().lower() for x in f]
        tgt = [x.strip().lower() for x in g]
    sp_bytes = train_sentencepiece(src[:20000] + tgt[:20000], 8000, 1)
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_proto=sp_bytes)
    cfg = ModelConfig(vocab_size=sp.get_piece_size())
    net = BilingualEmbedder(cfg)
    model = BilingualModel(cfg, sp, net)
    pairs = [(s, t) for s, t in zip(model.tokenize(src), model.tokenize(tgt))
             if len(s) < 50 and len(t) < 50]
    pool = [t for _, t in pairs]
    ae_sorted = sorted(rng.sample(pool, len(pool)), key=len)
    order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]))
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    B = args.batch_size

    def step(new: bool) -> float:
        start = rng.randrange(len(order) - B)
        b = order[start:start + B]  # a length-sorted parallel batch, as train-bilingual makes
        if new:
            a0 = rng.randrange(len(ae_sorted) - B + 1)
            ae = ae_sorted[a0:a0 + B]
        else:
            ae = [pool[rng.randrange(len(pool))] for _ in b]
        x, xl = pad([pairs[i][0] for i in b], cfg.pad_id)
        y, _ = pad([pairs[i][1] for i in b], cfg.pad_id)
        a, al = pad(ae, cfg.pad_id)
        loss_fn = net.decode_loss if new else (lambda s0, ids: padded_loss(net, s0, ids))
        t0 = time.perf_counter()
        loss = loss_fn(net.encode("src", x, xl), y) + loss_fn(net.encode("tgt", a, al), a)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return time.perf_counter() - t0

    for _ in range(3):
        step(True), step(False)  # warm-up
    old, new = [], []
    for _ in range(args.steps):
        old.append(step(False))
        new.append(step(True))
    mo, mn = statistics.median(old), statistics.median(new)
    print(f"seconds per update, median of {args.steps}: before {mo:.3f}, now {mn:.3f}, "
          f"speed-up {mo / mn:.2f}x")


if __name__ == "__main__":
    main()
