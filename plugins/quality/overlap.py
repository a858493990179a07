"""Surface-similarity filters between two columns: n-gram overlap (``ngram_overlap.v1``) and
sacrebleu's sentence BLEU (``sentence_bleu.v1``) and chrF (``sentence_chrf.v1``).

- n-gram overlap is Wieting et al. 2017, section 5.7 and ParaNMT-50M, section 5.4 (trigram
  overlap between a back-translation and its reference, used to drop near-copies and unrelated
  pairs): the number of distinct n-grams the two sentences share divided by the number of
  distinct n-grams of whichever sentence has fewer. Tokens come from sacremoses.
- sentence BLEU uses sacrebleu's ``BLEU.sentence_score`` with its smoothing methods (Wieting et
  al. 2017 use BLEU with add-one-style smoothing, sacrebleu's ``add-k`` with k=1 or ``exp``);
  sentence chrF uses sacrebleu's ``CHRF.sentence_score`` (chrF, or chrF++ with ``word_order: 2``).
  One metric object is built per run and reused for every pair.

By default a filter compares the paraphrased side with its ``<side>_original`` column when a
paraphrase step wrote one, else ``src`` with ``tgt``; ``columns: [hyp, ref]`` chooses any two.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from bitextforge import Filter

from ._common import Tokenizer, column_texts, pick_columns

_COLUMNS_HELP = ("Two columns [hypothesis, reference] to compare; empty: the paraphrased side "
                 "and its <side>_original column if present, else [src, tgt].")


def _ngrams(tokens: list[str], n: int) -> set:
    if n == 1:
        return set(tokens)
    return set(zip(*(tokens[i:] for i in range(n))))


def overlap(a: set, b: set) -> float:
    """|a & b| / min(|a|, |b|); 0 when either side has no n-gram."""
    if not a or not b:
        return 0.0
    small, big = (a, b) if len(a) <= len(b) else (b, a)
    return sum(1 for g in small if g in big) / len(small)


class NgramOverlapFilter(Filter):
    """Shared distinct n-grams divided by the n-gram count of the side that has fewer (0..1).

    Wieting et al. 2017, 5.7; ParaNMT-50M, 5.4 (trigram overlap). A sentence with fewer than n
    tokens has no n-gram and scores 0. Bound from above to drop near-copies of the original
    (``keep: {max: 0.7}``) and from below to drop unrelated pairs.
    """

    name = "ngram_overlap.v1"

    class Config(Filter.Config):
        """Options of ngram_overlap.v1."""

        n: Literal[1, 2, 3] = Field(3, description="n-gram order (Wieting 2017 uses 1-3; "
                                    "ParaNMT trigrams).")
        columns: tuple[str, str] | None = Field(None, description=_COLUMNS_HELP)
        lowercase: bool = Field(True, description="Lowercase before tokenising.")
        lang: str = Field("en", description="Language of both columns for sacremoses' rules "
                          "(ISO 639-1).")

    def __init__(self, config=None):
        """Build the tokenizer once."""
        super().__init__(config)
        self.tok = Tokenizer(self.config.lang, self.config.lowercase)

    def score(self, batch):
        """Overlap per row."""
        a, b = pick_columns(self.name, batch, self.config.columns)
        n, tok = self.config.n, self.tok.tokens
        return [overlap(_ngrams(tok(x), n), _ngrams(tok(y), n))
                for x, y in zip(column_texts(batch, a), column_texts(batch, b))]


class _SentenceMetricFilter(Filter):
    """Shared scoring of the sacrebleu sentence filters: ``self.metric`` (built once per run by the
    subclass) of one column against another."""

    metric = None

    def score(self, batch):
        """The metric's sentence score per row."""
        a, b = pick_columns(self.name, batch, self.config.columns)
        f = self.metric.sentence_score
        return [f(h, [r]).score for h, r in zip(column_texts(batch, a), column_texts(batch, b))]


class SentenceBleuFilter(_SentenceMetricFilter):
    """sacrebleu sentence BLEU (0..100) of one column against another, with smoothing.

    Wieting et al. 2017, 5.7 (smoothed sentence BLEU between a paraphrase and its reference).
    ``smooth_method: exp`` is sacrebleu's default; ``add-k`` with ``smooth_value: 1`` is BLEU+1
    style. ``effective_order`` (on by default, as sacrebleu recommends for sentences) ignores
    n-gram orders longer than the sentence.
    """

    name = "sentence_bleu.v1"

    class Config(Filter.Config):
        """Options of sentence_bleu.v1."""

        columns: tuple[str, str] | None = Field(None, description=_COLUMNS_HELP)
        smooth_method: Literal["exp", "floor", "add-k", "none"] = Field(
            "exp", description="sacrebleu smoothing method.")
        smooth_value: float | None = Field(None, description="Value for floor (default 0.1) "
                                           "or add-k (default 1).")
        lowercase: bool = Field(False, description="Case-insensitive BLEU.")
        tokenize: str | None = Field(None, description="sacrebleu tokenizer (13a, intl, char, "
                                     "ja-mecab, ...); empty: sacrebleu's default 13a.")
        effective_order: bool = Field(True, description="Ignore n-gram orders the sentence is "
                                      "too short to have.")

    def __init__(self, config=None):
        """Build one sacrebleu BLEU object for the whole run."""
        super().__init__(config)
        from sacrebleu.metrics import BLEU

        c = self.config
        self.metric = BLEU(lowercase=c.lowercase, tokenize=c.tokenize,
                           smooth_method=c.smooth_method, smooth_value=c.smooth_value,
                           effective_order=c.effective_order)


class SentenceChrfFilter(_SentenceMetricFilter):
    """sacrebleu sentence chrF (0..100) of one column against another; chrF++ with word_order 2.

    Character n-gram F-score (Popović 2015), a smoother sentence-level measure than BLEU; used
    like sentence BLEU for paraphrase pairs and hypothesis-vs-reference columns (Wieting et al.
    2017, 5.7).
    """

    name = "sentence_chrf.v1"

    class Config(Filter.Config):
        """Options of sentence_chrf.v1."""

        columns: tuple[str, str] | None = Field(None, description=_COLUMNS_HELP)
        char_order: int = Field(6, ge=1, description="Character n-gram order.")
        word_order: int = Field(0, ge=0, description="Word n-gram order (2 = chrF++).")
        beta: int = Field(2, ge=1, description="Recall weight of the F-score.")
        lowercase: bool = Field(False, description="Case-insensitive chrF.")
        whitespace: bool = Field(False, description="Count whitespace in character n-grams.")
        eps_smoothing: bool = Field(False, description="sacrebleu's eps smoothing (as chrF++.py) "
                                    "instead of its default effective-order smoothing.")

    def __init__(self, config=None):
        """Build one sacrebleu CHRF object for the whole run."""
        super().__init__(config)
        from sacrebleu.metrics import CHRF

        c = self.config
        self.metric = CHRF(char_order=c.char_order, word_order=c.word_order, beta=c.beta,
                           lowercase=c.lowercase, whitespace=c.whitespace,
                           eps_smoothing=c.eps_smoothing)
