"""The pieces of a run ``bitextforge serve`` reads that need no run: its TSV tables read as
columns, and the bins its histograms are drawn in (on the score, or on the log-odds of a
probability-like score).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..errors import BitextforgeError

HIST_BINS = 60
#: the x axes a histogram can be drawn on: the score itself, or the log-odds ``log(p / (1 - p))``
#: of a probability-like score (every score in [0, 1]), which spreads the rows crowded near 1
#: (or 0) over a readable width
AXES = ("score", "logit")
#: probabilities are clipped to [LOGIT_EPS, 1 - LOGIT_EPS] before the log-odds: 0 and 1 stay
#: finite, a little beyond the 6-digit scores a TSV stores (0.999999: 13.8; 1: 16.1)
LOGIT_EPS = 1e-7


class RunDataError(BitextforgeError):
    """A run directory or scores file that cannot be shown; the message names the file."""


def logit(p: np.ndarray) -> np.ndarray:
    """The log-odds ``log(p / (1 - p))`` of probabilities, clipped to :data:`LOGIT_EPS` from 0
    and 1 so that both stay finite; NaN stays NaN."""
    q = np.clip(np.asarray(p, dtype=np.float64), LOGIT_EPS, 1.0 - LOGIT_EPS)
    return np.log(q) - np.log1p(-q)


def histogram_edges(v: np.ndarray, bounds: list[float] = ()) -> np.ndarray:
    """Bin edges for the finite scores ``v`` of a filter step, about :data:`HIST_BINS` bins of
    varying width: they span the data's whole range (a far tail is drawn where it lies, not
    piled into an edge bin), half are equal widths over that range and half hold equal shares
    of the rows, so bins are finer where the scores are dense (near 1 for most probabilities);
    each finite recipe bound is an edge, so no bin holds rows on both sides of it."""
    finite_bounds = [float(b) for b in bounds if np.isfinite(b)]  # min: -.inf bounds nothing
    if not len(v):
        return np.unique(np.r_[np.linspace(0.0, 1.0, HIST_BINS + 1), finite_bounds])
    lo, hi = min([float(v.min()), *finite_bounds]), max([float(v.max()), *finite_bounds])
    if hi <= lo:
        return np.linspace(lo - 0.5, hi + 0.5, HIST_BINS + 1)
    half = HIST_BINS // 2
    edges = np.unique(np.r_[np.linspace(lo, hi, half + 1),
                            np.quantile(v, np.linspace(0.0, 1.0, HIST_BINS - half + 1)),
                            finite_bounds])
    # quantiles of tied scores land a rounding error apart: such slivers are no bins
    keep = np.r_[True, np.diff(edges) > (hi - lo) * 1e-9]
    keep[-1] = True
    edges = edges[keep]
    if len(edges) > 2 and edges[-1] - edges[-2] <= (hi - lo) * 1e-9:
        edges = np.delete(edges, -2)
    return edges


def read_table(path: Path, score_cols: set[str], fraction: float | None = None, rng=None):
    """One TSV table of a run as a pyarrow Table: scores as float64 (an empty cell is null, ``nan``
    is NaN), text as strings kept escaped, ids as integers. A row with the wrong number of fields
    is an error naming the file and line. With ``fraction`` the file is streamed and only a random
    share of its rows is kept, so memory stays bounded."""
    import pyarrow as pa
    import pyarrow.csv as pacsv

    with open(path, encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
    if "id" not in header or "src" not in header or "tgt" not in header:
        raise RunDataError(f"{path}: not a bitextforge table (no id/src/tgt header)")
    types = {c: pa.string() for c in header}
    types.update({c: pa.float64() for c in header if c in score_cols or c == "weight"})
    types.update({c: pa.int64() for c in ("id", "variant") if c in header})
    bad: list = []

    def invalid(row) -> str:
        bad.append(row)
        return "skip"

    options = dict(
        read_options=pacsv.ReadOptions(use_threads=False,
                                       block_size=(1 << 24) if fraction is None else (1 << 20)),
        parse_options=pacsv.ParseOptions(delimiter="\t", quote_char=False, double_quote=False,
                                         escape_char=False, invalid_row_handler=invalid),
        convert_options=pacsv.ConvertOptions(column_types=types, null_values=[""],
                                             strings_can_be_null=False))
    try:
        if fraction is None:
            table = pacsv.read_csv(path, **options)
        else:
            reader = pacsv.open_csv(path, **options)
            batches = [b.filter(pa.array(rng.random(b.num_rows) < fraction)) for b in reader]
            table = pa.Table.from_batches(batches, schema=reader.schema)
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        raise RunDataError(f"{path}: unreadable ({str(exc).splitlines()[0]})") from None
    if bad:
        row = bad[0]
        raise RunDataError(f"{path}:{row.number}: {row.actual_columns} fields, expected "
                           f"{row.expected_columns} (is the run still being written?)")
    return table


def whole(v: np.ndarray) -> bool:
    f = v[np.isfinite(v)]
    return bool(np.all((f == np.round(f)) & (np.abs(f) < 1e5)))


def half_last_digit(v: np.ndarray) -> np.ndarray:
    """Half a unit in the 6th significant digit of each score: the rounding of a TSV cell."""
    with np.errstate(divide="ignore", invalid="ignore"):
        mag = np.floor(np.log10(np.abs(v)))
    mag = np.where(np.isfinite(mag), mag, -300)
    return 0.5 * np.power(10.0, mag - 5)


def json_float(x: float) -> float | None:
    x = float(x)
    return x if math.isfinite(x) else None
