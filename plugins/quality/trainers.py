"""Trainers for the quality filters' models, for a recipe's ``prepare:`` list and for
``bitextforge train`` (short names: ``train-lm``, ``train-word-vectors``,
``train-reference-classifier``).

- ``kenlm_model.v1``: a KenLM model (``lmplz`` + ``build_binary``) for ``kenlm_perplexity.v1``;
- ``word_vectors.v1``: count-based word vectors for ``paraphrase_score.v1`` (ParaNMT-50M, 5.4);
- ``reference_classifier_model.v1``: the human-reference vs machine-translation classifier of
  Wieting et al. 2017, section 5.6.1, for ``reference_classifier.v1``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from bitextforge import Trainer


class KenlmTrainer(Trainer):
    """Train a KenLM n-gram model on a text file with the real ``lmplz`` and ``build_binary``
    (built at set-up from the kenlm sdist); its tokenisation settings go to ``<output>.json``,
    which ``kenlm_perplexity.v1`` reads."""

    name = "kenlm_model.v1"
    run_options = frozenset({"memory"})
    extra = "quality"

    class Config(Trainer.Config):
        """Options of kenlm_model.v1."""

        text: str | list[str] = Field(description="Training text, one sentence per line (.gz "
                                      "ok); or a list of such files, read in order.")
        field: int | None = Field(None, ge=0, description="Read this 0-based tab-separated field "
                                  "of each line (one side of a TSV corpus) instead of the line.")
        order: int = Field(3, ge=1, description="n-gram order.")
        lang: str = Field("en", description="sacremoses tokenizer language.")
        tokenize: bool = Field(True, description="Tokenise with sacremoses before training.")
        lowercase: bool = Field(False, description="Lowercase before training.")
        memory: str = Field("20%", description="lmplz -S memory limit (its sort buffers: a "
                            "share of the machine's memory, or a size such as 2G).")
        sample: int | None = Field(None, ge=1, description="Train on a uniform random sample "
                                   "of this many lines (seeded by seed), drawn in one streaming "
                                   "pass over all the text: only the sample is held and "
                                   "tokenised (docs/scale.md, \"Training at crawl size\").")
        seed: int = Field(1, description="Seed of sample's draw.")
        prune: list[int] | None = Field(None, description="lmplz --prune thresholds per order.")

    @classmethod
    def input_paths(cls, config):
        """The training text."""
        return {"text": config.text}

    def outputs(self):
        """The binary model and its settings file."""
        out = Path(self.config.output)
        return [out, out.with_name(out.name + ".json")]

    def train(self):
        """Run lmplz and build_binary."""
        from .lm import train_lm

        c = self.config
        out = train_lm(c.text, c.output, order=c.order, lang=c.lang, tokenize=c.tokenize,
                       lowercase=c.lowercase, memory=c.memory, prune=c.prune,
                       field=c.field, sample=c.sample, seed=c.seed)
        return {"bytes": out.stat().st_size, "order": c.order}


class WordVectorsTrainer(Trainer):
    """Train count-based word vectors (PPMI + SVD) in word2vec text format for
    ``paraphrase_score.v1`` (ParaNMT-50M, section 5.4, averaged word embeddings)."""

    name = "word_vectors.v1"
    extra = "quality"

    class Config(Trainer.Config):
        """Options of word_vectors.v1."""

        text: str = Field(description="Training text, one sentence per line (.gz ok).")
        dim: int = Field(100, ge=1, description="Dimensions.")
        window: int = Field(5, ge=1, description="Context window in tokens.")
        min_count: int = Field(3, ge=1, description="Ignore rarer words.")
        lang: str = Field("en", description="sacremoses tokenizer language.")
        lowercase: bool = Field(True, description="Lowercase the text.")

    @classmethod
    def input_paths(cls, config):
        """The training text."""
        return {"text": config.text}

    def train(self):
        """Count, weight and factorise."""
        from .wordvec import train_word_vectors

        c = self.config
        _, n = train_word_vectors(c.text, c.output, dim=c.dim, window=c.window,
                                  min_count=c.min_count, lang=c.lang, lowercase=c.lowercase)
        return {"words": n, "dim": c.dim}


class ReferenceClassifierTrainer(Trainer):
    """Train the human-reference vs machine-translation classifier (Wieting et al. 2017, 5.6.1)
    from a file of references and a file of translations; writes ``<output>`` (joblib) and
    ``<output>.json``."""

    name = "reference_classifier_model.v1"
    extra = "quality"

    class Config(Trainer.Config):
        """Options of reference_classifier_model.v1."""

        references: str = Field(description="Human references, one per line.")
        translations: str = Field(description="Machine translations, one per line.")
        C: float = Field(1.0, gt=0, description="Inverse regularisation strength of the "
                         "logistic regression.")
        heldout: float = Field(0.1, ge=0, lt=1, description="Share of lines held out to report "
                               "accuracy and ROC-AUC before training on everything (0: none). "
                               "Lines are split at random; split by document yourself for a "
                               "stricter test.")
        seed: int = Field(0, description="Random seed (model and held-out split).")

    @classmethod
    def input_paths(cls, config):
        """The two text files."""
        return {"references": config.references, "translations": config.translations}

    def outputs(self):
        """The model and its facts file."""
        out = Path(self.config.output)
        return [out, out.with_name(out.name + ".json")]

    def train(self):
        """Report held-out accuracy and ROC-AUC (when ``heldout``), then fit on everything."""
        from .classifier import read_text_lines, save_model, train_reference_classifier

        c = self.config
        refs, mts = read_text_lines(c.references), read_text_lines(c.translations)
        info = {"references": c.references, "translations": c.translations,
                "n_references": len(refs), "n_translations": len(mts), "C": c.C}
        if c.heldout > 0:
            info.update(self._heldout(refs, mts))
        model = train_reference_classifier(refs, mts, c.C, c.seed)
        save_model(model, c.output, info)
        return {k: v for k, v in info.items() if k not in ("references", "translations")}

    def _heldout(self, refs: list[str], mts: list[str]) -> dict:
        import random

        from sklearn.metrics import accuracy_score, roc_auc_score

        from .classifier import train_reference_classifier

        c = self.config
        data = [(t, 1) for t in refs] + [(t, 0) for t in mts]
        random.Random(c.seed).shuffle(data)
        k = max(2, int(len(data) * c.heldout))
        test, train = data[:k], data[k:]
        model = train_reference_classifier([t for t, y in train if y],
                                           [t for t, y in train if not y], c.C, c.seed)
        p = model.predict_proba([t for t, _ in test])[:, list(model.classes_).index(1)]
        gold = [y for _, y in test]
        acc = accuracy_score(gold, (p >= 0.5).astype(int))
        auc = roc_auc_score(gold, p) if len(set(gold)) == 2 else float("nan")
        self.log(f"held out {len(test)} random lines: accuracy {acc:.3f}, ROC-AUC {auc:.3f}")
        return {"heldout": len(test), "heldout_accuracy": acc, "heldout_auc": auc}


TRAINERS = (KenlmTrainer, WordVectorsTrainer, ReferenceClassifierTrainer)
