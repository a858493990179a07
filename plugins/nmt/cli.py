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
    """Add the train-nmt arguments (one per field of TrainOptions) and return its handler."""
    from .train import TrainOptions

    for name, f in TrainOptions.model_fields.items():
        if name == "tests":
            continue
        if name == "train_tsv":
            p.add_argument("--train-tsv", dest=name, action="append", default=[],
                           help=f.description + " Repeatable.")
            continue
        required = f.is_required()
        shown = "" if required or f.default is None else f" (default {f.default})"
        p.add_argument("--" + name.replace("_", "-"), dest=name, required=required,
                       default=None if required else f.default, help=f.description + shown)
    p.add_argument("--test-src", action="append", default=[],
                   help="test source for sacrebleu BLEU after training (repeatable)")
    p.add_argument("--test-tgt", action="append", default=[],
                   help="test reference, one per --test-src")

    def handler(args) -> int:
        from pydantic import ValidationError

        from bitextforge import InputError

        from .train import train

        if len(args.test_src) != len(args.test_tgt):
            raise InputError("train-nmt: give one --test-tgt per --test-src")
        values = {k: getattr(args, k) for k in TrainOptions.model_fields if k != "tests"}
        try:
            opts = TrainOptions(**values, tests=list(zip(args.test_src, args.test_tgt)))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = f" --{str(err['loc'][0]).replace('_', '-')}" if err["loc"] else ""
            raise InputError(f"train-nmt{where}: {err['msg'].removeprefix('Value error, ')}") \
                from None
        info = train(opts, log=lambda m: print(m, flush=True))
        print(json.dumps({"output": opts.output, "steps": info["steps"],
                          "train_minutes": info["train_minutes"], "tests": info["tests"],
                          "warnings": info["warnings"]}))
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
    p.add_argument("--vocab-map", help="ctranslate2: lexical shortlist, `model` (the model "
                   "directory's vmap.txt) or a vocabulary map file (default: full vocabulary)")
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
            from bitextforge.corpus import write_atomic

            write_atomic(args.output, "".join(h + "\n" for h in hyp))
        return 0
    return handler


@register_command("build-vocab-map", help="build the lexical shortlist (vmap.txt) the "
                  "ctranslate2 backend's vocab_map option reads")
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
        from .train import read_parallel
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
