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

from .checks import check_recipe_files
from .corpus import AtomicFile, TsvWriter
from .decide import count_words, decide_rows
from .errors import BitextforgeError
from .plan import Plan, seed_everything
from .prepare import run_prepare
from .recipe import load_recipe
from .registry import get_registry
from .source import Source
from .steps import NAN


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
                 quiet: bool = False) -> ScoreResult:
    """Score the recipe's input with its filters (after its paraphrase steps) into ``output``."""
    return score_parsed(load_recipe(recipe_path, overrides), output, quiet)


def score_parsed(recipe, output: str, quiet: bool = False) -> ScoreResult:
    """:func:`score_recipe` for a recipe already validated (trainers that score data use it)."""
    recipe_path = recipe.source
    if recipe.input is None:
        raise BitextforgeError(f"{recipe_path}: input: required field missing (score reads a "
                               f"corpus; this recipe only trains models)")
    registry = get_registry()
    check_recipe_files(recipe, registry)
    seed_everything(recipe.seed)
    if recipe.prepare:
        run_prepare(recipe, registry)
    source = Source(recipe.input, recipe.batch_size, seed=recipe.seed,
                    progress=recipe.progress and not quiet)
    try:
        with Plan(recipe, registry, source.extra_columns()) as plan:
            execs = [ex for ex in plan.executors if ex.in_score]
            # scores go to a temporary TSV first; rejected_by is known only when every row is
            # scored
            writer = TsvWriter(output, plan.columns)
            final = None
            decisions = _Decisions(execs)
            try:
                for batch in source.batches():
                    for ex in execs:
                        batch = ex.score_only(batch)
                    decisions.add(batch)
                    writer.write(batch)
                writer.finish()
                writer.file.fh.close()
                labels = decisions.replay(writer.rows)
                final = AtomicFile(output)
                with open(writer.file.tmp, encoding="utf-8") as fh:
                    final.write(fh.readline().rstrip("\n") + "\trejected_by\n")
                    final.write("".join(line[:-1] + "\t" + label + "\n"
                                        for line, label in zip(fh, labels)))
                path = final.commit()
            except BaseException:
                if final is not None:
                    final.discard()
                raise
            finally:
                writer.file.discard()
    except OSError as exc:
        raise BitextforgeError(f"{output}: {exc.strerror or exc}") from exc
    return ScoreResult(writer.rows, path, [ex.stats.to_dict() for ex in execs])
