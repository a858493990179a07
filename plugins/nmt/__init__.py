"""NMT back-translation (Wieting et al. 2017, ParaNMT-50M) and round-trip paraphrasing through pivot languages (BET, Corbeil & Abdi Ghavidel), with transformers and CTranslate2 backends and offline Marian training.

This package is being built; it registers its components once they are implemented.
"""
