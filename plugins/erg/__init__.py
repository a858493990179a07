"""HPSG paraphrasing with the English Resource Grammar through pydelphin and ACE (Nichols, Bond, Appling & Matsumoto, sections 3.2, 4.1 and 5.2).

This package is being built; it registers its components once they are implemented.
"""
