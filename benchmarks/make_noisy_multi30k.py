"""Write the labelled noisy de-en corpus of ``benchmarks/studies/wmt18-filtering/recipes/filtering.yaml``: the WMT18
corpus-filtering task (Koehn et al. 2018; Kim et al. Table 2) at small scale on Multi30k.

Half the Multi30k training pairs (rows 0-14,499) stay clean (label ``V``, kind ``clean``). The
other half is turned into noise of the types of Khayrallah & Koehn 2018 (*On the Impact of Various
Types of Noise on Neural Machine Translation*, section 3), one kind per line in turn (label ``N``):

- ``misaligned``: the source with the target of another pair;
- ``misordered``: the target's words in random order;
- ``wrong_language``: the target replaced by the French caption of the same image (real text of
  the wrong language, Multi30k's ``train.fr``);
- ``untranslated``: the German source copied as the target;
- ``short``: the first 1-2 or 3-5 words of each side, as a bad sentence splitter leaves them.

Real noise from the OPUS-100 sample of ``deen-train-pool`` is added: its 343 pairs whose target is
a copy of the source (``opus100_copy``) and 2,000 of its web pairs given each other's targets
(``opus100_misaligned``, the misalignment ParaCrawl is known for). The misaligned, misordered and
untranslated kinds come from the pair classifier's own generator
(:func:`bitextforge.plugins.lexical.pair_classifier.make_negatives`), so a classifier trained on
that generator has seen these kinds (on other sentences): its ROC-AUC here is an upper estimate.

Rows are shuffled (seed 7), so the first rows up to a word budget are a random selection.

    .venv/bin/python benchmarks/make_noisy_multi30k.py runs/wmt18-data

writes ``noisy.tsv`` (``src tgt label kind``), ``clean.tsv`` (its clean rows, the oracle's input)
and prints the clean rows' target words (the recipe's word budget).

    .venv/bin/python benchmarks/make_noisy_multi30k.py --news runs/wmt18-news-data

builds the general-domain variant of ``benchmarks/studies/wmt18-filtering/recipes/news.yaml`` instead: the clean rows
and the noise come from the pool's News Commentary, Europarl and WMT news 2008-2013 sets and a
30,000-pair sample of Tatoeba (:func:`news_split`), the wrong-language targets are French
Multi30k captions of other images. The pairs of those sets that the noisy corpus does not use are
written to ``scorer-*.tsv``: the scorers of that recipe (lexical tables, pair classifier) are
trained on them only, so no scorer has seen a sentence of the corpus it ranks, as in the WMT18
task, whose filters were trained on clean WMT data and applied to ParaCrawl.
"""

from __future__ import annotations

import gzip
import random
import sys
from pathlib import Path

from bitextforge.api import read_tsv_pairs
from bitextforge.plugins.lexical.pair_classifier import make_negatives

SYNTHETIC = ("misaligned", "misordered", "wrong_language", "untranslated", "short")
OPUS_MISALIGNED = 2000


def short_segment(src: str, tgt: str, rng: random.Random) -> tuple[str, str]:
    """The first 1-2 or 3-5 words of each side (Khayrallah & Koehn's two short-segment sizes)."""
    n = rng.randint(1, 2) if rng.random() < 0.5 else rng.randint(3, 5)
    return " ".join(src.split()[:n]), " ".join(tgt.split()[:n])


def build(clean: list[tuple[str, str]], base: list[tuple[str, str]], foreign: list[str],
          web: list[tuple[str, str]], seed: int = 7,
          opus_misaligned: int = OPUS_MISALIGNED) -> list[tuple[str, str, str, str]]:
    """The labelled rows ``(src, tgt, label, kind)``, shuffled: ``clean`` pairs as ``V``; noise
    made from ``base`` pairs (``foreign[i]`` is the wrong-language target of ``base[i]``); real
    noise from the ``web`` pairs (copies as they are, up to ``opus_misaligned`` misaligned)."""
    if len(base) != len(foreign):
        raise ValueError(f"noise builder: {len(base)} base pairs but {len(foreign)} foreign lines")
    rng = random.Random(seed)
    rows = [(s, t, "V", "clean") for s, t in clean]
    groups: dict[str, list[int]] = {k: [] for k in SYNTHETIC}
    for i in range(len(base)):
        groups[SYNTHETIC[i % len(SYNTHETIC)]].append(i)
    # the generator's names for the kinds it shares with Khayrallah & Koehn
    gen = {"misaligned": "misaligned", "misordered": "shuffled", "untranslated": "untranslated"}
    for kind, idx in groups.items():
        if not idx:
            continue
        if kind in gen:
            src, tgt = [base[i][0] for i in idx], [base[i][1] for i in idx]
            if len(idx) < 2:  # the generator needs two pairs to misalign
                src, tgt = [s for s, _ in base], [t for _, t in base]
                ns, nt, _ = make_negatives(src, tgt, (gen[kind],), seed=seed)
                ns, nt = [ns[i] for i in idx], [nt[i] for i in idx]
            else:
                ns, nt, _ = make_negatives(src, tgt, (gen[kind],), seed=seed)
            rows += [(s, t, "N", kind) for s, t in zip(ns, nt)]
        elif kind == "wrong_language":
            rows += [(base[i][0], foreign[i], "N", kind) for i in idx]
        else:
            rows += [(*short_segment(*base[i], rng), "N", kind) for i in idx]
    copies = [(s, t) for s, t in web if s.strip() == t.strip()]
    rows += [(s, t, "N", "opus100_copy") for s, t in copies]
    rest = [(s, t) for s, t in web if s.strip() != t.strip()][:opus_misaligned]
    if len(rest) > 1:
        ns, nt, _ = make_negatives([s for s, _ in rest], [t for _, t in rest], ("misaligned",),
                                   seed=seed)
        rows += [(s, t, "N", "opus100_misaligned") for s, t in zip(ns, nt)]
    # a row with an empty side or a tab would break the TSV columns
    rows = [(s.replace("\t", " "), t.replace("\t", " "), lab, k) for s, t, lab, k in rows
            if s.strip() and t.strip()]
    rng.shuffle(rows)
    return rows


