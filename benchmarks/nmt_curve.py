"""BLEU against training time: evaluate every snapshot a ``train-nmt --snapshots`` run saved.

A user choosing a training budget needs the curve, not one end point. ``train-nmt`` with
``snapshots: true`` saves the model at every validation to ``<model>/snapshots/step-N``; this script
translates each test set with every snapshot (CTranslate2, float32, greedy by default: the fast
backend, whose greedy output matched transformers' on every sentence in docs/benchmarks.md) and
prints one row per snapshot with the training minutes from ``train_log.json``.

Run (after ``bitextforge run recipes/models-deen.yaml``; D=$BITEXTFORGE_SHARED_DATA)::

    .venv/bin/python benchmarks/nmt_curve.py models/general-de-en \\
        --test $D/wmt-newstest-deen/newstest2019-deen.de \\
               $D/wmt-newstest-deen/newstest2019-deen.en \\
        --test $D/wmt-newstest-deen-2021-2022/newstest2021.de-en.de \\
               $D/wmt-newstest-deen-2021-2022/newstest2021.de-en.en
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path


def snapshots(model: Path) -> list[tuple[int, Path]]:
    """(step, directory) of every snapshot, in training order, then the kept model itself."""
    found = []
    for d in (model / "snapshots").glob("step-*"):
        m = re.fullmatch(r"step-(\d+)", d.name)
        if m and (d / "config.json").is_file():
            found.append((int(m.group(1)), d))
    return sorted(found)


def minutes_by_step(model: Path) -> dict[int, float]:
    """Training minutes at each validation step, from train_log.json (empty while training)."""
    log = model / "train_log.json"
    if not log.is_file():
        return {}
    return {h["step"]: h["minutes"] for h in json.loads(log.read_text())["history"]}


def evaluate(model_dir: Path, src: str, ref: str, beam: int, threads: int) -> dict:
    """One evaluate-nmt run through the CTranslate2 backend; its JSON row."""
    cmd = [str(Path(sys.executable).with_name("bitextforge")), "evaluate-nmt", "--model", str(model_dir),
           "--src", src, "--ref", ref, "--beam", str(beam), "--backend", "ctranslate2",
           "--compute-type", "float32", "--threads", str(threads)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> int:
    """Evaluate the snapshots and print a markdown table (and JSON lines to --json)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("--test", nargs=2, action="append", required=True, metavar=("SRC", "REF"))
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path, help="also write every row here as JSON lines")
    args = ap.parse_args()
    minutes = minutes_by_step(args.model)
    rows = []
    for step, d in snapshots(args.model):
        row = {"step": step, "minutes": minutes.get(step)}
        for src, ref in args.test:
            r = evaluate(d, src, ref, args.beam, args.threads)
            row[Path(src).name] = {"bleu": r["bleu"], "chrf": r["chrf"]}
        rows.append(row)
        print(json.dumps(row), flush=True, file=sys.stderr)
    names = [Path(s).name for s, _ in args.test]
    print("| updates | minutes | " + " | ".join(f"{n} BLEU / chrF" for n in names) + " |")
    print("|---|---|" + "---|" * len(names))
    for row in rows:
        cells = [f"{row[n]['bleu']:.2f} / {row[n]['chrf']:.2f}" for n in names]
        mins = "" if row["minutes"] is None else f"{row['minutes']:.0f}"
        print(f"| {row['step']:,} | {mins} | " + " | ".join(cells) + " |")
    if args.json:
        args.json.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
