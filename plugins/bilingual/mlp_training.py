"""Choosing negative examples and training the MLP similarity of Kim, Rosendahl, Rossenbach,
Rosendahl, Khadivi & Ney (section 3.3, equation 15; negatives as in section 5.2).

Negative sets: ``shuffle`` pairs the positive sentences at random (non-parallel pairs), ``random``
takes random lines of a noisy corpus without scoring (the paper's "random" row of Table 5),
``worst`` scores the noisy corpus with the embedding's cosine and takes the x%-worst slice.
"""

from __future__ import annotations

import numpy as np

from bitextforge import InputError


def choose_negatives(model, pos_src: list[str], pos_tgt: list[str], strategy: str,
                     noisy_src: list[str] | None, noisy_tgt: list[str] | None, worst: float,
                     count: int, seed: int) -> tuple[list[str], list[str]]:
    """Negative sentence pairs for one of the three strategies (see the module docstring)."""
    from .similarity import pair_scores, worst_slice

    rng = np.random.default_rng(seed)
    count = count or len(pos_src)
    if strategy == "shuffle":
        n = len(pos_src)
        if n < 2:
            raise InputError("shuffle negatives need at least 2 positive pairs")
        i = rng.integers(0, n, count)
        # shift by 1..n-1 so no sentence is paired with its own translation
        j = (i + rng.integers(1, n, count)) % n
        return [pos_src[x] for x in i], [pos_tgt[x] for x in j]
    if not noisy_src or not noisy_tgt:
        raise InputError(f"--negatives {strategy} needs --noisy-src and --noisy-tgt")
    if strategy == "random":
        pick = rng.choice(len(noisy_src), size=min(count, len(noisy_src)), replace=False)
    elif strategy == "worst":
        if not 0 < worst <= 100:
            raise InputError(f"--worst {worst}: give a percentage in (0, 100]")
        scores = pair_scores(model.embed(noisy_src, "src"), model.embed(noisy_tgt, "tgt"),
                             "cosine")
        pick = worst_slice(scores, worst, count)
    else:
        raise InputError(f"unknown negative strategy {strategy!r}; use shuffle, random or worst")
    return [noisy_src[x] for x in pick], [noisy_tgt[x] for x in pick]


def train_mlp_from_files(model_dir: str, src_files: list[str], tgt_files: list[str],
                         strategy: str, noisy_src: str | None, noisy_tgt: str | None,
                         worst: float, count: int, hidden: tuple[int, ...], max_iter: int,
                         seed: int, output: str, device: str = "cpu") -> dict:
    """Embed positives and chosen negatives with ``model_dir`` on ``device`` (a resolved device),
    fit the MLP, write ``output``; returns the metadata stored with it."""
    from .model import BilingualModel
    from .similarity import train_mlp
    from .train import read_pairs, read_text

    model = BilingualModel.load(model_dir, device)
    pos_src, pos_tgt = read_pairs(src_files, tgt_files)
    ns = read_text(noisy_src) if noisy_src else None
    nt = read_text(noisy_tgt) if noisy_tgt else None
    if ns is not None and nt is not None and len(ns) != len(nt):
        raise InputError(f"{noisy_src} has {len(ns)} lines but {noisy_tgt} has {len(nt)}")
    neg_src, neg_tgt = choose_negatives(model, pos_src, pos_tgt, strategy, ns, nt, worst, count,
                                        seed)
    meta = {"embedding_model": str(model_dir), "negatives_strategy": strategy}
    if strategy == "worst":
        meta["worst_percent"] = worst
    mlp = train_mlp(model.embed(pos_src, "src"), model.embed(pos_tgt, "tgt"),
                    model.embed(neg_src, "src"), model.embed(neg_tgt, "tgt"),
                    hidden=hidden, max_iter=max_iter, seed=seed, meta=meta)
    mlp.save(output)
    return mlp.meta
