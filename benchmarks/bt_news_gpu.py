"""Issue #31's news setting (Sennrich, Haddow & Birch 2016) on a lent GPU, inside one short
device call: ``benchmarks/studies/bt-news/recipes/bitext.yaml`` and ``benchmarks/studies/bt-news/recipes/bt.yaml`` run as their headers
say, with a smaller update budget and the seeds trained side by side on the one GPU.

Phases (each a ``bitextforge`` command; their logs and the run reports go to ``--out``):

A. the reverse en->de model (``bitextforge prepare benchmarks/studies/bt-news/recipes/bt.yaml``) and the three
   bitext-only seeds (``bitextforge run benchmarks/studies/bt-news/recipes/bitext.yaml``, one process per seed into
   one shared ``model_dir``), four trainings at once;
B. the back-translation (``bitextforge run benchmarks/studies/bt-news/recipes/bt.yaml`` without its evaluator): the
   English monolingual text capped at ``--mono-ratio`` times the bitext, a random sample, decoded
   on the GPU (transformers where CTranslate2 sees no GPU);
C. the three back-translation seeds, trained on exactly the corpus phase B wrote (read back as
   the run's input, so the back-translation is not repeated three times), each compared with the
   bitext-only model of its seed (paired bootstrap, ``train_and_test.v1``).

Every model of both arms has the same update budget (``--steps``; by default sized from the
single-process updates/s that ``benchmarks/gpu_check.py`` measured just before) and the same
batch (``--batch-tokens``). The results, one line per seed, are written to ``news.json``, and the
reports, hypotheses and the commands' logs (not the model weights) to ``news.tar.gz``, after each
phase, so a call cut off by its limit still returns what finished.

``--smoke`` runs the same commands with tiny settings on the CPU (a check of this script, a few
minutes); ``--check`` only validates every command's recipe and options (``bitextforge
validate``, seconds), so a misspelt ``--set`` key fails here and not after minutes of a lent GPU.
How it was run: benchmarks/studies/bt-news/history.md, "The news setting".
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BITEXT_RUN, BT_RUN = "runs/bt-news-bitext-gpu", "runs/bt-news-gpu"
REVERSE = "models/news-bitext-en-de-gpu"
#: the bitext of both recipes (News Commentary + Europarl), under the shared data folder
BITEXT = ("deen-train-pool/news-commentary-v11-deen-20k/train.de-en.tsv.gz",
          "deen-train-pool/europarl-v7-deen-first20k/train.de-en.tsv.gz")


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (``--help``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, required=True, help="the shared data folder (holds "
                   "deen-train-pool/ and wmt-newstest-deen/)")
    p.add_argument("--out", type=Path, required=True, help="logs, news.json, news.tar.gz")
    p.add_argument("--gpu-check", type=Path, help="gpu_check.json: its updates/s sizes --steps")
    p.add_argument("--steps", type=int, help="updates per model (default: from --gpu-check)")
    p.add_argument("--train-seconds", type=float, default=65.0, help="what one phase's "
                   "trainings may take, for sizing --steps")
    p.add_argument("--batch-tokens", type=int, default=8000)
    p.add_argument("--mono-ratio", type=float, default=1.0, help="English sentences back-"
                   "translated, per bitext pair (newstest 2008-2013 first, then Tatoeba)")
    p.add_argument("--logs", type=Path, default=Path("/tmp/bt-news-logs"),
                   help="the commands' logs (also packed into news.tar.gz)")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--smoke", action="store_true", help="tiny settings on the CPU")
    p.add_argument("--check", action="store_true", help="validate every phase's command "
                   "(bitextforge validate with the same options), train nothing, and stop")
    p.add_argument("--probe", default="", help="batch sizes in tokens, comma-separated (e.g. "
                   "8000,16000,32000): before phase A, train the bitext model for "
                   "--probe-updates at each, side by side, and take the batch that sees the most "
                   "tokens in --phase-seconds among those that still give --min-updates "
                   "(choose_batch)")
    p.add_argument("--probe-updates", type=int, default=200)
    p.add_argument("--phase-seconds", type=float, default=180.0, help="what one phase's "
                   "trainings may take (with --probe)")
    p.add_argument("--min-updates", type=int, default=1000, help="with --probe: the fewest "
                   "updates per model a batch size must allow to be chosen")
    p.add_argument("--from-phase", choices=["A", "B", "C"], default="A", help="start at this "
                   "phase, reusing what the earlier ones left (on a still-warm machine)")
    p.add_argument("--until-phase", choices=["A", "B", "C"], default="C", help="stop after "
                   "this phase: with more updates than one call holds, A and B in a first call "
                   "and --from-phase C in a second on the still-warm machine")
    return p.parse_args(argv)


def size_steps(args) -> tuple[int, str]:
    """The update budget: ``--steps``, or what four trainings sharing the GPU (taken as 2.5x
    slower each than gpu_check's one, with a 5x larger batch) do in ``--train-seconds``."""
    if args.steps:
        return args.steps, "given"
    try:
        ups = json.loads(args.gpu_check.read_text())["train_accelerated"]["updates_per_second"]
    except (OSError, TypeError, KeyError, ValueError, AttributeError):
        return 2000, "default (no gpu_check figure)"
    steps = int(ups / 2.5 * args.train_seconds) // 250 * 250
    return max(1000, min(steps, 12000)), f"from gpu_check's {ups} updates/s"


def choose_batch(speeds: dict[int, float], phase_seconds: float, min_updates: int,
                 margin: float = 0.8) -> tuple[int, int]:
    """The batch size (tokens) and update budget from the probe's ``speeds`` (batch tokens ->
    updates/s of one of three side-by-side trainings). Each batch's budget is what ``margin`` x
    ``phase_seconds`` gives at its speed, in steps of 250 (the margin: phase A runs four
    trainings, not three). Chosen: the batch that sees the most tokens in its budget among those
    whose budget reaches ``min_updates`` (a small model on a large GPU is not compute-bound, so a
    larger batch costs little time: Popel & Bojar 2018 find larger batches better), else the
    fastest one."""
    budget = {b: int(margin * phase_seconds * ups) // 250 * 250 for b, ups in speeds.items()}
    fits = [b for b in speeds if budget[b] >= min_updates]
    batch = (max(fits, key=lambda b: (budget[b] * b, -b)) if fits
             else max(speeds, key=speeds.get))
    return batch, max(250, budget[batch])


def probe(args, ph: "Phases", cli: list[str], tsvs: list[str]) -> dict[int, float]:
    """Updates/s of the bitext model at each ``--probe`` batch size, the trainings side by side
    (train-nmt, --probe-updates each, timed over the whole training, first epoch included)."""
    sizes = [int(x) for x in args.probe.split(",")]
    tiny = (["--train-limit", "600", "--vocab-size", "300", "--d-model", "32", "--ffn-dim", "64",
             "--layers", "1", "--heads", "2", "--min-warmup-steps", "2"] if args.smoke else [])
    cmds = {f"P-batch-{b}": [*cli, "train-nmt", "--train-tsv", *tsvs, "--tsv-langs", "de-en",
                             "--src-lang", "de", "--tgt-lang", "en", "-o", f"/tmp/news-probe-{b}",
                             "--max-steps", str(args.probe_updates), "--batch-tokens", str(b),
                             "--threads", "2", "--device", "auto", *tiny] for b in sizes}
    if not ph.run("probe", cmds):
        raise SystemExit("news: the probe's trainings failed (logs in --logs)")
    speeds = {}
    for b in sizes:
        info = json.loads(Path(f"/tmp/news-probe-{b}/train_log.json").read_text())
        speeds[b] = round(info["steps"] / max(info["train_minutes"] * 60, 1e-6), 2)
    return speeds


class Phases:
    """Runs the phases' commands, logs them under ``--logs``, and keeps news.json and
    news.tar.gz up to date."""

    def __init__(self, args):
        self.args, self.t0 = args, time.perf_counter()
        # outside --out: the device tool returns at most 8 files, so the logs travel in the tarball
        self.logs = args.logs
        self.logs.mkdir(parents=True, exist_ok=True)
        self.result: dict = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "phases": {},
                             "commands": []}

    def run(self, name: str, cmds: dict[str, list[str]]) -> bool:
        """Start ``cmds`` (label -> argv) together, wait for all; True when every one exits 0.
        With ``--check``, each command is validated instead (``check_command``)."""
        if self.args.check:
            cmds = {label: check_command(argv, self.logs) for label, argv in cmds.items()}
        t = time.perf_counter()
        procs = {}
        for label, argv in cmds.items():
            self.result["commands"].append(" ".join(argv))
            log = open(self.logs / f"{label}.log", "w")
            procs[label] = (subprocess.Popen(argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                             env={**os.environ, "PYTHONUNBUFFERED": "1"}), log)
            print(f"news: {name}: started {label}", flush=True)
        rcs = {}
        for label, (proc, log) in procs.items():
            rcs[label] = proc.wait()
            log.close()
            tail = (self.logs / f"{label}.log").read_text(errors="replace").splitlines()[-3:]
            print(f"news: {name}: {label} exit {rcs[label]} at "
                  f"{time.perf_counter() - self.t0:.0f} s: {' | '.join(tail)}", flush=True)
        self.result["phases"][name] = {"seconds": round(time.perf_counter() - t, 1),
                                       "exit": rcs}
        self.save()
        return all(rc == 0 for rc in rcs.values())

    def save(self) -> None:
        """news.json (the seeds' figures from the reports written so far) and news.tar.gz."""
        seeds = {}
        for run in sorted(ROOT.glob("runs/bt-news-*gpu-s*")):
            rep = run / "reports" / "train_and_test.v1.json"
            if rep.is_file():
                seeds[run.name] = json.loads(rep.read_text()).get("numbers")
        self.result["seeds"] = seeds
        self.result["elapsed_seconds"] = round(time.perf_counter() - self.t0, 1)
        (self.args.out / "news.json").write_text(json.dumps(self.result, indent=2) + "\n")
        pack([p for p in sorted(ROOT.glob("runs/bt-news-*gpu*")) + [ROOT / REVERSE] if p.exists()],
             self.logs, self.args.out / "news.tar.gz")


#: the device tool returns files of at most 16 MiB; a larger tarball did not come back at all
#: (2026-11-30: phase B's 71,612-row corpus in three formats)
TAR_LIMIT = 15 * 2**20
#: files over this many bytes are left out of the tarball in any case
BIG_FILE = 12_000_000


def pack(paths: list[Path], logs: Path, dest: Path, root: Path = ROOT,
         limit: int = TAR_LIMIT) -> None:
    """Write ``dest`` (gzip tar) with ``paths`` (named relative to ``root``, filtered by
    ``_no_weights``) and ``logs``; if it comes out over ``limit`` bytes, again without any file
    over 1 MB, so that the reports, the hypotheses and the logs still come back."""
    for big in (BIG_FILE, 1_000_000):
        with tarfile.open(dest, "w:gz") as tar:
            for path in paths:
                tar.add(path, arcname=path.relative_to(root).as_posix(),
                        filter=lambda info, big=big: _no_weights(info, big))
            tar.add(logs, arcname="logs")
        if dest.stat().st_size <= limit:
            return


def check_command(argv: list[str], scratch: Path) -> list[str]:
    """``bitextforge validate`` with the recipe and ``--set`` options of a ``run`` or ``prepare``
    command (``--force`` dropped); what an earlier phase writes (the reverse model, phase B's
    corpus, phase A's baseline models) is replaced by an empty placeholder in ``scratch``, since
    nothing was trained."""
    i = next(k for k, a in enumerate(argv) if a in ("run", "prepare"))
    written = {f"{BT_RUN}/corpus": scratch / "corpus", REVERSE: scratch / "reverse-model",
               f"{BITEXT_RUN}-models": scratch / "bitext-models"}
    scratch.mkdir(parents=True, exist_ok=True)
    for side in ("src", "tgt"):
        (scratch / f"corpus.{side}").touch()
    (scratch / "reverse-model").mkdir(parents=True, exist_ok=True)
    rest = []
    for a in argv[i + 1:]:
        if a == "--force":
            continue
        for path, stand_in in written.items():
            a = a.replace(path, stand_in.as_posix())
        if ".with.baseline=" in a:
            Path(a.split("=", 2)[2]).mkdir(parents=True, exist_ok=True)
        rest.append(a)
    return [*argv[:i], "validate", *rest]


def _no_weights(info: tarfile.TarInfo, big: int = BIG_FILE):
    """Leave model weights, vocabularies, the copies of the training data, the plain-text copies
    of phase B's corpus (its corpus.tsv holds both sides) and files over ``big`` bytes out of the
    tarball."""
    name = info.name
    if name.endswith((".safetensors", ".bin", ".pt", ".model", ".vocab", "train.src",
                      "train.tgt")) or "/ct2" in name or "/data/" in name:
        return None
    if "-s" in name.split("/")[1] and name.rsplit("/", 1)[-1].startswith(("corpus.", "report.html")):
        return None  # the seeds' copies of the corpus; the back-translation run keeps its own
    if name.endswith(("/corpus.src", "/corpus.tgt")):
        return None
    if info.isfile() and info.size > big:
        return None
    return info


def main(argv=None) -> int:
    """Run phases A, B and C; exit 1 if any command failed."""
    args = parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    seeds = [int(s) for s in args.seeds.split(",")]
    cli = [sys.executable, "-m", "bitextforge.cli"]
    d = args.data.as_posix().rstrip("/")
    ph = Phases(args)
    sizing = ROOT / "runs" / "bt-news-gpu-sizing.json"
    if args.check:  # nothing trains, so no probe and no sizing file
        steps, why = args.steps or 1000, "--check"
    elif args.from_phase != "A" and not args.steps and sizing.is_file():
        # a later call on the same machine trains phase C as phase A was trained
        chosen = json.loads(sizing.read_text())
        args.batch_tokens = chosen["batch_tokens"]
        steps, why = chosen["steps"], f"phase A's ({chosen['steps_from']})"
    elif args.probe and not args.steps:
        speeds = probe(args, ph, cli, [f"{d}/{f}" for f in BITEXT])
        args.batch_tokens, steps = choose_batch(speeds, args.phase_seconds, args.min_updates)
        why = f"probe: updates/s by batch tokens {speeds}"
        ph.result["probe"] = speeds
    else:
        steps, why = size_steps(args)
    if not args.check:
        sizing.parent.mkdir(parents=True, exist_ok=True)
        sizing.write_text(json.dumps({"steps": steps, "steps_from": why,
                                      "batch_tokens": args.batch_tokens}) + "\n")
    ph.result.update(steps=steps, steps_from=why, batch_tokens=args.batch_tokens,
                     mono_ratio=args.mono_ratio, seeds=seeds, smoke=args.smoke)
    print(f"news: {steps} updates per model ({why}), batches of {args.batch_tokens} tokens",
          flush=True)

    def data(s: str) -> list[str]:
        # the recipes name ../shared/data; the copy on the device machine is elsewhere
        return [f"--set={s.replace('../shared/data', d)}"]

    def paths(recipe: str) -> list[str]:
        # the evaluator's data files only (the reverse model's prepare names its own valid_src)
        import yaml

        opts = yaml.safe_load((ROOT / recipe).read_text())["evaluate"][0]["with"]
        return [x for key in ("test_src", "test_ref", "valid_src", "valid_ref") if key in opts
                for x in data(f"evaluate[0].with.{key}={opts[key]}")]

    tiny = ["--set=evaluate[0].with.vocab_size=300", "--set=evaluate[0].with.d_model=32",
            "--set=evaluate[0].with.ffn_dim=64", "--set=evaluate[0].with.layers=1",
            "--set=evaluate[0].with.heads=2", "--set=evaluate[0].with.bootstrap_samples=50",
            "--set=evaluate[0].with.min_warmup_steps=2"] if args.smoke else []
    train = [f"--set=evaluate[0].with.max_steps={steps}",
             f"--set=evaluate[0].with.batch_tokens={args.batch_tokens}",
             "--set=evaluate[0].with.threads=2", "--set=evaluate[0].with.device=auto",
             "--set=output.formats=[plain, tsv]", "--force", *tiny]
    bitext_inputs = [x for i, f in enumerate(BITEXT)
                     for x in data(f"input[{i}].path=../shared/data/{f}")]
    if args.smoke:
        bitext_inputs += ["--set=input[0].limit=300", "--set=input[1].limit=300"]
    models_a, models_c = f"{BITEXT_RUN}-models", f"{BT_RUN}-models"

    # -- A: the reverse model and the bitext-only seeds, side by side
    # prepare validates the whole recipe, so every path it names must be there
    prep = [*cli, "prepare", "benchmarks/studies/bt-news/recipes/bt.yaml", *bitext_inputs, *paths("benchmarks/studies/bt-news/recipes/bt.yaml"),
            *data("input[2].path=../shared/data/deen-train-pool/wmt-newstest-2008-2013-deen/"
                  "train.de-en.tsv.gz"),
            *data("input[3].path=../shared/data/deen-train-pool/tatoeba-anki-deu-eng-2018-05/"
                  "train.de-en.tsv.gz"),
            *data("prepare[0].with.train_tsv=["
                  + ", ".join(f"../shared/data/{f}" for f in BITEXT) + "]"),
            *data("prepare[0].with.valid_src=../shared/data/wmt-newstest-deen/newstest2017.en"),
            *data("prepare[0].with.valid_tgt=../shared/data/wmt-newstest-deen/newstest2017.de"),
            "--set=prepare[0].with.tests=[]", f"--set=prepare[0].with.output={REVERSE}",
            f"--set=steps[0].with.model={REVERSE}",
            f"--set=prepare[0].with.max_steps={steps}",
            f"--set=prepare[0].with.valid_every_steps={max(steps // 4, 1)}",
            f"--set=prepare[0].with.batch_tokens={args.batch_tokens}",
            "--set=prepare[0].with.threads=2", "--set=prepare[0].with.device=auto",
            "--set=prepare[0].force=true"]  # a reverse model of an earlier run is stale
    if args.smoke:
        prep += ["--set=prepare[0].with.train_limit=600", "--set=prepare[0].with.vocab_size=300",
                 "--set=prepare[0].with.d_model=32", "--set=prepare[0].with.ffn_dim=64",
                 "--set=prepare[0].with.layers=1", "--set=prepare[0].with.heads=2",
                 "--set=prepare[0].with.min_warmup_steps=2"]
    cmds = {"A-reverse": prep}
    for s in seeds:
        cmds[f"A-bitext-s{s}"] = [*cli, "run", "benchmarks/studies/bt-news/recipes/bitext.yaml", *bitext_inputs,
                                  *paths("benchmarks/studies/bt-news/recipes/bitext.yaml"), *train,
                                  f"--set=evaluate[0].with.seeds=[{s}]",
                                  f"--set=evaluate[0].with.model_dir={models_a}",
                                  f"--set=output.dir={BITEXT_RUN}-s{s}"]
    if args.from_phase == "A" and not ph.run("A", cmds):
        return 1
    if args.until_phase == "A":
        return 0

    # -- B: back-translate the capped English once
    ratio = args.mono_ratio
    mono = [*data("input[2].path=../shared/data/deen-train-pool/wmt-newstest-2008-2013-deen/"
                  "train.de-en.tsv.gz"),
            *data("input[3].path=../shared/data/deen-train-pool/tatoeba-anki-deu-eng-2018-05/"
                  "train.de-en.tsv.gz"),
            # newstest's 16,540 English sentences first (at most `ratio` of the bitext), then
            # a random Tatoeba sample filling the rest of the cap
            f"--set=input[2].max_ratio={ratio}", "--set=input[2].sample=random",
            f"--set=input[3].max_ratio={max(ratio - 16540 / 39784, 0.01):.4f}",
            "--set=input[3].sample=random"]
    if args.smoke:
        mono += ["--set=input[2].limit=150", "--set=input[3].limit=150"]
    # the GPU decodes: CTranslate2 where it can run there (hardware.visible_gpus checks that it
    # loads its cuBLAS), else transformers
    from bitextforge.api import visible_gpus

    ct2_gpu = visible_gpus("ctranslate2") > 0
    gen = ["--set=steps[0].with.backend=" + ("ctranslate2" if ct2_gpu else "transformers"),
           "--set=steps[0].with.device=auto",
           f"--set=steps[0].with.batch_size={64 if ct2_gpu else 1024}",
           f"--set=steps[0].with.model={REVERSE}", "--set=steps[0].with.threads=8",
           f"--set=prepare[0].with.output={REVERSE}"]
    # the reverse model is phase A's; its training data need not be named again
    if args.from_phase in "AB" and not ph.run("B", {"B-back-translate": [
            *cli, "run", "benchmarks/studies/bt-news/recipes/bt.yaml", *bitext_inputs, *mono, *gen, "--set=prepare=[]",
            "--set=evaluate=[]", "--set=output.formats=[plain, tsv]", "--force",
            f"--set=output.dir={BT_RUN}"]}):
        return 1
    if args.until_phase == "B":
        return 0

    # -- C: the back-translation seeds on the corpus phase B wrote
    corpus = [f"--set=input=[{{name: bt-news, src: {BT_RUN}/corpus.src, "
              f"tgt: {BT_RUN}/corpus.tgt}}]", "--set=steps=[]", "--set=prepare=[]"]
    cmds = {}
    for s in seeds:
        cmds[f"C-bt-s{s}"] = [*cli, "run", "benchmarks/studies/bt-news/recipes/bt.yaml", *corpus,
                              *paths("benchmarks/studies/bt-news/recipes/bt.yaml"), *train,
                              f"--set=evaluate[0].with.seeds=[{s}]",
                              f"--set=evaluate[0].with.model_dir={models_c}",
                              "--set=evaluate[0].with.baseline_recipe=null",
                              f"--set=evaluate[0].with.baseline={models_a}/model-seed{s}",
                              f"--set=output.dir={BT_RUN}-s{s}"]
    ok = ph.run("C", cmds)
    ph.result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    ph.save()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
