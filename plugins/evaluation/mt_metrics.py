"""Corpus BLEU and chrF with sacrebleu's signature and its paired bootstrap resampling.

Implements the evaluation of Post 2018, *A Call for Clarity in Reporting BLEU Scores* (sacrebleu,
whose ``significance.PairedTest`` is Koehn 2004's paired bootstrap as in Moses'
``bootstrap-hypothesis-difference-significance.pl``); BLEU is Papineni et al. 2002 and chrF
Popović 2015. The scores, p-value and 95% confidence interval are sacrebleu's own, so they equal
``sacrebleu REF -i BASELINE SYSTEM --paired-bs`` on the same files and seed.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Literal

from pydantic import Field

from bitextforge import Evaluator, InputError, Report

from ._texts import align_to_rows, resolve_texts


@contextmanager
def _sacrebleu_seed(seed: int):
    # sacrebleu's PairedTest reads its seed only from this variable (the CLI does the same)
    old = os.environ.get("SACREBLEU_SEED")
    os.environ["SACREBLEU_SEED"] = str(seed)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("SACREBLEU_SEED", None)
        else:
            os.environ["SACREBLEU_SEED"] = old


def paired_bootstrap(base_hyp: list[str], hyp: list[str], refs: list[list[str]],
                     metrics: dict | None = None, samples: int = 1000,
                     seed: int = 12345) -> tuple[dict, dict]:
    """sacrebleu's paired bootstrap resampling (Koehn 2004) of ``hyp`` against ``base_hyp`` on
    the reference streams ``refs``, with ``metrics`` (name -> sacrebleu metric; default BLEU and
    chrF): ``(signatures, {metric name: (baseline result, system result)})`` in metric order,
    under sacrebleu's own names (e.g. ``BLEU``, ``chrF2``); a result has ``score``, ``p_value``,
    ``mean`` and ``ci``. The resampling is seeded (SACREBLEU_SEED), so two calls on the same
    translations give the same p-values."""
    from sacrebleu.metrics import BLEU, CHRF
    from sacrebleu.significance import PairedTest

    with _sacrebleu_seed(seed):
        test = PairedTest([("baseline", base_hyp), ("system", hyp)],
                          metrics or {"BLEU": BLEU(), "chrF": CHRF()}, refs, test_type="bs",
                          n_samples=samples)
        sigs, results = test()
    return sigs, {k: v for k, v in results.items() if k != "System"}


class _SacrebleuEvaluator(Evaluator):
    """Common part of bleu.v1 and chrf.v1: inputs, alignment, bootstrap, report."""

    metric_label = ""

    class Config(Evaluator.Config):
        """Options shared by bleu.v1 and chrf.v1."""

        hypothesis: str = Field("tgt", description="The system output: a corpus column (tgt, or "
                                "any text column) or a file with one hypothesis per line.")
        references: list[str] = Field(..., min_length=1, description="One or more reference "
                                      "files (or corpus columns). Files line-aligned with the "
                                      "recipe's input are matched to corpus rows by their id.")
        baseline: str | None = Field(None, description="A baseline system's outputs (file or "
                                     "column); enables sacrebleu's paired bootstrap resampling "
                                     "and reports its p-value and 95% confidence interval.")
        bootstrap_samples: int = Field(1000, gt=0, description="Bootstrap resamples "
                                       "(sacrebleu --paired-bs-n).")
        seed: int = Field(12345, description="Seed of the resampling (sacrebleu's "
                          "SACREBLEU_SEED; 12345 is sacrebleu's default).")
        per_item: bool = Field(True, description="Put sentence-level scores in the report's "
                               "items (one per hypothesis).")

    def _metric(self, sentence: bool = False):
        raise NotImplementedError

    def _load(self, corpus):
        c = self.config
        hyp, hyp_col = resolve_texts(corpus, c.hypothesis, f"{self.name} hypothesis")
        ids = [int(x) for x in corpus.column("id")] if hyp_col else None

        def aligned(spec: str, what: str) -> list[str]:
            texts, from_col = resolve_texts(corpus, spec, f"{self.name} {what}")
            if from_col or ids is None:
                if len(texts) != len(hyp):
                    raise InputError(f"{self.name}: {what} {spec} has {len(texts)} lines, the "
                                     f"hypothesis {c.hypothesis} has {len(hyp)}")
                return texts
            return align_to_rows(texts, ids, spec, f"{self.name} {what}")

        refs = [aligned(r, "reference") for r in c.references]
        base = aligned(c.baseline, "baseline") if c.baseline else None
        return hyp, refs, base

    def evaluate(self, corpus) -> Report:
        """Corpus score, signature and (with a baseline) paired bootstrap p-value and CI."""
        c = self.config
        hyp, refs, base = self._load(corpus)
        if not hyp:
            raise InputError(f"{self.name}: the hypothesis {c.hypothesis} is empty; nothing to score")
        metric = self._metric()
        score = metric.corpus_score(hyp, refs)
        signature = str(metric.get_signature())
        numbers = {"score": float(score.score), "sentences": float(len(hyp))}
        numbers.update(self._extra_numbers(score))
        summary = f"{score.name} = {score.score:.2f} | {signature}"
        if base is not None:
            sigs, results = paired_bootstrap(base, hyp, refs, {score.name: self._metric()},
                                             c.bootstrap_samples, c.seed)
            bl, sysr = next(iter(results.values()))
            # sacrebleu returns numpy float32 values; the report must stay JSON-serialisable
            numbers.update({k: float(v) for k, v in {
                "baseline_score": bl.score, "baseline_mean": bl.mean, "baseline_ci": bl.ci,
                "mean": sysr.mean, "ci": sysr.ci, "p_value": sysr.p_value,
                "ci_low": sysr.mean - sysr.ci, "ci_high": sysr.mean + sysr.ci,
                "delta": sysr.score - bl.score}.items()})
            signature = str(next(iter(sigs.values())))
            summary = (f"{score.name} = {sysr.score:.2f} (mean {sysr.mean:.2f} ± {sysr.ci:.2f}, "
                       f"95% CI) vs baseline {bl.score:.2f} (mean {bl.mean:.2f} ± {bl.ci:.2f}); "
                       f"paired bootstrap p = {sysr.p_value:.4f} | {signature}")
        items: dict[str, list[float]] = {}
        if c.per_item:
            sent = self._metric(sentence=True)
            items[f"sentence_{self.metric_label}"] = [
                sent.sentence_score(h, [r[i] for r in refs]).score for i, h in enumerate(hyp)]
        return Report(numbers=numbers, items=items, summary=summary)

    def _extra_numbers(self, score) -> dict[str, float]:
        return {}


class BleuEvaluator(_SacrebleuEvaluator):
    """Corpus BLEU (sacrebleu) of a hypothesis against one or more references.

    Reports the score, brevity penalty and lengths, sacrebleu's signature, sentence BLEU per item
    (effective n-gram order, the sacrebleu sentence_bleu default) and, when ``baseline`` is given,
    sacrebleu's paired bootstrap resampling: p-value and the 95% confidence interval of the
    system's mean over resamples (Koehn 2004; Post 2018).
    """

    name = "bleu.v1"
    metric_label = "bleu"

    class Config(_SacrebleuEvaluator.Config):
        """Options of bleu.v1 (sacrebleu's BLEU arguments)."""

        tokenize: str = Field("13a", description="sacrebleu tokenizer: 13a, intl, zh, ja-mecab, "
                              "char, none, flores200, ...")
        lowercase: bool = Field(False, description="Case-insensitive BLEU.")
        smooth_method: Literal["exp", "floor", "add-k", "none"] = Field(
            "exp", description="Smoothing of corpus BLEU (sacrebleu default exp).")

    def _metric(self, sentence: bool = False):
        from sacrebleu.metrics import BLEU

        c = self.config
        try:
            return BLEU(tokenize=c.tokenize, lowercase=c.lowercase,
                        smooth_method=c.smooth_method, effective_order=sentence)
        except Exception as exc:  # sacrebleu raises bare exceptions for unknown tokenizers
            raise InputError(f"{self.name}: tokenize {c.tokenize!r}: {exc}") from None

    def _extra_numbers(self, score):
        return {"bp": score.bp, "sys_len": float(score.sys_len), "ref_len": float(score.ref_len)}


class ChrfEvaluator(_SacrebleuEvaluator):
    """Corpus chrF (Popović 2015) or chrF++ (word_order 2) with sacrebleu, like bleu.v1.

    Same inputs and paired bootstrap as bleu.v1; sentence chrF per item.
    """

    name = "chrf.v1"
    metric_label = "chrf"

    class Config(_SacrebleuEvaluator.Config):
        """Options of chrf.v1 (sacrebleu's CHRF arguments)."""

        char_order: int = Field(6, gt=0, description="Character n-gram order.")
        word_order: int = Field(0, ge=0, description="Word n-gram order (2 = chrF++).")
        beta: int = Field(2, gt=0, description="Weight of recall against precision.")
        lowercase: bool = Field(False, description="Case-insensitive chrF.")

    def _metric(self, sentence: bool = False):
        from sacrebleu.metrics import CHRF

        c = self.config
        return CHRF(char_order=c.char_order, word_order=c.word_order, beta=c.beta,
                    lowercase=c.lowercase)
