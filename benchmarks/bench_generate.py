"""Back-translation benchmark of the ``generate:`` step (``translate.v1`` on CTranslate2).

Speed: ``bitextforge run`` on a recipe with one monolingual English input and one generate step
(CTranslate2 int8 on CPU, 2 threads, beam 4, the generator's default batch size of 32) against a
bare CTranslate2 ``translate_batch`` loop on the same converted model and the same sentences: the
same tokenizer, beam, length limits and batch size, each recipe batch of rows sorted by length
as the backend sorts it, and the same two decoding workers of one thread each that the backend
starts for ``threads: 2``, all of a recipe batch's batches submitted at once as the backend does.
Both run as whole processes, in turn (framework, loop, framework, loop, ...), and the figure is
source tokens (the tokenizer's pieces, ``</s>`` included) per wall second; the script also checks
that both wrote the same translations.

Memory: the same kind of run on N1 and N2 input lines (Multi30k English repeated), with settings
that keep a run short (beam 1, ``max_length`` 32); the peak of the whole process tree's summed
RSS (the run and its CTranslate2 child process, read from /proc every 0.2 s) and the largest
single process's peak from ``/usr/bin/time -v``.

Run from the repository root (the model is the one ``benchmarks/studies/bt-multi30k/recipes/first-arms.yaml`` trains):
    .venv/bin/python benchmarks/bench_generate.py --runs 3 --lines 20000
    .venv/bin/python benchmarks/bench_generate.py --memory 100000 500000 --runs 0
Data: $BITEXTFORGE_SHARED_DATA/multi30k.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
from pathlib import Path

from _common import ROOT, cycled, machine, shared_data, timed, write_columns

WORK = Path(os.environ.get("BENCH_GENERATE_WORK", "/tmp/bench-generate"))
MODEL = ROOT / "models" / "m30k-5k-en-de"
#: rows per recipe batch (the recipe default); the backend sorts each such batch by length
RECIPE_BATCH = 5000


def write_input(path: Path, lines: int, skip: int) -> None:
    """``lines`` English lines of Multi30k train from line ``skip + 1`` on, cycling through the
    file (from its first line) when it runs out."""
    from bitextforge.api import read_lines

    en = read_lines(shared_data("multi30k", "train.en.gz"))
    write_columns(((x,) for x in cycled(en, lines, skip)), (path,))


def write_recipe(path: Path, text: Path, model: Path, beam: int, max_length: int,
                 report: bool = True) -> None:
    """A recipe: ``text`` as monolingual English, back-translated by ``model``; ``report``:
    whether the run ends by writing report.html."""
    path.write_text(
        "name: bench-generate\n"
        "input:\n"
        "  - name: mono-en\n"
        f"    tgt: {text}\n"
        "steps:\n"
        "  - generate: translate.v1\n"
        "    side: src\n"
        "    with:\n"
        f"      model: {model}\n"
        f"      beam: {beam}\n"
        f"      max_length: {max_length}\n"
        "      threads: 2\n"
        f"output:\n  dir: {path.parent / 'out'}\n  report: {str(report).lower()}\n",
        encoding="utf-8")


# ------------------------------------------------------------------ the bare CTranslate2 loop

def bare_loop(args) -> None:
    """Translate ``args.input`` with CTranslate2 alone, as the backend would; write the
    translations in input order and a JSON line of source-token counts."""
    import ctranslate2
    from transformers import AutoConfig, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(args.model)
    cfg = AutoConfig.from_pretrained(args.model)
    translator = ctranslate2.Translator(args.ct2, device="cpu", compute_type="int8",
                                        inter_threads=2, intra_threads=1)
    table = cfg.max_position_embeddings
    src_max, out_cap = min(args.max_length, table), min(args.max_length, table - 1)
    forced = getattr(cfg, "forced_eos_token_id", None) is not None
    texts = Path(args.input).read_text(encoding="utf-8").splitlines()
    out: list[str] = [""] * len(texts)
    tokens = 0
    for start in range(0, len(texts), RECIPE_BATCH):
        order = sorted(range(start, min(start + RECIPE_BATCH, len(texts))),
                       key=lambda i: len(texts[i]))
        jobs = []
        for b in range(0, len(order), args.batch_size):
            idx = order[b: b + args.batch_size]
            src = [tok.convert_ids_to_tokens(ids) for ids in
                   tok([texts[i] for i in idx], truncation=True, max_length=src_max)["input_ids"]]
            tokens += sum(map(len, src))
            limit = min(out_cap, int(2.0 * max(map(len, src)) + 10))
            jobs.append((idx, translator.translate_batch(
                src, asynchronous=True, beam_size=args.beam, num_hypotheses=1,
                return_scores=True, max_decoding_length=limit - 1 if forced else limit,
                suppress_sequences=[[tok.pad_token]])))
        for idx, futures in jobs:
            for i, fut in zip(idx, futures):
                hyp = fut.result().hypotheses[0]
                out[i] = tok.decode(tok.convert_tokens_to_ids(hyp), skip_special_tokens=True)
    Path(args.output).write_text("".join(t + "\n" for t in out), encoding="utf-8")
    print(json.dumps({"sentences": len(texts), "source_tokens": tokens}))


# ------------------------------------------------------------------ measuring

def framework_cmd(recipe: Path, out: Path) -> list[str]:
    """The whole ``bitextforge run`` process."""
    return [sys.executable, "-m", "bitextforge.cli", "run", str(recipe), "-q", "-o", str(out)]


def ct2_dir(model: Path) -> Path:
    """The cached int8 conversion the backend uses (converted now if it is missing)."""
    from bitextforge.plugins.nmt.backends import convert_ct2

    return convert_ct2(model, "int8")


def speed(args, model: Path) -> None:
    """Framework against the bare loop, in turn, ``args.runs`` times each."""
    work = WORK / f"speed{args.lines}"
    text = work / "mono.en"
    write_input(text, args.lines, args.skip)
    recipe = work / "recipe.yaml"
    write_recipe(recipe, text, model, args.beam, args.max_length)
    bare = [sys.executable, __file__, "bare", "--model", str(model), "--ct2", str(ct2_dir(model)),
            "--input", str(text), "--output", str(work / "bare.de"), "--beam", str(args.beam),
            "--max-length", str(args.max_length), "--batch-size", "32"]
    fw, lp, ratios, tokens = [], [], [], None
    for r in range(args.runs):
        shutil.rmtree(work / "out", ignore_errors=True)
        a = timed(framework_cmd(recipe, work / "out"))
        b = timed(bare)
        tokens = json.loads(b.stdout.strip().splitlines()[-1])["source_tokens"]
        fw.append(a)
        lp.append(b)
        ratios.append(a.wall / b.wall)
        print(f"run {r + 1}: bitextforge {a.wall:.2f} s ({a.cpu:.1f} s CPU), bare loop "
              f"{b.wall:.2f} s ({b.cpu:.1f} s CPU), ratio {ratios[-1]:.3f}, load "
              f"{os.getloadavg()[0]:.1f}", flush=True)
    got = (work / "out" / "corpus.src").read_text(encoding="utf-8").splitlines()
    want = (work / "bare.de").read_text(encoding="utf-8").splitlines()
    same = sum(x == y for x, y in zip(got, want))
    f_med = statistics.median(x.wall for x in fw)
    b_med = statistics.median(x.wall for x in lp)
    summary = {
        "machine": machine(), "lines": args.lines, "source_tokens": tokens, "beam": args.beam, "runs": args.runs,
        "bitextforge_wall": [round(x.wall, 2) for x in fw],
        "bare_wall": [round(x.wall, 2) for x in lp],
        "ratios": [round(x, 3) for x in ratios],
        "median_ratio": round(statistics.median(ratios), 3),
        "bitextforge_cpu": [round(x.cpu, 1) for x in fw],
        "bare_cpu": [round(x.cpu, 1) for x in lp],
        "cpu_ratios": [round(x.cpu / y.cpu, 3) for x, y in zip(fw, lp)],
        "bitextforge_tokens_per_s": round(tokens / f_med),
        "bare_tokens_per_s": round(tokens / b_med),
        "bitextforge_max_rss_mb": round(statistics.median(x.rss_mb for x in fw)),
        "bare_max_rss_mb": round(statistics.median(x.rss_mb for x in lp)),
        "identical_translations": f"{same} of {len(want)} (bitextforge wrote {len(got)} rows)",
    }
    print(json.dumps(summary, indent=1), flush=True)


def memory(args, model: Path) -> None:
    """Peak RSS of the generate run at each size in ``args.memory``."""
    for n in args.memory:
        work = WORK / f"mem{n}"
        text = work / "mono.en"
        if not text.exists():
            write_input(text, n, 0)
        recipe = work / "recipe.yaml"
        write_recipe(recipe, text, model, 1, args.memory_max_length, args.report)
        shutil.rmtree(work / "out", ignore_errors=True)
        res = timed(framework_cmd(recipe, work / "out"), sample_tree=True)
        rows = sum(1 for _ in open(work / "out" / "corpus.src", "rb"))
        print(json.dumps({"lines": n, "max_length": args.memory_max_length, "report": args.report,
                          "rows_out": rows,
                          "wall_s": round(res.wall, 1),
                          "tree_peak_mb": round(res.tree_mb),
                          "tree_processes": len(res.each_mb),
                          "largest_process_peak_mb": round(res.rss_mb),
                          "sampled_peak_of_each_process_mb": [round(m) for m in res.each_mb],
                          "load": round(os.getloadavg()[0], 1)}), flush=True)
        shutil.rmtree(work / "out", ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "bare":
        ap = argparse.ArgumentParser(prog="bench_generate.py bare")
        ap.add_argument("bare")
        for opt in ("--model", "--ct2", "--input", "--output"):
            ap.add_argument(opt, required=True)
        ap.add_argument("--beam", type=int, default=4)
        ap.add_argument("--max-length", type=int, default=256)
        ap.add_argument("--batch-size", type=int, default=32)
        bare_loop(ap.parse_args())
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="speed: runs of each command (0: skip)")
    ap.add_argument("--lines", type=int, default=20000, help="speed: input lines")
    ap.add_argument("--skip", type=int, default=5000, help="speed: start after this many lines "
                    "(the 5,000 the model was trained on)")
    ap.add_argument("--beam", type=int, default=4)
    ap.add_argument("--max-length", type=int, default=256)
    ap.add_argument("--memory", type=int, nargs="*", default=[], metavar="LINES",
                    help="memory: input sizes to run (beam 1)")
    ap.add_argument("--memory-max-length", type=int, default=32,
                    help="memory: max_length of the generate step")
    ap.add_argument("--report", action="store_true", help="memory: end the runs with "
                    "report.html, which reads up to 1M rows of the run back (core/report/html.py's "
                    "MAX_ROWS), so its memory grows with the rows up to there")
    ap.add_argument("--model", type=Path, default=MODEL)
    args = ap.parse_args()
    shared_data("multi30k", "train.en.gz")  # a missing shared data folder says so first
    if not (args.model / "config.json").exists():
        sys.exit(f"needs the model {args.model} (benchmarks/studies/bt-multi30k/recipes/first-arms.yaml trains it)")
    if args.runs:
        speed(args, args.model.resolve())
    if args.memory:
        memory(args, args.model.resolve())


if __name__ == "__main__":
    main()
