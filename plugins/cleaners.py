"""Built-in cleaners: the ``clean:`` steps that change text before any filter scores it.

Each wraps a library that already does the job and keeps to what the issue "clean before you
filter" (#34) asks: mojibake repair with ftfy, HTML entities and tags with the standard library's
``html`` parser, Moses punctuation normalisation per language with sacremoses, Unicode NFC,
control characters and whitespace with ``unicodedata``, and unwrapping CSV-style quotes that
enclose a whole side. Quotes that belong to the text (German „…“, French « … », curly quotes)
are left alone by every cleaner unless a step asks otherwise. These are the fixes bifixer makes
that a library here covers; bifixer's own replacement tables are not copied.
"""

from __future__ import annotations

import re
import unicodedata
from html import unescape
from html.parser import HTMLParser
from typing import Literal

from pydantic import Field

import bitextforge
from bitextforge import Cleaner


class FixMojibake(Cleaner):
    """Repairs text decoded with the wrong encoding ("Ã la suite" -> "à la suite") with ftfy.

    Only ftfy's encoding fixes run (``fix_encoding`` and the fixes that belong to it: lossy
    sequences, inconsistent UTF-8, C1 controls, surrogates); its other changes (curly quotes,
    ligatures, full-width characters, HTML, line breaks, NFC) are other cleaners' work or not
    wanted, so quotes such as „…“ and « … » survive.
    """

    name = "fix_mojibake.v1"

    class Config(Cleaner.Config):
        """Options of fix_mojibake.v1."""

        restore_byte_a0: bool = Field(True, description="Also repair mojibake whose U+00A0 byte "
                                      "was turned into a space (ftfy's restore_byte_a0).")

    def __init__(self, config=None):
        """Load ftfy (part of the core install) with its encoding fixes only."""
        super().__init__(config)
        import ftfy

        self._fix = ftfy.fix_text
        self._cfg = ftfy.TextFixerConfig(
            unescape_html=False, remove_terminal_escapes=False, fix_encoding=True,
            restore_byte_a0=self.config.restore_byte_a0, fix_latin_ligatures=False,
            fix_character_width=False, uncurl_quotes=False, fix_line_breaks=False,
            remove_control_chars=False, normalization=None, explain=False)

    def clean(self, texts, side):
        """Each text with its mojibake repaired; ASCII text cannot hold any and is skipped."""
        fix, cfg = self._fix, self._cfg
        return [t if t.isascii() else fix(t, cfg) for t in texts]


class _TextOnly(HTMLParser):
    """Collects the text of an HTML fragment, dropping its tags and comments."""

    def __init__(self, entities: bool):
        super().__init__(convert_charrefs=entities)
        self.parts: list[str] = []

    def handle_data(self, data):
        self.parts.append(data)

    def handle_entityref(self, name):  # only called with convert_charrefs=False
        self.parts.append(f"&{name};")

    def handle_charref(self, name):  # only called with convert_charrefs=False
        self.parts.append(f"&#{name};")


class HtmlCleaner(Cleaner):
    """Decodes HTML entities ("&amp;" -> "&") and strips HTML tags ("<b>x</b>" -> "x").

    Tags are removed first, with the standard library's HTML parser (a ``<`` that opens no tag,
    as in "a < b", stays text), then entities are decoded, so an escaped tag ("&lt;b&gt;") becomes
    visible text, not markup that is removed.
    """

    name = "html.v1"

    class Config(Cleaner.Config):
        """Options of html.v1."""

        entities: bool = Field(True, description="Decode entities (&amp;, &#233;, &eacute;).")
        tags: bool = Field(True, description="Remove tags and comments, keeping their text.")

    def _one(self, text: str) -> str:
        c = self.config
        if c.tags and "<" in text:
            parser = _TextOnly(c.entities)
            parser.feed(text)
            parser.close()
            return "".join(parser.parts)
        return unescape(text) if c.entities and "&" in text else text

    def clean(self, texts, side):
        """Each text without tags and with its entities decoded."""
        return [self._one(t) if ("<" in t or "&" in t) else t for t in texts]


#: the characters of quotation marks that belong to a text (German, French, curly)
_TEXT_QUOTES = set("„“”‚‘’«»")


