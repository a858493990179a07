"""A parallel-pair classifier trained without human labels (``pair_classifier_model.v1``) and the
filter that applies it (``pair_classifier.v1``), in the manner of bicleaner-ai (Zaragoza-Bernabeu
et al. 2022, *Bicleaner AI: Bicleaner goes neural*, section 3: clean pairs as positives and
synthetic noise made from them as negatives) and of classic bicleaner's feature classifier
(Sánchez-Cartagena et al. 2018), but with the project's own scores as features.

Negatives are made from the clean pairs, one kind after another: ``misaligned`` (the target of
another pair), ``shuffled`` (the target's words in random order), ``truncated`` (a side cut to
30-70 % of its words), ``wrong_language`` (the two sides swapped, so each is in the other
language), ``untranslated`` (the source copied as target), ``numbers`` (a near-duplicate whose
target numbers changed, or gained one) and, when asked for, ``appended`` (another pair's sentence
added to one side), ``partial`` (a loose translation: one side loses a clause, 10-30 % of its
words, so most of the pair still matches), ``neighbour`` (a span of one side replaced by a span
of the neighbouring pair's same side, as a sentence aligner does across a boundary) and
``machine_translated`` (the target replaced by the translation of the source by the model
``mt_model`` names), ``mistranslated`` (a few words of one side replaced by other sentences'
words: a translation with wrong words) and ``word_for_word`` (the target replaced by the source
glossed word by word from a dictionary, as ``lexicon_translate.v1`` does: the most literal
translation there is): these look like the free translations, aligner errors, machine
translations and translation errors of real crawls (the verdicts F, A, MT and E of ParaCrawl's
human evaluations).

Features are a few surface measures computed here (lengths, length ratio, agreement of numbers
and capitalised words, copied words, final punctuation; optionally measures with no absolute
length in them, for a model trained on one domain and applied to another: punctuation, casing,
symbols, URLs and the character trigrams of names) plus the score of every filter listed under
``features`` (any registered filter, built with its options: lexical coverage and translation
scores, language ID, KenLM perplexity, bilingual similarity...). A scikit-learn histogram
gradient boosting classifier learns P(clean).
"""

from __future__ import annotations

import json
import math
import re
import time
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from bitextforge import BitextforgeError, ComponentError, Filter, InputError, Trainer
from bitextforge.api import phase, progress

# the negatives' old home: benchmarks and recipes' plugins import them from here
from .negatives import (MORE_NEGATIVES, NEGATIVE_MAKERS, NEGATIVES, NUMBER_RE,  # noqa: F401
                        make_negatives)

FORMAT = "bitextforge-pair-classifier/1"
_NUMBER = NUMBER_RE
_WORD = re.compile(r"\w+")
SURFACE = ("src_chars_log", "tgt_chars_log", "char_ratio_log", "word_ratio_log",
           "numbers_agree", "numbers_jaccard", "caps_jaccard", "copied_words", "identical",
           "final_punct_agree")
#: measures that say nothing about the domain or language pair (no absolute lengths), for
#: training on one domain (captions) and filtering another (web text)
EXTRA_SURFACE = ("punct_jaccard", "case_agree", "upper_share_diff", "symbol_share_diff",
                 "names_char_overlap", "urls_agree")
ALL_SURFACE = SURFACE + EXTRA_SURFACE
_URL = re.compile(r"(?:https?://|www\.)\S+|\S+@\S+\.\w+", re.I)
# quotation marks differ by language (« » in French, „ “ in Czech): one class for all of them
_QUOTES = str.maketrans({c: '"' for c in "«»“”„‟‚‘’'`´"})
# the full stops, question and exclamation marks of Chinese and Japanese end a sentence as ".?!"
# do: a Japanese "。" against an English "." is the same final punctuation
_FINALS = str.maketrans({"。": ".", "．": ".", "｡": ".", "？": "?", "！": "!"})


