"""Evaluators: corpus BLEU/chrF with sacrebleu's paired bootstrap (Post 2018; Koehn 2004), corpus
statistics of Wieting, Mallinson & Gimpel 2017 (section 5.6, Tables 9-10), ROC-AUC / average
precision of filter scores against human labels (ParaCrawl's human evaluations, Bañón et al. 2020),
their correlation with human quality scores (WMT quality estimation, Specia et al. 2020),
STS correlation of sentence embeddings trained on the paraphrase pairs (Wieting et al. 2017;
Wieting & Gimpel 2018) and MRPC paraphrase classification with augmented pairs (Corbeil & Abdi
Ghavidel, BET).
"""

import bitextforge

from .corpus_stats import CorpusStatsEvaluator
from .correlation import ScoreCorrelationEvaluator
from .label_auc import LabelAucEvaluator
from .mrpc import MrpcEvaluator
from .mt_metrics import BleuEvaluator, ChrfEvaluator
from .paraphrastic import ParaphrasticEmbeddingsEvaluator


@bitextforge.hookimpl
def register_evaluators(register):
    """Register bleu.v1, chrf.v1, corpus_stats.v1, label_auc.v1, score_correlation.v1,
    paraphrastic_embeddings.v1 and mrpc.v1."""
    register(BleuEvaluator)
    register(ChrfEvaluator)
    register(CorpusStatsEvaluator)
    register(LabelAucEvaluator)
    register(ScoreCorrelationEvaluator)
    register(ParaphrasticEmbeddingsEvaluator)
    register(MrpcEvaluator)
