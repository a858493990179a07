"""How many times a training on an expanded corpus shows the model each real pair, and the
warning when that is fewer times than expansion has been measured at.

Synthetic rows (back-translations, paraphrases, dictionary rows) take their share of every
batch, so at a fixed budget of updates they cut the passes over the real pairs. The trainer reads
its whole corpus once per epoch, one batch per update, so each real pair is seen
``updates / batches per epoch`` times per copy of it in the corpus: updates x pairs per batch x
share of real rows / distinct real pairs. Below the fewest views measured, nobody knows whether
expansion still helps the final model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

#: The fewest views of each real pair at which the shelf's best expansion recipe
#: (recipes/backtranslate-multi30k.yaml: 5,000 real de-en pairs read 4 times among 96,931 rows,
#: 8,000 pieces, batches of 800 tokens, 2,161 batches per epoch by the trainer's own count) was
#: measured against bitext only at the same budget, with its prepare models (the generator and
#: the scorer) at their full budgets; it won at every budget, 3 seeds each, p = 0.001 per seed
#: (benchmarks/studies/bt-multi30k): 375 updates (0.69 views) median +1.4 BLEU, 750 (1.4) +6.7,
#: 1,500 (2.8) +6.0, 3,000 (5.6) +6.5, 24,000 (46) about +6. Its one loss, -4.2 / -2.3 BLEU at
#: 1,500 updates, came with a generator trained at 1,500 updates too (0.87 BLEU on val): the
#: generator's check before generating is what guards against that, not the final budget.
#: A training on synthetic rows that shows each real pair fewer times than this is warned of.
WARN_BELOW_VIEWS = 375 / 2161 * 4


@dataclass(frozen=True)
class RealPairs:
    """The corpus's real rows (neither generated nor a paraphrase variant), how many distinct
    real pairs they hold (a pair read four times is one), and its synthetic rows."""

    real_rows: int
    distinct: int
    synthetic_rows: int

    def views(self, updates: int, batches_per_epoch: int) -> float:
        """How many times ``updates`` updates show each distinct real pair."""
        return updates / max(1, batches_per_epoch) * self.real_rows / max(1, self.distinct)


def real_pairs(corpus) -> RealPairs:
    """Count the real and synthetic rows of a run's corpus (a
    :class:`bitextforge.api.CorpusView`): a row is synthetic when a generate step wrote it
    (``generated_by``) or it is a paraphrase variant (``variant`` > 0)."""
    n = len(corpus)
    made = corpus.column("generated_by") if "generated_by" in corpus.columns else [""] * n
    variant = corpus.column("variant") if "variant" in corpus.columns else [0] * n
    real = [i for i in range(n) if not made[i] and not variant[i]]
    src, tgt = corpus.column("src"), corpus.column("tgt")
    distinct = len({(src[i], tgt[i]) for i in real})
    return RealPairs(len(real), distinct, n - len(real))


def views_warning(pairs: RealPairs, updates: int, batches_per_epoch: int) -> str | None:
    """The one-line warning when a corpus with synthetic rows shows each real pair fewer times
    than expansion has been measured at (:data:`WARN_BELOW_VIEWS`); None otherwise."""
    if not pairs.synthetic_rows or not pairs.real_rows:
        return None
    views = pairs.views(updates, batches_per_epoch)
    if views >= WARN_BELOW_VIEWS:
        return None
    need = math.ceil(WARN_BELOW_VIEWS / views * updates)
    return (f"max_steps {updates:,} shows each of the {pairs.distinct:,} real pairs about "
            f"{views:.2g} times ({batches_per_epoch:,} batches per epoch, {pairs.real_rows:,} "
            f"real of {pairs.real_rows + pairs.synthetic_rows:,} rows): back-translation beat "
            f"bitext only at every budget measured, from {WARN_BELOW_VIEWS:.2g} views (+1.4 "
            f"BLEU) to 46 (about +6), and was not measured below (benchmarks/studies/bt-multi30k); "
            f"give max_steps at least {need:,} or compare with a bitext-only model at this budget")
