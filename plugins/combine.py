"""Ranking by more than one score: ``column.v1`` scores rows by a column that is already there
(scores another tool produced, carried in from a TSV or JSONL input), ``combine.v1`` by a weighted
sum of earlier score columns or by a logistic regression over them, which the trainer
``combine_model.v1`` fits on labelled rows or on synthetic ones and saves as a JSON model file;
fitted on human quality scores instead of labels (``task: regress``, a ridge regression) it is
supervised sentence-level quality estimation as the WMT QE tasks define it (Specia et al. 2020).

WMT-style corpus filtering ranks every pair by one combined quality score and keeps the best up
to a word budget (Koehn et al. 2018, *Findings of the WMT 2018 Shared Task on Parallel Corpus
Filtering*); Bicleaner (Sánchez-Cartagena et al. 2018; Ramírez-Sánchez et al. 2020) learns such a
combination as a classifier of clean against synthetic noisy pairs, the noise made from clean
parallel data by pairing sentences that are not translations of each other. ``combine_model.v1``
does the same over bitextforge's own score columns, with scikit-learn's ``StandardScaler`` and
``LogisticRegression`` (cross-validated ROC-AUC reported); the model file stores the fitted
means, scales and coefficients, so scoring is a NumPy dot product with no pickle to trust.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from bitextforge import ComponentError, Filter, InputError, Trainer

MODEL_FORMAT = "bitextforge-combine-logreg"
LINEAR_FORMAT = "bitextforge-combine-linear"
NAN = float("nan")


def _number(v: Any, where: str, on_text: str) -> float:
    """One cell as a float: empty or None is NaN; text is an error or NaN (``on_text``)."""
    if v is None or v == "":
        return NAN
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return float(v)
    try:
        return float(v)
    except (TypeError, ValueError):
        if on_text == "nan":
            return NAN
        raise ComponentError(f"{where} holds a non-number {v!r} (set non_numeric: nan to score "
                             f"such rows NaN)") from None


def _column(batch, name: str, component: str) -> list:
    if name not in batch:
        raise ComponentError(f"{component}: column {name!r} does not exist; columns are "
                             f"{', '.join(batch)}")
    return batch[name]


class ColumnFilter(Filter):
    """Scores each row by a numeric column it already has: a score another tool produced (a
    Bicleaner or LASER score carried as a TSV input column, a JSONL field) or an earlier step's.

    Empty values score NaN, which fails every ``min``/``max`` bound and is never picked by
    ``top``/``words``; text is an error naming the row unless ``non_numeric: nan``.
    """

    name = "column.v1"

    class Config(Filter.Config):
        """Options of column.v1."""

        column: str = Field(description="The column to score by (an input column such as "
                            "bicleaner, or an earlier score column).")
        non_numeric: Literal["error", "nan"] = Field(
            "error", description="A value that is not a number: stop with an error, or score "
                                 "the row NaN.")

    @classmethod
    def cache_key_columns(cls, config):
        """The column read, even a bookkeeping one (``weight``)."""
        return (config.column,)

    def score(self, batch):
        """The column's values as floats."""
        c = self.config
        values = _column(batch, c.column, self.name)
        ids = batch["id"]
        return [_number(v, f"{self.name}: column {c.column!r} of the row with id {i}",
                        c.non_numeric) for v, i in zip(values, ids)]


class LogisticModel:
    """A fitted ``StandardScaler`` + ``LogisticRegression`` over named score columns, as stored in
    a ``combine_model.v1`` JSON file: ``P(clean) = 1 / (1 + exp(-(b + w . (x - mean) / scale)))``;
    or, in a file of ``task: regress``, the ridge regression's prediction
    ``b + w . (x - mean) / scale`` itself (:attr:`linear`)."""

    def __init__(self, data: dict[str, Any], path: str = "<model>"):
        """Check and keep a model file's content."""
        if data.get("format") not in (MODEL_FORMAT, LINEAR_FORMAT):
            raise ComponentError(f"{path}: not a combine_model.v1 file (format "
                                 f"{data.get('format')!r})")
        self.columns: list[str] = list(data["columns"])
        self.mean = [float(x) for x in data["mean"]]
        self.scale = [float(x) for x in data["scale"]]
        self.coef = [float(x) for x in data["coef"]]
        self.intercept = float(data["intercept"])
        self.linear = data["format"] == LINEAR_FORMAT
        self.data = data

    @classmethod
    def load(cls, path: str) -> "LogisticModel":
        """Read a model file; a missing or malformed one is a one-line error."""
        p = Path(path)
        if not p.is_file():
            raise ComponentError(f"{path}: no such combine model file; train one with "
                                 f"combine_model.v1 in a recipe's prepare:")
        try:
            return cls(json.loads(p.read_text(encoding="utf-8")), path)
        except (ValueError, KeyError, TypeError) as exc:
            raise ComponentError(f"{path}: unreadable combine model: {exc}") from None

    def predict(self, X):
        """P(clean) (or the predicted quality score of a linear model) for each row of the
        matrix ``X`` (columns in :attr:`columns` order); a row with a NaN input gets NaN."""
        import numpy as np

        z = (X - np.asarray(self.mean)) / np.asarray(self.scale)
        logit = self.intercept + z @ np.asarray(self.coef)
        return logit if self.linear else 1.0 / (1.0 + np.exp(-logit))


