"""The NMT paraphrasers: ``backtranslate.v1`` (ParaNMT) and ``roundtrip.v1`` (BET).

``backtranslate.v1`` implements the back-translation of Wieting, Mallinson & Gimpel 2017
("Learning paraphrastic sentence embeddings from back-translated bitext") and ParaNMT-50M (Wieting &
Gimpel 2018): translate the non-English side of a bitext into English and pair each translation
with the English reference, keeping its per-token negative log-likelihood for the
translation-cost filter. ``roundtrip.v1`` implements BET (Corbeil & Abdi Ghavidel 2020, "BET: A
Backtranslation Approach for Easy Data Augmentation in Transformer-based Paraphrase Identification
Context"): English -> pivot -> English through several pivot languages. Translation runs on
:mod:`bitextforge.plugins.nmt.backends` (transformers or CTranslate2).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bitextforge import ComponentError, Paraphraser
from bitextforge.api import say

from bitextforge.api import device_field

from .backends import Decoding, backend_device, make_backend


class _NMTConfig(Paraphraser.Config):
    """Decoding and runtime options shared by the NMT paraphrasers."""

    backend: Literal["transformers", "ctranslate2"] = Field(
        "ctranslate2", description="Inference engine: transformers generate, or CTranslate2 "
        "(converted once and cached beside the model, int8 on CPU; several times faster).")
    beam: int = Field(4, ge=1, description="Beam size (at least k; ignored when sampling).")
    sampling: bool = Field(False, description="Sample k candidates instead of beam search.")
    top_k: int = Field(0, ge=0, description="Sampling: keep the k most likely tokens (0: all).")
    top_p: float = Field(1.0, gt=0, le=1, description="Sampling: nucleus probability mass.")
    temperature: float = Field(1.0, gt=0, description="Sampling temperature.")
    seed: int = Field(1, description="Random seed of sampling (per batch).")
    batch_size: int = Field(32, ge=1, description="Sentences per model call; batches are sorted "
                            "by length to limit padding.")
    max_length: int = Field(256, ge=1, description="Maximum input and output length in tokens.")
    device: str = device_field("the model")
    compute_type: Optional[str] = Field(None, description="CTranslate2 quantization (default "
                                        "int8 on CPU, float16 on GPU).")
    threads: int = Field(0, ge=0, description="CPU threads for the model (0: the library's "
                         "default).")
    parallel_batches: int = Field(0, ge=0, description="CTranslate2 on CPU: batches decoded at "
                                  "once (its inter_threads), the threads shared among them; 0: "
                                  "one per thread.")
    vocab_map: Optional[str] = Field(
        None, description="CTranslate2: restrict each batch's output vocabulary to a lexical "
        "shortlist, `model` (the vmap.txt train-nmt writes into the model directory) or a "
        "vocabulary map file (`bitextforge build-vocab-map`); faster, nearly always the same "
        "output (docs/nmt.md). Default: the full vocabulary.")
    min_model_bleu: float = Field(
        5.0, ge=0, allow_inf_nan=False, description="The lowest test BLEU the model's own "
        "record may show (the `tests` in the train_log.json that `train-nmt` and nmt_model.v1 "
        "write): a model below it writes fluent sentences unrelated to their source, and "
        "generating with it is refused (or only warned, `weak_model: warn`). 0 turns the check "
        "off; a model without such a record is not checked.")
    weak_model: Literal["refuse", "warn"] = Field(
        "refuse", description="What a model below min_model_bleu does: refuse to start (the "
        "default), or warn and generate anyway.")

    @model_validator(mode="after")
    def _vocab_map_needs_ctranslate2(self):
        if self.vocab_map is not None and self.backend != "ctranslate2":
            raise ValueError("vocab_map needs backend: ctranslate2")
        return self

    def decoding(self, k: int) -> Decoding:
        """The decoding settings for ``k`` candidates."""
        return Decoding(beam=max(self.beam, k), k=k, sampling=self.sampling, top_k=self.top_k,
                        top_p=self.top_p, temperature=self.temperature, seed=self.seed,
                        max_length=self.max_length)

    def runtime(self, where: str) -> dict:
        """Keyword arguments of :func:`make_backend` other than the model, with the device
        resolved once for the component ``where`` names (errors name it)."""
        return {"device": backend_device(self.backend, self.device, where),
                "threads": self.threads, "batch_size": self.batch_size,
                "compute_type": self.compute_type, "parallel_batches": self.parallel_batches,
                "vocab_map": self.vocab_map}


def _local_model(spec: str) -> str | None:
    """``spec`` when it names a local model directory, None for a hub id (looked up when the
    component starts): :func:`bitextforge.recipe.checks.local_model`, the one rule for it."""
    from bitextforge.api import local_model

    return local_model(spec)


class _OneModel:
    """Mixin of the components that decode with the one seq2seq model their ``model`` option
    names (with ``src_lang`` / ``tgt_lang`` for multilingual models), loaded once per run."""

    @classmethod
    def input_paths(cls, config):
        """The model directory (a hub id is not a path)."""
        return {"model": _local_model(config.model)}

    def _backend(self):
        """The model's backend with this component's runtime options; errors name the option.
        A model whose own test record says it cannot translate is refused first
        (:func:`check_model_record`)."""
        c = self.config
        check_model_record(c.model, c.min_model_bleu, c.weak_model, self.name)
        return make_backend(c.backend, c.model, src_lang=c.src_lang, tgt_lang=c.tgt_lang,
                            option=f"{self.name} model", **c.runtime(self.name))


def check_model_record(model: str, min_bleu: float, weak: str, who: str) -> float | None:
    """The best test BLEU in ``model``'s ``train_log.json`` (None when there is no such record):
    below ``min_bleu`` a :class:`ComponentError` (``weak`` ``refuse``) or a warning (``warn``).

    Generating with a model that cannot translate is the quiet way back-translation hurts: its
    outputs are fluent sentences unrelated to their sources, filters keep them as readily as good
    ones, and the model trained on them loses to bitext alone."""
    path = Path(model) / "train_log.json"
    if min_bleu <= 0 or not path.is_file():
        return None
    try:
        tests = json.loads(path.read_text(encoding="utf-8")).get("tests") or []
        scored = [(float(t["bleu"]), str(t.get("test", "?"))) for t in tests if "bleu" in t]
    except (OSError, ValueError, TypeError, AttributeError, KeyError):
        return None
    if not scored:
        return None
    best, test = max(scored)
    if best >= min_bleu:
        return best
    message = (f"{who}: model {model} scored BLEU {best:g} on its test set {test} (its "
               f"train_log.json), below min_model_bleu {min_bleu:g}: it cannot translate, and "
               f"what it generates would be fluent sentences unrelated to their sources; train "
               f"it longer or on more data")
    if weak == "warn":
        say(who, f"warning: {message}")
        return best
    raise ComponentError(message + " (or set weak_model: warn to generate anyway)")


def _norm(text: str) -> str:
    return " ".join(text.lower().split())


class _TokenizedLowercase:
    """Converts between a corpus of Moses-tokenized lowercase text and the running text an NMT
    model was trained on (sacremoses, the Moses tokenizer's rules)."""

    #: sentence starts and the pronoun "i", which a model trained on cased text expects in capitals
    _CAPITAL = re.compile(r"(^|[.!?] )(\w)|\bi\b")

    def __init__(self, lang: str):
        from sacremoses import MosesDetokenizer, MosesTokenizer

        self.lang = lang
        self.tok, self.detok = MosesTokenizer(lang=lang), MosesDetokenizer(lang=lang)

    def untokenize(self, text: str) -> str:
        """``i can 't tell . ok .`` -> ``I can't tell. Ok.``"""
        out = self.detok.detokenize(text.replace("''", '"').split())
        return self._CAPITAL.sub(lambda m: m.group(0).upper() if self.lang == "en"
                                 or m.group(2) else m.group(0), out)

    def tokenize(self, text: str) -> str:
        """``I can't tell. Ok.`` -> ``i can 't tell . ok .`` (a full stop inside a line is split
        off while the text still has its capitals: Moses reads ``tell. Ok`` as two sentences)."""
        return " ".join(self.tok.tokenize(text, escape=False)).replace('"', "''").lower()


class BackTranslateParaphraser(_OneModel, Paraphraser):
    """Back-translation (Wieting et al. 2017; ParaNMT-50M): translate the non-English column into
    English and offer the k best (or k sampled) translations as paraphrases of the reference.

    Use it with ``side: tgt`` and ``read: src``. The candidate score is the average log-probability
    per output token (``</s>`` included); the ``nll`` column is its negation, the per-token
    negative log-likelihood that ``translation_cost.v1`` reads. ``drop_equal_to_reference`` drops
    candidates equal to the row's current text on ``side`` after lowercasing.
    """

    name = "backtranslate.v1"
    extra = "nmt"
    learned = True  # a trained translation model writes the text
    extra_columns = ("nll",)
    reads_side = True

    class Config(_NMTConfig):
        """Options of backtranslate.v1."""

        model: str = Field(description="Seq2seq model directory (e.g. one written by "
                           "`bitextforge train-nmt`) or a Hugging Face hub id (needs the cache "
                           "or a network).")
        k: int = Field(1, ge=1, description="Candidates per sentence (n-best or samples).")
        drop_equal_to_reference: bool = Field(
            False, description="Drop candidates equal to the reference (the row's text on the "
            "paraphrased side) after lowercasing and whitespace normalisation.")
        src_lang: Optional[str] = Field(None, description="Source language code for "
                                        "multilingual models (NLLB deu_Latn, M2M-100 de).")
        tgt_lang: Optional[str] = Field(None, description="Target language code for "
                                        "multilingual models (NLLB eng_Latn, M2M-100 en).")

    def __init__(self, config=None):
        """Load the model once for the run."""
        super().__init__(config)
        self.backend = self._backend()
        self.dropped = 0

    def paraphrase(self, sentences, side=None):
        """k candidates per sentence, best first: ``(text, avg log-prob, {"nll": -avg})``.

        ``side`` (the texts of the paraphrased side, passed by the framework when available) is
        what ``drop_equal_to_reference`` compares against.
        """
        c = self.config
        results = self.backend.translate(list(sentences), c.decoding(c.k))
        out = []
        for i, cands in enumerate(results):
            ref = _norm(side[i]) if (side is not None and c.drop_equal_to_reference) else None
            seen, keep = set(), []
            for text, score in sorted(cands, key=lambda x: -x[1]):
                key = _norm(text)
                if not key or key in seen:
                    continue
                seen.add(key)
                if ref is not None and key == ref:
                    self.dropped += 1
                    continue
                keep.append((text, score, {"nll": -score}))
            out.append(keep)
        return out

    def manifest_info(self):
        """Backend, model hash and how many candidates equalled their reference."""
        return {**self.backend.info(), "dropped_equal_to_reference": self.dropped}

    def close(self):
        """Release the model."""
        self.backend.close()


class Pivot(BaseModel):
    """One pivot language of a round trip: a forward and a backward model."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    lang: str = Field(description="Pivot language code (also its code for multilingual models).")
    forward: str = Field(description="Model directory (or hub id) translating into the pivot.")
    backward: str = Field(description="Model directory (or hub id) translating back.")
    k: Optional[int] = Field(None, ge=1, description="Candidates from this pivot (default: the "
                             "component's k).")


class RoundTripParaphraser(Paraphraser):
    """BET round trip (Corbeil & Abdi Ghavidel): translate each sentence into every pivot language
    (best translation) and back (k best), and offer the results as paraphrases.

    Each candidate's provenance is its pivot (``roundtrip.v1:de``) and the ``pivot`` column holds
    the pivot language, ``pivot_text`` the intermediate translation. The score is the backward
    leg's average log-probability per token, ``nll`` its negation. Candidates equal to the input
    (lowercased) or repeated across pivots are dropped; the first pivot in the list wins a tie.
    """

    name = "roundtrip.v1"
    extra = "nmt"
    learned = True  # a trained translation model writes the text
    extra_columns = ("nll", "pivot", "pivot_text")

    class Config(_NMTConfig):
        """Options of roundtrip.v1."""

        pivots: list[Pivot] = Field(description="Pivot languages, each with its forward and "
                                    "backward model (at least one).", min_length=1)
        k: int = Field(1, ge=1, description="Candidates per pivot (backward n-best).")
        lang: str = Field("en", description="Language of the input (code for multilingual "
                          "models).")
        keep_identical: bool = Field(False, description="Keep candidates identical to the input "
                                     "after lowercasing.")
        tokenized_lowercase: bool = Field(
            False, description="The input is Moses-tokenized lowercase text (e.g. Tanaka's "
            "`i can 't tell .`): detokenize it (sacremoses, language `lang`) and capitalize its "
            "first letter before translating, then tokenize and lowercase every candidate the "
            "same way, so paraphrases look like the corpus they join.")

    @classmethod
    def input_paths(cls, config):
        """Every pivot's two model directories (hub ids are not paths)."""
        out = {}
        for i, p in enumerate(config.pivots):
            out[f"pivots[{i}].forward"] = _local_model(p.forward)
            out[f"pivots[{i}].backward"] = _local_model(p.backward)
        return out

    def __init__(self, config=None):
        """Load every pivot's two models once for the run."""
        super().__init__(config)
        c = self.config
        self.legs = []
        for j, p in enumerate(c.pivots):
            fwd = make_backend(c.backend, p.forward, src_lang=c.lang, tgt_lang=p.lang,
                               option=f"{self.name} pivots[{j}].forward", **c.runtime(self.name))
            bwd = make_backend(c.backend, p.backward, src_lang=p.lang, tgt_lang=c.lang,
                               option=f"{self.name} pivots[{j}].backward", **c.runtime(self.name))
            self.legs.append((p, fwd, bwd))
        self.style = _TokenizedLowercase(c.lang) if c.tokenized_lowercase else None

    def paraphrase(self, sentences):
        """Candidates of all pivots, in pivot order, each best first."""
        c = self.config
        sentences = list(sentences)
        out = [[] for _ in sentences]
        seen = [set() if c.keep_identical else {_norm(s)} for s in sentences]
        inputs = [self.style.untokenize(s) for s in sentences] if self.style else sentences
        for p, fwd, bwd in self.legs:
            pivot = [cands[0][0] if cands else "" for cands in
                     fwd.translate(inputs, c.decoding(1))]
            back = bwd.translate(pivot, c.decoding(p.k or c.k))
            for i, cands in enumerate(back):
                for text, score in sorted(cands, key=lambda x: -x[1]):
                    if self.style:
                        text = self.style.tokenize(text)
                    key = _norm(text)
                    if not key or key in seen[i]:
                        continue
                    seen[i].add(key)
                    out[i].append((text, score, {"nll": -score, "pivot": p.lang,
                                                 "pivot_text": pivot[i], "provenance": p.lang}))
        return out

    def manifest_info(self):
        """Backend and model of every leg."""
        return {"pivots": [{"lang": p.lang, "forward": f.info(), "backward": b.info()}
                           for p, f, b in self.legs]}

    def close(self):
        """Release every model."""
        for _, f, b in self.legs:
            f.close()
            b.close()
