"""The ``bitextforge train-nmt`` command: train a small Marian model offline for back-translation.

Back-translation (Wieting et al. 2017; ParaNMT-50M, Wieting & Gimpel 2018) and BET round trips
(Corbeil & Abdi Ghavidel) need translation models; this command builds them from a parallel corpus
on a CPU-only machine (see :mod:`bitextforge.plugins.nmt.train`). Heavy libraries are imported by
the handler only, so ``bitextforge --help`` stays fast.
"""

from __future__ import annotations

import json

from bitextforge.cli import register_command


@register_command("train-nmt", help="train a small Marian translation model (offline, CPU)")
def train_nmt_command(p):
    """Add the train-nmt arguments and return its handler."""
    p.add_argument("--src-train", required=True, help="source side of the training corpus (.gz ok)")
    p.add_argument("--tgt-train", required=True, help="target side, line-aligned")
    p.add_argument("--src-lang", required=True, help="source language code, e.g. de")
    p.add_argument("--tgt-lang", required=True, help="target language code, e.g. en")
    p.add_argument("--output", required=True, help="model directory to write (created)")
    p.add_argument("--valid-src", help="validation source (best checkpoint by validation loss)")
    p.add_argument("--valid-tgt", help="validation target")
    p.add_argument("--test-src", action="append", default=[],
                   help="test source for sacrebleu BLEU after training (repeatable)")
    p.add_argument("--test-tgt", action="append", default=[],
                   help="test reference, one per --test-src")
    p.add_argument("--minutes", type=float, default=45.0, help="training time budget (default 45)")
    p.add_argument("--max-steps", type=int, default=0, help="stop after this many updates (0: no limit)")
    p.add_argument("--vocab-size", type=int, default=8000, help="joint sentencepiece vocabulary")
    p.add_argument("--spm", help="reuse this joint sentencepiece .model (e.g. joint.model of the "
                   "reverse direction) instead of training one")
    p.add_argument("--d-model", type=int, default=256, help="model width")
    p.add_argument("--layers", type=int, default=3, help="encoder and decoder layers each")
    p.add_argument("--heads", type=int, default=4, help="attention heads")
    p.add_argument("--ffn-dim", type=int, default=1024, help="feed-forward width")
    p.add_argument("--dropout", type=float, default=0.1, help="dropout")
    p.add_argument("--batch-tokens", type=int, default=3000, help="tokens per batch (padded)")
    p.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    p.add_argument("--schedule", choices=["budget", "inverse-sqrt"], default="budget",
                   help="budget: linear warm-up over --warmup-fraction of the time (or step) "
                        "budget, then linear decay to zero at its end; inverse-sqrt: --warmup "
                        "updates, then inverse square root decay")
    p.add_argument("--warmup-fraction", type=float, default=0.08,
                   help="budget schedule: fraction of the budget spent warming up")
    p.add_argument("--warmup", type=int, default=1000,
                   help="inverse-sqrt schedule: warm-up updates")
    p.add_argument("--valid-every", type=float, default=5.0, help="minutes between validations")
    p.add_argument("--beam", type=int, default=4, help="beam for the test BLEU (greedy is also run)")
    p.add_argument("--threads", type=int, default=2, help="torch threads")
    p.add_argument("--seed", type=int, default=1, help="random seed")

    def handler(args) -> int:
        from bitextforge import InputError

        from .train import TrainOptions, train

        if len(args.test_src) != len(args.test_tgt):
            raise InputError("train-nmt: give one --test-tgt per --test-src")
        if bool(args.valid_src) != bool(args.valid_tgt):
            raise InputError("train-nmt: give both --valid-src and --valid-tgt, or neither")
        opts = TrainOptions(
            src_train=args.src_train, tgt_train=args.tgt_train, src_lang=args.src_lang,
            tgt_lang=args.tgt_lang, output=args.output, valid_src=args.valid_src,
            valid_tgt=args.valid_tgt, tests=list(zip(args.test_src, args.test_tgt)),
            minutes=args.minutes, max_steps=args.max_steps, vocab_size=args.vocab_size,
            spm_model=args.spm,
            d_model=args.d_model, layers=args.layers, heads=args.heads, ffn_dim=args.ffn_dim,
            dropout=args.dropout, batch_tokens=args.batch_tokens, lr=args.lr,
            warmup=args.warmup, schedule=args.schedule, warmup_fraction=args.warmup_fraction,
            valid_every_minutes=args.valid_every, beam=args.beam,
            threads=args.threads, seed=args.seed,
            log=lambda m: print(m, flush=True))
        info = train(opts)
        print(json.dumps({"output": args.output, "steps": info["steps"],
                          "train_minutes": info["train_minutes"], "tests": info["tests"]}))
        return 0

    return handler


@register_command("evaluate-nmt", help="BLEU/chrF of a translation model on a test set "
                  "(either backend)")
def evaluate_nmt_command(p):
    """Add the evaluate-nmt arguments and return its handler."""
    p.add_argument("--model", required=True, help="model directory (e.g. from train-nmt)")
    p.add_argument("--src", required=True, help="test source (.gz ok)")
    p.add_argument("--ref", required=True, help="test reference, line-aligned")
    p.add_argument("--beam", type=int, nargs="+", default=[1, 4], help="beam sizes (default 1 4)")
    p.add_argument("--backend", choices=["transformers", "ctranslate2"], default="transformers",
                   help="transformers (the reference) or ctranslate2 (faster; see docs/nmt.md)")
    p.add_argument("--compute-type", help="ctranslate2 quantization (default int8 on CPU)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--limit", type=int, help="only the first N sentences")
    p.add_argument("--output", help="write the hypotheses of the largest beam here")

    def handler(args) -> int:
        import time

        import sacrebleu

        from .backends import Decoding, make_backend
        from .train import read_parallel

        src, ref = read_parallel(args.src, args.ref)
        if args.limit:
            src, ref = src[: args.limit], ref[: args.limit]
        be = make_backend(args.backend, args.model, threads=args.threads,
                          compute_type=args.compute_type)
        hyp: list[str] = []
        for beam in args.beam:
            t0 = time.perf_counter()
            res = be.translate(src, Decoding(beam=beam, k=1))
            secs = time.perf_counter() - t0
            hyp = [r[0][0] if r else "" for r in res]
            bleu = sacrebleu.metrics.BLEU()
            row = {"test": args.src, "backend": args.backend, "beam": beam, "sentences": len(src),
                   "bleu": round(bleu.corpus_score(hyp, [ref]).score, 2),
                   "chrf": round(sacrebleu.corpus_chrf(hyp, [ref]).score, 2),
                   "signature": str(bleu.get_signature()), "seconds": round(secs, 1)}
            print(json.dumps(row), flush=True)
        if args.output:
            from bitextforge.corpus import write_atomic

            write_atomic(args.output, "".join(h + "\n" for h in hyp))
        return 0
    return handler