class FeatureFilter(BaseModel):
    """One filter whose score is a feature: its registered name and its options."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    filter: str = Field(description="Registered filter name, e.g. lexical_translation.v1.")
    with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                  description="The filter's options.")


def _jaccard(a: set, b: set) -> float:
    return 1.0 if not a and not b else len(a & b) / len(a | b)


def _punct(text: str) -> set[str]:
    return {c for c in text.translate(_QUOTES) if not c.isalnum() and not c.isspace()}


def _share(text: str, pred) -> float:
    chars = [c for c in text if not c.isspace()]
    return sum(1 for c in chars if pred(c)) / max(len(chars), 1)


def _names(text: str) -> set[str]:
    """Capitalised words after the first word (the first is capitalised in any sentence)."""
    words = _WORD.findall(text)
    return {w.lower() for w in words[1:] if w[:1].isupper()}


def _char_grams(words: set[str], n: int = 3) -> set[str]:
    # inflected names (Czech "Obamy", "Prahy") keep most of their trigrams
    return {w[i:i + n] for w in words for i in range(max(1, len(w) - n + 1))}


def _extra(s: str, t: str) -> dict[str, float]:
    cs, ct = s.strip()[:1], t.strip()[:1]
    return {
        "punct_jaccard": _jaccard(_punct(s), _punct(t)),
        "case_agree": float(cs.isupper() == ct.isupper()),
        "upper_share_diff": abs(_share(s, str.isupper) - _share(t, str.isupper)),
        "symbol_share_diff": abs(_share(s, lambda c: not c.isalpha())
                                 - _share(t, lambda c: not c.isalpha())),
        "names_char_overlap": _jaccard(_char_grams(_names(s)), _char_grams(_names(t))),
        "urls_agree": float(set(_URL.findall(s)) == set(_URL.findall(t))),
    }


def surface_features(src: list[str], tgt: list[str],
                     names: tuple[str, ...] | list[str] = SURFACE) -> np.ndarray:
    """The surface measures ``names`` (from :data:`ALL_SURFACE`) for each pair, in that order."""
    unknown = [n for n in names if n not in ALL_SURFACE]
    if unknown:
        raise ComponentError(f"unknown surface measure {unknown[0]!r}; choose from "
                             f"{', '.join(ALL_SURFACE)}")
    out = np.zeros((len(src), len(names)), dtype=np.float32)
    base = [SURFACE.index(n) for n in names if n in SURFACE]
    extra = any(n in EXTRA_SURFACE for n in names)
    for r, (s, t) in enumerate(zip(src, tgt)):
        s, t = s or "", t or ""
        row = {}
        if base:
            ns, nt = set(_NUMBER.findall(s)), set(_NUMBER.findall(t))
            ws, wt = _WORD.findall(s.lower()), _WORD.findall(t.lower())
            cs = {w for w in _WORD.findall(s) if w[:1].isupper()}
            ct = {w for w in _WORD.findall(t) if w[:1].isupper()}
            copied = sum(1 for w in wt if w in set(ws)) / max(len(wt), 1)
            fs, ft = s.strip()[-1:].translate(_FINALS), t.strip()[-1:].translate(_FINALS)
            row = dict(zip(SURFACE, (
                math.log1p(len(s)), math.log1p(len(t)),
                math.log((len(s) + 1) / (len(t) + 1)), math.log((len(ws) + 1) / (len(wt) + 1)),
                float(ns == nt), _jaccard(ns, nt), _jaccard(cs, ct), copied,
                float(s.strip() == t.strip()),
                float((not fs.isalnum()) == (not ft.isalnum()) and (fs == ft or fs.isalnum())))))
        if extra:
            row.update(_extra(s, t))
        out[r] = [row[n] for n in names]
    return out



def translate_best(texts: list[str], model: str, backend: str = "ctranslate2",
                   who: str = "pair_classifier_model.v1") -> list[str]:
    """``model``'s best translation (beam 4) of each text, by the nmt plugin's ``backend``,
    loaded for this call only (a trainer needs the memory for its features next): how the
    ``machine_translated`` negatives are made, also for a benchmark's validation noise."""
    from bitextforge.plugins.nmt.backends import Decoding, make_backend

    engine = make_backend(backend, model, option=f"{who} mt_model")
    try:
        with phase(who, f"translating {len(texts):,} sources with {model}"):
            return [cands[0][0] if cands else ""
                    for cands in engine.translate(texts, Decoding(beam=4, k=1))]
    finally:
        engine.close()


