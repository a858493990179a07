"""A bilingual word lexicon read from a dictionary of entry pairs, such as the Ding German-English
dictionary (TU Chemnitz) that ``../shared/data/deen-train-pool/ding-trans-de-en-1.9-6-lexicon``
holds as ``subentry_pairs.de-en.tsv.gz`` (``line_no<TAB>de<TAB>en``, ``;``-separated synonyms).

Each entry is cleaned the way hunalign and bicleaner use such dictionaries as word lists: the
grammar and domain notes in brackets go, the placeholders ``etw.``/``jdn.``/``sth.``/``sb.`` and the
English infinitive ``to`` go, every synonym is paired with every synonym of the other side, and
short entries (``max_words`` words a side at most) give word pairs: every word of one side with
every word of the other.

FreeDict's dictionaries, which Debian packages for dictd (``apt-get install dict-freedict-eng-fra``
puts ``/usr/share/dictd/freedict-eng-fra.index`` and ``.dict.dz`` on disk), are read as they are:
a path ending in ``.index`` is a dictd database (:func:`read_dictd`). ``scripts/freedict_tsv.py``
merges the two directions of a language pair into one TSV of this module's format.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from bitextforge import InputError
from bitextforge.api import read_lines

from .words import Words

_NOTES = re.compile(r"\([^)]*\)|\{[^}]*\}|\[[^\]]*\]|<[^>]*>")
#: placeholders of Ding entries that stand for any object, not for a word of the sentence
_PLACEHOLDERS = {"etw", "jdn", "jdm", "jds", "jd", "sth", "sb", "sb's", "one's", "oneself",
                 "sich", "etw.", "jdn.", "jdm.", "jds.", "sth.", "sb."}


def _clean_words(phrase: str, lang: str) -> tuple[str, bool]:
    """The entry phrase without notes, placeholders and the English infinitive "to", and whether
    a word of it went (a placeholder or "to"; notes are not words of the phrase)."""
    text = _NOTES.sub(" ", phrase).replace("/", " ")
    raw = text.split()
    words = [w for w in raw if w.lower().strip(".,") not in _PLACEHOLDERS]
    if lang == "en" and words and words[0].lower() == "to" and len(words) > 1:
        words = words[1:]
    return " ".join(words), len(words) < len(raw)


def _clean(phrase: str, lang: str) -> str:
    return _clean_words(phrase, lang)[0]


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
#: a dictd headline's pronunciation (/.../) and grammar note (<...>)
_HEADLINE_NOTES = re.compile(r"/[^/]*/|<[^>]*>")
#: FreeDict numbers the senses of a headword ("1. compenser")
_SENSE = re.compile(r"^\s*\d+\.\s*")


#: a character of Japanese kana (a reading, when the headline also has a written form)
_KANA = re.compile(r"^[\u3040-\u30ff\u30fc・]+$")


def _headwords(head: str) -> list[str]:
    """The headwords of a dictd headline whose notes are gone. A headline in Latin script is one
    headword, as written. One in another script may list several forms with their tags and
    readings (FreeDict jpn-eng: ``[ichi1] [news1] 違法 , [ichi1] いほう``): each written form is
    a headword, without its bracketed tags and notes, and kana readings only where the entry has
    no other written form."""
    if all(ord(ch) <= 0x24F for ch in head):
        return [head]
    forms = [" ".join(_NOTES.sub(" ", f).split()) for f in head.split(",")]
    forms = [f for f in forms if f]
    written = [f for f in forms if not _KANA.match(f.replace(" ", ""))]
    return list(dict.fromkeys(written or forms))


def _b64(text: str) -> int:
    n = 0
    for ch in text:
        n = n * 64 + _B64.index(ch)
    return n


def read_dictd(index: str | Path) -> list[tuple[str, str]]:
    """The (headword, translation) pairs of a dictd database such as FreeDict's: ``index`` is its
    ``.index`` file (``headword<TAB>offset<TAB>length``, numbers in dictd's base 64), the
    definitions are in the ``.dict.dz`` (dictzip, which gzip reads) or ``.dict`` beside it.

    A definition's first line repeats the headword with its pronunciation and grammar notes (in a
    script other than Latin it may list several written forms, tags and readings:
    :func:`_headwords`); each further line is one sense, whose comma- or semicolon-separated
    synonyms each pair with the headword (a line of notes only pairs with nothing). The
    ``00-database-*`` entries (the dictionary's own description) are passed over.
    """
    import gzip

    index = Path(index)
    if not index.is_file():
        raise InputError(f"dictionary {index} does not exist")
    stem = index.with_suffix("")
    body_path = next((q for q in (stem.with_suffix(".dict.dz"), stem.with_suffix(".dict"))
                      if q.is_file()), None)
    if body_path is None:
        raise InputError(f"dictionary {index}: no {stem.name}.dict.dz or .dict beside it")
    opener = gzip.open if body_path.suffix == ".dz" else open
    with opener(body_path, "rb") as fh:
        body = fh.read()
    out: list[tuple[str, str]] = []
    for n, line in enumerate(read_lines(index), 1):
        fields = line.rstrip("\n").split("\t")
        if not line.strip():
            continue
        if len(fields) < 3:
            raise InputError(f"{index}, line {n}: expected headword, offset and length, found "
                             f"{len(fields)} tab-separated fields")
        if fields[0].startswith("00-database") or fields[0].startswith("00database"):
            continue
        try:
            start, length = _b64(fields[1]), _b64(fields[2])
        except ValueError:
            raise InputError(f"{index}, line {n}: offset or length is not dictd base 64") from None
        lines = body[start:start + length].decode("utf-8", "replace").split("\n")
        heads = _headwords(_HEADLINE_NOTES.sub(" ", lines[0]).strip())
        if not heads or not heads[0]:
            continue
        for sense in lines[1:]:
            sense = _SENSE.sub("", sense)
            # a line that is only notes (grammar, cross-references) or a usage note says
            # nothing to pair with the headword
            bare = sense.strip()
            if (not _NOTES.sub("", bare).strip() or bare.startswith("Note:")
                    or bare.startswith("(") and (bare.endswith(")")
                                                 or bare.count("(") > bare.count(")"))):
                continue
            out.extend((head, t.strip()) for head in heads
                       for t in re.split(r"[,;]", sense) if t.strip())
    # a form and its reading are two index entries of one definition
    return list(dict.fromkeys(out))


def read_entry_lines(path: str | Path,
                     columns: tuple[int, int] = (1, 2)) -> list[tuple[list[str], list[str]]]:
    """Per line of a TSV dictionary, the synonyms of its two languages in their order (``;``
    between synonyms). ``columns`` are the 0-based fields of the two languages (Ding's file has
    a line number first). A path ending in ``.index`` is a dictd database, read by
    :func:`read_dictd` with one (headword, translation) line per pair (``columns`` does not
    apply)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"dictionary {path} does not exist")
    if p.suffix == ".index":
        return [([a], [b]) for a, b in read_dictd(p)]
    out = []
    need = max(columns) + 1
    for n, line in enumerate(read_lines(p), 1):
        fields = line.rstrip("\n").split("\t")
        if len(fields) < need:
            if not line.strip():
                continue
            raise InputError(f"{path}, line {n}: expected at least {need} tab-separated fields, "
                             f"found {len(fields)}")
        out.append(([s.strip() for s in fields[columns[0]].split(";") if s.strip()],
                    [s.strip() for s in fields[columns[1]].split(";") if s.strip()]))
    return out


