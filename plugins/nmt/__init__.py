"""NMT back-translation (Wieting et al. 2017, ParaNMT-50M) and round-trip paraphrasing through pivot
languages (BET, Corbeil & Abdi Ghavidel), with transformers and CTranslate2 backends and offline
Marian training (``bitextforge train-nmt``).

Registers ``backtranslate.v1``, ``roundtrip.v1``, the ``nmt_model.v1`` trainer and the
``train_and_test.v1`` evaluator (train on a run's output, test, compare with a baseline); heavy
libraries load only when a component is built.
"""

import bitextforge

from .paraphrasers import BackTranslateParaphraser, RoundTripParaphraser


@bitextforge.hookimpl
def register_paraphrasers(register):
    """Register the NMT paraphrasers."""
    register(BackTranslateParaphraser)
    register(RoundTripParaphraser)


@bitextforge.hookimpl
def register_trainers(register):
    """Register nmt_model.v1 (the train-nmt training, for a recipe's prepare list)."""
    from .trainers import NmtModelTrainer

    register(NmtModelTrainer)


@bitextforge.hookimpl
def register_evaluators(register):
    """Register train_and_test.v1 (train a model on the run's output and test it)."""
    from .evaluators import TrainAndTestEvaluator

    register(TrainAndTestEvaluator)
