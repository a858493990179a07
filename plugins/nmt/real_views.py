"""How many times a training on an expanded corpus shows the model each real pair, and the
warning when that is fewer times than expansion was measured to need.

Synthetic rows (back-translations, paraphrases, dictionary rows) take their share of every
batch, so at a fixed budget of updates they cut the passes over the real pairs. The trainer reads
its whole corpus once per epoch, one batch per update, so each real pair is seen
``updates / batches per epoch`` times per copy of it in the corpus: updates x pairs per batch x
share of real rows / distinct real pairs. Below the budget at which expansion was measured to
win, it has been measured to lose against the real pairs alone.
"""

from __future__ import annotations

from dataclasses import dataclass

#: Views of each real pair at which the shelf's best expansion recipe
#: (recipes/backtranslate-multi30k.yaml: 5,000 real de-en pairs read 4 times among 96,721 rows,
#: 8,000 pieces, batches of 800 tokens) LOST to bitext only: 1,500 updates, -4.2 / -2.3 BLEU
#: (seeds 1, 2; p <= 0.002; another 5,000-pair split, test sets never used for choices):
#: 1,500 / 2,091 batches per epoch x 4 copies = 2.9. The 2,091 come from the trainer's own
#: vocabulary, encoding and batching on a stand-in of that corpus (Multi30k's real German in
#: place of the back-translated and dictionary German, the same row counts:
#: benchmarks/studies/bt-multi30k/batches_per_epoch.py); the runs did not record theirs. At
#: 2,000 pieces the stand-in packs 37.4 pairs a batch, which gives the epochs the study's
#: training logs counted: 5,000 pairs 14 in 2,000 updates, 62,875 rows 5 in 8,000.
#: Every model of that run was trained at 1,500 updates, its generator included (whose reverse
#: model scored 0.87 BLEU on val), so the loss is not the final model's budget alone.
LOST_AT_VIEWS = 3
#: ... and the fewest views at which it WON, with its prepare models at their full budgets:
#: 3,000 updates, +5.81 / +7.01 / +6.47 BLEU (p 0.001 each; benchmarks/studies/bt-multi30k,
#: 2026-12-05): 3,000 / 2,161 batches per epoch (the trainer's own count) x 4 = 5.6. At 24,000
#: updates (46 views) it won by about 6 too. Below 5.6 views it was not measured with a working
#: generator.
WON_AT_VIEWS = 6
#: A training on synthetic rows that shows each real pair fewer times than this is warned of:
#: the fewest views measured to win, taken down to a whole number so that the budget measured
#: does not warn.
WARN_BELOW_VIEWS = 5


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
    than expansion was measured to need (:data:`WARN_BELOW_VIEWS`); None otherwise."""
    if not pairs.synthetic_rows or not pairs.real_rows:
        return None
    views = pairs.views(updates, batches_per_epoch)
    if views >= WARN_BELOW_VIEWS:
        return None
    need = WARN_BELOW_VIEWS / views * updates
    return (f"max_steps {updates:,} shows each of the {pairs.distinct:,} real pairs about "
            f"{views:,.0f} times ({batches_per_epoch:,} batches per epoch, {pairs.real_rows:,} "
            f"real of {pairs.real_rows + pairs.synthetic_rows:,} rows): back-translation won about "
            f"6 BLEU over bitext only at {WON_AT_VIEWS:,} views and more, and lost 2.3-4.2 at "
            f"{LOST_AT_VIEWS:,} (benchmarks/studies/bt-multi30k); give max_steps about "
            f"{need:,.0f} or compare with a bitext-only model at this budget")
