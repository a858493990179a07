"""Evaluators: corpus BLEU/chrF with paired bootstrap (sacrebleu), corpus statistics (Wieting et al. 2017, Tables 9-10) and label AUC against human judgements (ParaCrawl verdicts).

This package is being built; it registers its components once they are implemented.
"""
