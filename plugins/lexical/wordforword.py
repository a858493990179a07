"""``lexicon_translate.v1``: fill the empty side of monolingual rows word for word from a bilingual
dictionary.

Hu, Xia, Neubig & Carbonell 2019 ("Domain Adaptation of Neural Machine Translation by Lexicon
Induction", ACL; DALI) back-translate in-domain target-language text word by word with a lexicon,
keeping the target word order and copying the words the lexicon lacks, and train on these
pseudo-parallel pairs beside the real ones; added to back-translation by a model, they gained the
most. The point is vocabulary: a reverse model trained on a small bitext writes only source words
that bitext holds, so back-translation cannot teach the forward model a source word the bitext
lacks, and a dictionary can (``benchmarks/bt_coverage.py`` measures this on Multi30k).

The lexicon is a dictionary as :mod:`.dictionary` reads it (Ding's layout, a dictd database, or any
TSV of ``;``-separated synonyms), cleaned the same way; only one-word entries are used. A word has
many dictionary translations, and the one written is the best by five keys in order: synonyms that
lost a word in cleaning come last (Ding's "to the" is cleaned to "the", which is no verb); the
word's position among the synonyms of its own side of the entry (the first is the entry's headword,
later ones looser senses); the translation's position on its side; how many entries hold the
translation (common words recur in many entries and phrases); file order. The rule reads the
dictionary alone. It was chosen on the 5,000-pair Multi30k bitext (training data only): of the
English words the Ding dictionary translates, 40.4 % get a German word that the pair's own German
holds; 39.6 % without the first key, and without it, 39.3 % without the translation's position and
21.3 % without the commonness count. ``sample_top: k`` draws among a word's k best instead, as
sampling does for model back-translation (Edunov et al. 2018): more of the dictionary reaches the
corpus, with less precision (``benchmarks/lexicon_sample.py``).
"""

from __future__ import annotations

import functools
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from pydantic import Field

from bitextforge import Generator

from .dictionary import _clean_words, read_entry_lines
from .words import WORD


@functools.lru_cache(maxsize=2)
def ranked_translations(path: str, columns: tuple[int, int], from_lang: str,
                        to_lang: str) -> dict[str, tuple[str, ...]]:
    """Lowercased one-word entry of column ``columns[0]`` -> every one-word translation in column
    ``columns[1]``, best first (the ranking of the module docstring; a translation found in
    several entries ranks by its best one), read once per process."""
    def side(synonyms, lang):
        # an English "to" before a verb goes (dictionary._clean_words), but "to the" is no verb: a
        # synonym that lost a word ranks after every synonym that did not
        return [_clean_words(s, lang) for s in synonyms]

    lines = [(side(a, from_lang), [t for t, _ in side(b, to_lang)])
             for a, b in read_entry_lines(path, columns)]
    common: Counter[str] = Counter()
    for _, b in lines:
        common.update({w for s in b for w in s.split()})
    best: dict[str, dict[str, tuple]] = {}
    for n, (a, b) in enumerate(lines):
        targets = [(j, t) for j, t in enumerate(b) if len(t.split()) == 1]
        for i, (s, shortened) in enumerate(a):
            if len(s.split()) != 1:
                continue
            ranks = best.setdefault(s.lower(), {})
            for j, t in targets:
                cand = (shortened, i, j, -common[t], n)
                if t not in ranks or cand < ranks[t]:
                    ranks[t] = cand
    return {k: tuple(sorted(v, key=lambda t: (v[t], t))) for k, v in best.items() if v}


def word_translations(path: str, columns: tuple[int, int], from_lang: str,
                      to_lang: str) -> dict[str, str]:
    """Lowercased one-word entry of column ``columns[0]`` -> its best one-word translation in
    column ``columns[1]`` (the first of :func:`ranked_translations`)."""
    return {k: v[0] for k, v in ranked_translations(path, columns, from_lang, to_lang).items()}


