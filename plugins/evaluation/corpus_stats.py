"""Corpus statistics of Wieting, Mallinson & Gimpel 2017, *Learning Paraphrastic Sentence
Embeddings from Back-Translated Bitext*, section 5.6 (Tables 9 and 10): sentence length, unigram
and trigram entropy, unigram and trigram repetition rates and average IDF, per text column, and
the differences between paraphrases and their originals (Table 9 subtracts the translations'
value from the references').

Definitions, as in the paper: the repetition rate is the percentage of tokens (trigrams) that
already appeared earlier in the same sentence, counting only unigrams of at least 3 characters;
entropy is the Shannon entropy (bits) of the corpus-wide unigram / trigram distribution; tokens
are lowercased (footnote 6) and come from sacremoses (Koehn et al.'s Moses tokenizer). IDF is
scikit-learn's smoothed idf, ln((1 + N) / (1 + df)) + 1, over the lines of a corpus the user
points to (the paper used Wikipedia).
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Literal

from pydantic import Field

from bitextforge import Evaluator, InputError, Report
from bitextforge.api import progress

from ._texts import read_text_file


def entropy_bits(counts: Counter) -> float:
    """Shannon entropy in bits of a frequency table (0 for an empty one)."""
    total = sum(counts.values())
    if not total:
        return 0.0
    return -sum(c / total * math.log2(c / total) for c in counts.values())


def repetitions(items: list, min_chars: int = 0) -> tuple[int, int]:
    """(repeated, considered): items already seen earlier in the list, among those considered."""
    seen = set()
    rep = cons = 0
    for it in items:
        if min_chars and len(it) < min_chars:
            continue
        cons += 1
        if it in seen:
            rep += 1
        else:
            seen.add(it)
    return rep, cons


def _mean(values: list[float]) -> float:
    """Mean of the values that are not NaN (a sentence without a token to count has none);
    NaN when none is left."""
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def trigrams(tokens: list[str]) -> list[tuple[str, str, str]]:
    """Consecutive token trigrams of one sentence."""
    return list(zip(tokens, tokens[1:], tokens[2:]))


class IdfTable:
    """Smoothed IDF from a file of documents (one per line), fitted with scikit-learn."""

    def __init__(self, lines: list[str], tokenize):
        """Count document frequencies of the tokens of ``lines``."""
        from sklearn.feature_extraction.text import TfidfVectorizer

        vec = TfidfVectorizer(tokenizer=tokenize, lowercase=False, token_pattern=None,
                              smooth_idf=True)
        vec.fit(lines)
        self.idf = dict(zip(vec.get_feature_names_out(), vec.idf_))
        # an unseen token has df = 0 under the same smoothing
        self.unseen = math.log((1 + len(lines)) / 1) + 1

    def average(self, tokens: list[str]) -> float:
        """Mean IDF of a sentence's tokens (NaN for an empty sentence)."""
        if not tokens:
            return math.nan
        get = self.idf.get
        return sum(get(t, self.unseen) for t in tokens) / len(tokens)


