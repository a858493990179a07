"""Language identification filter (``language_id.v1``): how confident a language identifier is
that each side of a pair is written in its declared language.

Wieting et al. 2017 (section 5.5) and ParaNMT-50M (section 5.4) drop pairs whose sides are not in
the expected language; crawled corpora such as ParaCrawl carry many of them (the ``L`` verdict of
the ParaCrawl human evaluations). Two backends that ship their models inside the wheel:

- ``heliport`` (default, fast): HeLI-OTS language identifier in Rust (Jauhiainen et al. 2022).
- ``lingua`` (accurate, slower): lingua-rs n-gram models with a rule engine.

What the per-side *confidence* is:

- heliport: ``Identifier.identify_with_score`` returns the best language and its confidence,
  which is the HeLI score gap between the best and the second-best language (HeLI scores are mean
  negative log10 probabilities of the text's features, lower is better; the gap is >= 0 and
  unbounded, typically 0.5-3 on a sentence). heliport reports ``und`` when the gap is below the
  winner's confidence threshold; such texts are re-scored with ``identify_topk_with_score(text,
  2)``, whose raw scores give the same gap and the winner. The side's score is that gap when the best language
  is the declared one, and minus the gap when another language wins (so ``keep: {min: 0}`` means
  "identified as the declared language", ``min: 0.5`` asks for a margin, a negative bound forgives
  near-misses). Empty or symbol-only text is identified as ``zxx`` and scores -7.
- lingua: ``LanguageDetector.compute_language_confidence`` of the declared language, a probability
  in [0, 1] relative to the candidate languages the detector was built with (``lingua_candidates``,
  all 75 by default; fewer candidates make it faster but more confident); 1.0 when lingua's rule
  engine is unambiguous, 0.0 for empty text.

The pair score is the minimum over the sides that are checked. A text met earlier in the run
is not identified again: its score is looked up (:mod:`bitextforge.cache.memo`; the manifest counts
both), which gives the same scores, as both backends score each text on its own.
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from typing import Literal

import numpy as np
from pydantic import Field

from bitextforge import ComponentError, Filter
from bitextforge.api import TextScoreMemo

#: ISO 639-1 -> ISO 639-3 for the languages lingua supports (the codes heliport uses where the two
#: agree); heliport differs for a few macrolanguages, see ``_HELIPORT_OVERRIDES``.
ISO1_TO_3 = {
    "af": "afr", "ar": "ara", "az": "aze", "be": "bel", "bg": "bul", "bn": "ben", "bs": "bos",
    "ca": "cat", "cs": "ces", "cy": "cym", "da": "dan", "de": "deu", "el": "ell", "en": "eng",
    "eo": "epo", "es": "spa", "et": "est", "eu": "eus", "fa": "fas", "fi": "fin", "fr": "fra",
    "ga": "gle", "gu": "guj", "he": "heb", "hi": "hin", "hr": "hrv", "hu": "hun", "hy": "hye",
    "id": "ind", "is": "isl", "it": "ita", "ja": "jpn", "ka": "kat", "kk": "kaz", "ko": "kor",
    "la": "lat", "lg": "lug", "lt": "lit", "lv": "lav", "mi": "mri", "mk": "mkd", "mn": "mon",
    "mr": "mar", "ms": "msa", "nb": "nob", "nl": "nld", "nn": "nno", "pa": "pan", "pl": "pol",
    "pt": "por", "ro": "ron", "ru": "rus", "sk": "slk", "sl": "slv", "sn": "sna", "so": "som",
    "sq": "sqi", "sr": "srp", "st": "sot", "sv": "swe", "sw": "swa", "ta": "tam", "te": "tel",
    "th": "tha", "tl": "tgl", "tn": "tsn", "tr": "tur", "ts": "tso", "uk": "ukr", "ur": "urd",
    "vi": "vie", "xh": "xho", "yo": "yor", "zh": "zho", "zu": "zul",
}
# heliport labels Chinese as Mandarin, Persian as Iranian Persian, Norwegian as Bokmål, Uzbek as
# Northern Uzbek, and Bosnian/Croatian/Serbian as the macrolanguage hbs.
_HELIPORT_OVERRIDES = {"zh": "cmn", "fa": "pes", "no": "nob", "uz": "uzn", "bs": "hbs",
                       "hr": "hbs", "sr": "hbs", "id": "msa"}


def heliport_code(lang: str, known) -> str:
    """The heliport label for ``lang`` (an ISO 639-1 code, or a heliport code used as is)."""
    code = _HELIPORT_OVERRIDES.get(lang) or ISO1_TO_3.get(lang) or lang
    if code not in known:
        raise ComponentError(f"language_id.v1: heliport has no model for language {lang!r}; "
                             f"give an ISO 639-1 code (de, en) or one of heliport's codes "
                             f"(bitextforge describe language_id.v1)")
    return code


def heliport_languages() -> set[str]:
    """heliport's main language labels, read from the confidence thresholds it ships (one line
    per language) without loading its models; empty when the file is not there. The loaded
    model knows a few more (dialect labels such as ``fink``)."""
    from importlib.resources import files

    try:
        text = files("heliport").joinpath("confidenceThresholds").read_text(encoding="utf-8")
    except (FileNotFoundError, ModuleNotFoundError):
        return set()
    return {line.split("\t", 1)[0] for line in text.splitlines() if line.strip()}


def lingua_language(lang: str):
    """The ``lingua.Language`` for an ISO 639-1 code (or an ISO 639-3 code)."""
    from lingua import IsoCode639_1, IsoCode639_3, Language

    try:
        if len(lang) == 2:
            return Language.from_iso_code_639_1(IsoCode639_1.from_str(lang))
        return Language.from_iso_code_639_3(IsoCode639_3.from_str(lang))
    except (ValueError, AttributeError) as exc:
        raise ComponentError(f"language_id.v1: lingua does not know language {lang!r}; use one "
                             f"of its 75 ISO 639-1 codes (de, en, fr, cs, ...)") from exc


class LanguageIdFilter(Filter):
    """Confidence that each side is in its declared language; the pair scores the minimum.

    heliport (default): signed HeLI confidence gap, >= 0 when the declared language wins
    (``keep: {min: 0}`` keeps pairs identified as declared). lingua: probability in [0, 1] of the
    declared language among the candidate languages. See the module documentation of
    ``bitextforge.plugins.quality.langid`` and docs/filters.md. Wieting et al. 2017, 5.5;
    ParaNMT-50M, 5.4.
    """

    name = "language_id.v1"
    default_keep = {"min": 0.0}
    releases_gil = True  # heliport and lingua identify in Rust, outside the GIL

    @classmethod
    def extras(cls, config=None):
        """heliport is in the core install; the lingua backend needs the ``langid`` extra."""
        return ("langid",) if config is not None and config.backend == "lingua" else ()

    class Config(Filter.Config):
        """Options of language_id.v1."""

        src_lang: str | None = Field(None, description="Declared language of src (ISO 639-1, "
                                     "e.g. de); empty: src is not checked.")
        tgt_lang: str | None = Field(None, description="Declared language of tgt (ISO 639-1, "
                                     "e.g. en); empty: tgt is not checked.")
        backend: Literal["heliport", "lingua"] = Field(
            "heliport", description="heliport: fast HeLI-OTS, signed confidence gap; lingua: "
                                    "accurate, probability in [0, 1] (needs the langid extra).")
        lingua_candidates: list[str] | None = Field(
            None, description="lingua only: ISO 639-1 codes of the languages to tell apart "
                              "(the declared ones are added); empty: all 75 (slower to load).")
        lingua_low_accuracy: bool = Field(False, description="lingua only: use its faster "
                                          "low-accuracy mode (trigrams only).")
        heliport_undetermined: Literal["gap", "neutral"] = Field(
            "gap", description="heliport only: how a side heliport labels 'und' (too close to "
                               "call) scores: gap: the signed gap of its top two languages, like "
                               "any other side; neutral: 0.0, so keep.min 0 accepts it as "
                               "OpusFilter's HeliportSimpleFilter does.")

    def __init__(self, config=None):
        """Load the backend's models once and resolve the declared languages' codes."""
        super().__init__(config)
        c = self.config
        self.sides = [(s, lang) for s, lang in (("src", c.src_lang), ("tgt", c.tgt_lang)) if lang]
        self.memo = {s: TextScoreMemo() for s, _ in self.sides}
        if not self.sides:
            raise ComponentError("language_id.v1: set src_lang and/or tgt_lang (ISO 639-1 codes "
                                 "such as de, en)")
        self._ident: Future | None = None
        if c.backend == "heliport":
            import heliport

            # Loading heliport's models takes about a second in Rust, which releases the GIL: it
            # goes on in a thread while the run reads and filters the first batches.
            loader = ThreadPoolExecutor(1, thread_name_prefix="heliport-load")
            self._ident = loader.submit(heliport.Identifier)
            loader.shutdown(wait=False)
            known = heliport_languages()
            try:
                self.codes = {s: heliport_code(lang, known) for s, lang in self.sides}
            except ComponentError:  # not among the main labels: ask the loaded model (dialects)
                known = set(self.ident.get_confidence_all())
                self.codes = {s: heliport_code(lang, known) for s, lang in self.sides}
        else:
            from lingua import LanguageDetectorBuilder

            self.codes = {s: lingua_language(lang) for s, lang in self.sides}
            if c.lingua_candidates:
                langs = {lingua_language(x) for x in c.lingua_candidates} | set(self.codes.values())
                if len(langs) < 2:
                    raise ComponentError("language_id.v1: lingua_candidates needs at least two "
                                         "languages")
                builder = LanguageDetectorBuilder.from_languages(*langs)
            else:
                builder = LanguageDetectorBuilder.from_all_languages()
            if c.lingua_low_accuracy:
                builder = builder.with_low_accuracy_mode()
            self.detector = builder.build()

    @property
    def ident(self):
        """heliport's ``Identifier``, once its models have loaded."""
        return self._ident.result()

    def side_scores(self, texts: list[str], side: str) -> list[float]:
        """Confidence per text that it is in ``side``'s declared language."""
        code = self.codes[side]
        if self.config.backend == "heliport":
            # One Rust call per batch; the Python work left per row is one comparison.
            res = self.ident.par_identify_with_score(texts)
            out = [s if lang == code else -s for lang, s in res]
            # heliport says "und" when the gap is below the winner's threshold; the raw top two
            # give the same gap and name the winner, so "und" rows are scored like the others.
            if self.config.heliport_undetermined == "neutral":
                return [0.0 if lang == "und" else v for (lang, _), v in zip(res, out)]
            topk = self.ident.identify_topk_with_score
            for i, (lang, _) in enumerate(res):
                if lang == "und":
                    top = topk(texts[i], 2)
                    gap = top[1][1] - top[0][1] if len(top) > 1 else 0.0
                    out[i] = gap if top[0][0] == code else -gap
            return out
        return self.detector.compute_language_confidence_in_parallel(texts, code)

    def score(self, batch):
        """min over the checked sides of the per-side confidence."""
        cols = []
        for side, _ in self.sides:
            texts = batch[side]
            if None in texts:
                texts = ["" if t is None else t for t in texts]
            # a text met earlier in the run is looked up, not identified again
            cols.append(self.memo[side].scores(texts, lambda t, s=side: self.side_scores(t, s)))
        if len(cols) == 1:
            return cols[0]
        return np.where(cols[0] < cols[1], cols[0], cols[1])

    def manifest_info(self):
        """How many texts were identified, and how many repeats were looked up instead."""
        return {"identified": sum(m.computed for m in self.memo.values()),
                "repeats_looked_up": sum(m.hits for m in self.memo.values())}

    def close(self):
        """Drop the models."""
        self._ident = None
        self.detector = None
