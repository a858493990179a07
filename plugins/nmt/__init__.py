"""NMT back-translation (Wieting et al. 2017, ParaNMT-50M) and round-trip paraphrasing through pivot
languages (BET, Corbeil & Abdi Ghavidel), with transformers and CTranslate2 backends and offline
Marian training (``bitextforge train-nmt``).

Registers ``backtranslate.v1`` and ``roundtrip.v1``; heavy libraries load only when a component is
built.
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
