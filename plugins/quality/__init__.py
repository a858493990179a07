"""Scoring filters from Wieting et al. 2017 (sections 5.5-5.7), ParaNMT-50M (Wieting & Gimpel
2018, section 5.4) and BET (Corbeil & Abdi Ghavidel, section 3.2): language ID, n-gram overlap,
sentence BLEU/chrF, KenLM perplexity, embedding cosine, paraphrase score, translation cost and a
reference-vs-MT classifier. Each module cites the paper it implements; heavy libraries are
imported when a component is built, so loading this plugin stays cheap.
"""

import bitextforge

from .classifier import ReferenceClassifierFilter
from .cost import TranslationCostFilter
from .embeddings import EmbeddingCosineFilter
from .langid import LanguageIdFilter
from .lm import KenlmPerplexityFilter
from .overlap import NgramOverlapFilter, SentenceBleuFilter, SentenceChrfFilter
from .wordvec import ParaphraseScoreFilter

FILTERS = (LanguageIdFilter, NgramOverlapFilter, SentenceBleuFilter, SentenceChrfFilter,
           KenlmPerplexityFilter, EmbeddingCosineFilter, ParaphraseScoreFilter,
           TranslationCostFilter, ReferenceClassifierFilter)


@bitextforge.hookimpl
def register_filters(register):
    """Register the scoring filters."""
    for cls in FILTERS:
        register(cls)


@bitextforge.hookimpl
def register_trainers(register):
    """Register the trainers of the filters' models (KenLM, word vectors, reference classifier)."""
    from .trainers import TRAINERS

    for cls in TRAINERS:
        register(cls)
