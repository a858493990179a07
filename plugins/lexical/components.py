"""The filters ``lexical_coverage.v1`` and ``lexical_translation.v1`` and the trainer
``lexical_translation_model.v1``: the classic WMT-style lexical signals of parallel corpus filtering
(hunalign's dictionary coverage, Varga et al. 2005; bicleaner's probabilistic dictionaries and
IBM-1 lexical scores, Sánchez-Cartagena et al. 2018), built from a bilingual dictionary and word
tables learned with eflomal (Östling & Tiedemann 2017).

Both scores also serve ``alignment_recovery.v1`` (``measure: lexical_coverage`` or
``lexical_translation``) through :func:`lexical_matrix`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import Field, model_validator

from bitextforge import ComponentError, Filter, Trainer

from .words import NORMALISE, Words, check_stem

Direction = Literal["both", "src2tgt", "tgt2src"]
DEFAULT_NORMALISE = "stem"


def _texts(batch, col: str) -> list[str]:
    return ["" if t is None else t for t in batch[col]]


MARGIN_DOC = ("Subtract, from each pair's score, the mean score of its source with k random "
              "other targets of the batch and of its target with k random other sources (0: "
              "off): how much better a pair fits than chance partners of the same sentences, so "
              "text whose words the model barely knows is not taken for noise (CSLS, used by "
              "alignment recovery, compares with the k nearest partners instead). The score "
              "then depends on the batch, and cannot be cached.")


def margin_corrected(score, src: list[str], tgt: list[str], k: int, seed: int = 1) -> np.ndarray:
    """``score(src, tgt)`` minus half the mean of ``score`` for each source against ``k`` other
    targets and each target against ``k`` other sources of the same lists (a seeded draw; with
    fewer than two pairs there is nothing to compare with and the raw score is returned).

    The correction is Conneau et al.'s CSLS (and Artetxe & Schwenk's margin) applied to a pair
    score: a pair's raw score mixes how well its sides fit each other with how well the model
    knows their words, and only the first is what a filter wants.
    """
    raw = np.asarray(score(src, tgt), dtype=np.float64)
    n = len(src)
    if k <= 0 or n < 2:
        return raw
    rng = np.random.default_rng(seed)
    other_t = np.zeros(n)
    other_s = np.zeros(n)
    idx = np.arange(n)
    for _ in range(k):
        # a random other index for every row: shift by 1..n-1 so no row meets itself
        j = (idx + rng.integers(1, n, size=n)) % n
        other_t += np.asarray(score(src, [tgt[i] for i in j]), dtype=np.float64)
        other_s += np.asarray(score([src[i] for i in j], tgt), dtype=np.float64)
    return raw - (other_t + other_s) / (2 * k)


def _combine(a: np.ndarray, b: np.ndarray, direction: str) -> np.ndarray:
    if direction == "src2tgt":
        return a
    if direction == "tgt2src":
        return b
    return (a + b) / 2


class LexicalCoverageFilter(Filter):
    """IDF-weighted share of words with a dictionary translation on the other side (hunalign's and
    bicleaner's dictionary signal), in [0, 1]; ``both`` directions averaged by default.

    The dictionary is a TSV of entry pairs with ``;``-separated synonyms (the Ding de-en
    dictionary's ``subentry_pairs.de-en.tsv.gz`` by design); entries of up to ``max_words`` words a
    side give word pairs. Words are lowercased and, with ``normalise: stem`` (measured best, see
    docs/benchmarks.md), reduced to Snowball stems. Identical words on both sides count as
    translations. IDF weights come from the batch being scored (raise the step's ``batch_size``
    for steadier weights).
    """

    name = "lexical_coverage.v1"
    extra = "lexical"

    class Config(Filter.Config):
        """Options of lexical_coverage.v1."""

        dictionary: str = Field(description="Bilingual dictionary TSV (.gz ok), one entry per "
                                "line, synonyms separated by ';'.")
        dictionary_langs: tuple[str, str] = Field(("de", "en"), description="Languages of the "
                                                  "dictionary's two columns.")
        dictionary_columns: tuple[int, int] = Field((1, 2), description="0-based fields of the "
                                                    "two languages (Ding's file starts with a line "
                                                    "number).")
        src_lang: str = Field("de", description="Language of the src column.")
        tgt_lang: str = Field("en", description="Language of the tgt column.")
        normalise: Literal["lowercase", "stem"] = Field(DEFAULT_NORMALISE, description="lowercase, "
                                                        "or stem (lowercase + Snowball stemmer).")
        max_words: int = Field(1, ge=1, description="Use dictionary entries of at most this many "
                               "words a side (1 measured best: longer entries pair unrelated "
                               "words).")
        identical: bool = Field(True, description="Count identical words (names, numbers) as "
                                "translations.")
        margin: int = Field(0, ge=0, description=MARGIN_DOC)
        direction: Direction = Field("both", description="both (average), src2tgt (share of "
                                     "source words covered) or tgt2src.")

        @model_validator(mode="after")
        def _stemmers(self):
            # at validation, not when the dictionary is first read mid-run
            check_stem(self.normalise, self.src_lang, self.tgt_lang)
            return self

    @classmethod
    def uncacheable(cls, config):
        """The IDF weights (and a margin's random partners) come from the batch."""
        return "its IDF weights come from the other rows of its batch" + (
            ", and margin pairs each row with random other rows of it" if config.margin else "")

    @classmethod
    def input_paths(cls, config):
        """The dictionary."""
        return {"dictionary": config.dictionary}

    def __init__(self, config=None):
        """Read the dictionary once."""
        super().__init__(config)
        self.lexicon, self.words = load_coverage_lexicon(self.config)

    def score(self, batch):
        """One coverage per row."""
        from .coverage import Idf, coverage

        c = self.config
        a = [self.words[0].tokens(t) for t in _texts(batch, "src")]
        b = [self.words[1].tokens(t) for t in _texts(batch, "tgt")]
        idf_a, idf_b = Idf(a), Idf(b)

        def one(x, y):
            s2t, t2s = coverage(x, y, self.lexicon, idf_a, idf_b, c.identical)
            return _combine(s2t, t2s, c.direction)

        return margin_corrected(one, a, b, c.margin).tolist()

    def manifest_info(self):
        """Dictionary size."""
        return {"dictionary": self.config.dictionary, "word_pairs": len(self.lexicon)}


def load_coverage_lexicon(c):
    """The lexicon oriented src->tgt and the two languages' tokenisers for a coverage config."""
    from .dictionary import load_lexicon

    if c.normalise not in NORMALISE:
        raise ComponentError(f"unknown normalise {c.normalise!r}")
    if not Path(c.dictionary).exists():
        raise ComponentError(f"dictionary {c.dictionary} does not exist")
    lex = load_lexicon(str(c.dictionary), tuple(c.dictionary_langs), c.normalise, c.max_words,
                       tuple(c.dictionary_columns))
    langs = tuple(c.dictionary_langs)
    if (c.src_lang, c.tgt_lang) == langs[::-1]:
        lex = lex.swapped()
    elif (c.src_lang, c.tgt_lang) != langs:
        raise ComponentError(f"the dictionary is {langs[0]}-{langs[1]}; it cannot score "
                             f"{c.src_lang}-{c.tgt_lang} (set src_lang / tgt_lang)")
    return lex, (Words(c.src_lang, c.normalise), Words(c.tgt_lang, c.normalise))


class LexicalTranslationFilter(Filter):
    """IBM Model 1 length-normalised log-probability of each side given the other under lexical
    translation tables (bicleaner's lexical scores), ``both`` directions averaged by default;
    higher is better, 0 is the maximum.

    The tables come from ``lexical_translation_model.v1`` (eflomal alignments of a parallel
    corpus with a bilingual dictionary as prior).
    """

    name = "lexical_translation.v1"
    extra = "lexical"

    class Config(Filter.Config):
        """Options of lexical_translation.v1."""

        tables: str = Field(description="Directory written by lexical_translation_model.v1.")
        src_lang: str = Field("de", description="Language of the src column.")
        tgt_lang: str = Field("en", description="Language of the tgt column.")
        direction: Direction = Field("both", description="both (average), src2tgt "
                                     "(log P(tgt | src)) or tgt2src.")
        floor: float = Field(1e-5, gt=0, lt=1, description="Smallest word probability (1e-5 "
                             "measured better than 1e-7 and 1e-3, see docs/benchmarks.md).")
        copy_prob: float = Field(0.5, gt=0, le=1, description="Probability of an identical word "
                                 "the tables do not know (names, numbers).")
        margin: int = Field(0, ge=0, description=MARGIN_DOC)

    @classmethod
    def uncacheable(cls, config):
        """A margin pairs each row with random other rows of its batch."""
        return ("margin pairs each row with random other rows of its batch" if config.margin
                else None)

    @classmethod
    def input_paths(cls, config):
        """The tables directory."""
        return {"tables": config.tables}

    def __init__(self, config=None):
        """Load the tables once."""
        from .tables import TranslationTables

        super().__init__(config)
        c = self.config
        self.tables = TranslationTables(c.tables)
        self.fw, self.bw = self.tables.oriented(c.src_lang, c.tgt_lang)

    def score(self, batch):
        """One log-probability per row."""
        c = self.config

        def one(src, tgt):
            return lexical_translation_scores(self.fw, self.bw, src, tgt, c.direction, c.floor,
                                              c.copy_prob)

        return margin_corrected(one, _texts(batch, "src"), _texts(batch, "tgt"),
                                c.margin).tolist()

    def manifest_info(self):
        """Facts of the tables."""
        return {"tables": str(self.tables.path), **self.tables.facts}


def lexical_translation_scores(fw, bw, src: list[str], tgt: list[str], direction: str,
                               floor: float, copy_prob: float, matrix: bool = False):
    """IBM-1 scores of pairs (or every source against every target with ``matrix``) in the
    oriented tables ``fw`` (t(tgt|src)) and ``bw`` (t(src|tgt))."""
    from .tables import ibm1

    table, null, va, vb, wa, wb = fw
    a = [wa.tokens(t) for t in src]
    b = [wb.tokens(t) for t in tgt]
    out = []
    if direction in ("both", "src2tgt"):
        out.append(ibm1(a, b, table, null, va, vb, floor, copy_prob, matrix))
    if direction in ("both", "tgt2src"):
        table, null, va, vb = bw[:4]
        m = ibm1(b, a, table, null, va, vb, floor, copy_prob, matrix)
        out.append(m.T if matrix else m)
    return sum(out) / len(out)


def lexical_matrix(measure: str, options: dict, src: list[str], tgt: list[str]) -> np.ndarray:
    """The ``len(src) x len(tgt)`` score matrix of ``lexical_coverage`` or ``lexical_translation``
    with the options of the matching filter, for alignment recovery."""
    if measure == "lexical_coverage":
        from .coverage import Idf, coverage

        c = LexicalCoverageFilter.Config(**options)
        lex, (wa, wb) = load_coverage_lexicon(c)
        a, b = [wa.tokens(t) for t in src], [wb.tokens(t) for t in tgt]
        s2t, t2s = coverage(a, b, lex, Idf(a), Idf(b), c.identical, matrix=True)
        return _combine(s2t, t2s, c.direction)
    if measure == "lexical_translation":
        from .tables import TranslationTables

        c = LexicalTranslationFilter.Config(**options)
        fw, bw = TranslationTables(c.tables).oriented(c.src_lang, c.tgt_lang)
        return lexical_translation_scores(fw, bw, src, tgt, c.direction, c.floor, c.copy_prob,
                                          matrix=True)
    raise ComponentError(f"unknown lexical measure {measure!r}")


SAMPLE_DOC = ("Train on a uniform random sample of this many pairs (seeded by seed), drawn in "
              "one streaming pass over the whole corpus: memory follows the sample, not the "
              "corpus, for a crawl too large to align whole. docs/scale.md, \"Training at "
              "crawl size\", gives the memory and the quality cost.")


class LexicalTranslationTrainer(Trainer):
    """Learn lexical translation tables for ``lexical_translation.v1``: eflomal word alignments
    of a parallel corpus in both directions, a bilingual dictionary's word pairs as a prior, link
    counts normalised per word and pruned. Writes the directory ``output``."""

    name = "lexical_translation_model.v1"
    extra = "lexical"

    class Config(Trainer.Config):
        """Options of lexical_translation_model.v1."""

        corpus: list[str | tuple[str, str]] = Field(
            min_length=1, description="Parallel training files: src<TAB>tgt per line, or a "
            "pair [src_file, tgt_file] of line-aligned plain files (.gz ok).")
        langs: tuple[str, str] = Field(("de", "en"), description="Languages of the two columns.")
        limit: int | None = Field(None, ge=1, description="Use at most this many pairs: the "
                                  "first ones, in corpus order.")
        sample: int | None = Field(None, ge=1, description=SAMPLE_DOC)
        seed: int = Field(1, description="Seed of sample's draw.")
        dictionary: str | None = Field(None, description="Bilingual dictionary TSV used as a "
                                       "prior (as for lexical_coverage.v1); none = no prior.")
        dictionary_langs: tuple[str, str] = Field(("de", "en"), description="Languages of the "
                                                  "dictionary's columns.")
        dictionary_columns: tuple[int, int] = Field((1, 2), description="0-based fields of the "
                                                    "dictionary's two languages.")
        prior: float = Field(1.0, ge=0, description="Pseudo-links added for each dictionary "
                             "word pair.")
        normalise: Literal["lowercase", "stem"] = Field(DEFAULT_NORMALISE, description="Word "
                                                        "normalisation (lowercase or stem).")
        iterations: int | None = Field(None, ge=1, description="eflomal iterations per model "
                                       "(default: eflomal's, from the corpus size).")
        max_len: int = Field(80, ge=1, description="Leave out pairs with a longer side (words).")
        min_prob: float = Field(1e-4, gt=0, lt=1, description="Prune translations below this.")
        top: int = Field(50, ge=0, description="Keep at most this many translations a word "
                         "(0 = all).")

        @model_validator(mode="after")
        def _stemmers(self):
            # at validation, not after the corpus was read and eflomal started
            check_stem(self.normalise, *self.langs)
            if self.limit is not None and self.sample is not None:
                raise ValueError("set limit (the first pairs) or sample (a random sample), "
                                 "not both")
            return self

    @classmethod
    def input_paths(cls, config):
        """The corpus files and the dictionary."""
        return {"corpus": config.corpus, "dictionary": config.dictionary}

    def train(self):
        """Align, count and write the tables."""
        from bitextforge.api import read_tsv_pairs
        from bitextforge.api import sample_tsv_pairs

        from .dictionary import load_lexicon
        from .tables import train_tables

        c = self.config
        read = None
        if c.sample is not None:
            src, tgt, read = sample_tsv_pairs(c.corpus, c.sample, c.seed)
            self.log(f"sampled {len(src):,} of {read:,} pairs")
        else:
            src, tgt = read_tsv_pairs(c.corpus, limit=c.limit)
        lex = None
        if c.dictionary and c.prior > 0:
            lex = load_lexicon(str(c.dictionary), tuple(c.dictionary_langs), c.normalise, 1,
                               tuple(c.dictionary_columns))
            if tuple(c.langs) == tuple(c.dictionary_langs)[::-1]:
                lex = lex.swapped()
            elif tuple(c.langs) != tuple(c.dictionary_langs):
                raise ComponentError(f"{self.name}: the dictionary is "
                                     f"{'-'.join(c.dictionary_langs)}, the corpus "
                                     f"{'-'.join(c.langs)}")
        facts = train_tables(src, tgt, c.output, tuple(c.langs), c.normalise, lex, c.prior,
                             c.iterations, c.max_len, c.min_prob, c.top, who=self.name)
        return facts if read is None else {**facts, "sampled_from": read}
