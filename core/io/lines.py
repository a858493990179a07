"""Counting a text file's lines as the corpus reader counts them, without reading the corpus:
newlines counted in 1 MB blocks (``.gz`` read through gzip). Validation compares the line counts
of paired inputs with it, and the reader sizes its progress bar."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

_BLOCK = 1 << 20


def count_lines(path: str | os.PathLike) -> int | None:
    """Lines of a text file (``.gz`` read through gzip), as the corpus reader counts them: a last
    line without a final newline counts too. None when the file cannot be read to its end."""
    p = Path(path)
    opener = gzip.open if p.suffix == ".gz" else open
    n = 0
    last = b"\n"
    try:
        with opener(p, "rb") as fh:
            while True:
                block = fh.read(_BLOCK)
                if not block:
                    break
                n += block.count(b"\n")
                last = block[-1:]
    except (OSError, EOFError):
        return None  # a truncated gzip file: the reader reports it with its line number
    return n + (last != b"\n")
