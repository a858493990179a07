"""HPSG paraphrasing with the English Resource Grammar through pydelphin and ACE, and bitext
sentence splitting: Nichols, Bond, Appling & Matsumoto, *Paraphrasing Training Data for
Statistical Machine Translation*, sections 3.2, 4.1 and 5.2.

Registers ``erg.v1`` (parse -> top MRS -> generate -> ranked, deduplicated realizations) and
``nichols_split.v1`` (the section 5.2 splitting; files are split with ``bitextforge
nichols-split``). See docs/erg.md.
"""

import bitextforge

from .paraphraser import ErgParaphraser, change_label, check_mrs, rank_realizations
from .split import NicholsSplit, split_pair, split_sentences

__all__ = ["ErgParaphraser", "NicholsSplit", "change_label", "check_mrs", "rank_realizations",
           "split_pair", "split_sentences"]


@bitextforge.hookimpl
def register_paraphrasers(register):
    """Register erg.v1."""
    register(ErgParaphraser)


@bitextforge.hookimpl
def register_splitters(register):
    """Register nichols_split.v1."""
    register(NicholsSplit)


@bitextforge.hookimpl
def register_commands(register):
    """nichols-split: split a pair of files into sentence pairs."""
    from .cli import nichols_split_command

    register("nichols-split", "split line-aligned bitext into sentence pairs (Nichols et al. 5.2)",
             nichols_split_command)
