"""Scoring filters from Wieting et al. 2017 (sections 5.5-5.7), ParaNMT-50M (Wieting & Gimpel
2018, section 5.4) and BET (Corbeil & Abdi Ghavidel, section 3.2): language ID, n-gram overlap,
sentence BLEU/chrF, KenLM perplexity, embedding cosine, multilingual embedding margin
(Artetxe & Schwenk 2019), paraphrase score, translation cost and a
reference-vs-MT classifier; and, for quality estimation (Specia et al. 2020), a regression from a
sentence embedding to a human score and one from the multilingual embeddings of a source and its
machine translation. Each module cites the paper it implements; heavy libraries are
imported when a component is built, so loading this plugin stays cheap.
"""

import bitextforge

from .classifier import ReferenceClassifierFilter
from .cost import TranslationCostFilter
from .crossqe import EmbeddingQeFilter
from .embeddings import EmbeddingCosineFilter
from .langid import LanguageIdFilter
from .lm import KenlmPerplexityFilter
from .multilingual import MultilingualEmbeddingFilter
from .overlap import NgramOverlapFilter, SentenceBleuFilter, SentenceChrfFilter
from .regressor import SentenceRegressorFilter
from .wordvec import ParaphraseScoreFilter

FILTERS = (LanguageIdFilter, NgramOverlapFilter, SentenceBleuFilter, SentenceChrfFilter,
           KenlmPerplexityFilter, EmbeddingCosineFilter, ParaphraseScoreFilter,
           TranslationCostFilter, ReferenceClassifierFilter, SentenceRegressorFilter,
           MultilingualEmbeddingFilter, EmbeddingQeFilter)


@bitextforge.hookimpl
def register_filters(register):
    """Register the scoring filters."""
    for cls in FILTERS:
        register(cls)


@bitextforge.hookimpl
def register_trainers(register):
    """Register the trainers of the filters' models (KenLM, word vectors, reference classifier,
    sentence regressor, embedding QE)."""
    from .crossqe import EmbeddingQeTrainer
    from .regressor import SentenceRegressorTrainer
    from .trainers import TRAINERS

    for cls in (*TRAINERS, SentenceRegressorTrainer, EmbeddingQeTrainer):
        register(cls)


@bitextforge.hookimpl
def register_commands(register):
    """The trainers under their short command names (``bitextforge train NAME`` with the same
    flags): train-lm, train-word-vectors, train-reference-classifier."""
    from bitextforge.api import trainer_command

    register("train-lm", "train a KenLM model (lmplz + build_binary) for kenlm_perplexity.v1 "
             "(= train kenlm_model.v1)", trainer_command("kenlm_model.v1"))
    register("train-word-vectors", "train count-based word vectors (PPMI + SVD) for "
             "paraphrase_score.v1 (= train word_vectors.v1)",
             trainer_command("word_vectors.v1", _keep_case_flag, _keep_case))
    register("train-reference-classifier", "train the human-reference vs machine-translation "
             "classifier for reference_classifier.v1 (= train reference_classifier_model.v1)",
             trainer_command("reference_classifier_model.v1"))


def _keep_case_flag(parser):
    parser.add_argument("--keep-case", action="store_true", help="do not lowercase (= "
                        "--lowercase false)")


def _keep_case(args):
    return {"lowercase": False} if args.keep_case else {}
