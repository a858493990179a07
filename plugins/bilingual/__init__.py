"""Bilingual sentence embeddings with an MLP similarity (Kim, Rosendahl, Rossenbach, Rosendahl, Khadivi & Ney): training, similarity filters, alignment recovery.

This package is being built; it registers its components once they are implemented.
"""
