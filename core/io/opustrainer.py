"""An OpusTrainer configuration for a run's output (OpusTrainer: Bogoychev, van der Linde et al.,
"OpusCleaner and OpusTrainer, open source toolkits for training Machine Translation and Large
language models", 2023): one ``src<TAB>tgt`` dataset per origin (each input's name, and each
paraphraser's), and one stage that mixes them in the proportions the recipe produced, so a Marian
user trains on the same mixture of real and synthetic pairs (Sennrich et al. 2016's ratio of
back-translated to real data) that ``corpus.src``/``corpus.tgt`` hold, with OpusTrainer streaming
and shuffling it.

The proportion of an origin is its share of the corpus's sentence weights (its row count when
every weight is 1), so upsampling (``repeat``) and input weights carry over. OpusTrainer cannot
weight single sentences: the Marian weights file stays the way to do that.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from pathlib import Path

from .corpus import AtomicFile, write_atomic
from ..errors import InputError

#: the folder of a run directory that holds the datasets and the configuration
FOLDER = "opustrainer"


def dataset_name(origin: str) -> str:
    """A dataset name OpusTrainer accepts (one word, no spaces) for an ``origin`` value."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", origin) or "input"


def write_opustrainer(out_dir: Path, seed: int) -> dict:
    """Split the run's ``corpus.tsv`` by origin into ``opustrainer/<origin>.tsv`` and write
    ``opustrainer/config.yml`` with one stage mixing them; return what the manifest records."""
    tsv = out_dir / "corpus.tsv"
    if not tsv.is_file():
        raise InputError(f"{out_dir}: the OpusTrainer configuration is made from corpus.tsv; "
                         f"keep tsv in output.formats")
    folder = out_dir / FOLDER
    folder.mkdir(exist_ok=True)
    files: "OrderedDict[str, AtomicFile]" = OrderedDict()
    weight: dict[str, float] = {}
    rows: dict[str, int] = {}
    try:
        with open(tsv, encoding="utf-8", newline="\n") as fh:
            head = fh.readline().rstrip("\n").split("\t")
            oi, si, ti, wi = (head.index(c) for c in ("origin", "src", "tgt", "weight"))
            for line in fh:
                f = line.rstrip("\n").split("\t")
                name = dataset_name(f[oi])
                if name not in files:
                    files[name] = AtomicFile(folder / f"{name}.tsv")
                    weight[name], rows[name] = 0.0, 0
                # corpus.tsv escapes tabs and newlines inside a cell as \t and \n, which keeps
                # one pair per line here as OpusTrainer needs
                files[name].write(f"{f[si]}\t{f[ti]}\n")
                weight[name] += float(f[wi]) if f[wi] else 1.0
                rows[name] += 1
        for af in files.values():
            af.commit()
    finally:
        for af in files.values():
            af.discard()
    total = sum(weight.values()) or 1.0
    mix = {name: weight[name] / total for name in files}
    names = list(files)
    # the stage ends when the largest dataset has been read once: one epoch of the mixture
    until = max(names, key=lambda n: rows[n]) if names else "input"
    lines = ["# OpusTrainer configuration written by bitextforge: one dataset per origin, mixed",
             "# in the proportions of the run's output (shares of the sentence weights).",
             "# Train with:  opustrainer-train --config opustrainer/config.yml marian ...",
             "datasets:"]
    lines += [f"  {n}: {n}.tsv" for n in names]
    lines += ["", "stages:", "  - mix", "", "mix:"]
    lines += [f"  - {n} {mix[n]:.6f}" for n in names]
    lines += [f"  - until {until} 1", "", f"seed: {seed}", ""]
    write_atomic(folder / "config.yml", "\n".join(lines))
    return {"config": str(folder / "config.yml"),
            "datasets": {n: {"rows": rows[n], "share": round(mix[n], 6)} for n in names}}
