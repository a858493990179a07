"""How close is a back-translation run's synthetic German to the real German? (issue #31)

Multi30k's low-resource setting (benchmarks/studies/bt-multi30k/recipes/*.yaml) reads the English of training pairs
5,000-28,999 as monolingual text and never reads their German. This script does, after the runs,
to explain them and never to choose anything: it scores the synthetic source side of every
generated row of a run's ``corpus.tsv`` (rows whose ``origin`` is not the bitext input) against the
real German of the same English sentence, with sacrebleu's corpus BLEU and chrF. Several samples
of one sentence each count as a row. benchmarks/studies/bt-multi30k/history.md quotes it for the reverse models of the
best recipe (12,000 and 24,000 updates).

Run from the repository root:
    .venv/bin/python benchmarks/bt_synthetic_quality.py runs/bt-multi30k-best/corpus.tsv [...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import sacrebleu

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fail, generated_rows, multi30k_pairs  # noqa: E402

#: the first training pairs form the bitext; the English of the rest is the monolingual text
BITEXT = 5000


def real_german() -> dict[str, str]:
    """English sentence -> the real German of the first training pair past the bitext that has
    it (Multi30k repeats a few captions)."""
    real: dict[str, str] = {}
    for de, en in multi30k_pairs()[BITEXT:]:
        real.setdefault(en, de)
    return real


def score(corpus: Path, real: dict[str, str], bitext_origin: str) -> str:
    """One line: the run's generated rows, their BLEU and chrF against the real German."""
    hyp, ref, unmatched = [], [], 0
    for row in generated_rows(corpus, bitext_origin):
        if row["tgt"] not in real:
            unmatched += 1
            continue
        hyp.append(row["src"])
        ref.append(real[row["tgt"]])
    if not hyp:
        raise fail(f"{corpus}: no generated row whose English is one of Multi30k's training "
                   f"pairs {BITEXT:,} on")
    bleu = sacrebleu.corpus_bleu(hyp, [ref]).score
    chrf = sacrebleu.corpus_chrf(hyp, [ref]).score
    return (f"{corpus}: {len(hyp):,} generated rows, BLEU {bleu:.2f}, chrF {chrf:.2f} against the "
            f"real German" + (f" ({unmatched:,} rows of other English left out)" if unmatched else ""))


def main() -> None:
    """Print one line per run."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="+", type=Path, help="runs/<run>/corpus.tsv")
    ap.add_argument("--bitext-origin", default="bitext",
                    help="origin of the real pairs' rows (the bitext input's name)")
    args = ap.parse_args()
    real = real_german()
    for corpus in args.corpus:
        print(score(corpus, real, args.bitext_origin))


if __name__ == "__main__":
    main()