class FeatureScorer:
    """Builds the feature filters once and turns pairs into feature rows."""

    def __init__(self, specs: list[FeatureFilter],
                 surface: tuple[str, ...] | list[str] = SURFACE):
        """Build each listed filter through the registry; ``surface`` names the surface
        measures that come first."""
        from bitextforge.api import get_registry

        reg = get_registry()
        self.filters = []
        self.surface = tuple(surface)
        self.names = list(self.surface)
        for n, spec in enumerate(specs):
            cls = reg.get("filter", spec.filter)
            self.filters.append(cls(cls.Config(**spec.with_)))
            # one filter may be a feature twice with different options
            self.names.append(spec.filter if spec.filter not in self.names
                              else f"{spec.filter}#{n}")
        #: seconds spent on each feature column group (``surface`` and each filter's name) and
        #: the pairs scored, so a run can say which feature costs what (pairs/s per component)
        self.seconds = {"surface": 0.0, **{n: 0.0 for n in self.filter_names}}
        self.pairs = 0

    @property
    def filter_names(self) -> list[str]:
        """The feature names of the filters, in the order of :attr:`filters`."""
        return self.names[len(self.surface):]

    def features(self, src: list[str], tgt: list[str], batch: int = 2000,
                 who: str | None = None) -> np.ndarray:
        """One row per pair: the surface measures, then each filter's score (inf and NaN are
        replaced by finite extremes; the classifier needs numbers). With ``who`` (a trainer's
        name), each filter's scoring shows progress under that name."""
        t0 = time.perf_counter()
        cols = [surface_features(src, tgt, self.surface)]
        self.seconds["surface"] += time.perf_counter() - t0
        self.pairs += len(src)
        for f, name in zip(self.filters, self.filter_names):
            t0 = time.perf_counter()
            vals = []
            starts = range(0, len(src), batch)
            if who is not None:
                starts = progress(starts, f"{who}: {f.name} scores", unit=" pairs",
                                  total=len(src), weight=lambda s: min(batch, len(src) - s))
            for s in starts:
                vals.extend(f.score({"src": src[s:s + batch], "tgt": tgt[s:s + batch]}))
            cols.append(np.asarray(vals, dtype=np.float64)[:, None])
            self.seconds[name] += time.perf_counter() - t0
        X = np.hstack(cols).astype(np.float64)
        return np.nan_to_num(X, nan=-1e3, posinf=1e3, neginf=-1e3)

    def close(self):
        """Close the filters."""
        for f in self.filters:
            f.close()


def file_shares(sizes: list[int], limit: int | None) -> list[int | None]:
    """How many pairs to draw from each file of ``sizes`` pairs so that ``limit`` are drawn in
    all (or every pair, when the files hold fewer): equal shares, and what a small file cannot
    fill goes to the others in equal parts. None for every file when there is no limit."""
    if limit is None:
        return [None] * len(sizes)
    share = [0] * len(sizes)
    open_ = [i for i, n in enumerate(sizes) if n > 0]
    left = limit
    while left > 0 and open_:
        each, extra = divmod(left, len(open_))
        for k, i in enumerate(list(open_)):
            give = min(each + (k < extra), sizes[i] - share[i])
            share[i] += give
            left -= give
        open_ = [i for i in open_ if share[i] < sizes[i]]
    return share


def drop_equal_to_clean(src: list[str], tgt: list[str], ns: list[str], nt: list[str],
                        kinds: list[str]) -> tuple[list[str], list[str], list[str], list[int]]:
    """The negatives that differ from every clean pair once whitespace is ignored, their kinds
    and the index of the clean pair each was made from. A negative cut from a one-word side, or
    one that only lost a space before its final full stop, is its clean pair: kept, it would
    teach that clean pairs are noise."""
    def key(s: str, t: str) -> tuple[str, str]:
        return "".join(s.split()), "".join(t.split())

    clean = {key(s, t) for s, t in zip(src, tgt)}
    keep = [i for i, (s, t) in enumerate(zip(ns, nt)) if key(s, t) not in clean]
    return [ns[i] for i in keep], [nt[i] for i in keep], [kinds[i] for i in keep], keep


