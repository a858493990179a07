"""Seq2seq translation backends for the NMT paraphrasers: transformers ``generate`` and CTranslate2.

Back-translation (Wieting et al. 2017; ParaNMT-50M, Wieting & Gimpel 2018) and BET round trips
(Corbeil & Abdi Ghavidel) translate whole corpora, so inference speed decides what is practical on
a CPU. Both backends take any Hugging Face Marian / M2M-100 / NLLB-style model directory (or a hub
id that is already in the local cache, or downloadable when there is a network), sort each batch by
length, and return for every sentence its ``k`` best (or ``k`` sampled) translations with the
average log-probability per output token (``</s>`` included). The CTranslate2 backend converts the
model once (``ctranslate2.converters.TransformersConverter``) and caches the conversion beside the
model, keyed by a hash of the model's files; int8 on CPU, float16 on GPU by default. It can also
restrict each batch's output vocabulary to a lexical shortlist (``vocab_map``), which speeds up
the output layer of small models (:mod:`bitextforge.plugins.nmt.vocab_map`).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bitextforge import ComponentError
from bitextforge.api import ct2_device, resolve_device

_MODEL_FILES = ("config.json", "generation_config.json", "model.safetensors", "pytorch_model.bin")
_MULTILINGUAL_TYPES = {"m2m_100", "mbart", "nllb", "nllb-moe"}
#: file name inside a model directory that ``vocab_map: model`` reads and ``train-nmt`` writes
VMAP_NAME = "vmap.txt"


@dataclass(frozen=True)
class Decoding:
    """How to decode: beam search returning ``k`` best, or ``k`` samples (top-k / nucleus)."""

    beam: int = 4
    k: int = 1
    sampling: bool = False
    top_k: int = 0
    top_p: float = 1.0
    temperature: float = 1.0
    seed: int = 1
    max_length: int = 256
    #: outputs stop at ratio x the longest source of the batch + margin tokens: a runaway output
    #: (no </s>) would otherwise hold the whole batch for max_length steps
    length_ratio: float = 2.0
    length_margin: int = 10


def has_network(host: str = "huggingface.co", timeout: float = 3.0) -> bool:
    """Whether the model hub answers (and the user has not asked for offline mode)."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False"):
        return False
    try:
        socket.create_connection((host, 443), timeout=timeout).close()
        return True
    except OSError:
        return False


def resolve_model(spec: str, option: str = "model") -> Path:
    """A local model directory for ``spec``: a directory, or a hub id from the cache / network.

    Raises a one-line :class:`ComponentError` naming the option and what to do.
    """
    p = Path(spec).expanduser()
    if p.exists():
        if not p.is_dir():
            raise ComponentError(f"{option}: {spec} is a file; pass the model directory that "
                                 f"holds config.json")
        if not (p / "config.json").is_file():
            raise ComponentError(f"{option}: {spec} has no config.json; pass a Hugging Face model "
                                 f"directory (bitextforge train-nmt writes one)")
        return p
    parts = spec.split("/")
    if spec.startswith((".", "/", "~")) or len(parts) > 2 or not all(parts):
        raise ComponentError(f"{option}: model directory {spec} does not exist; train one with "
                             f"`bitextforge train-nmt ... --output {spec}` or fix the path")
    from huggingface_hub import snapshot_download

    try:
        return Path(snapshot_download(spec, local_files_only=True))
    except Exception:  # noqa: BLE001 - any cache miss means we must look at the network
        pass
    if not has_network():
        raise ComponentError(f"{option}: {spec} is neither a local directory nor in the Hugging "
                             f"Face cache, and this machine has no network; pass a local model "
                             f"directory (e.g. one written by `bitextforge train-nmt`)")
    try:
        return Path(snapshot_download(spec))
    except Exception as exc:  # noqa: BLE001 - hub errors come in many classes
        raise ComponentError(f"{option}: cannot download {spec} from the Hugging Face hub "
                             f"({type(exc).__name__}); check the model id") from None


