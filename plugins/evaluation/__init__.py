"""Evaluators: corpus BLEU/chrF with sacrebleu's paired bootstrap (Post 2018; Koehn 2004), corpus
statistics of Wieting, Mallinson & Gimpel 2017 (section 5.6, Tables 9-10) and ROC-AUC / average
precision of filter scores against human labels (ParaCrawl's human evaluations, Bañón et al. 2020).
"""

import bitextforge

from .corpus_stats import CorpusStatsEvaluator
from .label_auc import LabelAucEvaluator
from .mt_metrics import BleuEvaluator, ChrfEvaluator


@bitextforge.hookimpl
def register_evaluators(register):
    """Register bleu.v1, chrf.v1, corpus_stats.v1 and label_auc.v1."""
    register(BleuEvaluator)
    register(ChrfEvaluator)
    register(CorpusStatsEvaluator)
    register(LabelAucEvaluator)
