"""Per-update speed of train-bilingual (Kim et al., section 3.2 objectives) under different
options, on real general-domain batches: a sample of the de-en training pool, batches made as the
trainer makes them (length-sorted windows of 50 batches, autoencoding runs of a length-sorted
pool), the trainer's own loss (``batch_loss``), autocast, Adam and clipping. The variants take
turns update by update in one process, so machine noise hits them alike; prints the median
seconds per update and pairs per second of each.

    .venv/bin/python benchmarks/bench_bilingual_speed.py --steps 30 \\
        precision=fp32 precision=bf16 precision=bf16,vocab_size=4000 \\
        precision=bf16,batch_size=128

A variant is a comma-separated list of ``TrainConfig`` fields (precision, vocab_size or vocab,
batch_size, embed_dim, hidden_dim, rnn, shared_encoder, max_tokens; ``threads`` applies to the
whole process, so give it with ``--threads``).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

import torch

from _common import shared_data

SETS = ("tatoeba-anki-deu-eng-2018-05", "europarl-v7-deen-first20k",
        "news-commentary-v11-deen-20k", "wmt-newstest-2008-2013-deen")


def main() -> None:
    """Time each variant's updates in turn."""
    import sentencepiece as spm

    from bitextforge.plugins.bilingual.model import BilingualEmbedder, BilingualModel, ModelConfig
    from bitextforge.plugins.bilingual.train import TrainConfig, batch_loss, train_sentencepiece
    from bitextforge.api import read_tsv_pairs
    from bitextforge.plugins.nmt.train import resolve_precision

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("variants", nargs="+", help="key=value,key=value (TrainConfig fields)")
    ap.add_argument("--steps", type=int, default=30, help="timed updates per variant")
    ap.add_argument("--per-set", type=int, default=8000, help="pairs sampled from each pool set")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(1)
    src, tgt = [], []
    for name in SETS:
        s, t = read_tsv_pairs([str(shared_data("deen-train-pool", name, "train.de-en.tsv.gz"))],
                              swap=False)
        idx = rng.sample(range(len(s)), min(args.per_set, len(s)))
        src += [s[i] for i in idx]
        tgt += [t[i] for i in idx]
    vocabs: dict[int, bytes] = {}
    runs = []
    for spec in args.variants:
        cfg = TrainConfig(**dict(kv.split("=", 1) for kv in spec.split(",")))
        key = cfg.vocab or cfg.vocab_size
        if key not in vocabs:
            t0 = time.perf_counter()
            texts = [x.lower() for x in src + tgt]
            vocabs[key] = (Path(cfg.vocab).read_bytes() if cfg.vocab
                           else train_sentencepiece(texts, cfg.vocab_size, 1))
            print(f"vocabulary {key}: {time.perf_counter() - t0:.1f} s")
        sp = spm.SentencePieceProcessor(model_proto=vocabs[key])
        torch.manual_seed(1)
        mcfg = ModelConfig(vocab_size=sp.get_piece_size(), embed_dim=cfg.embed_dim,
                           hidden_dim=cfg.hidden_dim, rnn=cfg.rnn, max_tokens=cfg.max_tokens)
        net = BilingualEmbedder(mcfg)
        model = BilingualModel(mcfg, sp, net)
        pairs = [(s, t) for s, t in zip(model.tokenize(src), model.tokenize(tgt))
                 if len(s) < cfg.max_tokens and len(t) < cfg.max_tokens]
        ae = sorted((t for _, t in pairs), key=len)
        opt = torch.optim.Adam(net.parameters(), lr=cfg.lr)
        precision = resolve_precision(cfg.precision)
        runs.append({"spec": spec, "cfg": cfg, "net": net, "pairs": pairs, "ae": ae, "opt": opt,
                     "bf16": precision == "bf16", "times": []})

    def update(run: dict, seed: int) -> float:
        r = random.Random(seed)
        cfg, pairs, B = run["cfg"], run["pairs"], run["cfg"].batch_size
        window = sorted(r.sample(range(len(pairs)), min(len(pairs), B * 50)),
                        key=lambda i: len(pairs[i][0]))
        k = r.randrange(max(1, len(window) // B))
        batch = [pairs[i] for i in window[k * B:(k + 1) * B]]
        a0 = r.randrange(max(1, len(run["ae"]) - B + 1))
        ae = run["ae"][a0:a0 + B]
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=run["bf16"]):
            loss, _ = batch_loss(run["net"], "src", batch, ae)
        run["opt"].zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(run["net"].parameters(), cfg.clip)
        run["opt"].step()
        return time.perf_counter() - t0

    for i in range(args.steps + 3):
        for run in runs:
            dt = update(run, i)
            if i >= 3:  # the first updates allocate and warm caches
                run["times"].append(dt)
    base = None
    for run in runs:
        med = statistics.median(run["times"])
        rate = run["cfg"].batch_size / med
        base = base or rate
        print(f"{run['spec']:45s} median {med:.3f} s/update ({rate:.0f} pairs/s), "
              f"{rate / base:.2f}x the first in pairs/s")


if __name__ == "__main__":
    main()