class CombineFilter(Filter):
    """One score from several earlier score columns: a weighted sum ``bias + sum(w_i * x_i)``
    (``weights``), or the probability that a row is clean under a logistic regression fitted by
    ``combine_model.v1`` (``model``), as WMT18 filtering systems and Bicleaner rank pairs.

    Put it after the steps that write its columns, and decide with ``keep`` (``words: N`` for the
    WMT task; with ``model``, ``min: 0.5`` keeps rows more likely clean than not). A row missing
    any input score (NaN or empty, e.g. out of a step's ``apply_to``) scores NaN.
    """

    name = "combine.v1"

    class Config(Filter.Config):
        """Options of combine.v1."""

        columns: list[str] = Field(default_factory=list, description="Score columns to combine "
                                   "(with model: default and must equal the model's).")
        weights: list[float] | None = Field(None, description="Weighted sum: one weight per "
                                            "column (negative for lower-is-better scores).")
        bias: float = Field(0.0, description="Weighted sum: added constant.")
        model: str | None = Field(None, description="A JSON file written by combine_model.v1: "
                                  "P(clean) under its logistic regression, or with task: regress "
                                  "its predicted quality score.")

        @model_validator(mode="after")
        def _one_method(self):
            if (self.weights is None) == (self.model is None):
                raise ValueError("give weights (a weighted sum) or model (a logistic regression "
                                 "from combine_model.v1), not both or neither")
            if self.weights is not None:
                if not self.columns:
                    raise ValueError("weights need columns, one weight per column")
                if len(self.weights) != len(self.columns):
                    raise ValueError(f"{len(self.weights)} weights for {len(self.columns)} "
                                     f"columns")
            return self

    @classmethod
    def input_paths(cls, config):
        """The model file."""
        return {"model": config.model}

    def __init__(self, config=None):
        """Load the model file, if any, and fix the columns and weights."""
        super().__init__(config)
        c = self.config
        self.model = None
        self.columns = list(c.columns)
        if c.model is not None:
            self.model = LogisticModel.load(c.model)
            if self.columns and self.columns != self.model.columns:
                raise ComponentError(f"{self.name}: columns {self.columns} differ from the "
                                     f"columns {self.model.columns} the model {c.model} was "
                                     f"trained on")
            self.columns = self.model.columns

    def score(self, batch):
        """The combined score per row."""
        import numpy as np

        cols = [[_number(v, f"{self.name}: column {name!r}", "error")
                 for v in _column(batch, name, self.name)] for name in self.columns]
        X = np.array(cols, dtype=np.float64).T.reshape(len(batch["id"]), len(self.columns))
        if self.model is not None:
            return self.model.predict(X)
        return self.config.bias + X @ np.asarray(self.config.weights, dtype=np.float64)

    def manifest_info(self):
        """The model's training facts, or the weights."""
        if self.model is not None:
            d = self.model.data
            return {"model": self.config.model, "columns": self.columns,
                    "cv_roc_auc": d.get("cv_roc_auc"), "cv_pearson": d.get("cv_pearson"),
                    "trained_on": d.get("trained_on")}
        return {"columns": self.columns, "weights": list(self.config.weights)}


def ridge_regression(impute: bool = False, alphas=None):
    """The regression of supervised quality estimation: standardised scores into scikit-learn's
    ``RidgeCV`` (strength from ``alphas``, by default 13 values from 1e-3 to 1e3).
    ``combine_model.v1 task: regress`` fits it and ``score_correlation.v1`` evaluates it, so both
    report the same model; ``impute`` replaces a missing score by its mean on the fitted rows (the
    trainer drops such rows)."""
    import numpy as np
    from sklearn.impute import SimpleImputer
    from sklearn.linear_model import RidgeCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    steps = [SimpleImputer()] if impute else []
    if alphas is None:
        alphas = np.logspace(-3, 3, 13)
    return make_pipeline(*steps, StandardScaler(), RidgeCV(alphas=alphas))


