"""Reference classifier (``reference_classifier.v1``): tells human reference translations from
machine translations and scores each sentence with P(reference).

Wieting et al. 2017 (section 5.6.1) train a classifier to separate references from
back-translations and keep the paraphrases that look most human. The same classifier finds
machine-translated text in crawled corpora (the ``MT`` verdict of the ParaCrawl human
evaluations). The default model is fast and small: scikit-learn TF-IDF features of character
n-grams within word boundaries (1-5) plus word unigrams and bigrams, and a logistic regression
with balanced class weights. ``bitextforge train-reference-classifier`` trains it from a file of
references and a file of translations and saves it with joblib; the filter loads it.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field

from bitextforge import ComponentError, Filter, InputError
from bitextforge.api import read_lines


def read_text_lines(path: str | Path) -> list[str]:
    """Non-empty lines of a (gzipped) text file, stripped."""
    if not Path(path).exists():
        raise InputError(f"{path} does not exist")
    return [ln.strip() for ln in read_lines(path) if ln.strip()]


def build_pipeline(c: float = 1.0, seed: int = 0):
    """The default model: char n-gram + word n-gram TF-IDF features, logistic regression."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, Pipeline

    feats = FeatureUnion([
        ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 5), min_df=2,
                                  sublinear_tf=True, max_features=300_000)),
        ("words", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), min_df=1,
                                  sublinear_tf=True, lowercase=False)),
    ])
    clf = LogisticRegression(C=c, class_weight="balanced", max_iter=2000, random_state=seed)
    return Pipeline([("features", feats), ("clf", clf)])


def train_reference_classifier(references: list[str], translations: list[str], c: float = 1.0,
                               seed: int = 0):
    """Fit the default model: label 1 = human reference, 0 = machine translation."""
    if len(references) < 2 or len(translations) < 2:
        raise InputError("train-reference-classifier: need at least two references and two "
                         "translations")
    model = build_pipeline(c, seed)
    model.fit(references + translations, [1] * len(references) + [0] * len(translations))
    return model


def save_model(model, output: str | Path, info: dict) -> Path:
    """Write the model with joblib and its training facts to ``<output>.json``."""
    import joblib

    output = Path(output)
    output.parent.mkdir(parents=True, exist_ok=True)
    joblib.dump(model, output)
    Path(str(output) + ".json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return output


class ReferenceClassifierFilter(Filter):
    """P(human reference) of one column under a classifier trained by
    ``bitextforge train-reference-classifier`` (Wieting et al. 2017, 5.6.1), in [0, 1].

    Keep human-looking paraphrases with ``keep: {min: ...}`` or the best share with ``top``; as
    a machine-translation detector, low scores flag MT.
    """

    name = "reference_classifier.v1"
    extra = "quality"

    class Config(Filter.Config):
        """Options of reference_classifier.v1."""

        model: str = Field(..., description="joblib file from `bitextforge "
                           "train-reference-classifier`.")
        column: str = Field("tgt", description="Column to score.")

    @classmethod
    def input_paths(cls, config):
        """The classifier file."""
        return {"model": config.model}

    def __init__(self, config=None):
        """Load the classifier."""
        super().__init__(config)
        path = Path(self.config.model)
        if not path.exists():
            raise ComponentError(f"reference_classifier.v1: model {path} does not exist; train "
                                 f"one with `bitextforge train-reference-classifier "
                                 f"--references F --translations F --output {path}`")
        import joblib

        try:
            self.model = joblib.load(path)
        except Exception as exc:  # a corrupt or foreign file: one line for the user
            raise ComponentError(f"reference_classifier.v1: cannot load {path}: "
                                 f"{type(exc).__name__}: {exc}") from exc
        classes = list(getattr(self.model, "classes_", []))
        if 1 not in classes:
            raise ComponentError(f"reference_classifier.v1: {path} is not a reference "
                                 f"classifier (no class 1 = reference)")
        self.pos = classes.index(1)

    def score(self, batch):
        """P(reference) per row."""
        col = self.config.column
        if col not in batch:
            raise ComponentError(f"reference_classifier.v1: column {col!r} does not exist; "
                                 f"columns are {', '.join(batch)}")
        texts = ["" if t is None else t for t in batch[col]]
        return self.model.predict_proba(texts)[:, self.pos].tolist()

    def close(self):
        """Drop the model."""
        self.model = None
