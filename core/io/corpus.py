"""Reading and writing corpora as streams of columnar batches.

A batch is a plain ``dict`` mapping column names to equally long lists (the shape Ray Data's
``map_batches`` also moves, so the local and Ray runners share every component). Every row has
``id`` (the original pair), ``variant`` (0 = original, 1.. = paraphrases), ``origin`` (which
component made it), ``src``, ``tgt`` and ``weight``; steps add score columns. Rows of one ``id`` are
always contiguous and never split across batches, so a Weighter sees whole groups.

Readers check what silently corrupts a corpus: unequal line counts of paired files, invalid UTF-8
(error with file and line, or replacement counted in the manifest), a byte-order mark, CRLF line
ends, NUL bytes and truncated gzip files. Empty lines are kept as rows.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import random
import re
from itertools import chain, islice
from operator import itemgetter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from .. import text_facts
from ..errors import InputError
# the atomic writers' old home: the package's top level, the API and the sink import them here
from .atomic import AtomicFile, current_umask, write_atomic  # noqa: F401

Batch = dict[str, list]
BASE_COLUMNS = ("id", "variant", "origin", "src", "tgt", "weight")
NUMERIC_BASE = {"id": int, "variant": int, "weight": float}


@dataclass
class ReadStats:
    """What a reader saw, for the manifest."""

    rows: int = 0
    replaced_invalid_utf8: int = 0
    #: TSV rows whose fields past the named columns were dropped (``extra_fields_policy:
    #: drop-extra``): each such row was misaligned in its file, and the manifest says how many
    extra_fields_dropped: int = 0
    files: list[str] = field(default_factory=list)


def open_binary(path: str | os.PathLike) -> io.BufferedIOBase:
    """Open ``path`` for reading bytes, through gzip when it ends in ``.gz``; clear error if absent."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, expected a file")
    if p.suffix == ".gz":
        problem = gzip_problem(p)
        if problem:
            raise InputError(f"{p}: {problem}")
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return open(p, "rb")


def gzip_problem(path: str | os.PathLike) -> str | None:
    """Why a file named ``.gz`` is not gzip data, from its first two bytes (the gzip magic
    number); None when it is, or is empty. Python's own message, "Not a gzipped file (b'De')",
    names neither the file nor the usual cause: plain text saved under a .gz name."""
    with open(path, "rb") as fh:
        head = fh.read(2)
    if head and head != b"\x1f\x8b":
        return ("not gzip-compressed, although its name ends in .gz; compress it or rename it "
                "without .gz")
    return None


#: bytes read per block; lines are checked and decoded a block at a time, not one by one
BLOCK_BYTES = 1 << 20


def iter_line_blocks(path: str | os.PathLike, errors: str,
                     stats: ReadStats) -> Iterator[list[str]]:
    """Yield the decoded lines of ``path`` in lists (about :data:`BLOCK_BYTES` each), without
    their line ends (LF or CRLF) and without a leading BOM.

    NUL bytes and invalid UTF-8 are found with one scan of each block; only when a block has a
    problem is its line number worked out, so clean input costs a few C calls per megabyte.
    """
    name = str(path)
    lineno = 0  # lines yielded so far
    rest = b""
    first = True
    with open_binary(path) as fh:
        while True:
            try:
                chunk = fh.read(BLOCK_BYTES)
            except (EOFError, gzip.BadGzipFile, OSError) as exc:
                raise InputError(f"{name}: unreadable after line {lineno}: {exc} "
                                 f"(truncated or corrupt gzip?)") from None
            if chunk:
                cut = chunk.rfind(b"\n")
                if cut < 0:  # a line longer than a block: keep reading
                    rest += chunk
                    continue
                data, rest = rest + chunk[: cut + 1], chunk[cut + 1:]
            elif rest:
                data, rest = rest, b""
            else:
                return
            if first:
                first = False
                if data.startswith(b"\xef\xbb\xbf"):
                    data = data[3:]
            lines = _decode_block(data, name, lineno, errors, stats)
            lineno += len(lines)
            yield lines