def _gz_lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return fh.read().split("\n")[:-1]


def write_tsv(rows, path: Path) -> None:
    """Write rows as TSV atomically (a ``.part`` file renamed when complete)."""
    tmp = path.with_name(path.name + ".part")
    with open(tmp, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write("\t".join(r) + "\n")
    tmp.replace(path)


#: the pool's sets of the news variant: name -> folder under deen-train-pool
NEWS_SETS = {"nc": "news-commentary-v11-deen-20k", "ep": "europarl-v7-deen-first20k",
             "news": "wmt-newstest-2008-2013-deen", "tatoeba": "tatoeba-anki-deu-eng-2018-05"}
TATOEBA_IN_CORPUS = 30000


def news_split(sets: dict[str, list[tuple[str, str]]], seed: int = 7,
               tatoeba: int = TATOEBA_IN_CORPUS) -> tuple[list[tuple[str, str]],
                                                           dict[str, list[tuple[str, str]]]]:
    """Split the pool's sets between the noisy corpus and the scorers' training data.

    Each set is permuted (``seed``); the corpus takes half of every set but Tatoeba, of which it
    takes ``tatoeba`` pairs (its 155k short everyday sentences would otherwise outweigh the news),
    and the scorers keep the rest, so no pair is in both. Pairs with an empty side are left out.
    Returns the corpus pairs (shuffled) and the scorers' pairs by set name.
    """
    rng = random.Random(seed)
    corpus: list[tuple[str, str]] = []
    scorers: dict[str, list[tuple[str, str]]] = {}
    for name, pairs in sets.items():
        pairs = [(s, t) for s, t in pairs if s.strip() and t.strip()]
        rng.shuffle(pairs)
        k = min(tatoeba, len(pairs) // 2) if name == "tatoeba" else len(pairs) // 2
        corpus += pairs[:k]
        scorers[name] = pairs[k:]
    rng.shuffle(corpus)
    return corpus, scorers


def _tsv_pairs(path: Path) -> list[tuple[str, str]]:
    return list(zip(*read_tsv_pairs([str(path)])))


def _summary(rows, clean, d: Path) -> None:
    kinds: dict[str, int] = {}
    for r in rows:
        kinds[r[3]] = kinds.get(r[3], 0) + 1
    words = sum(len(r[1].split()) for r in clean)
    print(f"{d}/noisy.tsv: {len(rows)} rows ({', '.join(f'{k} {n}' for k, n in kinds.items())})")
    print(f"{d}/clean.tsv: {len(clean)} rows, {words} target words")


def main_news(out: str) -> int:
    """Build the general-domain variant (news, parliament, everyday sentences) into ``out``."""
    from _common import shared_data  # here, not above: tests/test_wmt18_noise.py loads build()

    pool = shared_data("deen-train-pool")
    sets = {k: _tsv_pairs(pool / v / "train.de-en.tsv.gz") for k, v in NEWS_SETS.items()}
    corpus, scorers = news_split(sets)
    half = len(corpus) // 2
    clean, base = corpus[:half], corpus[half:]
    fr = [x for x in _gz_lines(shared_data("multi30k", "train.fr.gz")) if x.strip()]
    rng = random.Random(11)
    foreign = [fr[rng.randrange(len(fr))] for _ in base]
    web = _tsv_pairs(pool / "opus100-deen-sample-8k" / "train.de-en.tsv.gz")
    rows = build(clean, base, foreign, web)
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    for name, pairs in scorers.items():
        write_tsv([(s.replace("\t", " "), t.replace("\t", " ")) for s, t in pairs],
                  d / f"scorer-{name}.tsv")
        print(f"{d}/scorer-{name}.tsv: {len(pairs)} pairs for the scorers")
    write_tsv(rows, d / "noisy.tsv")
    kept = [r for r in rows if r[2] == "V"]
    write_tsv(kept, d / "clean.tsv")
    _summary(rows, kept, d)
    return 0


def main(out: str, n_clean: int = 14500) -> int:
    """Build the corpus from the shared data folder into the folder ``out``."""
    from _common import shared_data  # here, not above: tests/test_wmt18_noise.py loads build()

    m = shared_data("multi30k")
    de, en, fr = (_gz_lines(m / f"train.{x}.gz") for x in ("de", "en", "fr"))
    pairs = list(zip(de, en))
    web = _tsv_pairs(shared_data("deen-train-pool", "opus100-deen-sample-8k", "train.de-en.tsv.gz"))
    rows = build(pairs[:n_clean], pairs[n_clean:], fr[n_clean:], web)
    d = Path(out)
    d.mkdir(parents=True, exist_ok=True)
    write_tsv(rows, d / "noisy.tsv")
    clean = [r for r in rows if r[2] == "V"]
    write_tsv(clean, d / "clean.tsv")
    _summary(rows, clean, d)
    return 0


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--news"]:
        sys.exit(main_news(args[1] if len(args) > 1 else "runs/wmt18-news-data"))
    sys.exit(main(args[0] if args else "runs/wmt18-data"))
