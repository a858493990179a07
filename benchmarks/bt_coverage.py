"""Where does back-translation's gain go? test2016 split by the bitext's German vocabulary (issue #31)

Multi30k's low-resource setting (benchmarks/studies/bt-multi30k/recipes/*.yaml) back-translates 24,000 English
sentences with a reverse model trained on the 5,000-pair bitext. That model writes only German it
has seen, so the synthetic sources can teach the forward model new English and new contexts, but
hardly a German word the bitext lacks (Sennrich et al. 2016 make the same point for names and
rare words; their gains were largest where the monolingual text was in-domain). The 29,000 real
pairs of the upper bound do teach such words. This script measures how much of the test set that
concerns: it splits test2016's sentences by whether every German word (Moses-tokenized, lowercased,
tokens with a letter or digit) occurs in the bitext's German, and scores each system's
hypotheses on both parts with sacrebleu, as the mean over the files (seeds) given per system, with
the share of the gap to the upper bound that the arm closes on each part. With ``--corpus`` it
also counts how many of the test words the bitext lacks a run's synthetic German contains.

It reads the test references and the training German; it explains runs, chooses nothing.

Run from the repository root (hypothesis files are what train_and_test.v1 writes):
    .venv/bin/python benchmarks/bt_coverage.py \\
        --baseline runs/bt-bitext-24k-d3/train_and_test/hyp-seed{1,2,3}.txt \\
        --arm runs/bt-sr24-arm-models/hyp-seed{1,2,3}.txt \\
        --upper runs/bt-real29k-12k-s1/train_and_test/hyp-seed1.txt \\
        --corpus runs/bt-multi30k-best/corpus.tsv
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import sacrebleu
from sacremoses import MosesTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import fail, generated_rows, multi30k_pairs, shared_data  # noqa: E402

from bitextforge.api import read_lines  # noqa: E402

#: the first training pairs form the bitext (as in bt_synthetic_quality.py and the recipes)
BITEXT = 5000


def words(text: str, tok=MosesTokenizer("de")) -> list[str]:
    """The lowercased Moses tokens of a German sentence that hold a letter or digit."""
    return [w.lower() for w in tok.tokenize(text, escape=False) if any(c.isalnum() for c in w)]


def hypotheses(path: Path, n: int) -> list[str]:
    """A hypothesis file's lines; an error naming it unless it has exactly ``n``."""
    if not path.is_file():
        raise fail(f"{path}: no such file")
    lines = path.read_text(encoding="utf-8").splitlines()
    if len(lines) != n:
        raise fail(f"{path}: {len(lines):,} lines, test2016 has {n:,}")
    return lines


def synthetic_vocabulary(corpus: Path, bitext_origin: str) -> set[str]:
    """The German words of a run's generated rows (every row whose origin is not the bitext)."""
    return {w for row in generated_rows(corpus, bitext_origin) for w in words(row["src"])}


def main() -> None:
    """Print the vocabulary figures and one table row per part of the test set."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", nargs="+", type=Path, required=True,
                    help="bitext-only hypothesis files, one per seed")
    ap.add_argument("--arm", nargs="+", type=Path, required=True,
                    help="the back-translation arm's hypothesis files, one per seed")
    ap.add_argument("--upper", nargs="+", type=Path,
                    help="the 29,000-real-pairs upper bound's hypothesis files")
    ap.add_argument("--corpus", type=Path, help="a run's corpus.tsv, for its synthetic German")
    ap.add_argument("--labels", nargs=3, default=["bitext only", "arm", "upper bound"],
                    metavar=("BASELINE", "ARM", "UPPER"),
                    help="the table's names for the three systems (e.g. to compare two arms)")
    ap.add_argument("--bitext-origin", default="bitext",
                    help="origin of the real pairs' rows in --corpus (the bitext input's name)")
    args = ap.parse_args()

    data = shared_data("multi30k")
    src = read_lines(data / "test_2016_flickr.de.gz")
    ref = read_lines(data / "test_2016_flickr.en.gz")
    pairs = multi30k_pairs()
    bitext = {w for de, _ in pairs[:BITEXT] for w in words(de)}
    real = {w for de, _ in pairs for w in words(de)}
    test = [words(s) for s in src]
    tokens = sum(len(t) for t in test)
    unseen = {w for t in test for w in t if w not in bitext}
    print(f"test2016: {len(src):,} sentences, {tokens:,} German words; not in the {BITEXT:,}-pair "
          f"bitext: {sum(w not in bitext for t in test for w in t) / tokens:.2%} of the words "
          f"({len(unseen):,} types); not in all {len(pairs):,} training pairs: "
          f"{sum(w not in real for t in test for w in t) / tokens:.2%}")
    if args.corpus:
        synthetic = synthetic_vocabulary(args.corpus, args.bitext_origin)
        made = synthetic - bitext
        print(f"{args.corpus}: its synthetic German holds {len(unseen & synthetic):,} of those "
              f"{len(unseen):,} types; of the {len(made):,} types it holds that the bitext lacks, "
              f"{len(made & real):,} occur in the real German of the training pairs (the rest are "
              f"subword compounds no training sentence has)")

    parts = {"every word in the bitext": [i for i, t in enumerate(test)
                                          if all(w in bitext for w in t)]}
    parts["a word the bitext lacks"] = [i for i, t in enumerate(test)
                                        if any(w not in bitext for w in t)]
    parts["all"] = list(range(len(src)))
    systems = dict(zip(args.labels, [args.baseline, args.arm] + ([args.upper] if args.upper else [])))
    hyps = {name: [hypotheses(f, len(src)) for f in files] for name, files in systems.items()}

    def bleu(name: str, idx: list[int]) -> float:
        """Mean BLEU of the system's files on the sentences ``idx``."""
        return statistics.mean(sacrebleu.corpus_bleu([h[i] for i in idx],
                                                     [[ref[i] for i in idx]]).score
                               for h in hyps[name])

    heads = " | ".join(f"{name} ({len(files)})" for name, files in systems.items())
    gap = " gap closed |" if args.upper else ""
    print(f"\n| part of test2016 | sentences | {heads} | {args.labels[1]} gain |{gap}")
    print("|---" * (3 + len(systems) + bool(args.upper)) + "|")
    for part, idx in parts.items():
        b, a, *u = (bleu(name, idx) for name in systems)
        row = f"| {part} | {len(idx):,} | {b:.2f} | {a:.2f} |"
        if u:
            row += f" {u[0]:.2f} |"
        row += f" {a - b:+.2f} |"
        if u:
            row += f" {(a - b) / (u[0] - b):.0%} |" if u[0] != b else " |"
        print(row)


if __name__ == "__main__":
    main()