def read_entries(path: str | Path, columns: tuple[int, int] = (1, 2)) -> list[tuple[str, str]]:
    """The (first-language, second-language) synonym pairs of a dictionary
    (:func:`read_entry_lines`): every synonym of one side with every synonym of the other, per
    line."""
    return [(a, b) for a_syn, b_syn in read_entry_lines(path, columns)
            for a in a_syn for b in b_syn]


class Lexicon:
    """Word translations in both directions: ``forward[w]`` is the set of second-language keys a
    first-language key ``w`` translates to, ``backward`` the reverse."""

    def __init__(self, pairs: set[tuple[str, str]]):
        """Index the word-key pairs."""
        self.pairs = pairs
        self.forward: dict[str, set[str]] = {}
        self.backward: dict[str, set[str]] = {}
        for a, b in pairs:
            self.forward.setdefault(a, set()).add(b)
            self.backward.setdefault(b, set()).add(a)

    def swapped(self) -> "Lexicon":
        """The same lexicon read in the other direction."""
        return Lexicon({(b, a) for a, b in self.pairs})

    def __len__(self) -> int:
        return len(self.pairs)


def lexicon_pairs(lines: list[tuple[list[str], list[str]]], words_a: Words, words_b: Words,
                  max_words: int = 3) -> set[tuple[str, str]]:
    """Word-key pairs of a dictionary's lines (:func:`read_entry_lines`): of each synonym pair
    of a line with at most ``max_words`` words on each side (after cleaning), every word of one
    side with every word of the other."""
    def usable(synonyms: list[str], words: Words) -> list[list[str]]:
        # each synonym is cleaned once a line, not once for every synonym of the other side,
        # and its words are counted before they are keyed: stemming the many entries that are
        # too long was most of the 13 CPU-s that reading Ding's dictionary took
        out = []
        for s in synonyms:
            w = words.words(_clean(s, words.lang))
            if w and len(w) <= max_words:
                out.append([words.key(x) for x in w])
        return out

    pairs: set[tuple[str, str]] = set()
    for a, b in lines:
        ta = usable(a, words_a)
        tb = usable(b, words_b) if ta else ()
        for x_keys in ta:
            for y_keys in tb:
                pairs.update((x, y) for x in x_keys for y in y_keys)
    return pairs


@functools.lru_cache(maxsize=4)
def load_lexicon(path: str, langs: tuple[str, str], normalise: str, max_words: int,
                 columns: tuple[int, int] = (1, 2)) -> Lexicon:
    """The lexicon of a dictionary file, read once per process for each setting."""
    lines = read_entry_lines(path, columns)
    words_a, words_b = Words(langs[0], normalise), Words(langs[1], normalise)
    return Lexicon(lexicon_pairs(lines, words_a, words_b, max_words))
