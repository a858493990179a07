"""The source stage of a run: the recipe's input as columnar batches, read by
:class:`~bitextforge.io.corpus.Reader` (with all its input checks and statistics), behind an optional
progress bar."""

from __future__ import annotations

import functools
from typing import Iterator

from ..io.corpus import Batch, MultiReader, Reader, batch_len
from ..log import progress
from .shards import split_shards


class Source:
    """Batches of the input, once, in order."""

    def __init__(self, spec, batch_size: int, progress: bool = False, seed: int = 0):
        """Read ``spec`` (an :class:`~bitextforge.recipe.load.InputSpec`, or a list of them: several
        inputs one after the other) in batches of ``batch_size`` rows; ``progress`` shows a bar
        with rows per second on stderr; ``seed`` draws ``sample: random`` inputs."""
        self.spec = spec
        self.batch_size = batch_size
        self.progress = progress
        self.seed = seed

    @functools.cached_property
    def reader(self) -> Reader | MultiReader:
        """The input's reader, opened when first asked for (its columns, then its batches)."""
        if isinstance(self.spec, list):
            return MultiReader(self.spec, self.batch_size, self.seed)
        return Reader(self.spec, self.batch_size, seed=self.seed)

    @property
    def stats(self):
        """The reader's statistics (files, rows, replaced invalid UTF-8)."""
        return self.reader.stats

    def extra_columns(self) -> list[str]:
        """The input's columns beyond src and tgt."""
        return self.reader.extra_columns()

    def batches(self) -> Iterator[Batch]:
        """Every batch of the input, its rows counted on the progress bar when ``progress``."""
        if isinstance(self.spec, list):  # several inputs: counted first, for the bar's ETA
            total = self.reader.expected_rows() if self.progress else None
        else:
            total = self.spec.limit
        return progress(self.reader.batches(), total=total, unit=" rows", show=self.progress,
                        weight=batch_len)

    def shards(self, shard_rows: int) -> Iterator[Iterator[Batch]]:
        """The batches grouped into shards of about ``shard_rows`` rows (whole batches)."""
        return split_shards(self.batches(), max(1, -(-shard_rows // self.batch_size)))

