"""The NMT plugin's commands that are not trainers: ``evaluate-nmt`` (BLEU/chrF of a model on a
test set, either backend) and ``build-vocab-map`` (the lexical shortlist of the ctranslate2
backend). Training is the ``nmt_model.v1`` trainer (``bitextforge train-nmt``). Heavy libraries
are imported by the handlers only, so ``bitextforge --help`` stays fast.
"""

from __future__ import annotations

import json


def evaluate_nmt_command(p):
    """Add the evaluate-nmt arguments and return its handler."""
    p.add_argument("--model", required=True, help="model directory (e.g. from train-nmt)")
    p.add_argument("--src", required=True, help="test source (.gz ok)")
    p.add_argument("--ref", required=True, help="test reference, line-aligned")
    p.add_argument("--beam", type=int, nargs="+", default=[1, 4], help="beam sizes (default 1 4)")
    p.add_argument("--backend", choices=["transformers", "ctranslate2"], default="transformers",
                   help="transformers (the reference) or ctranslate2 (faster; see docs/nmt.md)")
    p.add_argument("--compute-type", help="ctranslate2 quantization (default int8 on CPU)")
    p.add_argument("--vocab-map", help="ctranslate2: lexical shortlist, `model` (the model "
                   "directory's vmap.txt) or a vocabulary map file (default: full vocabulary)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--limit", type=int, help="only the first N sentences")
    p.add_argument("--output", help="write the hypotheses of the largest beam here")

    def handler(args) -> int:
        import time

        import sacrebleu

        from .backends import Decoding, make_backend
        from bitextforge.api import read_parallel

        src, ref = read_parallel(args.src, args.ref)
        if args.limit:
            src, ref = src[: args.limit], ref[: args.limit]
        be = make_backend(args.backend, args.model, threads=args.threads,
                          compute_type=args.compute_type, vocab_map=args.vocab_map,
                          option="evaluate-nmt --model")
        hyp: list[str] = []
        for beam in args.beam:
            t0 = time.perf_counter()
            res = be.translate(src, Decoding(beam=beam, k=1))
            secs = time.perf_counter() - t0
            hyp = [r[0][0] if r else "" for r in res]
            bleu = sacrebleu.metrics.BLEU()
            row = {"test": args.src, "backend": args.backend, "vocab_map": args.vocab_map,
                   "beam": beam, "sentences": len(src),
                   "bleu": round(bleu.corpus_score(hyp, [ref]).score, 2),
                   "chrf": round(sacrebleu.corpus_chrf(hyp, [ref]).score, 2),
                   "signature": str(bleu.get_signature()), "seconds": round(secs, 1)}
            print(json.dumps(row), flush=True)
        if args.output:
            from bitextforge.api import write_atomic

            write_atomic(args.output, "".join(h + "\n" for h in hyp))
        return 0
    return handler


def build_vocab_map_command(p):
    """Add the build-vocab-map arguments and return its handler."""
    from .vocab_map import COMMON, PER_SOURCE

    p.add_argument("--model", required=True, help="model directory whose tokenizer to use")
    p.add_argument("--src-train", required=True, help="source side of a parallel corpus (.gz ok)")
    p.add_argument("--tgt-train", required=True, help="target side, line-aligned")
    p.add_argument("--output", help="map file to write (default: MODEL/vmap.txt, what "
                   "`vocab_map: model` reads)")
    p.add_argument("--per-source", type=int, default=PER_SOURCE,
                   help=f"target tokens listed per source token (default {PER_SOURCE})")
    p.add_argument("--common", type=int, default=COMMON,
                   help=f"most frequent target tokens always allowed (default {COMMON})")

    def handler(args) -> int:
        from bitextforge import InputError

        from .backends import resolve_model
        from bitextforge.api import read_parallel
        from .vocab_map import build_for_model

        for flag, value in (("--per-source", args.per_source), ("--common", args.common)):
            if value < 0:
                raise InputError(f"build-vocab-map {flag}: {value} is negative; give a count")
        model_dir = resolve_model(args.model, "build-vocab-map --model")
        src, tgt = read_parallel(args.src_train, args.tgt_train)
        out = build_for_model(model_dir, src, tgt, args.output, per_source=args.per_source,
                              common=args.common)
        print(json.dumps({"output": str(out), "pairs": len(src)}))
        return 0
    return handler