def load_tokenizer(model_dir: Path, option: str = "model"):
    """The model's tokenizer, or a one-line error when its files are missing."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(model_dir))
    except Exception as exc:  # noqa: BLE001 - transformers raises OSError, ValueError, TypeError
        raise ComponentError(f"{option}: no usable tokenizer in {model_dir} "
                             f"({type(exc).__name__}); a Marian model needs source.spm, "
                             f"target.spm and vocab.json beside config.json") from None


def model_hash(model_dir: Path) -> str:
    """A short hash of the files that define the model (weights, config, vocabulary)."""
    h = hashlib.sha256()
    for f in sorted(model_dir.iterdir()):
        if f.is_file() and (f.name in _MODEL_FILES or f.suffix in (".spm", ".json", ".model")):
            h.update(f.name.encode())
            _hash_file(h, f)
    return h.hexdigest()[:16]


def _hash_file(h, path: Path) -> None:
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)


class Languages:
    """Source/target language handling of multilingual models (M2M-100, NLLB, mBART, multi-target
    Marian); a no-op for bilingual Marian models."""

    def __init__(self, tok, model_type: str, src_lang: str | None, tgt_lang: str | None,
                 option: str):
        """Check the languages against the tokenizer; raise a one-line error if unsupported."""
        self.prefix_source = ""
        self.target_token: str | None = None
        codes = list(getattr(tok, "supported_language_codes", []) or [])
        if codes:  # multi-target Marian: the target language is a >>xx<< token on the source
            if tgt_lang is None:
                raise ComponentError(f"{option}: this Marian model translates into several "
                                     f"languages; set tgt_lang (one of {', '.join(codes[:8])}...)")
            code = tgt_lang if tgt_lang.startswith(">>") else f">>{tgt_lang}<<"
            if code not in codes:
                raise ComponentError(f"{option}: language {tgt_lang!r} is not supported by this "
                                     f"model; it knows {', '.join(codes[:12])}")
            self.prefix_source = code + " "
            return
        if model_type not in _MULTILINGUAL_TYPES:
            return
        if not src_lang or not tgt_lang:
            raise ComponentError(f"{option}: a multilingual {model_type} model needs src_lang and "
                                 f"tgt_lang (e.g. deu_Latn / eng_Latn for NLLB, de / en for M2M-100)")
        vocab = tok.get_vocab()
        for lang in (src_lang, tgt_lang):
            token = tok.get_lang_token(lang) if hasattr(tok, "get_lang_token") else lang
            if token not in vocab:
                raise ComponentError(f"{option}: language {lang!r} is not supported by this "
                                     f"{model_type} model (no {token!r} token)")
        tok.src_lang = src_lang
        self.target_token = tok.get_lang_token(tgt_lang) if hasattr(tok, "get_lang_token") \
            else tgt_lang


def backend_device(backend: str, spec: str, where: str) -> str:
    """The device (``cpu`` or ``cuda:N``) a ``device`` option ``spec`` gives the named backend:
    ``auto`` asks the library that runs it (CTranslate2 or torch) whether it sees a GPU."""
    return resolve_device(spec, where, "ctranslate2" if backend == "ctranslate2" else "torch")


def _in_input_order(n: int, batches: list[list[int]], results: list[list]) -> list:
    """Per-batch results (in the order of each batch's row indices) as one list in row order."""
    out: list = [None] * n
    for idx, res in zip(batches, results):
        for i, value in zip(idx, res):
            out[i] = value
    return out


class Backend:
    """Common interface: ``translate(texts, decoding) -> [[(text, avg log-prob per token)]]``."""

    name = ""

    def __init__(self, model: str, src_lang: str | None = None, tgt_lang: str | None = None,
                 device: str = "cpu", threads: int = 0, batch_size: int = 32,
                 option: str = "model"):
        """Resolve the model directory and load its tokenizer."""
        self.model_dir = resolve_model(model, option)
        self.tok = load_tokenizer(self.model_dir, option)
        from transformers import AutoConfig

        self.hf_config = AutoConfig.from_pretrained(str(self.model_dir))
        self.langs = Languages(self.tok, self.hf_config.model_type, src_lang, tgt_lang, option)
        # resolved here as well as by the component: train-nmt's tests pass a resolved device,
        # and resolving one again leaves it as it is
        self.device = backend_device(self.name, device, option)
        self.threads = threads
        self.batch_size = batch_size
        self.option = option

    def lengths(self, dec: Decoding, longest: int | None = None) -> tuple[int, int]:
        """(source tokens kept, output tokens at most): ``dec.max_length`` within the model's
        position table, so a long input or a runaway output never indexes past it; with the
        batch's ``longest`` source, also at most ``length_ratio * longest + length_margin``."""
        table = getattr(self.hf_config, "max_position_embeddings", None) or dec.max_length + 1
        out = min(dec.max_length, table - 1)
        if longest is not None:
            out = min(out, int(dec.length_ratio * longest + dec.length_margin))
        return min(dec.max_length, table), out

    def translate(self, texts: list[str], dec: Decoding) -> list[list[tuple[str, float]]]:
        """Translate in batches sorted by length; results come back in input order."""
        batches = self._length_batches(len(texts), lambda i: len(texts[i]))
        results = self._translate_batches(
            [[self.langs.prefix_source + texts[i] for i in idx] for idx in batches], dec)
        return _in_input_order(len(texts), batches, results)

    def score(self, sources: list[str], targets: list[str], max_length: int = 256) -> list[float]:
        """The mean log-probability per target token (``</s>`` included) of each target given
        its source, teacher-forced (Junczys-Dowmunt 2018's conditional cross-entropy, negated);
        batches are sorted by length, results come back in input order. Each side is cut at
        ``max_length`` tokens."""
        if self.langs.target_token:
            raise ComponentError(f"{self.option}: scoring supports models without target "
                                 f"language tokens (Marian-style); this {self.hf_config.model_type}"
                                 f" model needs one")
        batches = self._length_batches(len(sources),
                                       lambda i: (len(sources[i]), len(targets[i])))
        results = self._score_batches(
            [([self.langs.prefix_source + sources[i] for i in idx], [targets[i] for i in idx])
             for idx in batches], max_length)
        return _in_input_order(len(sources), batches, results)

    def _length_batches(self, n: int, length) -> list[list[int]]:
        """Row indices ``0..n-1`` sorted by ``length(i)`` and cut into ``batch_size`` batches, so
        that a batch pads little."""
        order = sorted(range(n), key=length)
        return [order[b: b + self.batch_size] for b in range(0, n, self.batch_size)]

    def _score_batches(self, batches: list[tuple[list[str], list[str]]],
                       max_length: int) -> list[list[float]]:
        raise NotImplementedError

    def _translate_batches(self, batches: list[list[str]],
                           dec: Decoding) -> list[list[list[tuple[str, float]]]]:
        """Each batch's candidates; one batch after another unless a backend does better."""
        return [self._translate_batch(texts, dec) for texts in batches]

    def _translate_batch(self, texts: list[str], dec: Decoding) -> list[list[tuple[str, float]]]:
        raise NotImplementedError

    def close(self) -> None:
        """Release the model."""

    def info(self) -> dict:
        """Facts for the run manifest."""
        return {"backend": self.name, "model": str(self.model_dir),
                "model_hash": model_hash(self.model_dir), "device": self.device}


class TransformersBackend(Backend):
    """transformers ``generate``; candidate scores are rescored by one teacher-forced pass, so
    they are the model's own log-probabilities whatever the decoding (beam or sampling)."""

    name = "transformers"

    def __init__(self, *args, **kwargs):
        """Load the model once (in eval mode, on the configured device)."""
        super().__init__(*args, **kwargs)
        import torch
        from transformers import AutoModelForSeq2SeqLM

        if self.threads:
            torch.set_num_threads(self.threads)
        dev = self.torch_device = self.device
        try:
            self.model = AutoModelForSeq2SeqLM.from_pretrained(str(self.model_dir)).to(dev).eval()
        except (OSError, ValueError) as exc:
            raise ComponentError(f"{self.option}: cannot load a seq2seq model from "
                                 f"{self.model_dir} ({type(exc).__name__})") from None
        self.forced_bos = (self.tok.convert_tokens_to_ids(self.langs.target_token)
                           if self.langs.target_token else None)
        cfg = self.model.config
        # Marian decoders start from <pad>; it must never be generated (as in CTranslate2).
        self.suppress = ([cfg.pad_token_id] if cfg.model_type == "marian"
                         and cfg.pad_token_id != cfg.eos_token_id else None)

    def _translate_batch(self, texts, dec):
        import torch

        k = dec.k
        src_max, _ = self.lengths(dec)
        enc = self.tok(texts, return_tensors="pt", padding=True, truncation=True,
                       max_length=src_max).to(self.torch_device)
        _, out_max = self.lengths(dec, int(enc["input_ids"].shape[1]))
        kw = dict(max_new_tokens=out_max, num_return_sequences=k)
        if self.forced_bos is not None:
            kw["forced_bos_token_id"] = self.forced_bos
        if self.suppress:
            kw["suppress_tokens"] = self.suppress
        if dec.sampling:
            torch.manual_seed(dec.seed)
            kw.update(do_sample=True, num_beams=1, top_k=dec.top_k or None,
                      top_p=dec.top_p, temperature=dec.temperature)
        else:
            kw.update(do_sample=False, num_beams=max(dec.beam, k))
        with torch.inference_mode():
            seqs = self.model.generate(**enc, **kw)
            scores = self._rescore(enc, seqs, k)
        texts_out = self.tok.batch_decode(seqs, skip_special_tokens=True)
        return [[(texts_out[i * k + j], scores[i * k + j]) for j in range(k)]
                for i in range(len(texts))]

    def _rescore(self, enc, seqs, k) -> list[float]:
        """Average log-probability per generated token (up to and including the first </s>)."""
        import torch

        cfg = self.model.config
        dec_in, labels = seqs[:, :-1], seqs[:, 1:]
        # Tokens after the first </s> are padding; count each token up to and including </s>.
        is_eos = (labels == cfg.eos_token_id).long()
        mask = ((torch.cumsum(is_eos, dim=1) - is_eos) == 0).float()
        logits = self.model(input_ids=enc["input_ids"].repeat_interleave(k, 0),
                            attention_mask=enc["attention_mask"].repeat_interleave(k, 0),
                            decoder_input_ids=dec_in).logits
        lp = torch.log_softmax(logits.float(), dim=-1).gather(-1, labels.unsqueeze(-1)).squeeze(-1)
        lp = lp * mask
        return (lp.sum(1) / mask.sum(1).clamp(min=1)).tolist()

    def _score_batches(self, batches, max_length):
        import torch

        cfg = self.model.config
        out = []
        for srcs, tgts in batches:
            enc = self.tok(srcs, text_target=tgts, return_tensors="pt", padding=True,
                           truncation=True, max_length=max_length).to(self.torch_device)
            labels = enc.pop("labels")
            mask = (labels != self.tok.pad_token_id).float()
            dec_in = torch.full_like(labels, cfg.decoder_start_token_id)
            dec_in[:, 1:] = labels[:, :-1]
            with torch.inference_mode():
                logits = self.model(**enc, decoder_input_ids=dec_in).logits
                lp = torch.log_softmax(logits.float(), dim=-1).gather(
                    -1, labels.unsqueeze(-1)).squeeze(-1)
            out.append(((lp * mask).sum(1) / mask.sum(1).clamp(min=1)).tolist())
        return out

    def close(self) -> None:
        """Drop the model."""
        self.model = None


def file_hash(path: Path) -> str:
    """A short hash of one file's bytes."""
    h = hashlib.sha256()
    _hash_file(h, path)
    return h.hexdigest()[:12]


def resolve_vocab_map(spec: str | None, model_dir: Path, option: str = "vocab_map") -> Path | None:
    """The vocabulary map file ``spec`` names: None (full vocabulary), ``model`` (the
    ``vmap.txt`` that ``train-nmt`` writes into the model directory) or a file path."""
    if spec is None:
        return None
    path = model_dir / VMAP_NAME if spec == "model" else Path(spec).expanduser()
    if not path.is_file():
        raise ComponentError(
            f"{option}: {path} does not exist; build it with `bitextforge build-vocab-map "
            f"--model {model_dir} --src-train SRC --tgt-train TGT` (train-nmt writes one itself)")
    return path


def ct2_cache_dir(model_dir: Path, quantization: str, vmap: Path | None = None) -> Path:
    """Where the converted model lives: beside the source if writable, else in the user cache."""
    key = f"ctranslate2-{quantization}-{model_hash(model_dir)}"
    if vmap is not None:
        key += f"-vmap{file_hash(vmap)}"
    if os.access(model_dir, os.W_OK):
        return model_dir / key
    from bitextforge.api import cache_root

    return cache_root() / "ct2" / f"{model_dir.name}-{key}"


def _marian_loader():
    """A CTranslate2 Marian loader that keeps ``<pad>`` and its embedding as the decoder start.

    CTranslate2's stock Marian loader drops the last vocabulary entry and starts the decoder from
    a zero vector, which equals transformers only when the ``<pad>`` embedding is zero (true of
    models trained by Marian itself). A model trained with transformers and tied embeddings
    updates that row through the output projection, so the stock conversion decodes differently.
    Keeping the row makes both backends start from the same vector for every Marian model; ``<pad>``
    is never generated because both backends suppress it.
    """
    from ctranslate2.converters import transformers as ct2t

    class MarianKeepStartLoader(ct2t.BartLoader):
        @property
        def architecture_name(self):
            return "MarianMTModel"

        def get_model_spec(self, model):
            model.config.normalize_before = False
            model.config.normalize_embedding = False
            return super().get_model_spec(model)

        def set_config(self, config, model, tokenizer):
            # Marian has no <s>; the decoder starts from <pad>.
            config.bos_token = tokenizer.pad_token
            config.eos_token = tokenizer.eos_token
            config.unk_token = tokenizer.unk_token
            config.decoder_start_token = tokenizer.pad_token

    return MarianKeepStartLoader()


def convert_ct2(model_dir: Path, quantization: str, vmap: Path | None = None) -> Path:
    """Convert once with TransformersConverter (with the vocabulary map ``vmap`` inside, when
    given); later runs reuse the cached directory."""
    out = ct2_cache_dir(model_dir, quantization, vmap)
    if (out / "model.bin").is_file():
        return out
    from ctranslate2.converters import TransformersConverter
    from ctranslate2.converters import transformers as ct2t

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".ct2-", dir=out.parent))
    stock = ct2t._MODEL_LOADERS.get("MarianConfig")
    try:
        ct2t._MODEL_LOADERS["MarianConfig"] = _marian_loader()
        TransformersConverter(str(model_dir)).convert(
            str(tmp / "m"), quantization=quantization, force=True,
            vmap=str(vmap) if vmap is not None else None)
        # Atomic publish: a concurrent or interrupted conversion never leaves a half directory.
        os.replace(tmp / "m", out)
    except OSError:
        if not (out / "model.bin").is_file():
            raise
    finally:
        ct2t._MODEL_LOADERS["MarianConfig"] = stock
        shutil.rmtree(tmp, ignore_errors=True)
    return out


