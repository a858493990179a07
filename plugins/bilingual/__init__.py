"""Bilingual sentence embeddings with an MLP similarity, after Kim, Rosendahl, Rossenbach,
Rosendahl, Khadivi & Ney, *Learning Bilingual Sentence Embeddings via Autoencoding and Neural
Machine Translation*: the trainers ``bilingual_model.v1`` and ``mlp_similarity_model.v1``
(``bitextforge train-bilingual``, ``train-mlp-similarity``), the filter ``bilingual_similarity.v1`` and the evaluator ``alignment_recovery.v1``.

Registering imports no heavy library; torch, faiss and scikit-learn load when a component is built.
"""

import bitextforge

from .components import AlignmentRecoveryEvaluator, BilingualSimilarityFilter


@bitextforge.hookimpl
def register_filters(register):
    """Register bilingual_similarity.v1."""
    register(BilingualSimilarityFilter)


@bitextforge.hookimpl
def register_evaluators(register):
    """Register alignment_recovery.v1."""
    register(AlignmentRecoveryEvaluator)


@bitextforge.hookimpl
def register_trainers(register):
    """Register bilingual_model.v1 and mlp_similarity_model.v1."""
    from .trainers import BilingualModelTrainer, MlpSimilarityTrainer

    register(BilingualModelTrainer)
    register(MlpSimilarityTrainer)


@bitextforge.hookimpl
def register_commands(register):
    """The trainers under their short command names: train-bilingual, train-mlp-similarity."""
    from bitextforge.api import trainer_command

    register("train-bilingual", "train a bilingual sentence embedding model (Kim et al.; = train "
             "bilingual_model.v1)", trainer_command("bilingual_model.v1"))
    register("train-mlp-similarity", "train the MLP similarity on bilingual embeddings (Kim et "
             "al. 5.2; = train mlp_similarity_model.v1)", trainer_command("mlp_similarity_model.v1"))
