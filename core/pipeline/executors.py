"""Executors: each applies one recipe step to columnar batches and returns what it did.

An executor wraps one component instance, built once per run. :meth:`Executor.run` takes a batch
and returns a :class:`StepResult`: the kept rows, the rejected rows (with the step and score that
rejected them) and the step's counters for this batch. Runners compose these results and the sink
writes them; an executor never writes anything itself. A split step replaces rows by their
sentence pieces, a paraphrase step expands rows into variants, a filter step scores and decides
(streaming for ``min``/``max``, two passes over a spill file for the corpus-wide ``top``/``words``),
a weight step replaces each group by weighted rows (Nichols et al., section 4.2), a clean step
changes text and returns each change it made (:class:`Changed`) for ``cleaned.tsv``.
"""

from __future__ import annotations

# The executors live by concern: what a step returns (results.py), the common base (execution.py),
# the steps that make rows (adding.py) and those that judge or change rows (judging.py). Every name
# is still importable from here.
from .adding import (DuplicateOutputs, GenerateExec, ParaphraseExec,  # noqa: F401
                     SplitExec, repetition_loop)
# plugins written before bitextforge.api imported within_bounds from here
from .decide import within_bounds  # noqa: F401
from .execution import (Executor, as_scores, check_candidate_columns,  # noqa: F401
                        component_call, group_bounds)
from .judging import CleanExec, FilterExec, WeightExec  # noqa: F401
from .results import (ADDS, NAN, REPLACES, Changed, Rejected, StepResult,  # noqa: F401
                      StepStats)