def evenly(pairs: list[tuple[str, str]], n: int | None) -> list[tuple[str, str]]:
    """The pairs with two non-empty sides, at most ``n`` of them drawn evenly through the list
    (all when ``n`` is None): how ``pair_classifier_model.v1`` samples each corpus file."""
    keep = [(a, b) for a, b in pairs if a.strip() and b.strip()]
    if n is not None and len(keep) > n:
        step = len(keep) / n
        keep = [keep[int(k * step)] for k in range(n)]
    return keep


def read_evenly(corpus, limit: int | None) -> tuple[list[str], list[str]]:
    """The pairs :func:`evenly` draws from each corpus entry, with :func:`file_shares`' share of
    ``limit`` each, as (sources, targets): two streaming passes (count, then draw), so that
    memory follows ``limit`` and not the files (a crawl of millions of pairs)."""
    from bitextforge.api import iter_tsv_pairs

    def usable(entry):
        return ((a, b) for a, b in iter_tsv_pairs([entry]) if a.strip() and b.strip())

    sizes = [sum(1 for _ in usable(entry)) for entry in corpus]
    src, tgt = [], []
    for entry, size, n in zip(corpus, sizes, file_shares(sizes, limit)):
        if n is None or n >= size:
            wanted = None
        elif n == 0:  # the other files filled the limit
            continue
        else:  # the indices evenly() takes from a list of `size` pairs
            step = size / n
            wanted = {int(k * step) for k in range(n)}
        for i, (a, b) in enumerate(usable(entry)):
            if wanted is None or i in wanted:
                src.append(a)
                tgt.append(b)
    return src, tgt


def _validate_specs(specs: list[FeatureFilter]) -> None:
    from pydantic import ValidationError

    from bitextforge import RegistryError
    from bitextforge.api import get_registry

    reg = get_registry()
    for n, spec in enumerate(specs):
        try:
            cls = reg.get("filter", spec.filter)
        except RegistryError as e:
            raise ValueError(f"features[{n}].filter: {e}") from None
        if cls.name == PairClassifierFilter.name:
            raise ValueError(f"features[{n}]: {cls.name} cannot be its own feature")
        try:
            cls.Config(**spec.with_)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise ValueError(f"features[{n}].with.{where}: {err['msg']} (options of "
                             f"{cls.name})") from None


_CONTROLLER = None


def openmp_threads(n: int):
    """A context that runs scikit-learn's OpenMP code (the histogram gradient boosting's fit and
    prediction) on ``n`` threads. Without it OpenMP takes every core, and on a machine busy with
    other work its threads wait at each parallel region for one another: a 1,000-row fit of 0.7 s
    on one thread ran over fifteen minutes on two beside three NMT trainings on two cores. The
    limit holds for the calling thread (OpenMP's setting is per thread) until the context ends."""
    global _CONTROLLER
    from threadpoolctl import ThreadpoolController

    # inspecting the loaded libraries costs milliseconds: once, or again while scikit-learn's
    # OpenMP library was not loaded yet
    if _CONTROLLER is None or not _CONTROLLER.select(user_api="openmp").lib_controllers:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=n, user_api="openmp")


class AveragedClassifier:
    """Several fitted classifiers whose probabilities are averaged: ``pair_classifier_model.v1``
    with ``draws`` > 1 fits one per draw of synthetic negatives (bagging over the draws, Breiman
    1996), so one unlucky draw moves the scores less."""

    def __init__(self, members: list):
        """Keep the fitted ``members`` (each with ``predict_proba``)."""
        self.members = list(members)

    def predict_proba(self, X):
        """The members' mean class probabilities."""
        return np.mean([m.predict_proba(X) for m in self.members], axis=0)


class TiltedClassifier:
    """A fitted classifier whose log-odds are tilted by one of its own features, standardised on
    its training rows: logit(q) = logit(p) + weight * (x - mean) / std. Synthetic negatives teach
    the classifier nothing about free translations, and it dilutes the one feature that ranks
    them: with IBM-1 P(target | source) (``lexical_translation.v1``, src2tgt) at weight 1 as
    the tilt, benchmarks/bench_hard_news.py measured +0.030 ROC-AUC for the WMT reference against
    its human paraphrase (Freitag et al. 2020, "BLEU might be Guilty but References are not
    Innocent") on newstest2020 en-de, at a cost of about 0.002 on FLORES's synthetic noise
    (shuffled words and lost clauses, which a bag-of-words score cannot see). A missing feature
    value leaves p as it is."""

    def __init__(self, base, column: int, weight: float, mean: float, std: float):
        """Wrap the fitted ``base`` (with ``predict_proba``); ``column`` is the feature's index
        in the feature rows, ``mean`` and ``std`` its statistics on the training rows."""
        self.base, self.column, self.weight = base, column, weight
        self.mean, self.std = mean, std

    def predict_proba(self, X):
        """The tilted class probabilities (:func:`tilt_probability`)."""
        z = (np.asarray(X, dtype=float)[:, self.column] - self.mean) / self.std
        q = tilt_probability(self.base.predict_proba(X)[:, 1], z, self.weight)
        return np.c_[1 - q, q]


