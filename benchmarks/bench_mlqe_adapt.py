"""Domain adaptation by continued training (``train-nmt --init-model``): BLEU and chrF on
Wikipedia of the general en->de model of ``recipes/models-deen.yaml`` and of the models that
``benchmarks/studies/mlqe-qe/recipes/qe.yaml`` adapts from it with MLQE-PE train post-edits (Luong & Manning 2015;
Freitag & Al-Onaizan 2016).

The test set is MLQE-PE's dev split: its 1,000 English Wikipedia sources and their human
post-edits (released tokenized; Moses-detokenized here) as references, rows that no model saw
(the adapted models train on the train split only). The post-edits are corrections of one NMT
system's output, so BLEU against them also rewards that system's word choices. Prints one JSON
line per model and beam (the ``evaluate-nmt`` format).

    .venv/bin/python benchmarks/bench_mlqe_adapt.py models/general-en-de \
        models/mlqe-en-de-fold0 models/mlqe-en-de-fold1
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from pathlib import Path

from _common import mlqe_split, shared_data
from bitextforge.plugins.nmt.train import detokenize, evaluate_bleu


def main(argv=None):
    """Write the detokenized test set to a temporary directory and score every model on it."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+", help="en->de model directories")
    ap.add_argument("--beam", type=int, nargs="+", default=[1])
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    src = mlqe_split("dev")[0]
    with gzip.open(shared_data("mlqe-pe-ende", "pe.dev.de-en.tsv.gz"), "rt",
                   encoding="utf-8") as fh:
        ref = detokenize([ln.split("\t")[0] for ln in fh.read().splitlines()], "de")
    if len(src) != len(ref):
        raise SystemExit(f"{len(src)} dev sources but {len(ref)} post-edits")
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "dev.en").write_text("\n".join(src) + "\n", encoding="utf-8")
        (Path(tmp) / "dev.de").write_text("\n".join(ref) + "\n", encoding="utf-8")
        for model in a.models:
            for beam in a.beam:
                r = evaluate_bleu(model, str(Path(tmp) / "dev.en"), str(Path(tmp) / "dev.de"),
                                  beam, backend="ctranslate2", threads=a.threads)
                print(json.dumps({"model": model, **r, "test": "mlqe-pe dev (post-edits)"}))


if __name__ == "__main__":
    sys.exit(main())