def translate_words(text: str, table: Mapping[str, str | Sequence[str]],
                    rng: random.Random | None = None) -> tuple[str, int, int]:
    """``text`` with every word the table holds replaced by its translation, everything between
    words kept, and the words the table lacks copied (Hu et al. 2019); a translation of the
    sentence's first word starts upper-case when that word did. A table value that is a sequence
    of translations gives its first, or with ``rng`` a uniform draw among them for each
    occurrence. Returns the text, the words translated and the words in all."""
    out, last, done, total = [], 0, 0, 0
    for m in WORD.finditer(text):
        word = m.group()
        total += 1
        new = table.get(word.lower())
        if new is None:
            new = word
        else:
            if not isinstance(new, str):
                new = rng.choice(new) if rng is not None else new[0]
            done += 1
            if m.start() == 0 and word[:1].isupper():
                new = new[:1].upper() + new[1:]
        out.append(text[last:m.start()])
        out.append(new)
        last = m.end()
    out.append(text[last:])
    return "".join(out), done, total


class LexiconTranslateGenerator(Generator):
    """Word-for-word translation of the side a monolingual row has into the side it lacks, from
    a bilingual dictionary (Hu et al. 2019's DALI pseudo-parallel data): target word order kept,
    words the dictionary lacks copied, each word's translation its best one-word entry (its
    position among the entry's synonyms, then how common the translation is). One candidate per
    sentence; its score is the share of the sentence's words the dictionary translated, so a
    later filter can drop sentences mostly copied. A sentence without a word gets no candidate
    and is rejected by the step."""

    name = "lexicon_translate.v1"
    learned = False  # a dictionary, not a trained model, writes the text

    class Config(Generator.Config):
        """Options of lexicon_translate.v1."""

        dictionary: str = Field(description="Bilingual dictionary: a TSV of entry pairs with "
                                "';'-separated synonyms (Ding's layout: line number, German, "
                                "English) or a dictd .index file (read headword to translation; columns "
                                "do not apply).")
        columns: tuple[int, int] = Field(
            (2, 1), description="0-based TSV fields of the language read and of the language "
                                "written; the default reads Ding's English and writes its "
                                "German (back-translation of English into German).")
        from_lang: str = Field("en", description="ISO 639-1 code of the language read (for the "
                               "entry cleaning: an English 'to' before a verb is dropped).")
        to_lang: str = Field("de", description="ISO 639-1 code of the language written.")
        min_translated: float = Field(0.0, ge=0, le=1, description="A sentence whose share of "
                                      "translated words is below this gets no candidate (and is "
                                      "rejected with the step's name); 0: every sentence with a "
                                      "word.")
        sample_top: int = Field(1, ge=1, description="1: every word gets its best translation. "
                                "k > 1: each occurrence draws uniformly among the word's k best "
                                "one-word translations (more of the language written reaches "
                                "the corpus, as sampling does for back-translation: Edunov et "
                                "al. 2018), the draw seeded by seed and the sentence, so a "
                                "sentence translates the same in any run, order or shard.")
        seed: int = Field(1, description="Seed of the draws with sample_top > 1.")

    @classmethod
    def input_paths(cls, config):
        """The dictionary."""
        return {"dictionary": config.dictionary}

    def __init__(self, config=None):
        """Read the dictionary's word table once for the run."""
        super().__init__(config)
        c = self.config
        if c.sample_top == 1:
            self.table = word_translations(c.dictionary, tuple(c.columns), c.from_lang, c.to_lang)
        else:
            self.table = {w: t[:c.sample_top] for w, t in ranked_translations(
                c.dictionary, tuple(c.columns), c.from_lang, c.to_lang).items()}
        self.words = self.translated = 0

    def describe(self) -> str:
        """``lexicon_translate.v1 dictionary=<file name> columns=<from>,<to>``."""
        c = self.config
        top = f" sample_top={c.sample_top} seed={c.seed}" if c.sample_top > 1 else ""
        return (f"{self.name} dictionary={Path(c.dictionary).name} "
                f"columns={c.columns[0]},{c.columns[1]}{top}")

    def generate(self, sentences):
        """One word-for-word translation per sentence, scored by the share of words
        translated."""
        out = []
        top = self.config.sample_top
        for sent in sentences:
            rng = random.Random(f"{self.config.seed}\0{sent}") if top > 1 else None
            text, done, total = translate_words(sent, self.table, rng)
            self.words += total
            self.translated += done
            share = done / total if total else 0.0
            ok = total and share >= self.config.min_translated
            out.append([(text, share)] if ok else [])
        return out

    def manifest_info(self):
        """The table's size and the share of words translated so far."""
        return {"dictionary_words": len(self.table), "words_read": self.words,
                "words_translated": self.translated}
