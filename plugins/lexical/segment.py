"""Word segmentation per language, and the filter wrapper ``segmented.v1`` that applies it.

Every lexical signal counts words by whitespace or by ``\\w+`` runs. In Japanese, Chinese, Thai,
Khmer, Lao, Burmese or Tibetan a whole clause is one such run: a length rule cannot fire, IBM-1
and coverage see clauses as words, a KenLM model sees each sentence as a handful of unique
tokens. A :class:`Segmenter` splits text into words the same way wherever it is used: in the
seed the tables and LMs learn from, in the classifier's clean pairs and negatives, and, through
``segmented.v1``, in every rule and feature that scores a corpus. The text a run writes out is
never changed: the wrapper segments a copy for the filter it wraps.

Segmenters:

- ``words``: runs of letters and digits, and each other non-space character alone (for languages
  that write spaces; the tokenised and the raw forms of a sentence come out alike);
- ``fugashi`` (MeCab with the UniDic-lite dictionary, ``pip install 'bitextforge[segment]'``)
  and ``sudachipy`` for Japanese, ``jieba`` for Chinese;
- ``sentencepiece:<model>``: a unigram model trained on the seed (:func:`train_sentencepiece`),
  for a language no installed segmenter knows.

Before a dictionary or sentencepiece segmenter runs, the text is put in Unicode NFKC (full-width
digits and letters become ASCII) and spaces between two characters outside Latin script go, so a
corpus that was segmented by another tool (small_parallel_enja's "私 は テニス 部員 で す")
is segmented again the same way as raw text.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, model_validator

from bitextforge import ComponentError, Filter

#: languages written without spaces between words
UNSPACED = frozenset({"ja", "zh", "th", "km", "lo", "my", "bo"})
#: the dictionary segmenters that know each unspaced language, best first
DICTIONARY_SEGMENTERS = {"ja": ("fugashi", "sudachipy"), "zh": ("jieba",)}
#: the Python module each dictionary segmenter needs
_MODULES = {"fugashi": "fugashi", "sudachipy": "sudachipy", "jieba": "jieba"}
_WORDS = re.compile(r"\w+(?:[-'’.,]\w+)*|[^\w\s]", re.UNICODE)
#: whitespace between two characters that are neither ASCII nor Latin letters
_CJK_GAP = re.compile(r"(?<=[^\x00-\u024f])\s+(?=[^\x00-\u024f])")


def installed(name: str) -> bool:
    """Whether the dictionary segmenter ``name`` can be imported here."""
    import importlib.util

    mod = _MODULES.get(name)
    return mod is not None and importlib.util.find_spec(mod) is not None


def default_segmenter(lang: str) -> str | None:
    """The segmenter a language gets when none is named: ``words`` for a language written with
    spaces, the first installed dictionary segmenter for an unspaced one, else None (the caller
    trains a sentencepiece model)."""
    if lang not in UNSPACED:
        return "words"
    for name in DICTIONARY_SEGMENTERS.get(lang, ()):
        if installed(name):
            return name
    return None


def check_segmenter(spec: str, lang: str) -> str | None:
    """Why ``spec`` cannot segment ``lang`` here (a sentence for an error message), or None."""
    if spec == "words":
        if lang in UNSPACED:
            names = " or ".join(DICTIONARY_SEGMENTERS.get(lang, ())) or "sentencepiece:<model>"
            return (f"language {lang!r} is written without spaces; the words segmenter would see "
                    f"clauses as words (use {names})")
        return None
    if spec.startswith("sentencepiece:"):
        path = spec.split(":", 1)[1]
        return None if Path(path).is_file() else f"sentencepiece model {path} does not exist"
    if spec in _MODULES:
        if lang not in DICTIONARY_SEGMENTERS or spec not in DICTIONARY_SEGMENTERS[lang]:
            return f"segmenter {spec!r} does not segment language {lang!r}"
        if not installed(spec):
            return (f"segmenter {spec!r} is not installed (pip install "
                    f"'bitextforge[segment]' installs fugashi and unidic-lite)")
        return None
    return (f"unknown segmenter {spec!r}; choose words, fugashi, sudachipy, jieba or "
            f"sentencepiece:<model>")


class Segmenter:
    """Splits text of one language into words, returned joined by single spaces."""

    def __init__(self, spec: str, lang: str, lowercase: bool = False):
        """``spec`` names the segmenter (see the module docstring); ``lowercase`` lowercases
        first (for a seed that was lowercased)."""
        why = check_segmenter(spec, lang)
        if why:
            raise ComponentError(why)
        self.spec, self.lang, self.lowercase = spec, lang, lowercase
        self._split = self._build(spec)

    def _build(self, spec: str):
        if spec == "words":
            return _WORDS.findall
        split = self._build_unspaced(spec)
        # full-width digits and Latin letters (２０００, ＫＤＤＩ) are the ASCII ones: one number
        # or name on both sides of a pair, and one token for the tables and LMs
        return lambda text: split(unicodedata.normalize("NFKC", text))

    def _build_unspaced(self, spec: str):
        if spec == "fugashi":
            import fugashi

            tagger = fugashi.Tagger()
            return lambda text: [w.surface for w in tagger(_CJK_GAP.sub("", text))]
        if spec == "sudachipy":
            from sudachipy import Dictionary, SplitMode

            tok = Dictionary().create()
            return lambda text: [m.surface() for m in tok.tokenize(_CJK_GAP.sub("", text),
                                                                    SplitMode.C)
                                 if m.surface().strip()]
        if spec == "jieba":
            import jieba

            jieba.setLogLevel(60)  # its dictionary-loading lines are not ours to print
            return lambda text: [w for w in jieba.cut(_CJK_GAP.sub("", text)) if w.strip()]
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor(model_file=spec.split(":", 1)[1])

        def pieces(text: str) -> list[str]:
            out = (p.replace("\u2581", "") for p in sp.encode(_CJK_GAP.sub("", text),
                                                              out_type=str))
            return [p for p in out if p]
        return pieces

    def tokens(self, text: str | None) -> list[str]:
        """The words of ``text`` (empty for None or blank text)."""
        if not text or not text.strip():
            return []
        if self.lowercase:
            text = text.lower()
        return [t for t in self._split(text) if not t.isspace()]

    def __call__(self, text: str | None) -> str:
        """``text`` segmented: its words joined by single spaces."""
        return " ".join(self.tokens(text))


@functools.lru_cache(maxsize=8)
def segmenter(spec: str, lang: str, lowercase: bool = False) -> Segmenter:
    """One :class:`Segmenter` per setting and process (a MeCab tagger takes a moment to load)."""
    return Segmenter(spec, lang, lowercase)


def train_sentencepiece(lines: list[str], prefix: str | Path, vocab_size: int = 8000) -> Path:
    """A unigram sentencepiece model trained on ``lines`` (in NFKC, spaces between non-Latin
    characters removed first, as :class:`Segmenter` reads text), written to ``<prefix>.model``;
    the vocabulary shrinks to what the text allows."""
    import sentencepiece as spm

    prefix = Path(prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    text = prefix.with_suffix(".train.txt")
    text.write_text("\n".join(_CJK_GAP.sub("", unicodedata.normalize("NFKC", t))
                              for t in lines if t.strip()) + "\n", encoding="utf-8")
    chars = len(set("".join(lines)))
    size = max(chars + 4, min(vocab_size, len(lines) // 2))
    try:
        spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(prefix),
                                       vocab_size=size, model_type="unigram",
                                       character_coverage=0.9995, hard_vocab_limit=False,
                                       num_threads=1, minloglevel=2)
    finally:
        text.unlink(missing_ok=True)
    return prefix.with_suffix(".model")


class SegmentedFilter(Filter):
    """Any filter applied to word-segmented text: both sides go through their language's
    segmenter (and lowercasing, when asked) before the wrapped filter scores them, so length,
    length ratio, lexical scores, KenLM perplexity and a pair classifier all count the same
    words. The corpus the run writes keeps its text as it was."""

    name = "segmented.v1"
    extra = "lexical"

    class Config(Filter.Config):
        """Options of segmented.v1."""

        # the run's filled recipe writes the wrapped filter's options under the field's name
        model_config = ConfigDict(populate_by_name=True)
        src_lang: str = Field(description="ISO 639-1 code of the src column.")
        tgt_lang: str = Field(description="ISO 639-1 code of the tgt column.")
        src_segmenter: str | None = Field(
            None, description="words, fugashi, sudachipy, jieba or sentencepiece:<model>; "
            "none: the language's default (words where words are spaced, else an installed "
            "dictionary segmenter).")
        tgt_segmenter: str | None = Field(None, description="The same for the tgt column.")
        lowercase: bool = Field(False, description="Lowercase both sides first (as the seed the "
                                "wrapped filter's models learned from was).")
        filter: str = Field(description="Registered name of the wrapped filter.")
        with_: dict[str, Any] = Field(default_factory=dict, alias="with",
                                      description="The wrapped filter's options.")

        @model_validator(mode="after")
        def _check(self):
            for side in ("src", "tgt"):
                lang = getattr(self, f"{side}_lang")
                spec = getattr(self, f"{side}_segmenter") or default_segmenter(lang)
                if spec is None:
                    known = DICTIONARY_SEGMENTERS.get(lang)
                    raise ValueError(
                        f"{side}_segmenter: no installed segmenter knows {lang!r}; "
                        + (f"install {' or '.join(known)} (pip install 'bitextforge[segment]' "
                           f"installs fugashi) or " if known else "")
                        + "name sentencepiece:<model> (bitextforge build-filter trains one)")
                why = check_segmenter(spec, lang)
                if why:
                    raise ValueError(f"{side}_segmenter: {why}")
            inner = _inner_class(self.filter)
            if inner is SegmentedFilter:
                raise ValueError("filter: segmented.v1 cannot wrap itself")
            from pydantic import ValidationError

            try:
                inner.Config(**self.with_)
            except ValidationError as e:
                err = e.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise ValueError(f"with.{where}: {err['msg']} (options of {inner.name})") \
                    from None
            return self

    @classmethod
    def _inner(cls, config):
        inner = _inner_class(config.filter)
        return inner, inner.Config(**config.with_)

    @classmethod
    def input_paths(cls, config):
        """The wrapped filter's files and the sentencepiece models."""
        inner, ic = cls._inner(config)
        out = {f"with.{k}": v for k, v in inner.input_paths(ic).items()}
        for side in ("src", "tgt"):
            spec = getattr(config, f"{side}_segmenter") or ""
            if spec.startswith("sentencepiece:"):
                out[f"{side}_segmenter"] = spec.split(":", 1)[1]
        return out

    @classmethod
    def extras(cls, config=None):
        """``lexical``, ``segment`` where a side needs fugashi or sentencepiece (named, or
        Japanese's default), and the wrapped filter's extras."""
        if config is None:
            return (cls.extra,)
        inner, ic = cls._inner(config)
        specs = [(getattr(config, f"{s}_segmenter") or ("fugashi" if lang == "ja" else ""))
                 for s, lang in (("src", config.src_lang), ("tgt", config.tgt_lang))]
        seg = ("segment",) if any(x == "fugashi" or x.startswith("sentencepiece:")
                                  for x in specs) else ()
        return tuple(dict.fromkeys((cls.extra, *seg, *inner.extras(ic))))

    @classmethod
    def uncacheable(cls, config):
        """Whatever keeps the wrapped filter's scores out of the cache."""
        inner, ic = cls._inner(config)
        return inner.uncacheable(ic)

    def __init__(self, config=None):
        """Build the two segmenters and the wrapped filter."""
        super().__init__(config)
        c = self.config
        self.seg = tuple(segmenter(getattr(c, f"{s}_segmenter") or default_segmenter(lang),
                                   lang, c.lowercase)
                         for s, lang in (("src", c.src_lang), ("tgt", c.tgt_lang)))
        inner, ic = self._inner(c)
        self.inner = inner(ic)

    def score(self, batch):
        """The wrapped filter's scores of the segmented batch."""
        seg = dict(batch)
        seg["src"] = [self.seg[0](t) for t in batch["src"]]
        seg["tgt"] = [self.seg[1](t) for t in batch["tgt"]]
        return self.inner.score(seg)

    def manifest_info(self):
        """The segmenters and the wrapped filter's facts; ``wraps`` names it in the run's step
        table."""
        return {"segmenters": [s.spec for s in self.seg], "filter": self.inner.name,
                **self.inner.manifest_info(), "wraps": self.inner.name}

    def close(self):
        """Close the wrapped filter."""
        self.inner.close()


def _inner_class(name: str):
    from bitextforge.api import get_registry

    try:
        return get_registry().get("filter", name)
    except Exception as e:  # the registry's own message names the known filters
        raise ValueError(f"filter: {e}") from None
