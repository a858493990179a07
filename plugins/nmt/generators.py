"""``translate.v1``: fill the empty side of monolingual rows by machine translation.

Back-translation of target-language monolingual text into the source language (Sennrich, Haddow
& Birch 2016, "Improving Neural Machine Translation Models with Monolingual Data") and forward
translation of source text (self-training), with the decodings compared by Edunov, Ott, Auli &
Grangier 2018 ("Understanding Back-Translation at Scale"): beam search, unrestricted or top-k /
nucleus sampling, and noised beam output (words deleted with probability 0.1, replaced by a
filler token with probability 0.1, and swapped within a window of 3). A step's ``tag`` prepends
a token to the generated text (Caswell, Chelba & Grangier 2019, "Tagged Back-Translation").
Translation runs on :mod:`bitextforge.plugins.nmt.backends` (CTranslate2 or transformers).
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Optional

from pydantic import BaseModel, ConfigDict, Field

from bitextforge import Generator

from .paraphrasers import _NMTConfig, _OneModel


class Noise(BaseModel):
    """Edunov et al. 2018's noise on a beam output (their section 3: delete, replace by a filler
    token, swap words no further than ``swap`` positions apart)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    delete: float = Field(0.1, ge=0, lt=1, description="Probability of deleting each word.")
    filler: float = Field(0.1, ge=0, lt=1, description="Probability of replacing each word by "
                          "the filler token.")
    filler_token: str = Field("<BLANK>", description="The filler token.")
    swap: int = Field(3, ge=0, description="Words move at most this many positions (a random "
                      "permutation of positions i + U(0, swap)); 0: no swaps.")


def add_noise(text: str, noise: Noise, rng: random.Random) -> str:
    """``text`` with Edunov et al.'s three kinds of noise, drawn from ``rng``: each word dropped
    or replaced by the filler with the given probabilities, then the words reordered by sorting
    position + U(0, swap + 1) so that no word moves further than ``swap``."""
    words = text.split()
    out = []
    for w in words:
        r = rng.random()
        if r < noise.delete:
            continue
        out.append(noise.filler_token if r < noise.delete + noise.filler else w)
    if noise.swap and len(out) > 1:
        keys = [i + rng.uniform(0, noise.swap + 1) for i in range(len(out))]
        out = [w for _, w in sorted(zip(keys, out), key=lambda kv: kv[0])]
    return " ".join(out) if out else (words[0] if words else "")


class TranslateGenerator(_OneModel, Generator):
    """Machine-translate the side a monolingual row has into the side it lacks: back-translation
    with a reverse model (``side: src`` on target text) or forward translation (``side: tgt``).

    ``k`` outputs per sentence: the k best of a beam, or k samples (``sampling: true`` with
    ``top_k`` / ``top_p``); ``noise`` adds Edunov et al.'s noise to each output. The score column
    holds the output's average log-probability per token. Each generated row's
    ``generated_by`` says which model and decoding made it.
    """

    name = "translate.v1"
    extra = "nmt"
    learned = True  # a trained translation model writes the text

    class Config(_NMTConfig, Generator.Config):
        """Options of translate.v1."""

        model: str = Field(description="Seq2seq model directory (e.g. one written by "
                           "`bitextforge train-nmt`, for back-translation a model from the "
                           "target language into the source language) or a Hugging Face hub id.")
        k: int = Field(1, ge=1, description="Outputs per sentence (n-best or samples).")
        noise: Optional[Noise] = Field(None, description="Noised beam output (Edunov et al. "
                                       "2018): {} for their settings (delete 0.1, filler 0.1, "
                                       "swap 3).")
        src_lang: Optional[str] = Field(None, description="The model's input language code for "
                                        "multilingual models (NLLB eng_Latn, M2M-100 en).")
        tgt_lang: Optional[str] = Field(None, description="The model's output language code for "
                                        "multilingual models.")

    def __init__(self, config=None):
        """Load the model once for the run."""
        super().__init__(config)
        self.backend = self._backend()

    def describe(self) -> str:
        """``translate.v1 model=<dir name> <decoding>``."""
        c = self.config
        if c.sampling:
            how = f"sample k={c.k} top_k={c.top_k} top_p={c.top_p} T={c.temperature}"
        else:
            how = f"beam={max(c.beam, c.k)} k={c.k}"
        if c.noise is not None:
            how += (f" noise=del{c.noise.delete}/fill{c.noise.filler}/swap{c.noise.swap}")
        return f"{self.name} model={Path(c.model).name} {how}"

    def generate(self, sentences):
        """k outputs per sentence, best first (sampled ones in sampling order), with their
        average log-probability per token; duplicates of an earlier output dropped."""
        c = self.config
        results = self.backend.translate(list(sentences), c.decoding(c.k))
        out = []
        for sent, cands in zip(sentences, results):
            if not c.sampling:
                cands = sorted(cands, key=lambda x: -x[1])
            if c.noise is not None:
                # seeded by the sentence, so a resumed or re-batched run adds the same noise
                seed = int.from_bytes(hashlib.blake2b(f"{c.seed}\x1f{sent}".encode(),
                                                      digest_size=8).digest(), "big")
                rng = random.Random(seed)
                cands = [(add_noise(text, c.noise, rng), score) for text, score in cands]
            seen, keep = set(), []
            for text, score in cands:
                key = " ".join(text.split())
                if key and key not in seen:
                    seen.add(key)
                    keep.append((text, score))
            out.append(keep)
        return out

    def manifest_info(self):
        """Backend and model hash."""
        return self.backend.info()

    def close(self):
        """Release the model."""
        self.backend.close()
