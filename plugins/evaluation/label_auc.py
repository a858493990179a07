"""How well filter scores separate pairs humans judged clean from the rest.

The evaluation of a filter against human judgement used for the ParaCrawl releases (Bañón et al.
2020, *ParaCrawl: Web-Scale Acquisition of Parallel Corpora*, whose human evaluations label each
pair V valid, A misaligned, MT machine-translated, E translation error, F free translation,
L wrong language, T tokenisation): ROC-AUC, average precision and precision at the top k% of each
score column, with scikit-learn's metrics (with ``per_kind``, also ROC-AUC against each negative
label alone: which kind of noise a score misses), and optionally of a combination of the scores
learned by logistic regression with stratified cross-validation (so no row is scored by a model
that saw its label).
"""

from __future__ import annotations

import math

from pydantic import Field

from bitextforge import Evaluator, InputError, Report

from ._texts import align_to_rows, read_text_file

_NOT_SCORES = {"id", "variant", "weight", "src", "tgt", "origin"}


def _as_float(v) -> float:
    if isinstance(v, float):
        return v
    if v is None or v == "":
        return math.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return math.nan


def _rank_ready(values, lower_is_better: bool):
    """Orient so that higher is cleaner and replace inf/NaN by finite extremes.

    NaN (no score) ranks below every score: a missing score never counts as evidence of
    cleanliness. AUC depends only on order, so the replacement values do not matter.
    """
    import numpy as np

    x = np.asarray(values, dtype=float)
    if lower_is_better:
        x = -x
    finite = x[np.isfinite(x)]
    lo, hi = (finite.min(), finite.max()) if finite.size else (0.0, 0.0)
    x = np.where(np.isposinf(x), hi + 1.0, x)
    x = np.where(np.isneginf(x), lo - 1.0, x)
    return np.where(np.isnan(x), lo - 2.0, x)


def score_columns(corpus, names: list[str], exclude: set[str], lower_is_better: list[str],
                  who: str) -> dict[str, list[float]]:
    """Column name -> float values (NaN where empty or text) of the score columns an evaluator
    compares with human judgements: ``names``, or every numeric column but the base ones, the
    ``exclude`` columns (the labels) and ``*_original``. One pass over the corpus for all of them;
    every name in ``names`` and ``lower_is_better`` is checked first, with one clear error."""
    missing = [n for n in names if n not in corpus.columns]
    if missing:
        raise InputError(f"{who}: score columns {missing} are not in the corpus; columns are "
                         f"{', '.join(corpus.columns)}")
    candidates = names or [n for n in corpus.columns if n not in _NOT_SCORES
                           and n not in exclude and not n.endswith("_original")]
    values: dict[str, list[float]] = {n: [] for n in candidates}
    for batch in corpus.iter_batches():  # one pass over corpus.tsv for every column
        for n in candidates:
            values[n].extend(_as_float(v) for v in batch[n])
    if not names:  # numeric columns only: text columns (URLs, comments) become all NaN
        values = {n: v for n, v in values.items() if v and not all(math.isnan(x) for x in v)}
        names = list(values)
    unknown = sorted(set(lower_is_better) - set(names))
    if unknown:
        raise InputError(f"{who}: lower_is_better names {unknown}, which are not among the "
                         f"evaluated score columns {names}")
    return values