def _decode_block(data: bytes, name: str, lineno: int, errors: str,
                  stats: ReadStats) -> list[str]:
    """Lines of one block of whole lines; ``lineno`` lines came before it."""
    nul = data.find(b"\x00")
    if nul >= 0:
        at = lineno + data.count(b"\n", 0, nul) + 1
        raise InputError(f"{name}:{at}: NUL byte in line (binary data, not text)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if errors != "replace":
            start = data.rfind(b"\n", 0, exc.start) + 1
            at = lineno + data.count(b"\n", 0, exc.start) + 1
            raise InputError(f"{name}:{at}: invalid UTF-8 at byte {exc.start - start} (set "
                             f"input.on_invalid_utf8: replace to replace such bytes)") from None
        lines = []
        for raw in data.split(b"\n"):
            try:
                lines.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                stats.replaced_invalid_utf8 += 1
                lines.append(raw.decode("utf-8", errors="replace"))
        text = "\n".join(lines)
    lines = text.split("\n")
    if text.endswith("\n"):
        lines.pop()
        if "\r" in text:
            lines = [x[:-1] if x.endswith("\r") else x for x in lines]
    elif "\r" in text:
        # the last line of a file without a final newline keeps a trailing CR (it ends no line)
        last = lines.pop()
        lines = [x[:-1] if x.endswith("\r") else x for x in lines]
        lines.append(last)
    return lines


def iter_lines(path: str | os.PathLike, errors: str, stats: ReadStats) -> Iterator[str]:
    """Yield decoded lines of ``path`` without their line end (LF or CRLF) and without a BOM."""
    for block in iter_line_blocks(path, errors, stats):
        yield from block


def text_lines(path: str | os.PathLike, errors: str = "error") -> Iterator[str]:
    """The lines of a text file (plain or ``.gz``), streamed, with :func:`iter_lines`' checks:
    the one way components and trainers read a text file. ``errors="replace"`` replaces invalid
    UTF-8 instead of stopping at it with the file and line."""
    return iter_lines(path, errors, ReadStats())


def read_lines(path: str | os.PathLike, limit: int | None = None) -> list[str]:
    """All lines of a text file (``.gz`` ok) as a list, with :func:`iter_lines`' checks (BOM, CRLF,
    NUL, invalid UTF-8 with file and line); ``limit`` keeps only the first lines. For the model
    trainers and evaluators that need a whole text file in memory."""
    lines = iter_lines(path, "error", ReadStats())
    return list(lines if limit is None else islice(lines, limit))


def read_parallel(src: str | os.PathLike, tgt: str | os.PathLike) -> tuple[list[str], list[str]]:
    """Two line-aligned text files (plain or ``.gz``) read with :func:`read_lines`; a missing file
    or a count mismatch is a user error naming the files."""
    for p in (src, tgt):
        if not Path(p).is_file():
            raise InputError(f"{p}: no such file; pass an existing text file (plain or .gz)")
    s, t = read_lines(src), read_lines(tgt)
    if len(s) != len(t):
        raise InputError(f"{src} has {len(s)} lines but {tgt} has {len(t)}; they must be "
                         f"line-aligned translations of each other")
    return s, t


#: a training corpus as a recipe names it: a ``src<TAB>tgt`` file, or two line-aligned files
CorpusEntry = str | tuple[str, str]


def read_tsv_pairs(entries: Sequence[CorpusEntry], *, swap: bool = False,
                   limit: int | None = None) -> tuple[list[str], list[str]]:
    """The pairs of training corpora, in order, at most ``limit`` in all, as (source, target)
    lists; ``swap`` takes each pair's sides in the other order.

    An entry is a TSV file (.gz ok) whose first two fields are the pair (blank lines carry no
    pair and are passed over; a line with one field is an error naming its file and line), or a
    ``(src_file, tgt_file)`` pair of line-aligned files read with :func:`read_parallel`, whose
    pairs with an empty side are left out (an aligned pair of files ends with the blank lines a
    sentence splitter leaves between documents).
    """
    src: list[str] = []
    tgt: list[str] = []

    for entry in entries:
        if limit is not None and len(src) >= limit:
            break
        if not isinstance(entry, str):
            s, t = read_parallel(*entry)
            room = None if limit is None else limit - len(src)
            keep = [(a, b) for a, b in zip(s, t) if a.strip() and b.strip()][:room]
            src += [a for a, _ in keep]
            tgt += [b for _, b in keep]
            continue
        for a, b in tsv_file_pairs(entry, stream=False):
            if limit is not None and len(src) >= limit:
                break
            src.append(a)
            tgt.append(b)
    return (tgt, src) if swap else (src, tgt)


def tsv_file_pairs(path: str, stream: bool = True) -> Iterator[tuple[str, str]]:
    """The pairs of one ``src<TAB>tgt`` training file (.gz ok): its first two fields, blank lines
    passed over, a line with one field an error naming file and line. ``stream=False`` reads the
    whole file first (:func:`read_lines`), so an unreadable line anywhere in it stops the run."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such file; pass an existing TSV file (plain or .gz)")
    for n, line in enumerate(text_lines(path) if stream else read_lines(path), 1):
        fields = line.split("\t")
        if len(fields) < 2:
            if not line.strip():
                continue
            raise InputError(f"{path}:{n}: expected two tab-separated fields (src<TAB>tgt), "
                             f"found one")
        yield fields[0], fields[1]


def batch_len(batch: Batch) -> int:
    """Number of rows in a batch."""
    return len(batch["id"])


def take_rows(batch: Batch, idx: list[int]) -> Batch:
    """A new batch of the rows at ``idx`` (in that order, repeats allowed); the text facts
    remembered for its ``src`` and ``tgt`` (:mod:`bitextforge.text_facts`) go with the rows."""
    if len(idx) < 2:  # itemgetter of one index returns the item itself, of none fails
        out = {k: [v[i] for i in idx] for k, v in batch.items()}
    else:
        get = itemgetter(*idx)
        out = {k: list(get(v)) for k, v in batch.items()}
    for side in ("src", "tgt"):
        if side in batch:
            text_facts.carry(batch[side], out[side], idx)
    return out


def tag_column(side: str) -> str:
    """The column that holds the tag a ``generate`` step with ``tag:`` gives the rows it
    generated (Caswell et al. 2019's tagged back-translation), for the side it filled."""
    return f"{side}_tag"


def with_tags(batch: Batch) -> Batch:
    """The batch as it is written: each side's tag (``src_tag``/``tgt_tag``, where non-empty) in
    front of its text. Steps see and score the text without the tag; only the written corpus
    carries it."""
    out = batch
    for side in ("src", "tgt"):
        tags = batch.get(tag_column(side))
        if tags and any(tags):
            if out is batch:
                out = dict(batch)
            out[side] = [f"{t} {x}" if t else x for t, x in zip(tags, batch[side])]
    return out


class Reader:
    """Streams one input as batches of ``batch_size`` rows; built from an entry of the recipe's
    ``input`` (paired or monolingual; ``skip``, ``limit``, ``sample``, ``repeat``, ``weight``)."""

    def __init__(self, spec, batch_size: int, start: int = 0, cap: int | None = None,
                 seed: int = 0):
        """``spec`` is a :class:`bitextforge.recipe.load.InputSpec`; ids start at ``start``; ``cap``
        bounds the rows read (a ``max_ratio`` worked out by :class:`MultiReader`); ``seed``
        draws a ``sample: random``."""
        self.spec = spec
        self.batch_size = batch_size
        self.start = start
        self.seed = seed
        self.stats = ReadStats()
        limits = [x for x in (spec.limit, cap) if x is not None]
        #: the most rows one pass reads (after skip), or None
        self.take = min(limits) if limits else None
        #: the line numbers (after skip) of a random sample, drawn when reading starts
        self.chosen: set[int] | None = None

    def extra_columns(self) -> list[str]:
        """Columns beyond src/tgt that the input carries (TSV/JSONL extra fields, then the tag
        columns of its ``tag``)."""
        return [*self._file_columns(), *(tag_column(s) for s in (self.spec.tag or {}))]

    def _file_columns(self) -> list[str]:
        spec = self.spec
        if spec.format == "tsv":
            cols = [c for c in self._tsv_columns() if c not in ("src", "tgt")]
            where = (f"{spec.path}: input.columns" if spec.columns else
                     f"{spec.path}: header column")
        elif spec.format == "jsonl":
            cols = list(spec.extra_fields or [])
            where = f"{spec.path}: input.extra_fields"
        else:
            return []
        # a file's column of these names would silently replace what the run numbers itself:
        # ids that are not numbers broke the report, and rows of one id would be taken for
        # paraphrases of one original
        taken = [c for c in cols if c in BASE_COLUMNS]
        if taken:
            how = (f"name it otherwise in input.columns (e.g. source_{taken[0]})"
                   if spec.format == "tsv" else "rename the key in the file")
            raise InputError(f"{where} {taken[0]!r} is a column bitextforge makes itself (id, "
                             f"variant, origin and weight are the run's own); {how}")
        return cols

    def _tsv_columns(self) -> list[str]:
        spec = self.spec
        if spec.columns:
            return list(spec.columns)
        for line in iter_lines(spec.path, spec.on_invalid_utf8, ReadStats()):
            return line.split("\t")
        raise InputError(f"{spec.path}: empty file, cannot read a header")

    def rows(self) -> Iterator[tuple]:
        """Yield ``(src, tgt, extras...)`` tuples of one pass in input order (``skip``, ``limit``
        and a sample applied)."""
        for block in self._blocks():
            yield from zip(*block)

    def _raw_blocks(self) -> Iterator[tuple[list, ...]]:
        """Column blocks ``(src, tgt, extras...)`` of the whole file, before skip and limit."""
        spec = self.spec
        size = self.batch_size
        if spec.format == "plain" and spec.one_sided:
            path = getattr(spec, spec.side)
            self.stats.files = [str(path)]
            for lines in _resize(iter_line_blocks(path, spec.on_invalid_utf8, self.stats), size):
                empty = [""] * len(lines)
                yield (lines, empty) if spec.side == "src" else (empty, lines)
            return
        if spec.format == "plain":
            yield from self._plain_columns(size)
            return
        gen = self._tsv_rows() if spec.format == "tsv" else self._jsonl_rows()
        while True:
            rows = list(islice(gen, size))
            if not rows:
                return
            yield tuple(map(list, zip(*rows)))

    def _blocks(self) -> Iterator[tuple[list, ...]]:
        """The blocks of one pass: ``skip`` rows dropped, then the first ``take`` rows or a
        sample of them."""
        spec = self.spec
        skip, take = spec.skip, self.take
        if spec.sample == "random" and take is not None:
            if self.chosen is None:
                total = sum(len(b[0]) for b in self._raw_blocks()) - skip
                rng = random.Random(self.seed)
                self.chosen = set(rng.sample(range(max(0, total)), min(take, max(0, total))))
            chosen, take = self.chosen, None
        else:
            chosen = None
        pos = -skip  # the row number after skip of the next row read
        n = 0
        for block in self._raw_blocks():
            size = len(block[0])
            lo, hi = max(0, -pos), size
            pos += size
            if lo >= hi:
                continue
            if take is not None:
                hi = min(hi, lo + take - n)
            if chosen is not None:
                first = pos - size
                keep = [i for i in range(lo, hi) if first + i in chosen]
                if len(keep) < hi - lo:
                    block = tuple([col[i] for i in keep] for col in block)
                    lo, hi = 0, len(keep)
            if lo or hi < size:
                block = tuple(col[lo:hi] for col in block)
            if block[0]:
                n += len(block[0])
                yield block
            if take is not None and n >= take:
                return

    def _plain_columns(self, size: int) -> Iterator[tuple[list[str], list[str]]]:
        """Paired lists of up to ``size`` lines of both files; the fast path of plain input,
        which never builds a tuple per row. Line counts must agree unless ``limit`` stops
        reading first."""
        spec = self.spec
        self.stats.files = [str(spec.src), str(spec.tgt)]
        a = chain.from_iterable(iter_line_blocks(spec.src, spec.on_invalid_utf8, self.stats))
        b = chain.from_iterable(iter_line_blocks(spec.tgt, spec.on_invalid_utf8, self.stats))
        n = 0
        limit = None if spec.sample == "random" or self.take is None else spec.skip + self.take
        while True:
            want = size if limit is None else min(size, limit - n)
            if want <= 0:
                return
            s, t = list(islice(a, want)), list(islice(b, want))
            if len(s) != len(t):
                ns = n + len(s) + sum(1 for _ in a)
                nt = n + len(t) + sum(1 for _ in b)
                raise InputError(f"line counts differ: {spec.src} has {ns} lines, "
                                 f"{spec.tgt} has {nt}")
            if not s:
                return
            n += len(s)
            ended = len(s) < want
            if ended:  # the first file ended: the second must end too
                rest = sum(1 for _ in b)
                if rest:
                    raise InputError(f"line counts differ: {spec.src} has {n} lines, "
                                     f"{spec.tgt} has {n + rest}")
            yield s, t
            if ended:
                return

    def _tsv_rows(self) -> Iterator[tuple]:
        spec = self.spec
        self.stats.files = [str(spec.path)]
        cols = self._tsv_columns()
        for needed in ((spec.side,) if spec.one_sided else ("src", "tgt")):
            if needed not in cols:
                raise InputError(f"{spec.path}: TSV columns {cols} have no {needed!r} column "
                                 f"(name them with input.columns)")
        si = cols.index("src") if "src" in cols else None
        ti = cols.index("tgt") if "tgt" in cols else None
        if spec.one_sided:  # the other side is empty until a generate step fills it
            si, ti = (si, None) if spec.side == "src" else (None, ti)
        others = [i for i, c in enumerate(cols) if c not in ("src", "tgt")]
        lines = iter_lines(spec.path, spec.on_invalid_utf8, self.stats)
        lineno = 0
        if spec.header:
            next(lines, None)
            lineno = 1
        for line in lines:
            lineno += 1
            fields = line.split("\t")
            if len(fields) != len(cols):
                if spec.extra_fields_policy == "drop-extra" and len(fields) > len(cols):
                    fields = fields[: len(cols)]
                    self.stats.extra_fields_dropped += 1
                elif len(fields) < len(cols):
                    raise InputError(
                        f"{spec.path}:{lineno}: {len(fields)} tab-separated fields, expected "
                        f"{len(cols)} ({', '.join(cols)}); a missing field, or a line break "
                        f"inside a field?")
                else:
                    raise InputError(
                        f"{spec.path}:{lineno}: {len(fields)} tab-separated fields, expected "
                        f"{len(cols)} ({', '.join(cols)}); a tab inside a field? "
                        f"(input.extra_fields_policy: drop-extra keeps the first {len(cols)})")
            yield ("" if si is None else fields[si], "" if ti is None else fields[ti],
                   *(fields[i] for i in others))

    def _jsonl_rows(self) -> Iterator[tuple]:
        spec = self.spec
        self.stats.files = [str(spec.path)]
        extras = list(spec.extra_fields or [])
        keys = (spec.side,) if spec.one_sided else ("src", "tgt")
        for lineno, line in enumerate(iter_lines(spec.path, spec.on_invalid_utf8, self.stats), 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{spec.path}:{lineno}: invalid JSON: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise InputError(f"{spec.path}:{lineno}: expected a JSON object per line")
            try:
                vals = {k: obj[k] for k in keys}
            except KeyError as exc:
                raise InputError(f"{spec.path}:{lineno}: missing key {exc.args[0]!r}") from None
            if not all(isinstance(v, str) for v in vals.values()):
                raise InputError(f"{spec.path}:{lineno}: {' and '.join(map(repr, keys))} must "
                                 f"be strings")
            yield (vals.get("src", ""), vals.get("tgt", ""), *(obj.get(k) for k in extras))

    def batches(self) -> Iterator[Batch]:
        """Yield batches with the base columns plus the input's extra columns, ``repeat`` times
        over (each copy with fresh ids)."""
        extra = self._file_columns()
        origin, weight = self.spec.label, self.spec.weight
        tags = {tag_column(side): t for side, t in (self.spec.tag or {}).items()}
        start = self.start
        for _ in range(self.spec.repeat):
            for block in _resize(self._blocks(), self.batch_size, columns=True):
                n = len(block[0])
                batch: Batch = {"id": list(range(start, start + n)), "variant": [0] * n,
                                "origin": [origin] * n, "src": block[0], "tgt": block[1],
                                "weight": [weight] * n}
                for j, name in enumerate(extra):
                    batch[name] = block[2 + j]
                for name, t in tags.items():
                    batch[name] = [t] * n
                start += n
                yield batch
        self.stats.rows = start - self.start


def _resize(blocks: Iterable, size: int, columns: bool = False) -> Iterator:
    """Regroup ``blocks`` (lists of lines, or with ``columns`` tuples of equal-length column
    lists) into pieces of exactly ``size`` rows, the last one shorter."""
    buf: list | None = None
    for block in blocks:
        cols = block if columns else (block,)
        if not (buf and buf[0]) and len(cols[0]) == size:  # the usual case: passed as it is
            yield block
            continue
        if buf is None:
            buf = [[] for _ in cols]
        for acc, col in zip(buf, cols):
            acc.extend(col)
        while len(buf[0]) >= size:
            piece = [acc[:size] for acc in buf]
            buf = [acc[size:] for acc in buf]
            yield tuple(piece) if columns else piece[0]
    if buf is not None and buf[0]:
        yield tuple(buf) if columns else buf[0]


class MultiReader:
    """Streams every input of a recipe one after the other, ids running on across inputs; a
    ``max_ratio`` caps an input at a multiple of the two-sided rows read before it."""

    def __init__(self, specs: list, batch_size: int, seed: int = 0):
        """``specs`` are the recipe's :class:`~bitextforge.recipe.load.InputSpec` entries."""
        self.specs = specs
        self.batch_size = batch_size
        self.seed = seed
        self.stats = ReadStats()
        self.per_input: list[dict[str, Any]] = []

    def extra_columns(self) -> list[str]:
        """The union of the inputs' extra columns, in first-seen order (empty where an input
        lacks one)."""
        out: list[str] = []
        for spec in self.specs:
            for c in Reader(spec, self.batch_size).extra_columns():
                if c not in out:
                    out.append(c)
        return out

    def expected_rows(self) -> int | None:
        """The rows the inputs will give, counted from their files (one quick pass each), for
        a progress bar with an ETA; None when a file cannot be counted."""
        from .lines import count_lines

        total = paired = 0
        for spec in self.specs:
            files = spec.files()
            lines = count_lines(files[0]) if files else None
            if lines is None:
                return None
            n = max(0, lines - (1 if spec.format == "tsv" and spec.header else 0) - spec.skip)
            caps = [x for x in (spec.limit, None if spec.max_ratio is None
                                else int(spec.max_ratio * paired)) if x is not None]
            n = min([n, *caps]) * spec.repeat
            total += n
            if not spec.one_sided:
                paired += n
        return total

    def batches(self) -> Iterator[Batch]:
        """Every input's batches, in recipe order."""
        extra = self.extra_columns()
        start = paired = 0
        self.per_input = []
        for k, spec in enumerate(self.specs):
            cap = None if spec.max_ratio is None else int(spec.max_ratio * paired)
            reader = Reader(spec, self.batch_size, start=start, cap=cap, seed=self.seed + k)
            for batch in reader.batches():
                for c in extra:
                    batch.setdefault(c, [""] * batch_len(batch))
                yield batch
            start += reader.stats.rows
            if not spec.one_sided:
                paired += reader.stats.rows
            self.stats.files += reader.stats.files
            self.stats.replaced_invalid_utf8 += reader.stats.replaced_invalid_utf8
            self.stats.extra_fields_dropped += reader.stats.extra_fields_dropped
            self.per_input.append({"name": spec.label, "rows": reader.stats.rows,
                                   "side": spec.side or "both", "files": reader.stats.files})
        self.stats.rows = start


#: the characters other than LF that some reader ends a line at: ``str.splitlines`` ends lines at
#: all of them, Python's ``open()`` and pyarrow's CSV reader at CR. Text written as lines never
#: holds one raw (:func:`format_value` escapes them, :func:`plain_text` turns them into spaces).
LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
#: how :func:`format_value` escapes text: backslash, tab and LF as ``\\``, ``\t``, ``\n``, CR as
#: ``\r``, the other line breaks as ``\xHH`` / ``\uHHHH`` (:func:`unescape` inverts it)
_TSV_ESCAPES = {ord("\\"): "\\\\", ord("\t"): "\\t", ord("\n"): "\\n", ord("\r"): "\\r",
                **{ord(c): (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")
                   for c in LINE_BREAKS if c != "\r"}}
_PLAIN_BREAKS = re.compile("[\n" + LINE_BREAKS + "]")
_OTHER_BREAKS = re.compile("[" + LINE_BREAKS + "]")
_UNESCAPE = re.compile(r"\\(x[0-9a-f]{2}|u[0-9a-f]{4}|.)", re.DOTALL)
_UNESCAPED = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


def format_value(v: Any) -> str:
    """Render one cell for TSV/plain output: floats in 6 significant digits, None as empty; in
    text, backslashes, tabs and every line break (:data:`LINE_BREAKS`, LF) escaped, so that a
    cell never splits its line for any reader."""
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if v != v else format(v, ".6g")
    if isinstance(v, str):
        # isprintable() is False for every tab and line break: one C scan clears most cells
        if v.isprintable() and "\\" not in v:
            return v
        return v.translate(_TSV_ESCAPES)
    return str(v)


def json_line_text(text: str) -> str:
    """JSON Lines written with ``ensure_ascii=False``, with the line breaks JSON leaves raw
    (U+0085, U+2028, U+2029) escaped as ``\\uXXXX``: still the same JSON, one record a line for
    readers that split at every line break."""
    if "\x85" in text or "\u2028" in text or "\u2029" in text:
        text = text.replace("\x85", "\\u0085").replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return text


def plain_text(texts: list[str]) -> str:
    """``texts`` as lines of a plain file (``corpus.src``, a trainer's text file): a line break
    inside a text (LF or any of :data:`LINE_BREAKS`) is written as a space, so that every reader
    counts one line per text."""
    if not texts:
        return ""
    joined = "\n".join(texts)
    if joined.count("\n") != len(texts) - 1 or _OTHER_BREAKS.search(joined):
        joined = "\n".join(_PLAIN_BREAKS.sub(" ", t) for t in texts)
    return joined + "\n"


class TsvWriter:
    """Writes batches as TSV with a header; tabs, newlines and backslashes in text are escaped."""

    def __init__(self, path: str | os.PathLike, extra: Iterable[str] = ()):
        """Create the writer with the header ``extra`` (columns a batch lacks are left empty);
        without it, the header is fixed by the first batch."""
        self.file = AtomicFile(path)
        self.columns: list[str] | None = None
        self.extra = list(extra)
        self.rows = 0

    def write(self, batch: Batch) -> None:
        """Append a batch's rows."""
        if self.columns is None:
            # a fixed column list (the run knows every column in advance) wins over the order in
            # which this batch happened to acquire its columns
            self.columns = self.extra + [c for c in order_columns(list(batch))
                                         if c not in self.extra]
            self.file.write("\t".join(self.columns) + "\n")
        n = batch_len(batch)
        if not n:
            return
        cols = [batch.get(c) or [None] * n for c in self.columns]
        fv = format_value
        self.file.write("".join("\t".join(map(fv, r)) + "\n" for r in zip(*cols)))
        self.rows += n


    def finish(self) -> None:
        """Write the header if no batch came: an empty corpus still gets its header line."""
        if self.columns is None:
            self.columns = list(self.extra)
            self.file.write("\t".join(self.columns) + "\n")


def order_columns(cols: list[str]) -> list[str]:
    """Base columns first in their fixed order, then the rest in first-seen order."""
    seen = [c for c in BASE_COLUMNS if c in cols]
    return seen + [c for c in dict.fromkeys(cols) if c not in BASE_COLUMNS]


def unescape(v: str) -> str:
    """Invert :func:`format_value`'s escaping of text cells."""
    if "\\" not in v:
        return v
    return _UNESCAPE.sub(_unescape_one, v)


def _unescape_one(m: "re.Match[str]") -> str:
    code = m.group(1)
    if len(code) > 1:
        return chr(int(code[1:], 16))
    return _UNESCAPED.get(code, m.group(0))


class CorpusView:
    """Read access to a finished run's ``corpus.tsv``, as evaluators receive it."""

    def __init__(self, path: str | os.PathLike, numeric: Iterable[str] = ()):
        """``numeric`` names the columns to convert to float (score columns, weight)."""
        self.path = Path(path)
        self.numeric = set(numeric) | set(NUMERIC_BASE)
        with open(self.path, encoding="utf-8") as fh:
            self.columns = fh.readline().rstrip("\n").split("\t")
        #: the run's rejected rows (``rejected.tsv``) when it wrote them, so an evaluator can
        #: report on the input (kept + rejected) as well as on the final corpus
        self.rejected: CorpusView | None = None

    def _convert(self, name: str, values: list[str]) -> list:
        if name in NUMERIC_BASE:
            conv = NUMERIC_BASE[name]
            return [conv(v) for v in values]
        if name in self.numeric:
            try:
                return [float(v) if v else float("nan") for v in values]
            except ValueError:
                pass  # a text column carried from a TSV input (labels, URLs): keep it as text
        return [unescape(v) for v in values]

    def iter_batches(self, batch_size: int = 10000) -> Iterator[Batch]:
        """Yield the corpus as batches of typed columns."""
        with open(self.path, encoding="utf-8") as fh:
            fh.readline()
            buf: list[list[str]] = []
            for line in fh:
                buf.append(line.rstrip("\n").split("\t"))
                if len(buf) >= batch_size:
                    yield self._batch(buf)
                    buf = []
            if buf:
                yield self._batch(buf)

    def _batch(self, rows: list[list[str]]) -> Batch:
        cols = list(zip(*rows))
        return {name: self._convert(name, list(cols[i])) for i, name in enumerate(self.columns)}

    def column(self, name: str) -> list:
        """One whole column in memory (evaluators that need the full corpus)."""
        if name not in self.columns:
            raise InputError(f"{self.path}: no column {name!r}; columns are {', '.join(self.columns)}")
        # split off only the fields up to this column and convert just it: reading one column
        # of a wide corpus.tsv need not convert the others
        i = self.columns.index(name)
        with open(self.path, encoding="utf-8") as fh:
            fh.readline()
            values = [line.rstrip("\n").split("\t", i + 1)[i] for line in fh]
        return self._convert(name, values)

    def __len__(self) -> int:
        with open(self.path, "rb") as fh:
            return max(0, sum(1 for _ in fh) - 1)