class CTranslate2Backend(Backend):
    """CTranslate2 ``translate_batch`` on a cached conversion (int8 on CPU, float16 on GPU)."""

    name = "ctranslate2"

    def __init__(self, *args, compute_type: str | None = None,
                 separate_process: bool | None = None, parallel_batches: int = 0,
                 vocab_map: str | None = None, **kwargs):
        """Convert (once) and load the translator: on CPU in a child process of its own unless
        ``separate_process`` is False (see :mod:`bitextforge.plugins.nmt.ct2_worker`), decoding
        ``parallel_batches`` batches at once (0: one per CPU thread) with the threads shared
        among them. ``vocab_map`` (``model`` or a file; see
        :mod:`bitextforge.plugins.nmt.vocab_map`) restricts each batch's output vocabulary to a
        lexical shortlist."""
        super().__init__(*args, **kwargs)
        self.vocab_map = resolve_vocab_map(vocab_map, self.model_dir,
                                           f"{self.option}: vocab_map")
        import ctranslate2

        dev, index = ct2_device(self.device)
        self.compute_type = compute_type or ("int8" if dev == "cpu" else "float16")
        supported = ctranslate2.get_supported_compute_types(dev, index)
        if self.compute_type not in supported:
            raise ComponentError(f"{self.option}: compute_type {self.compute_type} is not "
                                 f"supported on this {dev}; choose one of "
                                 f"{', '.join(sorted(supported))}")
        self.ct2_dir = convert_ct2(self.model_dir, self.compute_type, self.vocab_map)
        self.separate_process = dev == "cpu" if separate_process is None else separate_process
        from .ct2_worker import LocalTranslator, RemoteTranslator

        # torch and CTranslate2 each bundle an OpenMP runtime; after torch has run on several
        # threads in this process, CTranslate2's CPU threads here are 3-4x slower (ct2_worker's
        # docstring has the measurement).
        kind = RemoteTranslator if self.separate_process else LocalTranslator
        if dev == "cpu":
            threads = self.threads or os.cpu_count() or 1
            self.parallel_batches = min(parallel_batches or threads, threads)
            intra = max(1, threads // self.parallel_batches)
        else:
            self.parallel_batches, intra = 1, self.threads
        self.translator = kind(str(self.ct2_dir), self.device, self.compute_type,
                               self.parallel_batches,
                               intra, self.vocab_map is not None)

    def _job(self, texts: list[str], dec: Decoding) -> tuple[list[list[str]], dict]:
        """One batch as CTranslate2 wants it: source token lists and translate_batch options."""
        tok = self.tok
        src_max, _ = self.lengths(dec)
        src = self._source_tokens(texts, src_max)
        _, out_max = self.lengths(dec, max(map(len, src), default=0))
        # transformers spends the last of max_new_tokens on a forced </s> when the model config
        # asks for one; stop one token earlier so both backends truncate runaway outputs alike.
        forced = getattr(self.hf_config, "forced_eos_token_id", None) is not None
        kw = dict(num_hypotheses=dec.k, return_scores=True,
                  max_decoding_length=out_max - 1 if forced else out_max,
                  use_vmap=self.vocab_map is not None)
        if self.langs.target_token:
            kw["target_prefix"] = [[self.langs.target_token]] * len(texts)
        if self.hf_config.model_type == "marian":
            kw["suppress_sequences"] = [[tok.pad_token]]
        if dec.sampling:
            kw.update(beam_size=1, sampling_topk=dec.top_k or 0, sampling_topp=dec.top_p,
                      sampling_temperature=dec.temperature)
        else:
            kw.update(beam_size=max(dec.beam, dec.k))
        return src, kw

    def _source_tokens(self, texts: list[str], max_length: int) -> list[list[str]]:
        """The tokenizer's pieces of each source (``</s>`` included), cut at ``max_length``: the
        token lists CTranslate2 reads."""
        tok = self.tok
        return [tok.convert_ids_to_tokens(ids) for ids in
                tok(texts, truncation=True, max_length=max_length)["input_ids"]]

    def _translate_batches(self, batches, dec):
        # All batches go to the translator in one call, so its inter_threads workers decode
        # several at once (a small model keeps one core busier that way than two cores on one
        # small batch).
        results = self.translator.translate_batches(
            [self._job(texts, dec) for texts in batches], seed=dec.seed if dec.sampling else None)
        tok = self.tok
        # With length_penalty 1 the score is already the log-prob divided by the length.
        return [[[(tok.decode(tok.convert_tokens_to_ids(hyp), skip_special_tokens=True), score)
                  for hyp, score in zip(hyps, scores)] for hyps, scores in batch]
                for batch in results]

    def _translate_batch(self, texts, dec):
        return self._translate_batches([texts], dec)[0]

    def _score_batches(self, batches, max_length):
        tok = self.tok
        jobs = []
        for srcs, tgts in batches:
            src = self._source_tokens(srcs, max_length)
            # CTranslate2 adds the decoder's start and end tokens itself: the target goes in
            # without the </s> the tokenizer appends
            tgt = [tok.convert_ids_to_tokens(ids)[:-1] for ids in
                   tok(text_target=tgts, truncation=True, max_length=max_length)["input_ids"]]
            jobs.append((src, tgt))
        return [[sum(lp) / len(lp) if lp else 0.0 for lp in batch]
                for batch in self.translator.score_batches(jobs)]

    def info(self) -> dict:
        """Facts for the run manifest, including the converted model's directory."""
        return {**super().info(), "ct2_dir": str(self.ct2_dir), "compute_type": self.compute_type,
                "separate_process": self.separate_process,
                "parallel_batches": self.parallel_batches,
                "vocab_map": str(self.vocab_map) if self.vocab_map else None}

    def close(self) -> None:
        """Unload the translator (and stop its process)."""
        if self.translator is not None:
            self.translator.close()
        self.translator = None


def make_backend(backend: str, model: str, **kwargs) -> Backend:
    """Build the named backend (``transformers`` or ``ctranslate2``)."""
    if backend == "ctranslate2":
        return CTranslate2Backend(model, **kwargs)
    kwargs.pop("compute_type", None)
    kwargs.pop("parallel_batches", None)
    if kwargs.pop("vocab_map", None) is not None:
        raise ComponentError(f"{kwargs.get('option', 'model')}: vocab_map needs backend: "
                             f"ctranslate2 (transformers always scores the full vocabulary)")
    return TransformersBackend(model, **kwargs)
