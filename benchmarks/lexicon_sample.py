"""How precise and how far-reaching is word-for-word back-translation with ``sample_top``? (#31)

``lexicon_translate.v1`` writes each English word's best one-word Ding translation, or with
``sample_top: k`` a draw among its k best. More draws put more of the dictionary's German into the
corpus, and more wrong words. This script measures both sides on data the recipes may read, not
the test set: (a) precision on the 5,000-pair Multi30k bitext, the share of translated English
words whose German the pair's own German holds (the figure the ranking was chosen by,
docs/guide.md); (b) reach on the 24,000 English sentences of benchmarks/studies/bt-multi30k/recipes/lex-arm.yaml,
how many word types of the Multi30k val German that the bitext lacks the synthetic German holds.
Words are the generator's own (``words.WORD``), lowercased. It chooses nothing by itself.

Run from the repository root:
    .venv/bin/python benchmarks/lexicon_sample.py --k 1 2 3 5
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ding_lexicon, multi30k_pairs, shared_data  # noqa: E402

from bitextforge.api import read_lines  # noqa: E402
from bitextforge.plugins.lexical.wordforword import (  # noqa: E402
    ranked_translations, translate_words)
from bitextforge.plugins.lexical.words import WORD  # noqa: E402

#: the first training pairs form the bitext, the next ones' English the monolingual text
BITEXT = 5000


def words(text: str) -> set[str]:
    """The lowercased words of ``text`` as lexicon_translate.v1 finds them."""
    return {w.lower() for w in WORD.findall(text)}


def main(argv=None) -> int:
    """Print one row per k: bitext precision, val types reached, synthetic German types."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--k", type=int, nargs="+", default=[1, 2, 3, 5])
    p.add_argument("--seed", type=int, default=1, help="lexicon_translate.v1's seed")
    args = p.parse_args(argv)
    pairs = multi30k_pairs()
    bitext, mono = pairs[:BITEXT], [en for _, en in pairs[BITEXT:]]
    seen = set().union(*(words(de) for de, _ in bitext))
    val = read_lines(shared_data("multi30k", "val.de.gz"))
    val_new = set().union(*(words(s) for s in val)) - seen
    ranked = ranked_translations(str(ding_lexicon()), (2, 1), "en", "de")
    print(f"{len(bitext):,} bitext pairs, {len(mono):,} English sentences, {len(val_new)} val "
          f"German word types the bitext lacks")
    print("| sample_top | bitext precision | val types reached | synthetic German types |")
    print("|---|---|---|---|")
    for k in args.k:
        table = {w: t[:k] for w, t in ranked.items()}

        def rng(sent: str):
            # the generator's own seeding (LexiconTranslateGenerator.generate)
            return random.Random(f"{args.seed}\0{sent}") if k > 1 else None

        hit = total = 0
        for de, en in bitext:
            german, draw = words(de), rng(en)
            for w in WORD.findall(en):
                options = table.get(w.lower())
                if options:
                    total += 1
                    hit += (draw.choice(options) if draw else options[0]).lower() in german
        synthetic = set().union(*(words(translate_words(en, table, rng(en))[0]) for en in mono))
        print(f"| {k} | {hit / total:.1%} | {len(val_new & synthetic)} | {len(synthetic):,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
