"""Write the labelled noisy de-en corpus of docs/benchmarks.md ("Lexical filtering"): clean pairs
(label ``V``) from newstest2017 and the Tatoeba test set, none of them in the training pool, and as
many noisy pairs (label ``N``, with the noise kind) made from other, disjoint lines of newstest2014,
newstest2015 and the Tatoeba test set by the pair classifier's six synthetic noise kinds
(misaligned, shuffled words, truncated, wrong language, untranslated copy, changed numbers).

    .venv/bin/python benchmarks/make_noisy_deen.py runs/noisy-deen.tsv

The columns are ``src tgt label kind``; ``benchmarks/studies/wmt-filter-design/recipes/auc.yaml`` reads the file.
The noise comes from the same generator as the classifier's training negatives (on other
sentences): the ROC-AUC measures how well the scores catch these kinds of noise, not noise of
kinds nobody simulated.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _common import shared_data
from bitextforge.plugins.lexical.pair_classifier import NEGATIVES, make_negatives


def lines(path: Path) -> list[str]:
    """The lines of a text file."""
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def main(out: str) -> int:
    """Write the corpus to ``out``."""
    news = shared_data("wmt-newstest-deen")
    tat = shared_data("tatoeba-test-v2021-08-07")
    tde, ten = lines(tat / "deu-eng.deu"), lines(tat / "deu-eng.eng")
    clean = list(zip(lines(news / "newstest2017.de"), lines(news / "newstest2017.en")))
    clean += list(zip(tde[:2000:2], ten[:2000:2]))
    base = list(zip(lines(news / "newstest2014.de"), lines(news / "newstest2014.en")))[:1500]
    base += list(zip(lines(news / "newstest2015.de"), lines(news / "newstest2015.en")))[:1500]
    base += list(zip(tde[1:2000:2], ten[1:2000:2]))
    import random

    random.Random(7).shuffle(base)
    ns, nt, kinds = make_negatives([s for s, _ in base], [t for _, t in base], NEGATIVES, seed=7)
    rows = [(s, t, "V", "clean") for s, t in clean]
    rows += [(s, t, "N", k) for s, t, k in zip(ns, nt, kinds)]
    p = Path(out)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(p.name + ".part")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write("\t".join(x.replace("\t", " ") for x in r) + "\n")
    tmp.replace(p)
    print(f"{p}: {len(clean)} clean, {len(ns)} noisy rows")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "runs/noisy-deen.tsv"))