def tilt_probability(p, z, weight: float):
    """sigmoid(logit(p) + weight * z), p clipped to [1e-6, 1 - 1e-6] before its logit; where z is
    missing (NaN, inf) p stays as it is."""
    p = np.clip(np.asarray(p, dtype=float), 1e-6, 1 - 1e-6)
    z = np.where(np.isfinite(z), z, 0.0)
    return 1.0 / (1.0 + np.exp(-(np.log(p / (1 - p)) + weight * z)))


class Tilt(BaseModel):
    """``pair_classifier_model.v1``'s ``tilt``: one feature added to the classifier's log-odds."""

    model_config = ConfigDict(extra="forbid")
    feature: str = Field(description="A feature name of the model, as its facts file lists them "
                         "(feature_names): a surface measure, a filter's name, or name#n for the "
                         "n-th listed filter when a filter is listed twice (the first "
                         "lexical_translation.v1 is `lexical_translation.v1`, a second one "
                         "`lexical_translation.v1#4` when it is features[4]).")
    weight: float = Field(1.0, description="Weight of the standardised feature in the log-odds.")


class PairClassifierTrainer(Trainer):
    """Train ``pair_classifier.v1``'s model from clean pairs alone: synthetic negatives made from
    them, the surface measures and the listed filters' scores as features, a histogram gradient
    boosting classifier. A held-out share of the pairs (and their negatives) gives the ROC-AUC
    written to ``<output>.json``."""

    name = "pair_classifier_model.v1"
    extra = "lexical"

    @classmethod
    def extras(cls, config=None):
        """``lexical``, and ``nmt`` when ``mt_model`` translates the machine_translated
        negatives."""
        return (cls.extra, "nmt") if config is not None and config.mt_model else (cls.extra,)

    class Config(Trainer.Config):
        """Options of pair_classifier_model.v1."""

        corpus: list[str | tuple[str, str]] = Field(
            min_length=1, description="Clean parallel files: src<TAB>tgt per line, or a pair "
            "[src_file, tgt_file] of line-aligned plain files (.gz ok).")
        limit: int | None = Field(20000, ge=2, description="Use at most this many clean pairs, "
                                  "drawn evenly through each file, an equal share from each "
                                  "(what a small file cannot fill goes to the others).")
        features: list[FeatureFilter] = Field(default_factory=list, description="Filters whose "
                                              "scores are features (filter + with), beside the "
                                              "built-in surface measures.")
        surface: list[Literal[ALL_SURFACE]] = Field(
            list(SURFACE), description="Surface measures computed here: "
            + ", ".join(ALL_SURFACE) + ". The default leaves out the last six; the absolute "
            "lengths (src_chars_log, tgt_chars_log) tie a model to its training domain.")
        negatives: list[Literal[NEGATIVES + MORE_NEGATIVES]] = Field(
            list(NEGATIVES), min_length=1, description="Kinds of synthetic negatives, taken in "
            "turn: " + ", ".join(NEGATIVES + MORE_NEGATIVES) + ". Not in the default: appended "
            "(another pair's sentence added to one side), partial (one side loses a clause, "
            "10-30 % of its words), neighbour (a span of one side replaced by a span of the "
            "neighbouring pair's), machine_translated (the target replaced by mt_model's "
            "translation of the source), mistranslated (10-25 % of one side's words of four "
            "or more letters replaced by words of other pairs' same side: wrong words) and "
            "word_for_word (the target replaced by the source glossed word by word from "
            "gloss_dictionary).")
        mt_model: str | None = Field(
            None, description="Translation model (source -> target) of the machine_translated "
            "negatives: a model directory the nmt plugin loads (one `bitextforge train-nmt` "
            "writes) or a Hugging Face hub id; needed by that kind, refused without it.")
        mt_backend: Literal["transformers", "ctranslate2"] = Field(
            "ctranslate2", description="Inference engine of mt_model, as backtranslate.v1's "
            "backend (beam 4, best translation).")
        gloss_dictionary: str | None = Field(
            None, description="Dictionary of the word_for_word negatives (a TSV of ;-separated "
            "synonyms with a header, Ding's layout or a dictd database, as lexicon_translate.v1 "
            "reads it): each source word becomes its best one-word translation, words it lacks "
            "are copied; needed by that kind, refused without it.")
        gloss_columns: tuple[int, int] = Field(
            (1, 2), description="gloss_dictionary's columns of the source and the target "
            "language (0-based).")
        gloss_langs: tuple[str, str] = Field(
            ("en", "de"), description="ISO 639-1 codes of those two columns (the dictionary's "
            "phrases are cleaned by language: an English 'to' before a verb goes).")
        held_out: float = Field(0.1, ge=0, lt=1, description="Share of pairs held out to "
                                "report ROC-AUC (0: none).")
        seed: int = Field(1, description="Seed of the negatives, the split and the classifier.")
        draws: int = Field(1, ge=1, description="Draw the negatives this many times (seeds seed, "
                           "seed + 1, ...), fit one classifier on the clean pairs and each draw, "
                           "and average their probabilities. Each draw scores every feature again "
                           "(the encoder's margin takes its neighbours from the whole set), so "
                           "training takes about this many times as long; scoring costs the same.")
        tilt: Tilt | None = Field(
            None, description="Add weight x the feature, standardised on the training rows "
            "(mean and standard deviation over the clean pairs and the first draw's negatives), "
            "to the classifier's "
            "log-odds (TiltedClassifier). With {feature: lexical_translation.v1, weight: 1} (IBM-1 "
            "P(target | source)) free translations rank below literal ones, which synthetic "
            "negatives do not teach (benchmarks/bench_hard_news.py).")
        threads: int = Field(1, ge=1, description="OpenMP threads of the classifier's fit. "
                             "More help on a quiet machine with many rows; on a busy one each "
                             "parallel region waits for every thread to be scheduled, and a fit "
                             "of seconds took many minutes.")

        @model_validator(mode="after")
        def _features_valid(self):
            _validate_specs(self.features)
            if ("machine_translated" in self.negatives) != (self.mt_model is not None):
                raise ValueError("mt_model: the machine_translated negatives need it"
                                 if self.mt_model is None else
                                 "mt_model: set, but negatives has no machine_translated")
            if ("word_for_word" in self.negatives) != (self.gloss_dictionary is not None):
                raise ValueError("gloss_dictionary: the word_for_word negatives need it"
                                 if self.gloss_dictionary is None else
                                 "gloss_dictionary: set, but negatives has no word_for_word")
            return self

    @classmethod
    def input_paths(cls, config):
        """The corpus files, the translation model directory (not a hub id) and every file the
        feature filters read (``features[0].with.tables``)."""
        from bitextforge.api import get_registry
        from bitextforge.api import local_model

        reg = get_registry()
        out = {"corpus": config.corpus}
        if config.mt_model is not None:
            out["mt_model"] = local_model(config.mt_model)
        if config.gloss_dictionary is not None:
            out["gloss_dictionary"] = config.gloss_dictionary
        for n, spec in enumerate(config.features):
            fcls = reg.get("filter", spec.filter)
            out[f"features[{n}].with"] = fcls.input_paths(fcls.Config(**spec.with_))
        return out

    def outputs(self):
        """The model and its facts file."""
        out = Path(self.config.output)
        return [out, out.with_name(out.name + ".json")]

    def _translate(self, texts: list[str]) -> list[str]:
        """``mt_model``'s best translation of each text (:func:`translate_best`)."""
        c = self.config
        return translate_best(texts, c.mt_model, c.mt_backend, self.name)

    def _gloss(self):
        """The word_for_word negatives' translation of a source (None without the kind):
        :func:`~.wordforword.translate_words` with each word's best dictionary translation."""
        c = self.config
        if c.gloss_dictionary is None:
            return None
        from .wordforword import translate_words, word_translations

        table = word_translations(c.gloss_dictionary, tuple(c.gloss_columns), *c.gloss_langs)
        return lambda text: translate_words(text, table)[0]

    def train(self):
        """Make negatives, score features, fit and save."""
        import joblib
        from sklearn.ensemble import HistGradientBoostingClassifier
        from sklearn.metrics import roc_auc_score

        c = self.config
        t0 = time.perf_counter()
        src, tgt = read_evenly(c.corpus, c.limit)
        rng = np.random.default_rng(c.seed)
        order = rng.permutation(len(src))
        src, tgt = [src[i] for i in order], [tgt[i] for i in order]
        n_dev = int(len(src) * c.held_out)
        members, held = [], []
        scorer = FeatureScorer(c.features, c.surface)
        if c.tilt is not None and c.tilt.feature not in scorer.names:
            scorer.close()
            raise InputError(f"{self.name}: tilt.feature {c.tilt.feature!r} is not a feature of "
                             f"this model; its features are {', '.join(scorer.names)}")
        col = None if c.tilt is None else scorer.names.index(c.tilt.feature)
        gloss = self._gloss()
        try:
            for d in range(c.draws):
                seed = c.seed + d
                ns, nt, kinds = make_negatives(src, tgt, tuple(c.negatives), seed,
                                               self._translate, gloss)
                made = len(ns)
                ns, nt, kinds, origin = drop_equal_to_clean(src, tgt, ns, nt, kinds)
                self.log(f"{len(src):,} clean pairs and {len(ns):,} synthetic negatives"
                         + (f" ({made - len(ns):,} equal to a clean pair left out)"
                            if made > len(ns) else "")
                         + (f" (draw {d + 1} of {c.draws})" if c.draws > 1 else "")
                         + f" ({time.perf_counter() - t0:.1f} s)")
                X = scorer.features(src + ns, tgt + nt, who=self.name)
                y = np.r_[np.ones(len(src)), np.zeros(len(ns))]
                # a negative is held out with the clean pair it was made from
                neg_dev = np.asarray(origin, dtype=np.int64) < n_dev
                dev = np.r_[np.arange(len(src)) < n_dev, neg_dev]
                clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1,
                                                     random_state=seed)
                with phase(self.name, f"fitting the classifier on {int((~dev).sum()):,} rows"), \
                        openmp_threads(c.threads):
                    clf.fit(X[~dev], y[~dev])
                members.append(clf)
                # the first draw's held-out rows report the averaged model: the clean ones are
                # held out of every fit, and each draw's negatives of them out of its own
                if d == 0:
                    held = (X[dev], y[dev], [k for k, h in zip(kinds, neg_dev) if h])
                    dropped = made - len(ns)
                    if col is not None:
                        tilt_x = X[~dev, col]
        finally:
            scorer.close()
        clf = members[0] if c.draws == 1 else AveragedClassifier(members)
        tilt = None
        if col is not None:
            x = tilt_x[np.isfinite(tilt_x)]
            if len(x) < 2 or float(x.std()) == 0.0:
                raise ComponentError(f"{self.name}: tilt.feature {c.tilt.feature!r} is constant "
                                     f"or missing on the training rows")
            tilt = {"feature": c.tilt.feature, "weight": c.tilt.weight,
                    "mean": float(x.mean()), "std": float(x.std())}
            clf = TiltedClassifier(clf, col, c.tilt.weight, tilt["mean"], tilt["std"])
        X_dev, y_dev, kinds = held
        # every option written out, so a later change of a filter's defaults cannot change what
        # the saved model's features mean
        filled = [{"filter": f.name, "with": f.config.model_dump(mode="json")}
                  for f in scorer.filters]
        facts = {"format": FORMAT, "features": filled, "surface": list(c.surface),
                 "feature_names": scorer.names, "negatives": list(c.negatives),
                 **({"mt_model": c.mt_model} if c.mt_model is not None else {}),
                 "clean_pairs": len(src), "train_rows": int((~dev).sum()),
                 "negatives_equal_to_clean_left_out": dropped,
                 "draws": c.draws, **({"tilt": tilt} if tilt else {})}
        if n_dev:
            with openmp_threads(1):
                p = clf.predict_proba(X_dev)[:, 1]
            facts["held_out_roc_auc"] = round(float(roc_auc_score(y_dev, p)), 4)
            kd = np.array(kinds)
            pos = p[:n_dev]
            facts["held_out_roc_auc_by_kind"] = {
                k: round(float(roc_auc_score(np.r_[np.ones(n_dev), np.zeros((kd == k).sum())],
                                             np.r_[pos, p[n_dev:][kd == k]])), 4)
                for k in c.negatives if (kd == k).any()}
        facts["seconds"] = round(time.perf_counter() - t0, 1)
        out = Path(c.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        joblib.dump({"format": FORMAT, "model": clf, "features": facts["features"],
                     "surface": list(c.surface), "feature_names": scorer.names}, out)
        out.with_name(out.name + ".json").write_text(json.dumps(facts, indent=2) + "\n",
                                                     encoding="utf-8")
        return {k: v for k, v in facts.items() if k != "features"}


class PairClassifierFilter(Filter):
    """P(clean pair) under a classifier trained by ``pair_classifier_model.v1``, in [0, 1]. The
    model file names its feature filters and their options; they are built again here, so the
    files they read (dictionary, tables, LMs) must still be where they were."""

    name = "pair_classifier.v1"
    extra = "lexical"
    class Config(Filter.Config):
        """Options of pair_classifier.v1."""

        model: str = Field(description="Model file written by pair_classifier_model.v1.")

    @classmethod
    def uncacheable(cls, config):
        """Cacheable when every feature filter the model names (in ``<model>.json``) is."""
        from bitextforge.api import get_registry

        facts = Path(config.model).with_name(Path(config.model).name + ".json")
        try:
            features = json.loads(facts.read_text(encoding="utf-8"))["features"]
        except (OSError, ValueError, KeyError, TypeError):
            return (f"its feature filters, named in {facts}, are unknown until the model is "
                    f"trained")
        reg = get_registry()
        for n, spec in enumerate(features):
            try:
                fcls = reg.get("filter", spec["filter"])
                why = fcls.uncacheable(fcls.Config(**spec["with"]))
            except (BitextforgeError, ValueError, KeyError, TypeError) as exc:
                return f"its feature filters, named in {facts}, cannot be read ({exc})"
            if why:
                return f"its feature {n} ({spec['filter']}) cannot be cached: {why}"
        return None

    @classmethod
    def input_paths(cls, config):
        """The model file."""
        return {"model": config.model}

    def __init__(self, config=None):
        """Load the classifier and build its feature filters once."""
        import joblib

        super().__init__(config)
        p = Path(self.config.model)
        if not p.exists():
            raise ComponentError(f"{self.name}: model {p} does not exist; train it with "
                                 f"pair_classifier_model.v1")
        data = joblib.load(p)
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ComponentError(f"{self.name}: {p} is not a pair classifier model ({FORMAT})")
        self.clf = data["model"]
        # models saved before the surface option had the ten measures of SURFACE
        self.scorer = FeatureScorer([FeatureFilter(**f) for f in data["features"]],
                                    data.get("surface", SURFACE))
        self.feature_names = data["feature_names"]

    def score(self, batch):
        """One probability per row."""
        src = ["" if t is None else t for t in batch["src"]]
        tgt = ["" if t is None else t for t in batch["tgt"]]
        if not src:
            return []
        X = self.scorer.features(src, tgt)
        # one batch is too small to gain from threads, and a step may share the cores with
        # others (threaded local runner, Ray actors)
        with openmp_threads(1):
            return self.clf.predict_proba(X)[:, 1].tolist()

    def manifest_info(self):
        """The model file, its features and what each feature cost: seconds and pairs/s over
        the pairs this filter scored (the classifier's own prediction is the rest of the
        step's time)."""
        sc = self.scorer
        cost = {name: {"seconds": round(sec, 3),
                       "pairs_per_second": round(sc.pairs / sec, 1) if sec > 0 else None}
                for name, sec in sc.seconds.items()}
        return {"model": self.config.model, "features": self.feature_names,
                "pairs_scored": sc.pairs, "feature_cost": cost}

    def close(self):
        """Close the feature filters."""
        self.scorer.close()
