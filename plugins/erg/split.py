"""Bitext sentence splitting of Nichols, Bond, Appling & Matsumoto, section 5.2.

For each sentence pair: split each side on sentence-final punctuation (.?!, and the full-width
。？！ of Japanese), rejoin splits after common English titles (Mr./Ms./Mrs./Dr.), and replace the
pair by its pieces only when both sides have the same number of sentences; otherwise keep the pair
whole. HPSG parsers do best on single sentences, so this runs before ``erg.v1``.

In a recipe, ``nichols_split.v1`` is a ``split:`` step (the core calls :meth:`NicholsSplit.split`);
``bitextforge nichols-split`` (:mod:`bitextforge.plugins.erg.cli`) splits a pair of files.
"""

from __future__ import annotations

import re
from typing import Any, Sequence

from pydantic import Field

from bitextforge import Splitter

DEFAULT_TITLES = ("Mr.", "Ms.", "Mrs.", "Dr.")
ASCII_FINAL = ".?!"
WIDE_FINAL = "。？！"
_CLOSERS = "\"'”’)]」』）"


def _splitter(ascii_final: str, wide_final: str) -> re.Pattern:
    # ASCII marks end a sentence only before whitespace ("3.5", "e.g.x" stay whole);
    # full-width marks end one anywhere, since Japanese puts no space after them.
    a = re.escape(ascii_final)
    w = re.escape(wide_final)
    c = re.escape(_CLOSERS)
    parts = []
    if ascii_final:
        parts.append(f"[{a}]+[{c}]*(?=\\s)")
    if wide_final:
        parts.append(f"[{w}]+[{c}]*")
    return re.compile("|".join(parts))


def split_sentences(text: str, titles: Sequence[str] = DEFAULT_TITLES,
                    ascii_final: str = ASCII_FINAL, wide_final: str = WIDE_FINAL) -> list[str]:
    """Split ``text`` into sentences after sentence-final punctuation, keeping titles attached.

    >>> split_sentences("Mr. Smith came. He sat down!")
    ['Mr. Smith came.', 'He sat down!']
    """
    text = text.strip()
    if not text:
        return []
    pat = _splitter(ascii_final, wide_final)
    pieces = []
    start = 0
    for m in pat.finditer(text):
        end = m.end()
        piece = text[start:end].strip()
        if piece:
            pieces.append(piece)
        start = end
    rest = text[start:].strip()
    if rest:
        pieces.append(rest)
    # case-insensitive, and "mr ." counts as "Mr.": tokenized, lowercased corpora (Tanaka's
    # small_parallel_enja) write titles that way
    title_set = {t.lower() for t in titles}
    out: list[str] = []
    for piece in pieces:
        if out and _last_word(out[-1]) in title_set:
            out[-1] = f"{out[-1]} {piece}"  # the split was after "Mr." etc.: undo it
        else:
            out.append(piece)
    return out


def _last_word(piece: str) -> str:
    words = piece.lower().split()
    if len(words) >= 2 and words[-1] == ".":
        return words[-2] + "."
    return words[-1]


def split_pair(src: str, tgt: str, titles: Sequence[str] = DEFAULT_TITLES,
               ascii_final: str = ASCII_FINAL, wide_final: str = WIDE_FINAL
               ) -> list[tuple[str, str]]:
    """The pair's sentence pairs when both sides split into the same number, else the pair whole."""
    a = split_sentences(src, titles, ascii_final, wide_final)
    b = split_sentences(tgt, titles, ascii_final, wide_final)
    if len(a) > 1 and len(a) == len(b):
        return list(zip(a, b))
    return [(src, tgt)]


class NicholsSplit(Splitter):
    """Nichols et al.'s bitext sentence splitting (section 5.2): a pair becomes its sentence pairs
    when both sides have the same number of sentences, else it stays whole.

    Use it as a ``split:`` step (before any paraphrase or weight step): each row is replaced by
    its sentence pairs, each with a fresh ``id`` and the input's id in ``source_id``. Or split the
    files beforehand with ``bitextforge nichols-split``.
    """

    name = "nichols_split.v1"

    class Config(Splitter.Config):
        """Options of nichols_split.v1."""

        titles: list[str] = Field(list(DEFAULT_TITLES), description="Abbreviations after which "
                                  "a split is undone (the paper: Mr./Ms./Mrs./Dr.).")
        ascii_final: str = Field(ASCII_FINAL, description="Sentence-final marks that split only "
                                 "before whitespace.")
        wide_final: str = Field(WIDE_FINAL, description="Full-width sentence-final marks that "
                                "split anywhere (Japanese, Chinese).")

    def split(self, batch: dict[str, list[Any]]) -> list[list[tuple[str, str]]]:
        """For each row of ``batch``, the ``(src, tgt)`` pairs that replace it (one = unchanged)."""
        c = self.config
        return [split_pair(s, t, c.titles, c.ascii_final, c.wide_final)
                for s, t in zip(batch["src"], batch["tgt"])]