def iter_tsv_records(path: str, columns: list[str], where: dict[str, list[str]] | None = None):
    """``(index, lineno, values)`` of each data line of a TSV with a header: ``index`` counts
    every data line from 0 (the row id a recipe reading the file with ``header: true`` gives it),
    ``lineno`` is the file's line number, ``values`` the fields of ``columns`` in that order ("" when
    a line is short). ``where`` keeps only lines whose column holds one of the listed values. A
    missing column is one error naming the file and the columns it has."""
    from bitextforge.api import iter_lines, ReadStats

    where = where or {}
    lines = iter_lines(path, "error", ReadStats())
    head = next(lines, None)
    if head is None:
        raise InputError(f"{path}: empty file, expected a header line")
    names = head.split("\t")
    missing = [c for c in dict.fromkeys([*columns, *where]) if c not in names]
    if missing:
        raise InputError(f"{path}: no column {', '.join(map(repr, missing))}; columns are "
                         f"{', '.join(names)}")
    idx = [names.index(c) for c in columns]
    conds = [(names.index(k), set(v)) for k, v in where.items()]
    for index, line in enumerate(lines):
        f = line.split("\t")
        if any(i >= len(f) or f[i].strip() not in allowed for i, allowed in conds):
            continue
        yield index, index + 2, [f[i] if i < len(f) else "" for i in idx]


def read_scored_tsv(path: str, columns: list[str], label: str, positive: list[str] | None,
                    where: dict[str, list[str]] | None = None):
    """``(X, y, dropped)`` from a TSV with a header (``bitextforge score`` output, a run's
    ``corpus.tsv``): the feature columns as floats and the label as 0/1 (as a float when
    ``positive`` is None: a human quality score); rows with an empty or non-numeric feature are
    dropped and counted. ``where`` keeps only rows whose column value is one of those listed (the
    training split). A non-numeric quality score is an error naming the line."""
    import numpy as np

    pos = set(positive or ())
    X, y, dropped = [], [], 0
    for _, lineno, values in iter_tsv_records(path, [*columns, label], where):
        *feats, target = values
        try:
            row = [float(v) if v != "" else NAN for v in feats]
        except ValueError:
            dropped += 1
            continue
        if any(math.isnan(v) or math.isinf(v) for v in row):
            dropped += 1
            continue
        if positive is None:
            y.append(quality_score(target, path, lineno, label))
        else:
            y.append(int(target.strip() in pos))
        X.append(row)
    return np.array(X, dtype=np.float64).reshape(len(X), len(columns)), \
        np.array(y, dtype=np.float64 if positive is None else np.int64), dropped


def quality_score(value: str, path: str, lineno: int, label: str) -> float:
    """A human quality score cell as a float; anything else is an error naming the line."""
    try:
        target = float(value)
    except ValueError:
        raise InputError(f"{path}, line {lineno}: {label} {value!r} is not a number "
                         f"(a regression needs a numeric quality score)") from None
    if not math.isfinite(target):
        raise InputError(f"{path}, line {lineno}: {label} {value!r} is not finite")
    return target


