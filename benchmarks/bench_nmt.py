"""Benchmark of the two NMT backends (transformers generate vs CTranslate2) on one model.

The back-translation of Wieting et al. 2017 / ParaNMT-50M and the BET round trips translate whole
corpora; this measures sentences per second of both backends of bitextforge.plugins.nmt on the
same real sentences, the same beam and the same thread count, side by side in one run, plus the
greedy-output agreement rate and the BLEU of each backend's output (sacrebleu).

The CTranslate2 backend translates in a child process of its own on CPU (``--ct2-modes child``,
its default); ``--ct2-modes in-process`` times it inside this process as well, after torch has run
here. With ``--isolate`` each backend (and each CTranslate2 weight type) is also timed from a fresh
process of its own. Either way the translation loop is timed, model loading excluded.

Command used for docs/benchmarks.md (from the repository root; D=$BITEXTFORGE_SHARED_DATA):
    .venv/bin/python benchmarks/bench_nmt.py --model models/de-en-45b \
        --src $D/multi30k/test_2016_flickr.de.gz \
        --ref $D/multi30k/test_2016_flickr.en.gz --n 1000 --beams 1 4 \
        --threads 2 --repeats 3 --compute-types int8 float32 --ct2-modes child in-process

``--vocab-maps none model`` times CTranslate2 with the full output vocabulary and with the model's
lexical shortlist (vmap.txt; bitextforge.plugins.nmt.vocab_map).

``--batch-sizes 32 64 128`` times every backend at each batch size and reports each CTranslate2
setting against transformers at the same batch size and at transformers' fastest one.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
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
    ap.add_argument("--batch-sizes", type=int, nargs="+", default=[32],
                    help="sentences per model call; every backend is timed at each")
    ap.add_argument("--backends", nargs="+", default=["transformers", "ctranslate2"])
    ap.add_argument("--compute-types", nargs="+", default=["int8"],
                    help="CTranslate2 quantizations to time (each against transformers fp32)")
    ap.add_argument("--ct2-modes", nargs="+", default=["child"], choices=["child", "in-process"],
                    help="CTranslate2 translator in its own child process (the backend's CPU "
                         "default) and/or in this process")
    ap.add_argument("--parallel-batches", type=int, nargs="+", default=[0],
                    help="CTranslate2 batches decoded at once (0: the backend's default)")
    ap.add_argument("--vocab-maps", nargs="+", default=["none"],
                    help="CTranslate2 output vocabulary: none (full) and/or model (the model "
                         "directory's vmap.txt shortlist) or a map file; each is timed")
    ap.add_argument("--isolate", action="store_true",
                    help="time each backend in a fresh process of its own")
    ap.add_argument("--worker-outputs", help=argparse.SUPPRESS)
    args = ap.parse_args()

    import sacrebleu

    from bitextforge.plugins.nmt.backends import Decoding, make_backend
    from bitextforge.api import read_parallel

    src, ref = read_parallel(args.src, args.ref)
    src, ref = src[: args.n], ref[: args.n]
    # one backend alive at a time: two CTranslate2 translators (or torch and CTranslate2) in one
    # process compete for the cores with their thread pools and halve each other's speed
    specs = []
    for bs in args.batch_sizes:
        specs += backend_specs(args, bs)
    outputs: dict = {}
    rows = []
    if args.isolate:
        rows, outputs = isolated(args, specs)
        specs = []
    for name, kind, extra in specs:
        be = make_backend(kind, args.model, threads=args.threads, **extra)
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
    if args.worker_outputs:
        with open(args.worker_outputs, "w", encoding="utf-8") as f:
            json.dump([[beam, name, hyp] for (beam, name), hyp in outputs.items()], f)
        return
    print(json.dumps({"summary": summarize(args, rows, outputs), "model": args.model,
                      "src": args.src}), flush=True)


def backend_specs(args, bs: int) -> list[tuple[str, str, dict]]:
    """(name, backend kind, make_backend options) for every backend setting at batch size bs."""
    specs = []
    for b in args.backends:
        if b == "ctranslate2":
            for mode in args.ct2_modes:
                specs += [(f"ctranslate2:{ct}" + (":in-process" if mode == "in-process" else "")
                           + (f":p{pb}" if pb else "") + ("" if vm == "none" else f":vmap-{vm}"),
                           b, {"compute_type": ct, "separate_process": mode == "child",
                               "parallel_batches": pb,
                               "vocab_map": None if vm == "none" else vm})
                          for ct in args.compute_types for pb in args.parallel_batches
                          for vm in args.vocab_maps]
        else:
            specs.append((b, b, {}))
    suffix = f"@b{bs}" if len(args.batch_sizes) > 1 else ""
    return [(name + suffix, kind, {**extra, "batch_size": bs}) for name, kind, extra in specs]


def summarize(args, rows: list[dict], outputs: dict) -> dict:
    """Speed-up and identical-output rate of each CTranslate2 setting against transformers.

    Each is compared with transformers at the same batch size and, when several batch sizes were
    timed, with transformers at its fastest batch size (each backend at its best setting).
    """
    summary = {}
    for beam in args.beams:
        speed = {r["backend"]: r["sent_per_s"] for r in rows if r["beam"] == beam}
        tf = {n: v for n, v in speed.items() if n.startswith("transformers")}
        if not tf:
            continue
        best_tf = max(tf, key=tf.get)
        for name in speed:
            if name in tf:
                continue
            ref_name = "transformers" + name[name.index("@"):] if "@" in name else "transformers"
            a, b = outputs[(beam, ref_name)], outputs[(beam, name)]
            entry = {"speedup": round(speed[name] / speed[ref_name], 2),
                     "identical_outputs": round(sum(x == y for x, y in zip(a, b)) / len(a), 4)}
            if len(tf) > 1:
                entry[f"speedup_vs_{best_tf}"] = round(speed[name] / speed[best_tf], 2)
            summary[f"beam{beam} {name}"] = entry
    return summary


def isolated(args, specs) -> tuple[list[dict], dict]:
    """Run this script once per backend spec, each in a new process; gather rows and outputs."""
    rows: list[dict] = []
    outputs: dict = {}
    base = [sys.executable, os.path.abspath(__file__), "--model", args.model, "--src", args.src,
            "--ref", args.ref, "--n", str(args.n), "--threads", str(args.threads),
            "--repeats", str(args.repeats), "--beams", *map(str, args.beams)]
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, kind, extra) in enumerate(specs):
            out = os.path.join(tmp, f"{i}.json")
            cmd = base + ["--backends", kind, "--worker-outputs", out,
                          "--batch-sizes", str(extra["batch_size"])]
            if "compute_type" in extra:
                cmd += ["--compute-types", extra["compute_type"], "--ct2-modes",
                        "child" if extra["separate_process"] else "in-process",
                        "--parallel-batches", str(extra["parallel_batches"]),
                        "--vocab-maps", extra["vocab_map"] or "none"]
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=True)
            for line in proc.stdout.splitlines():
                if line.startswith("{"):
                    # the worker times this one spec; it names it without the batch suffix
                    row = {**json.loads(line), "backend": name}
                    print(json.dumps(row), flush=True)
                    rows.append(row)
            with open(out, encoding="utf-8") as f:
                for beam, _, hyp in json.load(f):
                    outputs[(beam, name)] = hyp
    return rows, outputs


if __name__ == "__main__":
    main()
