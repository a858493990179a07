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
import tempfile
from itertools import chain, islice
from operator import itemgetter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from . import tokens
from .errors import InputError

Batch = dict[str, list]
BASE_COLUMNS = ("id", "variant", "origin", "src", "tgt", "weight")
NUMERIC_BASE = {"id": int, "variant": int, "weight": float}


@dataclass
class ReadStats:
    """What a reader saw, for the manifest."""

    rows: int = 0
    replaced_invalid_utf8: int = 0
    files: list[str] = field(default_factory=list)


def open_binary(path: str | os.PathLike) -> io.BufferedIOBase:
    """Open ``path`` for reading bytes, through gzip when it ends in ``.gz``; clear error if absent."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{p}: no such file")
    if p.is_dir():
        raise InputError(f"{p}: is a directory, expected a file")
    if p.suffix == ".gz":
        return gzip.open(p, "rb")  # type: ignore[return-value]
    return open(p, "rb")


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
        if not Path(entry).is_file():
            raise InputError(f"{entry}: no such file; pass an existing TSV file (plain or .gz)")
        for n, line in enumerate(read_lines(entry), 1):
            if limit is not None and len(src) >= limit:
                break
            fields = line.split("\t")
            if len(fields) < 2:
                if not line.strip():
                    continue
                raise InputError(f"{entry}:{n}: expected two tab-separated fields (src<TAB>tgt), "
                                 f"found one")
            src.append(fields[0])
            tgt.append(fields[1])
    return (tgt, src) if swap else (src, tgt)


def batch_len(batch: Batch) -> int:
    """Number of rows in a batch."""
    return len(batch["id"])


def take_rows(batch: Batch, idx: list[int]) -> Batch:
    """A new batch of the rows at ``idx`` (in that order, repeats allowed); the text facts
    remembered for its ``src`` and ``tgt`` (:mod:`bitextforge.tokens`) go with the rows."""
    if len(idx) < 2:  # itemgetter of one index returns the item itself, of none fails
        out = {k: [v[i] for i in idx] for k, v in batch.items()}
    else:
        get = itemgetter(*idx)
        out = {k: list(get(v)) for k, v in batch.items()}
    for side in ("src", "tgt"):
        if side in batch:
            tokens.carry(batch[side], out[side], idx)
    return out


class Reader:
    """Streams an input as batches of ``batch_size`` rows; built from the recipe's ``input``."""

    def __init__(self, spec, batch_size: int):
        """``spec`` is a :class:`bitextforge.recipe.InputSpec`."""
        self.spec = spec
        self.batch_size = batch_size
        self.stats = ReadStats()

    def extra_columns(self) -> list[str]:
        """Columns beyond src/tgt that the input carries (TSV/JSONL extra fields)."""
        spec = self.spec
        if spec.format == "tsv":
            cols = self._tsv_columns()
            return [c for c in cols if c not in ("src", "tgt")]
        return list(spec.extra_fields or [])

    def _tsv_columns(self) -> list[str]:
        spec = self.spec
        if spec.columns:
            return list(spec.columns)
        for line in iter_lines(spec.path, spec.on_invalid_utf8, ReadStats()):
            return line.split("\t")
        raise InputError(f"{spec.path}: empty file, cannot read a header")

    def rows(self) -> Iterator[tuple]:
        """Yield ``(src, tgt, extras...)`` tuples in input order."""
        spec = self.spec
        limit = spec.limit
        n = 0
        if spec.format == "plain":
            gen = self._plain_rows()
        elif spec.format == "tsv":
            gen = self._tsv_rows()
        else:
            gen = self._jsonl_rows()
        for row in gen:
            if limit is not None and n >= limit:
                return
            n += 1
            yield row

    def _plain_rows(self) -> Iterator[tuple]:
        for src, tgt in self._plain_columns(self.batch_size):
            yield from zip(src, tgt)

    def _plain_columns(self, size: int) -> Iterator[tuple[list[str], list[str]]]:
        """Paired lists of up to ``size`` lines of both files (``input.limit`` applied); the
        fast path of plain input, which never builds a tuple per row."""
        spec = self.spec
        self.stats.files = [str(spec.src), str(spec.tgt)]
        a = chain.from_iterable(iter_line_blocks(spec.src, spec.on_invalid_utf8, self.stats))
        b = chain.from_iterable(iter_line_blocks(spec.tgt, spec.on_invalid_utf8, self.stats))
        n = 0
        limit = spec.limit
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
        for needed in ("src", "tgt"):
            if needed not in cols:
                raise InputError(f"{spec.path}: TSV columns {cols} have no {needed!r} column "
                                 f"(name them with input.columns)")
        si, ti = cols.index("src"), cols.index("tgt")
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
            yield (fields[si], fields[ti], *(fields[i] for i in others))

    def _jsonl_rows(self) -> Iterator[tuple]:
        spec = self.spec
        self.stats.files = [str(spec.path)]
        extras = list(spec.extra_fields or [])
        for lineno, line in enumerate(iter_lines(spec.path, spec.on_invalid_utf8, self.stats), 1):
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(f"{spec.path}:{lineno}: invalid JSON: {exc.msg}") from None
            if not isinstance(obj, dict):
                raise InputError(f"{spec.path}:{lineno}: expected a JSON object per line")
            try:
                s, t = obj["src"], obj["tgt"]
            except KeyError as exc:
                raise InputError(f"{spec.path}:{lineno}: missing key {exc.args[0]!r}") from None
            if not isinstance(s, str) or not isinstance(t, str):
                raise InputError(f"{spec.path}:{lineno}: 'src' and 'tgt' must be strings")
            yield (s, t, *(obj.get(k) for k in extras))

    def batches(self) -> Iterator[Batch]:
        """Yield batches with the base columns plus the input's extra columns."""
        size = self.batch_size
        start = 0
        if self.spec.format == "plain":
            for src, tgt in self._plain_columns(size):
                n = len(src)
                yield {"id": list(range(start, start + n)), "variant": [0] * n,
                       "origin": ["input"] * n, "src": src, "tgt": tgt, "weight": [1.0] * n}
                start += n
            self.stats.rows = start
            return
        extra = self.extra_columns()
        buf: list[tuple] = []
        for row in self.rows():
            buf.append(row)
            if len(buf) >= size:
                yield self._make(buf, start, extra)
                start += len(buf)
                buf = []
        if buf:
            yield self._make(buf, start, extra)
            start += len(buf)
        self.stats.rows = start

    @staticmethod
    def _make(rows: list[tuple], start: int, extra: list[str]) -> Batch:
        n = len(rows)
        cols = list(zip(*rows))
        batch: Batch = {
            "id": list(range(start, start + n)),
            "variant": [0] * n,
            "origin": ["input"] * n,
            "src": list(cols[0]),
            "tgt": list(cols[1]),
            "weight": [1.0] * n,
        }
        for j, name in enumerate(extra):
            batch[name] = list(cols[2 + j])
        return batch