class MosesPunctuation(Cleaner):
    """Moses punctuation normalisation (sacremoses ``MosesPunctNormalizer``) for each side's
    language: dashes, spacing around brackets and punctuation, pseudo-spaces, number
    separators.

    With ``keep_quotes`` (the default) the rules that would turn „…“, “…”, ‘…’ and « … » into
    ASCII quotes are left out of the normaliser, so typographic quotes survive.
    """

    name = "moses_punctuation.v1"

    class Config(Cleaner.Config):
        """Options of moses_punctuation.v1."""

        src_lang: str = Field("en", description="Language of src (sacremoses' rules per "
                              "language: en, de, es, fr, cs, ...).")
        tgt_lang: str = Field("en", description="Language of tgt.")
        keep_quotes: bool = Field(True, description="Keep typographic quotes („…“ « … » “…” ‘…’) "
                                  "instead of replacing them by ASCII quotes.")
        penn: bool = Field(True, description="sacremoses' penn option (`` and '' quotes).")
        norm_numbers: bool = Field(True, description="Normalise the separators of numbers.")

    def __init__(self, config=None):
        """Build one normaliser per side's language."""
        super().__init__(config)
        from sacremoses import MosesPunctNormalizer

        c = self.config
        self.norm = {}
        for side, lang in (("src", c.src_lang), ("tgt", c.tgt_lang)):
            mpn = MosesPunctNormalizer(lang=lang, penn=c.penn, norm_numbers=c.norm_numbers)
            if c.keep_quotes:
                # configure the library's rule list, never rewrite its rules
                mpn.substitutions = [(pat, rep) for pat, rep in mpn.substitutions
                                     if not _TEXT_QUOTES & set(pat)]
            self.norm[side] = mpn

    def clean(self, texts, side):
        """Each text normalised with its side's rules."""
        normalize = self.norm[side].normalize
        return [normalize(t) for t in texts]


#: whitespace that is collapsed: ASCII spaces, tabs, line breaks (not U+00A0, which French
#: typography puts inside « … » on purpose)
_SPACES = re.compile("[ \t\n\r\f\v\u2028\u2029]+")


def _control(ch: str) -> bool:
    """A control character to remove: category Cc (tabs and line breaks are spaces, handled by the
    whitespace rule), or a byte-order mark."""
    return ch == "\ufeff" or (unicodedata.category(ch) == "Cc" and ch not in "\t\n\r\f\v")


def _without_controls(text: str) -> str:
    """``text`` with each control character replaced by a space (a BEL or ESC between two words
    separated them: removing it would glue them) and each byte-order mark removed (it is
    invisible inside a word)."""
    return "".join("" if ch == "\ufeff" else " " if _control(ch) else ch for ch in text)


class UnicodeCleaner(Cleaner):
    """Unicode NFC, control characters replaced by spaces (byte-order marks removed), runs of
    spaces, tabs and line breaks (U+2028 and U+2029 included) collapsed to one space and trimmed
    at both ends. Non-breaking spaces are kept (French « … » needs them).
    """

    name = "unicode.v1"

    class Config(Cleaner.Config):
        """Options of unicode.v1."""

        nfc: bool = Field(True, description="Compose to Unicode NFC.")
        control: bool = Field(True, description="Replace control characters (category Cc) "
                              "with a space, so that words they separated stay apart, and "
                              "remove byte-order marks.")
        whitespace: bool = Field(True, description="Collapse spaces, tabs and line breaks "
                                 "(U+2028, U+2029 too) into one space and trim both ends.")

    def _one(self, text: str) -> str:
        c = self.config
        if c.control and not text.isprintable():
            text = _without_controls(text)
        if c.whitespace:
            text = _SPACES.sub(" ", text).strip(" ")
        if c.nfc and not text.isascii():
            text = unicodedata.normalize("NFC", text)
        return text

    def clean(self, texts, side):
        """Each text composed, without control characters, with its whitespace collapsed."""
        return [self._one(t) for t in texts]


#: a whole side wrapped in one pair of double quotes, every quote inside doubled (CSV escaping)
_CSV_QUOTED = re.compile(r'"((?:[^"]|"")+)"')


class UnwrapQuotes(Cleaner):
    """Removes the double quotes that CSV export wrapped around a whole side
    (``"He said ""no""."`` -> ``He said "no".``).

    A side is unwrapped only when it starts and ends with ``"`` and every quote between them is
    doubled, as a CSV writer escapes them; text that merely begins and ends with quoted speech
    (``"Yes," he said, "no."``) has single quotes inside and is left alone, and so are „…“ and
    « … », which are not CSV quoting.
    """

    name = "unwrap_quotes.v1"

    class Config(Cleaner.Config):
        """Options of unwrap_quotes.v1."""

        strip: bool = Field(True, description="Trim spaces inside the removed quotes.")

    def clean(self, texts, side):
        """Each text with CSV quoting undone where it encloses the whole text."""
        out = []
        strip = self.config.strip
        for t in texts:
            m = _CSV_QUOTED.fullmatch(t) if t[:1] == '"' and t[-1:] == '"' else None
            if m is not None:
                t = m.group(1).replace('""', '"')
                if strip:
                    t = t.strip(" ")
            out.append(t)
        return out


@bitextforge.hookimpl
def register_cleaners(register):
    """Register the built-in cleaners."""
    register(FixMojibake)
    register(HtmlCleaner)
    register(MosesPunctuation)
    register(UnicodeCleaner)
    register(UnwrapQuotes)
