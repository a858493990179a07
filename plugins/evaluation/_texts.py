"""Shared helpers of the evaluators: resolving "a corpus column or a file" into aligned text lists.

Evaluators name their inputs by a corpus column (``tgt``) or a file path. A file is line-aligned
with the recipe's *input* (as references of a test set are), so rows of a filtered corpus pick
their line by the row's ``id`` (the input line number); a file given as the hypothesis itself is
taken line by line. This follows how sacrebleu (Post 2018) expects one reference stream per file.
"""

from __future__ import annotations

from pathlib import Path

from bitextforge import InputError
from bitextforge.api import read_lines


def read_text_file(path: str, what: str) -> list[str]:
    """Every line of ``path`` (``.gz`` ok, CRLF and BOM stripped); one clear error when absent."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{what}: {path}: no such file (give a file path or a corpus column name)")
    return read_lines(p)


def resolve_texts(corpus, spec: str, what: str) -> tuple[list[str], bool]:
    """Text for ``spec``: the corpus column of that name, else the file's lines.

    Returns ``(texts, from_column)``.
    """
    if spec in corpus.columns:
        return [str(x) for x in corpus.column(spec)], True
    return read_text_file(spec, what), False


def align_to_rows(lines: list[str], ids: list[int], path: str, what: str) -> list[str]:
    """Pick the line of each corpus row by its ``id`` (input line number)."""
    n = len(lines)
    out = []
    for i in ids:
        if i >= n:
            raise InputError(f"{what}: {path} has {n} lines but the corpus has rows of input line "
                             f"{i + 1}; the file must be line-aligned with the recipe's input")
        out.append(lines[i])
    return out
