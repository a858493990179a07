"""Helpers shared by the quality filters: choosing the two columns a pair filter compares,
tokenising with sacremoses, and locating optional files.

The default pairing follows how the papers use these scores: a paraphrase is compared with the
sentence it was made from (Wieting et al. 2017, section 5.7; ParaNMT-50M, section 5.4; BET,
section 3.2), so when a paraphrase step wrote ``<side>_original`` the filter compares ``<side>``
with it; otherwise it compares ``src`` with ``tgt``.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from bitextforge import ComponentError


def pick_columns(name: str, batch: Mapping[str, Sequence], columns) -> tuple[str, str]:
    """The two column names to compare: ``columns`` when given, else the paraphrased side and its
    ``<side>_original`` column when a paraphrase step wrote one, else ``("src", "tgt")``."""
    if columns:
        a, b = columns
    elif "tgt_original" in batch:
        a, b = "tgt", "tgt_original"
    elif "src_original" in batch:
        a, b = "src", "src_original"
    else:
        a, b = "src", "tgt"
    for c in (a, b):
        if c not in batch:
            raise ComponentError(f"{name}: column {c!r} does not exist; columns are "
                                 f"{', '.join(batch)} (set the option columns)")
    return a, b


def column_texts(batch: Mapping[str, Sequence], col: str) -> list[str]:
    """A text column with missing values (None) read as empty strings."""
    return ["" if t is None else t for t in batch[col]]


class Tokenizer:
    """sacremoses tokenisation (escape off) with optional lowercasing; one instance per language.

    Used both when scoring and when training KenLM models, so the two always agree.
    """

    def __init__(self, lang: str = "en", lowercase: bool = False, enabled: bool = True):
        """Build a Moses tokenizer for ``lang`` (an ISO 639-1 code; sacremoses falls back to
        English rules for languages it has no special rules for)."""
        self.lowercase = lowercase
        self.enabled = enabled
        self._tok = None
        if enabled:
            from sacremoses import MosesTokenizer

            self._tok = MosesTokenizer(lang=lang)

    def tokens(self, text: str) -> list[str]:
        """The tokens of one sentence."""
        if self.lowercase:
            text = text.lower()
        if self._tok is None:
            return text.split()
        return self._tok.tokenize(text, escape=False)

    def line(self, text: str) -> str:
        """The tokenised sentence as one space-separated line."""
        return " ".join(self.tokens(text))
