"""The device check of issue #36, for whoever is lent a GPU: what the GPU buys over the CPU, and
that models cross between them.

On the GPU (``--device``, default ``cuda``) it

1. trains ``train-nmt`` on the de-en pool for ``--gpu-steps`` updates and reports updates/s and
   the newstest2016 BLEU (greedy, CTranslate2 on the same GPU);
2. trains the same model on the CPU for ``--cpu-steps`` updates (a short run: updates/s, and the
   BLEU it reached);
3. decodes the GPU-trained model on the CPU (CTranslate2 int8 and float32, and transformers):
   a model trained on the GPU must load and translate there, with about the BLEU it had on the
   GPU;
4. back-translates ``--sentences`` sentences with ``translate.v1`` (CTranslate2 float16 on the
   GPU) and reports tokens/s;
5. scores ``--sentences`` pairs with ``nmt_logprob.v1`` on the GPU and on the CPU (pairs/s, and
   how far the two devices' scores differ);
6. trains a small bilingual embedding model on the GPU, loads it on the CPU and compares the
   embeddings (its weights must have been saved as CPU tensors);
7. (after section 1) trains 600 updates on ``--probe-pairs`` pairs and reports updates/s in the
   first epoch and in the later ones (the first ran several times slower on an H200).

Every figure goes into the JSON file ``--out``, rewritten after each section so that a run cut
off by its time limit still returns what it measured; a section that fails records its one-line
error there and the script exits 1. Where CTranslate2 sees no GPU (its PyPI wheels need a CUDA 12
runtime), the GPU decoding of sections 1 and 4 runs on transformers instead, and the JSON says so.
On an H200 (2026-11-27) its first section alone, 800 updates, took 270 s (docs/benchmarks.md).
``--smoke`` runs the same code with tiny settings on whatever ``--device`` says (``auto``: the CPU
here), which is what the test suite does. How to run it on a lent machine: docs/benchmarks.md
("GPU check").
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

from _common import shared_data

POOL = ("europarl-v7-deen-first20k", "news-commentary-v11-deen-20k",
        "wmt-mixed-sample-opennmt-10k", "wmt-newstest-2008-2013-deen")
TEST = ("wmt-newstest-deen/newstest2016.de", "wmt-newstest-deen/newstest2016.en")


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, help="the shared data folder (holds deen-train-pool/ "
                   "and wmt-newstest-deen/; default: $BITEXTFORGE_SHARED_DATA)")
    p.add_argument("--out", type=Path, default=Path("gpu_check.json"), help="JSON of figures")
    p.add_argument("--work", type=Path, default=None, help="models go here (default: a "
                   "temporary folder, removed at the end)")
    p.add_argument("--device", default="cuda", help="the accelerated device (auto, cuda, "
                   "cuda:N; cpu for a dry run)")
    p.add_argument("--gpu-steps", type=int, default=800)
    p.add_argument("--cpu-steps", type=int, default=100)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="CPU threads of the CPU runs")
    p.add_argument("--sentences", type=int, default=10_000,
                   help="sentences back-translated and pairs scored")
    p.add_argument("--test-limit", type=int, default=1000, help="newstest2016 lines decoded")
    p.add_argument("--probe-pairs", type=int, default=8000, help="pairs of the first-epoch "
                   "probe (0: skip it)")
    p.add_argument("--smoke", action="store_true", help="tiny settings: a check of the script "
                   "itself, on any machine, in about a minute")
    args = p.parse_args(argv)
    args.data = args.data or shared_data()
    if args.smoke:
        args.gpu_steps, args.cpu_steps = min(args.gpu_steps, 12), min(args.cpu_steps, 4)
        args.sentences, args.test_limit = min(args.sentences, 120), min(args.test_limit, 40)
        args.probe_pairs = min(args.probe_pairs, 300)
        # one thread: torch's second thread spin-waits for a core on a busy machine, which made
        # the tiny updates and decoding of the smoke run about ten times slower
        args.threads = 1
    return args


def model_options(args, device: str, steps: int, output: Path, spm: str | None = None) -> dict:
    """train-nmt options of the check: the documented defaults, or a tiny model with --smoke."""
    pool = [str(args.data / "deen-train-pool" / name / "train.de-en.tsv.gz") for name in POOL]
    opts = dict(train_tsv=pool, tsv_langs="de-en", src_lang="de", tgt_lang="en",
                output=str(output), max_steps=steps, minutes=1e9, valid_every=1e9,
                device=device, threads=args.threads, seed=1, spm=spm,
                test_backend="ctranslate2")
    if args.smoke:
        opts.update(train_limit=3000, vocab_size=400, d_model=32, layers=1, heads=2, ffn_dim=64,
                    batch_tokens=600, max_len=32, min_warmup_steps=2,
                    # bf16 autocast of tiny matrices is slower than fp32 on a busy CPU
                    precision="fp32")
    return opts


def read_test(args) -> tuple[list[str], list[str]]:
    """The first --test-limit lines of newstest2016 de-en."""
    from bitextforge.api import read_parallel

    src, ref = read_parallel(str(args.data / TEST[0]), str(args.data / TEST[1]))
    return src[:args.test_limit], ref[:args.test_limit]


def bleu_of(model_dir: Path, src: list[str], ref: list[str], backend: str, device: str,
            threads: int, compute_type: str | None = None) -> dict:
    """Greedy BLEU of a model on ``src``, with the decoding time."""
    import sacrebleu

    from bitextforge.plugins.nmt.backends import Decoding, make_backend

    t0 = time.perf_counter()
    be = make_backend(backend, str(model_dir), device=device, threads=threads,
                      compute_type=compute_type, option="gpu_check")
    try:
        hyp = [r[0][0] if r else "" for r in be.translate(src, Decoding(beam=1, k=1))]
        info = be.info()
    finally:
        be.close()
    return {"bleu": round(sacrebleu.corpus_bleu(hyp, [ref]).score, 2), "backend": backend,
            "device": info["device"], "compute_type": info.get("compute_type"),
            "seconds": round(time.perf_counter() - t0, 2)}


def train_section(args, device: str, steps: int, out: Path, spm: str | None = None) -> dict:
    """Train for ``steps`` updates on ``device``; updates/s of the training loop alone."""
    from bitextforge.plugins.nmt.train import TrainOptions, train

    info = train(TrainOptions(**model_options(args, device, steps, out, spm)),
                 log=lambda m: print(f"  train-nmt ({device}): {m}", flush=True),
                 where="gpu_check")
    seconds = info["train_seconds"]
    return {"device": info["device"], "precision": info["precision"], "steps": info["steps"],
            "pairs": info["pairs"], "parameters": info["parameters"],
            "train_seconds": round(seconds, 2),
            "updates_per_second": round(info["steps"] / max(seconds, 1e-9), 2),
            "final_train_loss": info["history"][-1]["train_loss"] if info["history"] else None}


def epochs_section(args, device: str, out: Path, spm: str | None = None) -> dict:
    """Updates/s in the first epoch and in the later ones, on the first ``--probe-pairs`` pairs
    (about 200 batches an epoch) for 600 updates. On the H200 of 2026-11-27 the first epoch of
    every training ran several times slower than the later ones; a cost per new batch shape (every
    batch of a first epoch has one) would do that, and this section measures it."""
    import re

    from bitextforge.plugins.nmt.train import TrainOptions, train

    marks: list[tuple[int, int, float]] = []  # (step, epoch, seconds) of each progress line

    def log(message: str) -> None:
        m = re.search(r"step (\d+)(?:/\d+)? epoch (\d+) ", message)
        if "forward pass on" in message:  # logged just before the first update
            marks.append((0, 1, time.perf_counter()))
        elif m:
            marks.append((int(m.group(1)), int(m.group(2)), time.perf_counter()))

    opts = {**model_options(args, device, 600 if not args.smoke else 12, out, spm),
            "train_limit": args.probe_pairs}
    train(TrainOptions(**opts), log=log, where="gpu_check")

    def rate(first: bool) -> float | None:
        # a stretch between two progress lines belongs to the first epoch if it ends in it
        spans = [(s1 - s0, t1 - t0) for (s0, _, t0), (s1, e1, t1) in zip(marks, marks[1:])
                 if (e1 == 1) == first]
        seconds = sum(t for _, t in spans)
        return round(sum(n for n, _ in spans) / seconds, 2) if seconds > 0 else None

    return {"pairs": args.probe_pairs,
            "marks": [(s, e, round(t - marks[0][2], 2)) for s, e, t in marks],
            "first_epoch_updates_per_second": rate(True),
            "later_epochs_updates_per_second": rate(False)}


def gpu_backend(device: str) -> str:
    """The decoder of the sections that decode on ``device``: CTranslate2 where it can use that
    device, else transformers (CTranslate2's CUDA 12 wheels find no GPU under a CUDA 13 runtime)."""
    from bitextforge.api import visible_gpus

    return "ctranslate2" if device == "cpu" or visible_gpus("ctranslate2") else "transformers"


def back_translate_section(args, model_dir: Path, device: str, texts: list[str]) -> dict:
    """translate.v1 (CTranslate2 float16 on a GPU, or transformers where CTranslate2 sees none)
    over ``texts``: sentences and output subword tokens per second."""
    from bitextforge.plugins.nmt.generators import TranslateGenerator

    backend = gpu_backend(device)
    gen = TranslateGenerator(TranslateGenerator.Config(
        model=str(model_dir), device=device, beam=4, batch_size=64 if backend == "ctranslate2"
        else 256, threads=args.threads, backend=backend))
    try:
        t0 = time.perf_counter()
        out = gen.generate(texts)
        secs = time.perf_counter() - t0
        info = gen.manifest_info()
        tok = gen.backend.tok
        tokens = sum(len(tok(c[0][0])["input_ids"]) for c in out if c)
    finally:
        gen.close()
    return {"backend": backend, "device": info["device"],
            "compute_type": info.get("compute_type"), "sentences": len(texts),
            "seconds": round(secs, 2),
            "sentences_per_second": round(len(texts) / secs, 1),
            "output_tokens_per_second": round(tokens / secs, 1)}


def score_section(args, model_dir: Path, device: str, src: list[str], tgt: list[str]):
    """nmt_logprob.v1 over the pairs on ``device``: pairs/s and the scores."""
    from bitextforge.plugins.nmt.filters import NmtLogprobFilter

    flt = NmtLogprobFilter(NmtLogprobFilter.Config(model=str(model_dir), device=device,
                                                   threads=args.threads, batch_size=64))
    try:
        t0 = time.perf_counter()
        scores = flt.score({"src": src, "tgt": tgt})
        secs = time.perf_counter() - t0
        info = flt.manifest_info()
    finally:
        flt.close()
    return {"device": info["model"]["device"], "pairs": len(src), "seconds": round(secs, 2),
            "pairs_per_second": round(len(src) / secs, 1)}, scores


def bilingual_section(args, device: str, work: Path, src: list[str], tgt: list[str]) -> dict:
    """A small bilingual embedding model trained on ``device``, loaded on the CPU: the largest
    difference between its embeddings there and on the training device."""
    import numpy as np

    from bitextforge.plugins.bilingual.model import BilingualModel
    from bitextforge.plugins.bilingual.train import TrainConfig, train_bilingual

    cfg = TrainConfig(vocab_size=400 if args.smoke else 4000, embed_dim=32 if args.smoke else 128,
                      hidden_dim=32 if args.smoke else 128, max_steps=10 if args.smoke else 200,
                      max_minutes=0, batch_size=32, device=device, threads=args.threads,
                      precision="fp32" if args.smoke else "auto")
    out = train_bilingual(cfg, src, tgt, work / "bilingual", log=lambda m: None,
                          where="gpu_check")
    there = BilingualModel.load(out, json.loads((out / "config.json").read_text())["info"]
                                ["device"])
    here = BilingualModel.load(out, "cpu")
    a, b = there.embed(src[:200], "src"), here.embed(src[:200], "src")
    return {"trained_on": there.device, "loaded_on": "cpu",
            "max_abs_embedding_difference": float(np.abs(a - b).max())}


def main(argv=None) -> int:
    """Run every section, write the JSON, exit 1 if a section failed."""
    args = parse_args(argv)
    import torch

    from bitextforge.api import resolve_device, visible_gpus

    figures: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "smoke": args.smoke,
                     "python": platform.python_version(), "torch": torch.__version__,
                     "torch_gpus": visible_gpus("torch"),
                     "ctranslate2_gpus": visible_gpus("ctranslate2"),
                     "gpu_name": torch.cuda.get_device_name(0) if torch.cuda.is_available()
                     else None, "settings": {k: str(v) for k, v in vars(args).items()},
                     "errors": {}}
    try:
        import ctranslate2

        figures["ctranslate2"] = ctranslate2.__version__
    except ImportError:
        figures["ctranslate2"] = None
    device = resolve_device(args.device, "gpu_check --device")
    figures["device"] = device
    tmp = tempfile.TemporaryDirectory(prefix="gpu-check-") if args.work is None else None
    work = Path(tmp.name) if tmp else args.work
    work.mkdir(parents=True, exist_ok=True)

    from bitextforge.api import write_atomic

    def save():
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(args.out, json.dumps(figures, indent=2) + "\n")

    def section(name, fn, *a):
        print(f"gpu_check: {name} ...", flush=True)
        t0 = time.perf_counter()
        try:
            result = fn(*a)
        except Exception as exc:  # noqa: BLE001 - one failing section must not lose the rest
            figures["errors"][name] = f"{type(exc).__name__}: {exc}"
            traceback.print_exc()
            save()
            return None
        figures.setdefault("section_seconds", {})[name] = round(time.perf_counter() - t0, 1)
        save()
        print(f"gpu_check: {name} done in {time.perf_counter() - t0:.1f} s: "
              f"{json.dumps(result if not isinstance(result, tuple) else result[0])}",
              flush=True)
        return result

    src, ref = read_test(args)
    accel = work / "nmt-accel"
    figures["train_accelerated"] = section("train on " + device, train_section, args, device,
                                           args.gpu_steps, accel)
    if figures["train_accelerated"]:
        figures["bleu_accelerated"] = section(
            "BLEU on " + device, bleu_of, accel, src, ref, gpu_backend(device), device,
            args.threads)
        # the model trained on the accelerator, decoded on the CPU by both backends
        figures["bleu_on_cpu_of_accelerated_model"] = [
            section(f"BLEU on cpu ({be} {ct})", bleu_of, accel, src, ref, be, "cpu",
                    args.threads, ct)
            for be, ct in (("ctranslate2", "int8"), ("ctranslate2", "float32"),
                           ("transformers", None))]
    spm = str(accel / "joint.model") if (accel / "joint.model").is_file() else None
    if args.probe_pairs:
        figures["first_epoch_probe"] = section("first epoch against later ones on " + device,
                                               epochs_section, args, device,
                                               work / "nmt-probe", spm)
    figures["train_cpu"] = section("train on cpu", train_section, args, "cpu", args.cpu_steps,
                                   work / "nmt-cpu", spm)
    if figures["train_cpu"]:
        figures["bleu_cpu_model"] = section("BLEU of the CPU model", bleu_of, work / "nmt-cpu",
                                            src, ref, "ctranslate2", "cpu", args.threads)
    if figures.get("train_accelerated") and figures.get("train_cpu"):
        figures["speedup_updates_per_second"] = round(
            figures["train_accelerated"]["updates_per_second"]
            / max(figures["train_cpu"]["updates_per_second"], 1e-9), 1)

    from bitextforge.api import read_tsv_pairs

    pool_de, pool_en = read_tsv_pairs(
        [str(args.data / "deen-train-pool" / POOL[0] / "train.de-en.tsv.gz")])
    de, en = pool_de[-args.sentences:], pool_en[-args.sentences:]
    if (accel / "config.json").is_file():
        figures["back_translation"] = section("back-translation", back_translate_section, args,
                                              accel, device, de)
        on_accel = section("nmt_logprob on " + device, score_section, args, accel, device, de,
                           en)
        on_cpu = section("nmt_logprob on cpu", score_section, args, accel, "cpu", de, en)
        if on_accel and on_cpu:
            figures["nmt_logprob"] = {"accelerated": on_accel[0], "cpu": on_cpu[0],
                                      "max_abs_score_difference": max(
                                          abs(a - b) for a, b in zip(on_accel[1], on_cpu[1]))}
    figures["bilingual_cross_device"] = section(
        "bilingual model " + device + " -> cpu", bilingual_section, args, device, work,
        pool_de[:5000 if not args.smoke else 300], pool_en[:5000 if not args.smoke else 300])
    figures["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    save()
    print(f"gpu_check: wrote {args.out}" + (f"; failed: {', '.join(figures['errors'])}"
                                           if figures["errors"] else ""), flush=True)
    if tmp:
        tmp.cleanup()
    return 1 if figures["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
