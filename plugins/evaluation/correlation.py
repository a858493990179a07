"""How well filter scores agree with human quality scores: sentence-level quality estimation.

The WMT shared tasks on quality estimation (Specia et al. 2020, *Findings of the WMT 2020 Shared
Task on Quality Estimation*; data: Fomicheva et al. 2022, *MLQE-PE*) rank a score by its Pearson
correlation with the human direct-assessment z-scores of each translation (``da_z_mean``), with
Spearman's rho beside it; Fomicheva et al. 2020 (*Unsupervised Quality Estimation for Neural
Machine Translation*) give the translating model's own log-probability as the label-free baseline.
``score_correlation.v1`` reports Pearson, Spearman and Kendall (SciPy) of every score column with
such a human score column, a bootstrap confidence interval of Pearson's r, and, with ``combine``,
of a ridge regression over all the score columns (scikit-learn): fitted on the rows of a training
split (``split`` / ``fit_on``: supervised QE as the shared task allows) or, without a split, on
out-of-fold predictions of k-fold cross-validation, so no row is scored by a model that saw its
human score.
"""

from __future__ import annotations

import math

from pydantic import Field

from bitextforge import Evaluator, InputError, Report

from ._texts import align_to_rows, read_text_file
from .label_auc import _as_float, score_columns

COMBINED = "combined(ridge)"


def correlations(x, y) -> dict[str, float]:
    """Pearson's r, Spearman's rho and Kendall's tau of two equal-length arrays (NaN when either
    is constant, as SciPy defines it, without its warning)."""
    import numpy as np
    from scipy.stats import kendalltau, pearsonr, spearmanr

    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return {"pearson": math.nan, "spearman": math.nan, "kendall": math.nan}
    return {"pearson": float(pearsonr(x, y)[0]), "spearman": float(spearmanr(x, y)[0]),
            "kendall": float(kendalltau(x, y)[0])}