def format_value(v: Any) -> str:
    """Render one cell for TSV/plain output: floats in 6 significant digits, None as empty."""
    if v is None:
        return ""
    if isinstance(v, float):
        return "nan" if v != v else format(v, ".6g")
    if isinstance(v, str):
        if "\t" in v or "\n" in v or "\\" in v:
            return v.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
        return v
    return str(v)


def current_umask() -> int:
    """The process umask (``os.umask`` only sets it, so it is set and restored at once)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class AtomicFile:
    """A text file written under a temporary name and renamed into place by :meth:`commit`.

    A crash, an exception or :meth:`discard` never leaves a half-written file under the final name.
    """

    def __init__(self, path: str | os.PathLike):
        """Open a temporary file beside ``path``."""
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        # mkstemp creates 0600; a finished output gets the mode open() would give it, so other
        # users and tools on a shared machine can read the corpus when the umask allows
        os.fchmod(fd, 0o666 & ~current_umask())
        self.tmp = Path(tmp)
        self.fh = os.fdopen(fd, "w", encoding="utf-8", newline="\n")

    def write(self, text: str) -> None:
        """Write text to the temporary file."""
        self.fh.write(text)

    def commit(self) -> Path:
        """Flush, fsync and rename the temporary file to its final name."""
        self.fh.flush()
        os.fsync(self.fh.fileno())
        self.fh.close()
        os.replace(self.tmp, self.path)
        return self.path

    def discard(self) -> None:
        """Close and delete the temporary file."""
        if not self.fh.closed:
            self.fh.close()
        self.tmp.unlink(missing_ok=True)


def write_atomic(path: str | os.PathLike, text: str) -> Path:
    """Write a whole text file atomically."""
    f = AtomicFile(path)
    try:
        f.write(text)
        return f.commit()
    except BaseException:
        f.discard()
        raise


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
    out, i = [], 0
    while i < len(v):
        c = v[i]
        if c == "\\" and i + 1 < len(v):
            nxt = v[i + 1]
            out.append({"t": "\t", "n": "\n", "\\": "\\"}.get(nxt, "\\" + nxt))
            i += 2
        else:
            out.append(c)
            i += 1
    return "".join(out)


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
