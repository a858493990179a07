"""``bitextforge score``: run a recipe's split, paraphrase and filter steps as scorers only and write a TSV
with every score column; no row is removed and no weight applied (OpusFilter's ``score`` step).

The last column, ``rejected_by``, names the first filter step whose decision would reject the row
(empty when every step keeps it): the decisions are replayed in step order over the scored rows,
``top``/``words`` among the rows earlier steps keep, as a run would. A paraphrase carries the
scores of the filters that ran before it was made, so a paraphrase of an original that such a
filter rejects is marked with that filter. The same per-step table as ``run`` summarises it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from pathlib import Path

from ..io.corpus import AtomicFile, TsvWriter
from .driver import Driver, preamble
from .decide import count_words, decide_rows
from ..errors import BitextforgeError
from .plan import Plan
from ..recipe.load import load_recipe
from ..components.registry import get_registry
from .runners import score as score_runner
from .executors import NAN


@dataclass
class ScoreResult:
    """Rows written and where, and the would-be decisions per step (manifest-style entries)."""

    rows: int
    path: Path
    steps: list = field(default_factory=list)


class _Decisions:
    """Every filter step's scores (and word counts for ``words``) of the written rows, kept to
    replay the decisions once all rows are scored."""

    def __init__(self, execs: list):
        self.filters = [ex for ex in execs if ex.decides]
        self.scores = {ex.stats.index: array("d") for ex in self.filters}
        self.scope = {ex.stats.index: array("b") for ex in self.filters}
        self.words = {ex.stats.index: array("q") for ex in self.filters
                      if ex.keep.words is not None}

    def add(self, batch) -> None:
        """Record the final rows of one batch."""
        for ex in self.filters:
            col = batch[ex.col]
            k = ex.stats.index
            self.scores[k].extend(NAN if v is None else v for v in col)
            self.scope[k].extend(v is not None for v in col)
            if k in self.words:
                self.words[k].extend(count_words(batch["src"], batch["tgt"],
                                                 ex.keep.words_side).tolist())

    def replay(self, n: int) -> list[str]:
        """``rejected_by`` of each row; sets each filter step's rows in/out (and the cut of a
        top/words decision) as a run would count them."""
        import numpy as np

        alive = np.ones(n, dtype=bool)
        by = np.full(n, -1, dtype=np.int64)
        for ex in self.filters:
            k = ex.stats.index
            s = np.frombuffer(self.scores[k], dtype=np.float64) if n else np.zeros(0)
            scoped = np.frombuffer(self.scope[k], dtype=np.int8).astype(bool) if n else \
                np.zeros(0, dtype=bool)
            words = None
            if k in self.words:
                words = np.frombuffer(self.words[k], dtype=np.int64) if n else np.zeros(0, np.int64)
            keep, cut = decide_rows(ex.keep, s, scoped, alive, words)
            if cut is not None:
                ex.stats.threshold = cut
            ex.stats.rows_in = int(alive.sum())
            rejected = alive & ~keep
            by[rejected] = k
            alive &= keep
            ex.stats.rows_out = int(alive.sum())
        labels = {ex.stats.index: f"steps[{ex.stats.index}]:{ex.comp.name}" for ex in self.filters}
        return [labels[k] if k >= 0 else "" for k in by.tolist()]


def score_recipe(recipe_path: str, output: str, overrides: list[str] | None = None,
                 quiet: bool = False, force: bool = False) -> ScoreResult:
    """Score the recipe's input with its filters (after its paraphrase steps) into ``output``;
    ``force`` overwrites a file there that is not a score TSV."""
    return score_parsed(load_recipe(recipe_path, overrides), output, quiet, force)


def score_parsed(recipe, output: str, quiet: bool = False, force: bool = False) -> ScoreResult:
    """:func:`score_recipe` for a recipe already validated (trainers that score data use it)."""
    recipe_path = recipe.source
    if recipe.input is None:
        raise BitextforgeError(f"{recipe_path}: input: required field missing (score reads a "
                               f"corpus; this recipe only trains models)")
    registry = get_registry()
    progress = recipe.progress and not quiet
    with preamble(recipe, registry, progress, ScoreFile(Path(output), force),
                  evaluators=False) as run:
        try:
            with Plan(recipe, registry, run.source.extra_columns()) as plan:
                execs = [ex for ex in plan.executors if ex.in_score]
                sink = ScoreSink(Path(output), plan.columns, execs)
                written = Driver(recipe, run.source, score_runner, sink, execs).run()
        except OSError as exc:
            raise BitextforgeError(f"{output}: {exc.strerror or exc}") from exc
    return ScoreResult(written.rows, Path(output), [ex.stats.to_dict() for ex in execs])


class ScoreFile:
    """The output of ``bitextforge score``, claimed before any training (a context manager): an
    existing file that is not a score TSV is refused unless ``force``, so a typo in ``-o``
    cannot overwrite a corpus."""

    def __init__(self, path: Path, force: bool = False):
        """Claim ``path``; ``force`` overwrites whatever file is there."""
        self.path = path
        self.force = force

    def __enter__(self) -> "ScoreFile":
        if self.path.is_dir():
            raise BitextforgeError(f"{self.path}: is a directory; score writes one TSV file")
        if self.path.exists() and not self.force and not _is_score_tsv(self.path):
            raise BitextforgeError(f"{self.path}: exists and is not a TSV written by bitextforge "
                                   f"score; choose another file, or rerun with --force to "
                                   f"overwrite it")
        return self

    def __exit__(self, *exc) -> None:
        pass


def _is_score_tsv(path: Path) -> bool:
    """Whether ``path`` starts with the header of a score TSV (src and tgt, rejected_by last)."""
    try:
        with open(path, "rb") as fh:
            header = fh.readline(1 << 20).rstrip(b"\r\n").split(b"\t")
    except OSError:
        return False
    return header[-1] == b"rejected_by" and b"src" in header and b"tgt" in header


class ScoreSink:
    """Where ``bitextforge score`` writes: :meth:`open` gives the writer of the score TSV."""

    def __init__(self, path: Path, columns: list[str], execs: list):
        """The TSV ``path`` with ``columns`` and the decisions of the filter steps in ``execs``."""
        self.dir = path
        self.columns = columns
        self.execs = execs

    def open(self) -> "_ScoreTsv":
        """The writer of the score TSV."""
        return _ScoreTsv(self.dir, self.columns, self.execs)


class _ScoreTsv:
    """Scored rows go to a temporary TSV first; ``rejected_by`` is known only when every row is
    scored, so :meth:`commit` replays the decisions and writes the final TSV with it."""

    rejected_rows = 0  # score removes nothing

    def __init__(self, path: Path, columns: list[str], execs: list):
        self.path = path
        self.writer = TsvWriter(path, columns)
        self.decisions = _Decisions(execs)
        self.final: AtomicFile | None = None

    @property
    def rows(self) -> int:
        """Rows written so far."""
        return self.writer.rows

    def put(self, packet) -> None:
        """Record and write one scored batch."""
        self.decisions.add(packet.batch)
        self.writer.write(packet.batch)

    def commit(self) -> list[str]:
        """Write the final TSV, ``rejected_by`` last, under its name; return it."""
        writer = self.writer
        writer.finish()
        writer.file.fh.close()
        labels = self.decisions.replay(writer.rows)
        self.final = AtomicFile(self.path)
        with open(writer.file.tmp, encoding="utf-8") as fh:
            self.final.write(fh.readline().rstrip("\n") + "\trejected_by\n")
            self.final.write("".join(line[:-1] + "\t" + label + "\n"
                                     for line, label in zip(fh, labels)))
        path = self.final.commit()
        writer.file.discard()
        return [path.name]

    def discard(self) -> None:
        """Remove both temporary files."""
        if self.final is not None:
            self.final.discard()
        self.writer.file.discard()