class CombineModelTrainer(Trainer):
    """Fits the logistic regression of ``combine.v1`` (standardised score columns, scikit-learn)
    and writes it as JSON, with its cross-validated ROC-AUC.

    Labelled data: ``data``, a TSV with a header holding the score columns and a label column
    (``bitextforge score`` on a labelled corpus writes one); with ``task: regress`` the label
    column is a human quality score and the model a ridge regression (alpha by ``RidgeCV``) whose
    cross-validated Pearson's r is reported. Synthetic data, as Bicleaner trains:
    ``clean_src``/``clean_tgt``, line-aligned clean pairs, are the positives; the same sources
    paired with the target of another line (a random cyclic shift, so no pair stays aligned) are
    the negatives; ``recipe``'s filter steps that write ``columns`` score both.
    """

    name = "combine_model.v1"
    extra = "quality"

    class Config(Trainer.Config):
        """Options of combine_model.v1."""

        columns: list[str] = Field(min_length=1, description="Score columns to combine.")
        data: str | None = Field(None, description="Labelled TSV with a header: the score "
                                 "columns and the label column.")
        label: str = Field("label", description="Label column of data.")
        positive: list[str] = Field(["V"], min_length=1, description="Label values that count "
                                    "as clean.")
        clean_src: str | None = Field(None, description="Synthetic data: source side of clean "
                                      "parallel pairs (.gz ok).")
        clean_tgt: str | None = Field(None, description="Synthetic data: target side, "
                                      "line-aligned.")
        recipe: str | None = Field(None, description="Synthetic data: the recipe whose filter "
                                   "steps write the columns (its other steps are not run).")
        limit: int | None = Field(None, gt=0, description="Synthetic data: use the first N clean "
                                  "pairs.")
        task: Literal["classify", "regress"] = Field(
            "classify", description="classify: P(clean) by logistic regression on a label; "
            "regress: a ridge regression on a numeric quality score (data only), which "
            "combine.v1 outputs as it is.")
        where: dict[str, list[str]] = Field(default_factory=dict, description="data: only rows "
                                            "whose column has one of these values, e.g. "
                                            "{split: [train]}.")
        C: float = Field(1.0, gt=0, description="Inverse regularisation strength (classify).")
        folds: int = Field(5, ge=2, description="Folds of the cross-validated ROC-AUC.")
        seed: int = Field(1, description="Seed of the negatives and the folds.")

        @model_validator(mode="after")
        def _one_source(self):
            synthetic = (self.clean_src, self.clean_tgt, self.recipe)
            if self.data is not None and any(synthetic):
                raise ValueError("give data (labelled) or clean_src, clean_tgt and recipe "
                                 "(synthetic), not both")
            if self.data is None and not all(synthetic):
                raise ValueError("give data (a labelled TSV), or clean_src, clean_tgt and "
                                 "recipe (synthetic negatives)")
            if self.task == "regress" and self.data is None:
                raise ValueError("task: regress needs data (a TSV with a quality score column)")
            if self.where and self.data is None:
                raise ValueError("where selects rows of data; synthetic pairs have none")
            return self

    @classmethod
    def input_paths(cls, config):
        """The labelled TSV, or the clean pairs and the recipe."""
        return {"data": config.data, "clean_src": config.clean_src,
                "clean_tgt": config.clean_tgt, "recipe": config.recipe}

    def train(self):
        """Read or make the data, fit, write the model file."""
        from sklearn.linear_model import LogisticRegression
        from sklearn.metrics import roc_auc_score
        from sklearn.model_selection import StratifiedKFold, cross_val_predict
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        c = self.config
        if c.task == "regress":
            return self._regress()
        if c.data is not None:
            X, y, dropped = read_scored_tsv(c.data, c.columns, c.label, c.positive, c.where)
            trained_on = {"data": c.data, "label": c.label, "positive": list(c.positive),
                          "where": dict(c.where)}
        else:
            X, y, dropped = self._synthetic()
            trained_on = {"clean_src": c.clean_src, "clean_tgt": c.clean_tgt,
                          "recipe": c.recipe, "negatives": "cyclic shift of the targets"}
        npos = int(y.sum())
        if npos < c.folds or len(y) - npos < c.folds:
            raise InputError(f"{self.name}: {npos} clean and {len(y) - npos} other rows with "
                             f"every score; {c.folds}-fold cross-validation needs {c.folds} of "
                             f"each")
        model = make_pipeline(StandardScaler(), LogisticRegression(C=c.C, max_iter=1000))
        cv = StratifiedKFold(n_splits=c.folds, shuffle=True, random_state=c.seed)
        oof = cross_val_predict(model, X, y, cv=cv, method="predict_proba")[:, 1]
        auc = float(roc_auc_score(y, oof))
        model.fit(X, y)
        scaler, logreg = model[0], model[1]
        data = {"format": MODEL_FORMAT, "version": 1, "columns": list(c.columns),
                "mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist(),
                "coef": logreg.coef_[0].tolist(), "intercept": float(logreg.intercept_[0]),
                "rows": int(len(y)), "positives": npos, "dropped_rows": dropped,
                "cv_roc_auc": auc, "folds": c.folds, "C": c.C, "trained_on": trained_on}
        return self._save(data, {"rows": int(len(y)), "positives": npos,
                                 "dropped_rows": dropped, "cv_roc_auc": round(auc, 4)})

    def _save(self, data: dict, facts: dict) -> dict:
        """Write the model file; the manifest facts with the coefficients by column."""
        out = Path(self.config.output)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        return {**facts, "coef": dict(zip(self.config.columns,
                                          (round(x, 4) for x in data["coef"])))}

    def _regress(self):
        """Fit the ridge regression on a quality score; write a linear model file."""
        import numpy as np
        from scipy.stats import pearsonr
        from sklearn.model_selection import KFold, cross_val_predict

        c = self.config
        X, y, dropped = read_scored_tsv(c.data, c.columns, c.label, None, c.where)
        if len(y) < max(c.folds, len(c.columns) + 2):
            raise InputError(f"{self.name}: {len(y)} rows with every score in {c.data}; a "
                             f"regression over {len(c.columns)} columns with {c.folds}-fold "
                             f"cross-validation needs more")
        model = ridge_regression()
        cv = KFold(n_splits=c.folds, shuffle=True, random_state=c.seed)
        oof = cross_val_predict(model, X, y, cv=cv)
        r = float(pearsonr(oof, y)[0]) if np.ptp(oof) > 0 and np.ptp(y) > 0 else float("nan")
        model.fit(X, y)
        scaler, ridge = model[0], model[1]
        data = {"format": LINEAR_FORMAT, "version": 1, "columns": list(c.columns),
                "mean": scaler.mean_.tolist(), "scale": scaler.scale_.tolist(),
                "coef": ridge.coef_.tolist(), "intercept": float(ridge.intercept_),
                "alpha": float(ridge.alpha_), "rows": int(len(y)), "dropped_rows": dropped,
                "cv_pearson": r, "folds": c.folds,
                "trained_on": {"data": c.data, "label": c.label, "where": dict(c.where)}}
        return self._save(data, {"rows": int(len(y)), "dropped_rows": dropped,
                                 "cv_pearson": round(r, 4), "alpha": float(ridge.alpha_)})

    def _synthetic(self):
        """Score clean pairs and shifted (misaligned) pairs with the recipe's filter steps."""
        import tempfile

        from bitextforge.api import read_lines
        from bitextforge.api import FilterStep, parse_recipe, recipe_data, score_column
        from bitextforge.api import score_parsed

        c = self.config
        src, tgt = read_lines(c.clean_src, c.limit), read_lines(c.clean_tgt, c.limit)
        if len(src) != len(tgt):
            raise InputError(f"{self.name}: line counts differ: {c.clean_src} has {len(src)} "
                             f"lines, {c.clean_tgt} has {len(tgt)}")
        if len(src) < 2:
            raise InputError(f"{self.name}: {c.clean_src}: need at least 2 clean pairs")
        shift = random.Random(c.seed).randrange(1, len(src))
        raw = recipe_data(c.recipe)  # its extends: chain merged in
        wanted = set(c.columns)
        steps = []
        for step in raw.get("steps") or []:
            if isinstance(step, dict) and "filter" in step:
                col = score_column(FilterStep.model_validate(step))
                if col in wanted:
                    steps.append(step)
                    wanted.discard(col)
        if wanted:
            raise InputError(f"{self.name}: no filter step of {c.recipe} writes "
                             f"{', '.join(sorted(wanted))}")
        with tempfile.TemporaryDirectory(prefix="bitextforge-combine-") as tmp:
            data = Path(tmp) / "pairs.tsv"
            rows = [(s, t, "1") for s, t in zip(src, tgt)]
            rows += [(s, tgt[(i + shift) % len(tgt)], "0") for i, s in enumerate(src)]
            # the input reader takes fields as they are: a tab or line break inside a sentence
            # becomes a space
            data.write_text("".join(f"{_field(s)}\t{_field(t)}\t{lab}\n" for s, t, lab in rows),
                            encoding="utf-8")
            recipe = {"name": f"{self.name}-synthetic", "progress": False,
                      "batch_size": raw.get("batch_size", 5000),
                      "input": {"path": str(data), "format": "tsv",
                                "columns": ["src", "tgt", "label"]},
                      "output": {"dir": tmp}, "steps": steps}
            scored = Path(tmp) / "scores.tsv"
            score_parsed(parse_recipe(_dump(recipe), c.recipe), str(scored), quiet=True)
            return read_scored_tsv(str(scored), c.columns, "label", ["1"])


def _field(text: str) -> str:
    return text.replace("\t", " ").replace("\n", " ").replace("\r", " ")


def _dump(data: dict) -> str:
    from bitextforge.api import dump_yaml

    return dump_yaml(data)