class CorpusStatsEvaluator(Evaluator):
    """Length, n-gram entropy, repetition rates and average IDF per text column (Wieting 2017).

    Describes each of ``columns`` (default src and tgt) over all rows; when the corpus has
    paraphrase rows (variant > 0 with a ``<side>_original`` column) it also describes the
    paraphrases and their distinct originals separately and reports ``original - paraphrase``
    differences as in Table 9. Extra text files (e.g. references and machine translations) can be
    described with ``files`` and compared pairwise with ``compare``. Per-sentence length,
    repetition rates and average IDF go into the report's items.
    """

    name = "corpus_stats.v1"

    class Config(Evaluator.Config):
        """Options of corpus_stats.v1."""

        columns: list[str] = Field(["src", "tgt"], description="Text columns to describe.")
        files: dict[str, str] = Field(default_factory=dict, description="Extra texts to describe: "
                                      "name -> file (one sentence per line).")
        compare: list[tuple[str, str]] = Field(default_factory=list, description="Pairs "
                                               "[a, b] of described names whose a - b "
                                               "differences to report (Table 9: references "
                                               "minus translations).")
        tokenizer: Literal["moses", "whitespace"] = Field("moses", description="sacremoses "
                                                          "tokenizer or whitespace split.")
        languages: dict[str, str] = Field(default_factory=dict, description="Moses tokenizer "
                                          "language per described name (default en).")
        lowercase: bool = Field(True, description="Lowercase tokens (as the paper's IDF).")
        idf_corpus: str | None = Field(None, description="File of documents (one per line) to "
                                       "compute IDF from; no average IDF without it (needs the "
                                       "quality extra).")
        idf_lines: int | None = Field(None, gt=0, description="Read only the first N lines of "
                                      "idf_corpus.")
        idf_language: str = Field("en", description="Moses tokenizer language of idf_corpus.")
        items: bool = Field(True, description="Write per-sentence values into the report items.")

    @classmethod
    def extras(cls, config=None):
        """The core install describes texts; average IDF (``idf_corpus``) needs scikit-learn,
        in the ``quality`` extra."""
        return ("quality",) if config is not None and config.idf_corpus else ()

    def __init__(self, config=None):
        """Build tokenizers lazily per language; read the IDF corpus now (fails fast)."""
        super().__init__(config)
        self._tok: dict[str, object] = {}
        # tokens by (language, sentence): originals and paraphrases are described again as
        # their own groups, and Moses tokenisation is most of the cost
        self._tokens: dict[tuple[str, str], list[str]] = {}
        self.idf: IdfTable | None = None
        c = self.config
        if c.idf_corpus:
            lines = read_text_file(c.idf_corpus, f"{self.name} idf_corpus")
            if c.idf_lines:
                lines = lines[: c.idf_lines]
            if not lines:
                raise InputError(f"{self.name}: idf_corpus {c.idf_corpus} is empty")
            self.idf = IdfTable(lines, self._tokenizer(c.idf_language))

    def _tokenizer(self, lang: str):
        c = self.config
        if c.tokenizer == "whitespace":
            def tok(s: str) -> list[str]:
                return (s.lower() if c.lowercase else s).split()
            return tok
        if lang not in self._tok:
            from sacremoses import MosesTokenizer

            mt = MosesTokenizer(lang=lang)

            def tok(s: str, mt=mt) -> list[str]:
                toks = mt.tokenize(s, escape=False)
                return [t.lower() for t in toks] if c.lowercase else toks
            self._tok[lang] = tok
        return self._tok[lang]

    def describe(self, texts: list[str], lang: str) -> tuple[dict[str, float], dict[str, list]]:
        """Statistics of one list of sentences: (numbers, per-sentence items)."""
        import numpy as np

        tok = self._tokenizer(lang)
        cache = self._tokens
        uni: Counter = Counter()
        tri: Counter = Counter()
        lengths: list[int] = []
        rep1_s: list[float] = []
        rep3_s: list[float] = []
        idf_s: list[float] = []
        for s in progress(texts, f"{self.name}: {len(texts)} sentences", unit=" sentences",
                          minimum=20_000):
            toks = cache.get((lang, s))
            if toks is None:
                toks = cache[(lang, s)] = tok(s)
            grams = trigrams(toks)
            uni.update(toks)
            tri.update(grams)
            lengths.append(len(toks))
            a, b = repetitions(toks, min_chars=3)
            rep1_s.append(100.0 * a / b if b else math.nan)
            a, b = repetitions(grams)
            rep3_s.append(100.0 * a / b if b else math.nan)
            if self.idf is not None:
                idf_s.append(self.idf.average(toks))
        L = np.array(lengths, dtype=float) if lengths else np.zeros(1)
        nums = {
            "sentences": float(len(texts)),
            "length_mean": float(L.mean()), "length_std": float(L.std()),
            "length_median": float(np.median(L)),
            "length_p10": float(np.percentile(L, 10)), "length_p90": float(np.percentile(L, 90)),
            "unigram_entropy": entropy_bits(uni), "trigram_entropy": entropy_bits(tri),
            # the mean of the per-sentence rates in the items, as the report's histogram shows
            # it (pooling every token instead weighted long sentences, which repeat more)
            "unigram_repetition": _mean(rep1_s), "trigram_repetition": _mean(rep3_s),
            "types": float(len(uni)),
        }
        items = {"length": [float(x) for x in lengths], "unigram_repetition": rep1_s,
                 "trigram_repetition": rep3_s}
        if self.idf is not None:
            nums["average_idf"] = _mean(idf_s)
            items["average_idf"] = idf_s
        return nums, items

    @classmethod
    def input_paths(cls, config):
        """The extra text files and the IDF corpus."""
        return {**{f"files.{k}": v for k, v in config.files.items()},
                "idf_corpus": config.idf_corpus}

    def evaluate(self, corpus) -> Report:
        """Numbers named ``<name>.<statistic>`` and ``<a>-<b>.<statistic>`` for comparisons."""
        c = self.config
        texts: dict[str, list[str]] = {}
        langs: dict[str, str] = {}
        for col in c.columns:
            if col not in corpus.columns:
                raise InputError(f"{self.name}: no column {col!r}; columns are "
                                 f"{', '.join(corpus.columns)}")
            texts[col] = [str(x) for x in corpus.column(col)]
            langs[col] = c.languages.get(col, "en")
        pairs = list(c.compare)
        variants = corpus.column("variant") if "variant" in corpus.columns else []
        if any(v > 0 for v in variants):
            ids = corpus.column("id")
            for col in c.columns:
                orig = f"{col}_original"
                if orig not in corpus.columns:
                    continue
                paras = [t for t, v in zip(texts[col], variants) if v > 0]
                seen: set = set()
                originals = []
                for i, v, o in zip(ids, variants, corpus.column(orig)):
                    if v > 0 and i not in seen:
                        seen.add(i)
                        originals.append(str(o))
                texts[f"{col}.paraphrases"] = paras
                texts[f"{col}.originals"] = originals
                langs[f"{col}.paraphrases"] = langs[f"{col}.originals"] = langs[col]
                pairs.append((f"{col}.originals", f"{col}.paraphrases"))
        for name, path in c.files.items():
            texts[name] = read_text_file(path, f"{self.name} files.{name}")
            langs[name] = c.languages.get(name, "en")
        for a, b in pairs:
            for x in (a, b):
                if x not in texts:
                    raise InputError(f"{self.name}: compare names {x!r}, which is neither a "
                                     f"described column nor a files entry ({', '.join(texts)})")
        numbers: dict[str, float] = {}
        items: dict[str, list[float]] = {}
        described = {}
        for name, lst in texts.items():
            nums, its = self.describe(lst, langs[name])
            described[name] = nums
            numbers.update({f"{name}.{k}": v for k, v in nums.items()})
            if c.items:
                items.update({f"{name}.{k}": v for k, v in its.items()})
        keys = ("length_mean", "unigram_entropy", "trigram_entropy", "unigram_repetition",
                "trigram_repetition") + (("average_idf",) if self.idf is not None else ())
        # the IDF column only when there is an idf_corpus: a column of "nan" says nothing
        lines = [f"{'text':<24} {'sents':>7} {'len':>6} {'H(uni)':>7} {'H(tri)':>7} "
                 f"{'rep1%':>6} {'rep3%':>6}" + (f" {'IDF':>6}" if self.idf is not None else "")]
        for name, nums in described.items():
            lines.append(f"{name:<24} {int(nums['sentences']):>7} " + " ".join(
                f"{nums.get(k, math.nan):{6 if i in (0, 3, 4, 5) else 7}.2f}"
                for i, k in enumerate(keys)))
        for a, b in pairs:
            for k in keys:
                if k in described[a] and k in described[b]:
                    numbers[f"{a}-{b}.{k}"] = described[a][k] - described[b][k]
            lines.append(f"{a} - {b}: " + ", ".join(
                f"{k} {numbers[f'{a}-{b}.{k}']:+.2f}" for k in keys if f"{a}-{b}.{k}" in numbers))
        return Report(numbers=numbers, items=items, summary="\n".join(lines))
