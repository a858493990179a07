"""Trainers of Kim, Rosendahl, Rossenbach, Rosendahl, Khadivi & Ney's bilingual sentence
embeddings (section 3.2) and their MLP similarity (section 5.2), for a recipe's ``prepare:`` list
and ``bitextforge train`` (short names ``train-bilingual`` and ``train-mlp-similarity``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from bitextforge import InputError, Trainer
from bitextforge.api import device_field, resolve_device

from .train import TrainConfig


class BilingualModelTrainer(Trainer):
    """Train the bilingual sentence embedding model (two bidirectional RNN encoders, one shared
    decoder; NMT + autoencoding objectives) and write its model directory. Every option of
    ``bitextforge train-bilingual`` is a key here (docs/bilingual.md)."""

    name = "bilingual_model.v1"
    run_options = frozenset({"save_minutes", "snapshots", "tests"})
    extra = "bilingual"

    class Config(Trainer.Config, TrainConfig):
        """Options of bilingual_model.v1: the corpora, and the model/training options of
        train-bilingual."""

        src: list[str] = Field(default_factory=list, description="Source sides of parallel "
                               "corpora (plain or .gz); or give train_tsv.")
        tgt: list[str] = Field(default_factory=list, description="Target sides, line-aligned "
                               "with src of the same position.")
        train_tsv: list[str] = Field(default_factory=list, description="Parallel corpora as "
                                     "two-field TSV files (.gz ok), read after src/tgt in this "
                                     "order; a file named twice is read twice (oversampling).")
        tsv_langs: str | None = Field(None, pattern=r"^[A-Za-z_]+-[A-Za-z_]+$", description="The "
                                      "languages of the TSV fields, e.g. de-en, so one corpus "
                                      "serves both directions (default: source first).")
        mono: list[str] = Field(default_factory=list, description="Monolingual text in the "
                                "decoded language for autoencoding.")
        dev_src: str | None = Field(None, description="Dev source: logs cosine alignment error.")
        dev_tgt: str | None = Field(None, description="Dev target, line-aligned with dev_src.")
        tests: list[tuple[str, str]] = Field(default_factory=list, description="[source, target] "
                                             "test files whose cosine and CSLS alignment-recovery "
                                             "errors are logged at every save (error against "
                                             "training time).")

        @model_validator(mode="after")
        def _some_corpus(self):
            if not self.src and not self.tgt and not self.train_tsv:
                raise ValueError("give the parallel corpora as src and tgt, or as train_tsv")
            if self.tsv_langs and {self.src_lang, self.tgt_lang} != set(self.tsv_langs.split("-")):
                raise ValueError(f"tsv_langs {self.tsv_langs} does not name src_lang "
                                 f"{self.src_lang} and tgt_lang {self.tgt_lang}")
            return self

    @classmethod
    def input_paths(cls, config):
        """Every corpus file."""
        return {**{f"{k}[{i}]": p for k in ("src", "tgt", "mono", "train_tsv")
                   for i, p in enumerate(getattr(config, k))},
                **{f"tests[{i}][{j}]": p for i, pair in enumerate(config.tests)
                   for j, p in enumerate(pair)},
                "dev_src": config.dev_src, "dev_tgt": config.dev_tgt,
                "init_embeddings": config.init_embeddings, "init_lexicon": config.init_lexicon,
                "vocab": config.vocab}

    def train(self):
        """Read the corpora and train."""
        from bitextforge.api import read_tsv_pairs

        from .train import read_pairs, read_text, train_bilingual

        c = self.config
        if bool(c.dev_src) != bool(c.dev_tgt):
            raise InputError("bilingual_model.v1: give both dev_src and dev_tgt, or neither")
        src, tgt = read_pairs(c.src, c.tgt)
        if c.train_tsv:
            swap = bool(c.tsv_langs) and c.tsv_langs.split("-")[0] != c.src_lang
            s, t = read_tsv_pairs(c.train_tsv, swap=swap)
            src, tgt = src + s, tgt + t
        mono = [x for f in c.mono for x in read_text(f)]
        dev = read_pairs([c.dev_src], [c.dev_tgt]) if c.dev_src else None
        tests = {}
        for i, (s, t) in enumerate(c.tests):
            name = Path(s).name if Path(s).name not in tests else f"{Path(s).name}#{i}"
            tests[name] = read_pairs([s], [t])
        cfg = TrainConfig(**{k: getattr(c, k) for k in TrainConfig.model_fields})
        device = resolve_device(c.device, self.name)
        train_bilingual(cfg.model_copy(update={"device": device}), src, tgt, c.output,
                        mono=mono, dev=dev, log=self.log, tests=tests, where=self.name)
        return {"pairs": len(src), "autoencoding_sentences": len(mono), "device": device}


class MlpSimilarityTrainer(Trainer):
    """Train the MLP similarity (equation 15) on embeddings of a bilingual model: positives from
    clean parallel files, negatives by one of the paper's strategies (section 5.2)."""

    name = "mlp_similarity_model.v1"
    extra = "bilingual"

    class Config(Trainer.Config):
        """Options of mlp_similarity_model.v1 (those of train-mlp-similarity)."""

        model: str = Field(description="Bilingual embedding model directory.")
        src: list[str] = Field(description="Source sides of the positive (clean) pairs.")
        tgt: list[str] = Field(description="Target sides, line-aligned with src.")
        negatives: Literal["shuffle", "random", "worst"] = Field(
            "shuffle", description="shuffle: positives paired at random; random: random lines of "
                                   "the noisy corpus; worst: its x%-worst slice by cosine.")
        noisy_src: str | None = Field(None, description="Noisy corpus, source side.")
        noisy_tgt: str | None = Field(None, description="Noisy corpus, target side.")
        worst: float = Field(60.0, gt=0, le=100, description="x of the x%-worst negatives.")
        count: int = Field(0, ge=0, description="Negative pairs (0: as many as positives).")
        hidden: list[int] = Field(default_factory=lambda: [512, 512],
                                  description="Hidden layer sizes.")
        max_iter: int = Field(30, ge=1, description="Training epochs at most.")
        seed: int = Field(1, description="Random seed.")
        device: str = device_field("the embedding model (the MLP is fitted on the CPU)")

    @classmethod
    def input_paths(cls, config):
        """The embedding model and every corpus file."""
        return {"model": config.model,
                **{f"{k}[{i}]": p for k in ("src", "tgt") for i, p in enumerate(getattr(config, k))},
                "noisy_src": config.noisy_src, "noisy_tgt": config.noisy_tgt}

    def train(self):
        """Embed, pick negatives, fit, write."""
        from .mlp_training import train_mlp_from_files

        c = self.config
        device = resolve_device(c.device, self.name)
        meta = train_mlp_from_files(c.model, c.src, c.tgt, c.negatives, c.noisy_src,
                                    c.noisy_tgt, c.worst, c.count, tuple(c.hidden), c.max_iter,
                                    c.seed, c.output, device=device)
        return {**meta, "device": device}
