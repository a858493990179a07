"""Initialising the bilingual embedding model of Kim, Rosendahl, Rossenbach, Rosendahl, Khadivi &
Ney (*Learning Bilingual Sentence Embeddings via Autoencoding and Neural Machine Translation*,
section 3.2) from a bilingual dictionary, so that a sentence and its translation are close before
the first update.

The paper initialises the word embeddings with bilingual skip-gram vectors mapped into one space,
which this machine has no time to train; a dictionary gives the same property directly. The
target-language encoder keeps its random start; the source-language word embeddings start as a
copy of the target ones (names, numbers and punctuation share a subword, and so start equal),
except that every whole-word source subword (``▁haus``) that the dictionary translates by one
target word with a subword of its own (``▁house``, ``▁home``) starts as the mean of those
subwords' embeddings; and the source encoder starts as a copy of the target encoder. A German
sentence then runs through the same function as its word-by-word English translation, and their
max-pooled states are already near each other (measured in docs/benchmarks.md); training refines
that instead of finding a shared space from nothing.
"""

from __future__ import annotations

from bitextforge import InputError


def dictionary_translations(path: str, langs: tuple[str, str], src_lang: str,
                            tgt_lang: str) -> dict[str, set[str]]:
    """One-word translations ``{source word: {target words}}`` (lowercased) of a dictionary file
    of Ding's layout (line number, first-language side, second-language side; ``;`` between
    synonyms), oriented from ``src_lang`` to ``tgt_lang``."""
    from bitextforge.plugins.lexical.dictionary import load_lexicon

    if set(langs) != {src_lang, tgt_lang}:
        raise InputError(f"init_lexicon_langs {'-'.join(langs)} does not name src_lang "
                         f"{src_lang} and tgt_lang {tgt_lang}")
    lex = load_lexicon(str(path), tuple(langs), "lowercase", 1, (1, 2))
    return lex.forward if langs[0] == src_lang else lex.backward


def init_from_dictionary(net, sp, translations: dict[str, set[str]]) -> int:
    """Set the source word embeddings and encoder of ``net`` from the target ones as the module
    docstring says; ``sp`` is the joint sentencepiece processor. Returns how many source subwords
    got the mean of their translations."""
    import torch

    unk = sp.unk_id()

    def word_piece(word: str) -> int:
        for form in (word, word.capitalize()):
            pid = sp.piece_to_id("\u2581" + form)
            if pid != unk:
                return pid
        return unk

    mapped = 0
    with torch.no_grad():
        src, tgt = net.embed["src"].weight, net.embed["tgt"].weight
        src.copy_(tgt)
        for pid in range(sp.get_piece_size()):
            piece = sp.id_to_piece(pid)
            if not piece.startswith("\u2581") or len(piece) < 2:
                continue
            ids = {word_piece(e) for e in translations.get(piece[1:].lower(), ())} - {unk}
            if ids:
                src[pid] = tgt[sorted(ids)].mean(dim=0)
                mapped += 1
        net.encoder["src"].load_state_dict(net.encoder["tgt"].state_dict())
    return mapped