def roc_auc_by_kind(y, s, kinds) -> dict[str, float]:
    """ROC-AUC of score ``s`` for the positives (``y`` = 1) against the negatives of each kind
    alone (``kinds[i]`` names row i's kind; positives' kinds are not read), in the order the
    kinds first occur: which kind of noise a score misses, where one AUC over all of them hides
    it. A kind whose scores are all missing (NaN) is left out."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    y = np.asarray(y, dtype=int)
    s = np.asarray(s, dtype=float)
    kd = np.asarray([str(k) for k in kinds], dtype=object)
    pos = s[y == 1]
    out: dict[str, float] = {}
    for k in dict.fromkeys(kd[y == 0]):
        neg = s[(y == 0) & (kd == k)]
        if len(pos) and len(neg):
            out[k] = float(roc_auc_score(np.r_[np.ones(len(pos)), np.zeros(len(neg))],
                                         np.r_[pos, neg]))
    return out


def precision_at(y, s, fraction: float) -> float:
    """Share of positives among the ceil(fraction * n) best-scored rows (stable order on ties)."""
    import numpy as np

    k = max(1, math.ceil(fraction * len(y)))
    order = np.argsort(-s, kind="stable")[:k]
    return float(np.mean(y[order]))


class LabelAucEvaluator(Evaluator):
    """ROC-AUC, average precision and precision at the top k% of score columns against gold labels.

    Gold labels come from a corpus column (a TSV input column such as ParaCrawl's verdict) or a
    file with one label per input line; rows whose label is in ``positive`` count as clean. Every
    column in ``scores`` (default: every numeric non-base column) is evaluated with higher = cleaner
    unless listed in ``lower_is_better``. With ``combine`` a logistic regression over all the score
    columns is evaluated on out-of-fold predictions of stratified k-fold cross-validation.
    """

    name = "label_auc.v1"
    extra = "quality"

    class Config(Evaluator.Config):
        """Options of label_auc.v1."""

        label: str = Field("label", description="Corpus column holding the gold label, or a file "
                           "with one label per input line (matched to rows by id).")
        positive: list[str] = Field(["V"], min_length=1, description="Label values that count "
                                    "as clean (the positive class).")
        scores: list[str] = Field(default_factory=list, description="Score columns to evaluate; "
                                  "empty = every column whose values are numbers (except id, "
                                  "variant, weight and the label).")
        lower_is_better: list[str] = Field(default_factory=list, description="Score columns where "
                                           "a low value means clean (perplexity, length ratio).")
        top: list[float] = Field([0.1, 0.25, 0.5], description="Fractions k for precision at the "
                                 "top k of rows by score.")
        combine: bool = Field(False, description="Also evaluate a logistic regression over all the "
                              "score columns (out-of-fold predictions).")
        folds: int = Field(5, ge=2, description="Cross-validation folds for combine.")
        seed: int = Field(1234, description="Seed of the fold split.")
        per_kind: bool = Field(False, description="Also give each score's ROC-AUC against "
                               "each negative label value alone (<col>.roc_auc.<label>: "
                               "ParaCrawl's A, MT, E... or a noisy bench's kinds), and the "
                               "mean over them (<col>.roc_auc.mean_of_kinds).")

    def _labels(self, corpus) -> list[str]:
        c = self.config
        if c.label in corpus.columns:
            return [str(v) for v in corpus.column(c.label)]
        lines = read_text_file(c.label, f"{self.name} label")
        ids = [int(i) for i in corpus.column("id")]
        return align_to_rows(lines, ids, c.label, f"{self.name} label")

    def _score_columns(self, corpus, label_col: str) -> dict[str, list[float]]:
        c = self.config
        return score_columns(corpus, list(c.scores), {label_col}, c.lower_is_better, self.name)

    def evaluate(self, corpus) -> Report:
        """One block of numbers per score column (``<col>.roc_auc`` etc.) and a summary table."""
        import numpy as np
        from sklearn.metrics import average_precision_score, roc_auc_score

        c = self.config
        labels = self._labels(corpus)
        pos = set(c.positive)
        y = np.array([lab.strip() in pos for lab in labels], dtype=int)
        n, npos = len(y), int(y.sum())
        if npos == 0 or npos == n:
            raise InputError(f"{self.name}: {npos} of {n} rows have a positive label "
                             f"{sorted(pos)}; AUC needs both classes (check label and positive)")
        cols = self._score_columns(corpus, c.label)
        numbers: dict[str, float] = {"rows": float(n), "positives": float(npos),
                                     "base_rate": npos / n}
        oriented = {}
        rejected = corpus.rejected if corpus.rejected is not None and len(corpus.rejected) else None
        which = ("the final corpus (rows kept by the filters; the input's figures follow)"
                 if rejected is not None else "the final corpus")
        lines = [f"on {which}: {n} rows, {npos} positive ({', '.join(sorted(pos))}), base rate "
                 f"{npos / n:.3f}",
                 f"{'score':<28} {'ROC-AUC':>8} {'AP':>7} "
                 + " ".join(f"{'P@' + format(k, 'g'):>7}" for k in c.top) + "  missing"]

        def add(name: str, s, missing: int) -> None:
            auc = float(roc_auc_score(y, s))
            ap = float(average_precision_score(y, s))
            numbers[f"{name}.roc_auc"] = auc
            numbers[f"{name}.average_precision"] = ap
            numbers[f"{name}.missing"] = float(missing)
            pk = []
            for k in c.top:
                p = precision_at(y, s, k)
                numbers[f"{name}.precision@{k:g}"] = p
                pk.append(p)
            lines.append(f"{name:<28} {auc:8.3f} {ap:7.3f} "
                         + " ".join(f"{p:7.3f}" for p in pk) + f"  {missing}")

        for name, vals in cols.items():
            missing = sum(1 for v in vals if math.isnan(v))
            s = _rank_ready(vals, name in c.lower_is_better)
            oriented[name] = s
            add(name, s, missing)
            if c.per_kind:
                by_kind = roc_auc_by_kind(y, s, [lab.strip() for lab in labels])
                for k, v in by_kind.items():
                    numbers[f"{name}.roc_auc.{k}"] = v
                if by_kind:
                    numbers[f"{name}.roc_auc.mean_of_kinds"] = float(np.mean(list(
                        by_kind.values())))
                    lines.append("  per kind: " + ", ".join(f"{k} {v:.3f}"
                                                           for k, v in by_kind.items())
                                 + f"; mean {numbers[f'{name}.roc_auc.mean_of_kinds']:.3f}")
        if c.combine and cols:
            from sklearn.linear_model import LogisticRegression
            from sklearn.model_selection import StratifiedKFold, cross_val_predict
            from sklearn.pipeline import make_pipeline
            from sklearn.preprocessing import StandardScaler

            if npos < c.folds or n - npos < c.folds:
                raise InputError(f"{self.name}: combine needs at least {c.folds} rows of each "
                                 f"class for {c.folds}-fold cross-validation")
            X = np.column_stack([oriented[k] for k in cols])
            model = make_pipeline(StandardScaler(), LogisticRegression(max_iter=1000))
            cv = StratifiedKFold(n_splits=c.folds, shuffle=True, random_state=c.seed)
            p = cross_val_predict(model, X, y, cv=cv, method="predict_proba")[:, 1]
            add("combined(logreg)", p, 0)
        if rejected is not None:
            lines += self._input_figures(corpus, rejected, y, cols, numbers)
        return Report(numbers=numbers, summary="\n".join(lines))

    def _input_figures(self, corpus, rejected, y, cols: dict, numbers: dict) -> list[str]:
        """The input's base rate (kept and rejected originals, each once) and each score's
        ROC-AUC over every row that step scored (kept, or rejected by it or a later step): what
        a user who reads "base rate" usually means, beside the survivors' figures."""
        import numpy as np
        from sklearn.metrics import roc_auc_score

        c = self.config
        pos = set(c.positive)
        y_rej = np.array([lab.strip() in pos for lab in self._labels(rejected)], dtype=int)
        keys = list(zip(corpus.column("id"), corpus.column("variant")))
        keys_rej = list(zip(rejected.column("id"), rejected.column("variant")))
        first: dict = {}  # (id, variant) -> row index in kept + rejected; replicas count once
        for i, key in enumerate(keys + keys_rej):
            first.setdefault(key, i)
        rows = np.array(sorted(first.values()), dtype=np.int64)
        y_all = np.concatenate([y, y_rej])[rows]
        originals = np.array([(keys + keys_rej)[i][1] == 0 for i in rows])
        n_in, pos_in = int(originals.sum()), int(y_all[originals].sum())
        numbers.update({"input.rows": float(n_in), "input.positives": float(pos_in),
                        "input.base_rate": pos_in / n_in if n_in else math.nan})
        out = [f"on the input (final corpus + rejected.tsv, originals once): {n_in} rows, "
               f"{pos_in} positive, base rate {pos_in / n_in if n_in else math.nan:.3f}"]
        for name in cols:
            if name not in rejected.columns:
                continue
            vals = np.array(cols[name] + [_as_float(v) for v in rejected.column(name)])[rows]
            scored = ~np.isnan(vals)
            ys = y_all[scored]
            numbers[f"{name}.scored_rows"] = float(scored.sum())
            if ys.size and 0 < ys.sum() < ys.size:
                s = _rank_ready(vals[scored], name in c.lower_is_better)
                auc = float(roc_auc_score(ys, s))
                numbers[f"{name}.scored_roc_auc"] = auc
                out.append(f"  {name}: ROC-AUC {auc:.3f} over the {int(scored.sum())} rows it "
                           f"scored (kept and rejected)")
        return out
