"""Scoring filters and evaluators from Wieting et al. 2017 (sections 5.5-5.7), ParaNMT-50M (5.4) and BET (3.2): language ID, n-gram overlap, sentence BLEU/chrF, KenLM perplexity, embedding cosine, paraphrase score, translation cost, reference classifier; BLEU/chrF with bootstrap, corpus statistics, label AUC.

This package is being built; it registers its components once they are implemented.
"""
