"""WMT-style lexical filtering signals: dictionary coverage (``lexical_coverage.v1``), IBM-1
lexical translation scores (``lexical_translation.v1``) and the trainer of their tables
(``lexical_translation_model.v1``), after hunalign (Varga et al. 2005) and bicleaner
(Sánchez-Cartagena et al. 2018), with eflomal alignments (Östling & Tiedemann 2017); and a pair
classifier trained on synthetic noise (``pair_classifier.v1`` and ``pair_classifier_model.v1``,
after bicleaner-ai, Zaragoza-Bernabeu et al. 2022) whose features are the project's own scores.

Registering imports no heavy library; scipy, snowballstemmer and eflomal load when a component is
built. ``bitextforge build-filter`` (:mod:`.pair_builder`) builds all of them for a new pair
from a clean seed corpus.
"""

import bitextforge

from .components import LexicalCoverageFilter, LexicalTranslationFilter
from .pair_classifier import PairClassifierFilter
from .segment import SegmentedFilter


@bitextforge.hookimpl
def register_filters(register):
    """Register lexical_coverage.v1, lexical_translation.v1, pair_classifier.v1 and
    segmented.v1."""
    register(LexicalCoverageFilter)
    register(LexicalTranslationFilter)
    register(PairClassifierFilter)
    register(SegmentedFilter)


@bitextforge.hookimpl
def register_trainers(register):
    """Register lexical_translation_model.v1 and pair_classifier_model.v1."""
    from .components import LexicalTranslationTrainer
    from .pair_classifier import PairClassifierTrainer

    register(LexicalTranslationTrainer)
    register(PairClassifierTrainer)


@bitextforge.hookimpl
def register_generators(register):
    """Register lexicon_translate.v1 (word-for-word translation from a dictionary)."""
    from .wordforword import LexiconTranslateGenerator

    register(LexiconTranslateGenerator)


@bitextforge.hookimpl
def register_commands(register):
    """build-filter: the WMT-style filter of any language pair from a clean seed corpus."""
    from .pair_builder import build_filter_command

    register("build-filter", "build the WMT-style filter of a language pair from a clean seed "
             "corpus (tables, KenLM models, pair classifier, a recipe, held-out AUC per noise "
             "kind)", build_filter_command)
