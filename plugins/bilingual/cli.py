"""``bitextforge train-bilingual`` and ``bitextforge train-mlp-similarity``: train the bilingual
sentence embedding model and the MLP similarity of Kim, Rosendahl, Rossenbach, Rosendahl, Khadivi &
Ney (sections 3.2 and 5.2). torch and scikit-learn are imported inside the handlers only.
"""

from __future__ import annotations

import json
import sys

from bitextforge import InputError
from bitextforge.cli import register_command


@register_command("train-bilingual", help="train a bilingual sentence embedding model (Kim et al.)")
def _train_bilingual(p):
    from .train import TrainConfig

    p.add_argument("--src", action="append", required=True, metavar="FILE",
                   help="source side of a parallel corpus (plain or .gz; repeat per corpus)")
    p.add_argument("--tgt", action="append", required=True, metavar="FILE",
                   help="target side, line-aligned with the --src of the same position")
    p.add_argument("--mono", action="append", default=[], metavar="FILE",
                   help="monolingual text in the decoded language for autoencoding (repeatable)")
    p.add_argument("--dev-src", metavar="FILE", help="dev source: logs cosine alignment error")
    p.add_argument("--dev-tgt", metavar="FILE", help="dev target, line-aligned with --dev-src")
    p.add_argument("-o", "--output", required=True, help="model directory to write")
    for name, f in TrainConfig.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if f.annotation is bool:
            p.add_argument(flag, dest=name, default=f.default, type=_bool,
                           metavar="true|false", help=f"{f.description} (default {f.default})")
        else:
            p.add_argument(flag, dest=name, default=f.default,
                           help=f"{f.description} (default {f.default})")

    def handler(args) -> int:
        from pydantic import ValidationError

        from .train import read_pairs, read_text, train_bilingual

        try:
            cfg = TrainConfig(**{k: getattr(args, k) for k in TrainConfig.model_fields})
        except ValidationError as exc:
            err = exc.errors()[0]
            raise InputError(f"--{str(err['loc'][0]).replace('_', '-')}: {err['msg']}") from None
        src, tgt = read_pairs(args.src, args.tgt)
        mono = [x for f in args.mono for x in read_text(f)]
        dev = None
        if bool(args.dev_src) != bool(args.dev_tgt):
            raise InputError("give both --dev-src and --dev-tgt, or neither")
        if args.dev_src:
            dev = read_pairs([args.dev_src], [args.dev_tgt])
        out = train_bilingual(cfg, src, tgt, args.output, mono=mono, dev=dev,
                              log=lambda s: print(s, flush=True))
        print(f"model written to {out}")
        return 0

    return handler


@register_command("train-mlp-similarity",
                  help="train the MLP similarity on bilingual embeddings (Kim et al. 5.2)")
def _train_mlp(p):
    p.add_argument("--model", required=True, help="bilingual embedding model directory")
    p.add_argument("--src", action="append", required=True, metavar="FILE",
                   help="source side of the positive (clean parallel) pairs; repeatable")
    p.add_argument("--tgt", action="append", required=True, metavar="FILE",
                   help="target side of the positive pairs, line-aligned with --src")
    p.add_argument("--negatives", choices=["shuffle", "random", "worst"], default="shuffle",
                   help="shuffle: the positive sentences paired at random; random: random lines "
                   "of --noisy-*; worst: the x%%-worst slice of --noisy-* by cosine (default "
                   "shuffle)")
    p.add_argument("--noisy-src", metavar="FILE", help="noisy corpus, source side (random/worst)")
    p.add_argument("--noisy-tgt", metavar="FILE", help="noisy corpus, target side")
    p.add_argument("--worst", type=float, default=60.0,
                   help="x of the x%%-worst negative set (the paper's best: 60; default 60)")
    p.add_argument("--count", type=int, default=0,
                   help="negative pairs (default: as many as positives)")
    p.add_argument("--hidden", default="512,512", help="hidden layer sizes (default 512,512)")
    p.add_argument("--max-iter", type=int, default=30, help="training epochs at most (default 30)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("-o", "--output", required=True, help="MLP file to write (e.g. mlp.joblib)")

    def handler(args) -> int:
        from .mlp_training import train_mlp_from_files

        try:
            hidden = tuple(int(x) for x in args.hidden.split(","))
        except ValueError:
            raise InputError(f"--hidden {args.hidden!r}: give sizes like 512,512") from None
        meta = train_mlp_from_files(args.model, args.src, args.tgt, args.negatives,
                                    args.noisy_src, args.noisy_tgt, args.worst, args.count,
                                    hidden, args.max_iter, args.seed, args.output)
        json.dump(meta, sys.stdout, indent=2)
        print(f"\nMLP similarity written to {args.output}")
        return 0

    return handler


def _bool(text: str) -> bool:
    low = text.lower()
    if low in ("true", "yes", "1"):
        return True
    if low in ("false", "no", "0"):
        return False
    raise ValueError(text)
