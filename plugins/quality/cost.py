"""Translation-cost filter (``translation_cost.v1``): filter on a per-token negative
log-likelihood a paraphraser wrote.

ParaNMT-50M (section 5.4) and Wieting et al. 2017 (section 5.6) keep back-translations the NMT
model found likely: the decoder's length-normalised NLL (``nll``, written by the back-translation
paraphrasers as an extra column) is a translation cost; lower is better, bound it with
``keep: {max: ...}``. Original rows (variant 0) carry no cost: score them with
``apply_to: paraphrases`` so they pass untouched, or choose what a missing value becomes.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from bitextforge import ComponentError, Filter

NAN = float("nan")


class TranslationCostFilter(Filter):
    """Returns a numeric column a paraphraser wrote (default ``nll``, per-token NLL).

    Missing or empty values become NaN (``missing: nan``; NaN fails every bound, so such rows are
    rejected by ``min``/``max`` and never picked by ``top``/``words``) or ``missing_value``
    (``missing: value``). Use ``apply_to: paraphrases`` to leave originals out of the decision.
    ParaNMT-50M, 5.4.
    """

    name = "translation_cost.v1"

    class Config(Filter.Config):
        """Options of translation_cost.v1."""

        column: str = Field("nll", description="Numeric column to read (per-token NLL).")
        missing: Literal["nan", "value"] = Field(
            "nan", description="What rows without a value score: nan (fails bounds) or "
                               "missing_value.")
        missing_value: float = Field(0.0, description="Score of rows without a value when "
                                     "missing: value.")
        missing_column: Literal["error", "missing"] = Field(
            "error", description="When no row of a batch has the column: error, or treat every "
                                 "row as missing.")

    @classmethod
    def cache_key_columns(cls, config):
        """The column read, even a bookkeeping one (``weight``)."""
        return (config.column,)

    def score(self, batch):
        """The column's value per row (as float)."""
        c = self.config
        fill = NAN if c.missing == "nan" else c.missing_value
        values = batch.get(c.column)
        if values is None:
            if c.missing_column == "error":
                raise ComponentError(f"translation_cost.v1: column {c.column!r} does not exist "
                                     f"(columns are {', '.join(batch)}); put this step after a "
                                     f"paraphrase step that writes it, or set missing_column: "
                                     f"missing")
            return [fill] * len(batch["src"])
        out = []
        for v in values:
            if v is None or v == "":
                out.append(fill)
                continue
            try:
                f = float(v)
            except (TypeError, ValueError) as exc:
                raise ComponentError(f"translation_cost.v1: column {c.column!r} holds a "
                                     f"non-number {v!r}") from exc
            out.append(fill if math.isnan(f) else f)
        return out
