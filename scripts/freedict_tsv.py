"""Write a FreeDict dictionary pair as one TSV lexicon for ``lexical_coverage.v1`` and
``lexical_translation_model.v1``: the bilingual dictionary signal of hunalign and bicleaner
(Varga et al. 2005; Sánchez-Cartagena et al. 2018) for language pairs the shared data has no
dictionary for (en-fr, en-cs).

FreeDict's dictionaries come from Debian's packages (no download at run time)::

    apt-get install dict-freedict-eng-fra dict-freedict-fra-eng
    .venv/bin/python scripts/freedict_tsv.py en fr models/freedict-en-fr.tsv.gz

reads ``/usr/share/dictd/freedict-eng-fra.index`` and, when installed, ``freedict-fra-eng.index``
(turned round), and writes ``n<TAB>en<TAB>fr`` lines (the layout of the Ding file the lexical
components read by default: ``dictionary_columns: [1, 2]``, ``dictionary_langs: [en, fr]``).
"""

from __future__ import annotations

import argparse
import gzip
import sys
from pathlib import Path

from bitextforge.plugins.lexical.dictionary import read_dictd

#: ISO 639-1 -> the 639-3 codes FreeDict names its files with
CODES = {"en": "eng", "fr": "fra", "cs": "ces", "de": "deu", "es": "spa", "it": "ita",
         "nl": "nld", "pt": "por", "pl": "pol", "sv": "swe", "da": "dan", "fi": "fin",
         "hu": "hun", "el": "ell", "hr": "hrv", "ga": "gle", "cy": "cym", "ja": "jpn"}


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, read both directions that are installed, write the TSV atomically."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", help="first language (ISO 639-1), e.g. en")
    ap.add_argument("b", help="second language, e.g. fr")
    ap.add_argument("out", help="TSV to write (.gz compresses)")
    ap.add_argument("--dictd", default="/usr/share/dictd", help="where the .index files are")
    args = ap.parse_args(argv)
    for code in (args.a, args.b):
        if code not in CODES:
            ap.error(f"no FreeDict code known for {code!r}; known: {', '.join(sorted(CODES))}")
    a3, b3 = CODES[args.a], CODES[args.b]
    forward = Path(args.dictd) / f"freedict-{a3}-{b3}.index"
    backward = Path(args.dictd) / f"freedict-{b3}-{a3}.index"
    if not forward.is_file() and not backward.is_file():
        print(f"freedict_tsv: error: neither {forward} nor {backward} exists; "
              f"apt-get install dict-freedict-{a3}-{b3} dict-freedict-{b3}-{a3}", file=sys.stderr)
        return 2
    pairs: list[tuple[str, str]] = []
    for path, turn in ((forward, False), (backward, True)):
        if path.is_file():
            got = read_dictd(path)
            pairs += [(y, x) for x, y in got] if turn else got
            print(f"{path}: {len(got)} entry pairs")
    pairs = list(dict.fromkeys(pairs))   # once each, in reading order
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".part")
    opener = gzip.open if out.suffix == ".gz" else open
    with opener(tmp, "wt", encoding="utf-8") as fh:
        fh.write(f"n\t{args.a}\t{args.b}\n")
        for n, (x, y) in enumerate(pairs, 1):
            fh.write(f"{n}\t{x.replace(chr(9), ' ')}\t{y.replace(chr(9), ' ')}\n")
    tmp.replace(out)
    print(f"{out}: {len(pairs)} entry pairs ({args.a}-{args.b})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
