"""Benchmark of the two NMT backends (transformers generate vs CTranslate2 int8) on one model.

The back-translation of Wieting et al. 2017 / ParaNMT-50M and the BET round trips translate whole
corpora; this measures sentences per second of both backends of bitextforge.plugins.nmt on the
same real sentences, the same beam and the same thread count, side by side in one process, plus the
greedy-output agreement rate and the BLEU of each backend's output (sacrebleu).

Command used for docs/benchmarks.md (from the repository root):
    nice -n 10 .venv/bin/python tests/bench/bench_nmt.py --model models/de-en \
        --src ../shared/data/multi30k/test_2016_flickr.de.gz \
        --ref ../shared/data/multi30k/test_2016_flickr.en.gz --n 1000 --beams 1 4 \
        --threads 2 --repeats 3 --compute-types int8 int8_float32 int16 float32
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time


def main() -> None:
    """Time both backends and print one JSON line per (beam, backend) plus a summary."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--ref", required=True)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--beams", type=int, nargs="+", default=[1, 4])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--backends", nargs="+", default=["transformers", "ctranslate2"])
    ap.add_argument("--compute-types", nargs="+", default=["int8"],
                    help="CTranslate2 quantizations to time (each against transformers fp32)")
    args = ap.parse_args()

    import sacrebleu

    from bitextforge.plugins.nmt.backends import Decoding, make_backend
    from bitextforge.plugins.nmt.train import read_parallel

    src, ref = read_parallel(args.src, args.ref)
    src, ref = src[: args.n], ref[: args.n]
    # one backend alive at a time: two CTranslate2 translators (or torch and CTranslate2) in one
    # process compete for the cores with their thread pools and halve each other's speed
    specs = []
    for b in args.backends:
        if b == "ctranslate2":
            specs += [(f"ctranslate2:{ct}", b, {"compute_type": ct}) for ct in args.compute_types]
        else:
            specs.append((b, b, {}))
    backends = {name: None for name, _, _ in specs}
    outputs: dict = {}
    rows = []
    for name, kind, extra in specs:
        be = make_backend(kind, args.model, threads=args.threads, batch_size=args.batch_size,
                          **extra)
        for beam in args.beams:
            dec = Decoding(beam=beam, k=1, max_length=256)
            be.translate(src[:16], dec)  # warm-up: first-call allocations, thread pools
            times, hyp = [], None
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                res = be.translate(src, dec)
                times.append(time.perf_counter() - t0)
                hyp = [r[0][0] if r else "" for r in res]
            outputs[(beam, name)] = hyp
            med = statistics.median(times)
            row = {"beam": beam, "backend": name, "sentences": len(src), "threads": args.threads,
                   "seconds": [round(t, 2) for t in times], "median_seconds": round(med, 2),
                   "sent_per_s": round(len(src) / med, 1),
                   "bleu": round(sacrebleu.corpus_bleu(hyp, [ref]).score, 2)}
            rows.append(row)
            print(json.dumps(row), flush=True)
        be.close()
        del be
        gc.collect()
    summary = {}
    for beam in args.beams:
        speed = {r["backend"]: r["sent_per_s"] for r in rows if r["beam"] == beam}
        for name in backends:
            if name == "transformers" or (beam, "transformers") not in outputs:
                continue
            a, b = outputs[(beam, "transformers")], outputs[(beam, name)]
            summary[f"beam{beam} {name}"] = {
                "speedup": round(speed[name] / speed["transformers"], 2),
                "identical_outputs": round(sum(x == y for x, y in zip(a, b)) / len(a), 4)}
    print(json.dumps({"summary": summary, "model": args.model, "src": args.src}), flush=True)


if __name__ == "__main__":
    main()