def bootstrap_pearson(x, y, samples: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap interval of Pearson's r over rows resampled with replacement."""
    import numpy as np

    rng = np.random.default_rng(seed)
    n = len(x)
    idx = rng.integers(0, n, size=(samples, n))
    xs, ys = x[idx], y[idx]
    xs = xs - xs.mean(1, keepdims=True)
    ys = ys - ys.mean(1, keepdims=True)
    den = np.sqrt((xs ** 2).sum(1) * (ys ** 2).sum(1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xs * ys).sum(1) / den
    r = r[np.isfinite(r)]
    if not r.size:
        return math.nan, math.nan
    lo, hi = np.quantile(r, [(1 - level) / 2, (1 + level) / 2])
    return float(lo), float(hi)


class ScoreCorrelationEvaluator(Evaluator):
    """Pearson, Spearman and Kendall correlation of score columns with human quality scores.

    The human scores come from a corpus column (MLQE-PE's ``da_z_mean`` carried as a TSV input
    column) or a file with one number per input line. Every column in ``scores`` (default: every
    numeric non-base column) is correlated with them, oriented so that a positive r means
    agreement (``lower_is_better`` columns such as perplexity are negated). With ``split``, only
    rows whose split column equals ``evaluate_on`` are evaluated, and ``combine`` fits its ridge
    regression on the ``fit_on`` rows; without it, on out-of-fold predictions.
    """

    name = "score_correlation.v1"
    extra = "quality"

    class Config(Evaluator.Config):
        """Options of score_correlation.v1."""

        human: str = Field("score", description="Corpus column holding the human score, or a "
                           "file with one score per input line (matched to rows by id).")
        scores: list[str] = Field(default_factory=list, description="Score columns to "
                                  "correlate; empty = every column whose values are numbers "
                                  "(except id, variant, weight, the human score and split).")
        lower_is_better: list[str] = Field(default_factory=list, description="Score columns "
                                           "where a low value means good (perplexity, cost): "
                                           "negated, so that positive r means agreement.")
        split: str | None = Field(None, description="Column naming each row's split (MLQE-PE: "
                                  "split); empty: every row is evaluated.")
        evaluate_on: str = Field("dev", description="With split: the split whose rows are "
                                 "evaluated.")
        fit_on: str = Field("train", description="With split and combine: the split the ridge "
                            "regression is fitted on (supervised quality estimation).")
        combine: bool = Field(False, description="Also evaluate a ridge regression over all the "
                              "score columns (standardised; alpha by RidgeCV), fitted on fit_on "
                              "rows, or out-of-fold without a split.")
        combinations: dict[str, list[str]] = Field(
            default_factory=dict, description="Named ridge regressions over subsets of the "
            "score columns (name -> columns), each fitted and evaluated as combine is and "
            "reported as combined(<name>): with and without a score, say.")
        folds: int = Field(5, ge=2, description="Cross-validation folds of combine without a "
                           "split.")
        bootstrap: int = Field(1000, ge=0, description="Bootstrap resamples of the 95% interval "
                               "of Pearson's r; 0: none.")
        seed: int = Field(1234, description="Seed of the bootstrap and the folds.")

    def _human(self, corpus) -> list[float]:
        c = self.config
        if c.human in corpus.columns:
            raw = list(corpus.column(c.human))
        else:
            lines = read_text_file(c.human, f"{self.name} human")
            raw = align_to_rows(lines, [int(i) for i in corpus.column("id")], c.human,
                                f"{self.name} human")
        values = [_as_float(v) for v in raw]
        bad = next((i for i, v in enumerate(values) if math.isnan(v) or math.isinf(v)), None)
        if bad is not None:
            ident = corpus.column("id")[bad]
            raise InputError(f"{self.name}: human score {raw[bad]!r} of the row with id {ident} "
                             f"(input line {int(ident) + 1}) in {c.human!r} is not a number")
        return values

    def evaluate(self, corpus) -> Report:
        """One block of numbers per score column (``<col>.pearson`` etc.) and a summary table."""
        import numpy as np

        c = self.config
        y_all = np.array(self._human(corpus), dtype=float)
        exclude = {c.human} | ({c.split} if c.split else set())
        cols = score_columns(corpus, list(c.scores), exclude, c.lower_is_better, self.name)
        if c.split:
            if c.split not in corpus.columns:
                raise InputError(f"{self.name}: split column {c.split!r} is not in the corpus; "
                                 f"columns are {', '.join(corpus.columns)}")
            split = np.array([str(v).strip() for v in corpus.column(c.split)])
            ev = split == c.evaluate_on
            fit = split == c.fit_on
            if ev.sum() < 3:
                raise InputError(f"{self.name}: {int(ev.sum())} rows have {c.split} = "
                                 f"{c.evaluate_on!r}; correlation needs at least 3")
        else:
            ev, fit = np.ones(len(y_all), dtype=bool), None
        y = y_all[ev]
        where = f"{c.split} = {c.evaluate_on}" if c.split else "every row"
        numbers: dict[str, float] = {"rows": float(ev.sum())}
        lines = [f"{int(ev.sum())} rows ({where}); human score {c.human!r}",
                 f"{'score':<28} {'Pearson':>8} {'95% interval':>15} {'Spearman':>9} "
                 f"{'Kendall':>8}  missing"]

        def add(name: str, s, missing: int) -> None:
            ok = np.isfinite(s)
            r = correlations(s[ok], y[ok])
            lo, hi = (bootstrap_pearson(s[ok], y[ok], c.bootstrap, c.seed)
                      if c.bootstrap and ok.sum() >= 3 else (math.nan, math.nan))
            numbers.update({f"{name}.{k}": v for k, v in r.items()})
            numbers.update({f"{name}.pearson_low": lo, f"{name}.pearson_high": hi,
                            f"{name}.missing": float(missing)})
            lines.append(f"{name:<28} {r['pearson']:8.3f} {f'[{lo:.3f}, {hi:.3f}]':>15} "
                         f"{r['spearman']:9.3f} {r['kendall']:8.3f}  {missing}")

        combos = ({COMBINED: list(cols)} if c.combine and cols else {})
        for label, names in c.combinations.items():
            unknown = [n for n in names if n not in cols]
            if unknown or not names:
                raise InputError(f"{self.name}: combinations.{label} names {unknown or 'no'} "
                                 f"score columns; the evaluated ones are {list(cols)}")
            combos[f"combined({label})"] = names
        oriented = {}
        for name, vals in cols.items():
            s = np.array(vals, dtype=float)
            if name in c.lower_is_better:
                s = -s
            oriented[name] = s
            add(name, s[ev], int((~np.isfinite(s[ev])).sum()))
        notes = []
        for label, names in combos.items():
            pred, coef = self._combined({k: oriented[k] for k in names}, y_all, ev, fit)
            add(label, pred, 0)
            numbers.update({f"{label}.coef.{k}": v for k, v in coef.items()})
            notes.append(f"{label}: standardised coefficients "
                         + ", ".join(f"{k} {v:+.3f}" for k, v in coef.items()))
        if notes:
            how = (f"fitted on the {int(fit.sum())} rows with {c.split} = {c.fit_on}"
                   if fit is not None else f"{c.folds}-fold out-of-fold predictions")
            lines += [f"ridge regressions {how}", *notes]
        return Report(numbers=numbers, summary="\n".join(lines))

    def _combined(self, oriented: dict, y_all, ev, fit):
        """Ridge predictions for the evaluated rows and the coefficients of the fitted model.
        A score that is missing (or infinite) is replaced by its mean on the fitted rows."""
        import numpy as np
        from sklearn.model_selection import KFold, cross_val_predict

        from bitextforge.plugins.combine import ridge_regression

        c = self.config
        X = np.column_stack([oriented[k] for k in oriented])
        X = np.where(np.isfinite(X), X, np.nan)

        if fit is not None:
            if fit.sum() < len(oriented) + 2:
                raise InputError(f"{self.name}: combine: {int(fit.sum())} rows have "
                                 f"{c.split} = {c.fit_on!r}; a regression over "
                                 f"{len(oriented)} scores needs more")
            m = ridge_regression(impute=True).fit(X[fit], y_all[fit])
            pred = m.predict(X[ev])
        else:
            if ev.sum() < c.folds:
                raise InputError(f"{self.name}: combine needs at least {c.folds} rows for "
                                 f"{c.folds}-fold cross-validation")
            cv = KFold(n_splits=c.folds, shuffle=True, random_state=c.seed)
            pred = cross_val_predict(ridge_regression(impute=True), X[ev], y_all[ev], cv=cv)
            m = ridge_regression(impute=True).fit(X[ev], y_all[ev])
        return pred, dict(zip(oriented, (float(v) for v in m[-1].coef_)))
