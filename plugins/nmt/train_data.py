"""The data side of ``train-nmt``: sentence weights, the joint sentencepiece vocabulary and the
tokenizer files MarianTokenizer loads, subword ids, token-bucketed batches and their tensors, and
the checks of a reused vocabulary or a model to continue."""

from __future__ import annotations

import json
import math
import random
import shutil
from pathlib import Path

from bitextforge import InputError
from bitextforge.api import read_lines

from .train_options import TrainOptions


# Marian's convention (and MarianTokenizer's defaults): </s> ends every sequence; <pad> is the
# LAST id and starts the decoder from its (zero, never trained) embedding.  CTranslate2's Marian
# converter relies on exactly that layout: it drops the last row and starts from a zero vector.
# The sentencepiece ids are used directly as model ids, so vocab.json is the sentencepiece
# vocabulary plus <pad>.
EOS_ID, UNK_ID = 0, 1


def read_weights(path: str | Path, n: int) -> list[float]:
    """The sentence weights of ``path``, one finite non-negative number per line, exactly ``n``
    lines (the training corpus's); anything else is a user error naming the file and line."""
    if not Path(path).is_file():
        raise InputError(f"{path}: no such weights file; pass the corpus.weights of a run or a "
                         f"file with one number per training pair")
    lines = read_lines(path)
    if len(lines) != n:
        raise InputError(f"{path} has {len(lines)} weights but the training corpus has {n} "
                         f"pairs; give one weight per line of the corpus")
    out = []
    for k, line in enumerate(lines, 1):
        try:
            w = float(line)
        except ValueError:
            raise InputError(f"{path}:{k}: {line.strip()!r} is not a number") from None
        if not math.isfinite(w) or w < 0:
            raise InputError(f"{path}:{k}: weight {line.strip()} must be a finite number >= 0")
        out.append(w)
    return out


def train_spm(texts: list[str], prefix: Path, vocab_size: int, seed: int) -> None:
    """A joint unigram sentencepiece model over both languages (one vocabulary, shared embeddings)."""
    import sentencepiece as spm

    rng = random.Random(seed)
    sample = texts if len(texts) <= 400_000 else rng.sample(texts, 400_000)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sample), model_prefix=str(prefix), vocab_size=vocab_size,
        model_type="unigram", character_coverage=1.0, eos_id=EOS_ID, unk_id=UNK_ID,
        pad_id=-1, bos_id=-1, eos_piece="</s>", unk_piece="<unk>",
        num_threads=2, minloglevel=2, input_sentence_size=0,
        # A tiny corpus may not support the requested size; take what it can give.
        hard_vocab_limit=False)


def write_tokenizer(out: Path, spm_model: Path, src_lang: str, tgt_lang: str) -> int:
    """The files MarianTokenizer loads: source.spm, target.spm (the same joint model), vocab.json.

    Returns the model's vocabulary size (sentencepiece pieces plus ``<pad>`` as the last id)."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    shutil.copyfile(spm_model, out / "source.spm")
    shutil.copyfile(spm_model, out / "target.spm")
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    vocab["<pad>"] = len(vocab)
    (out / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "MarianTokenizer", "source_lang": src_lang, "target_lang": tgt_lang,
        "unk_token": "<unk>", "eos_token": "</s>", "pad_token": "<pad>",
        "model_max_length": 512, "separate_vocabs": False}, indent=2), encoding="utf-8")
    return len(vocab)


def check_spm_ids(path: str) -> None:
    """Refuse a reused sentencepiece model whose special ids differ from train_spm's.

    The model's config and the Marian tokenizer assume ``</s>`` = 0, ``<unk>`` = 1 and no ``<s>``
    or ``<pad>`` piece; a model trained with sentencepiece's defaults (``<unk>`` = 0, ``<s>`` = 1,
    ``</s>`` = 2) trains without complaint but ends every sentence with ``<unk>``, so its outputs
    are garbage at decoding time."""
    import sentencepiece as spm

    try:
        sp = spm.SentencePieceProcessor(model_file=path)
    except (RuntimeError, OSError) as e:
        raise InputError(f"--spm {path}: not a sentencepiece model ({e})") from None
    got = {"eos": sp.eos_id(), "unk": sp.unk_id(), "bos": sp.bos_id(), "pad": sp.pad_id()}
    want = {"eos": EOS_ID, "unk": UNK_ID, "bos": -1, "pad": -1}
    if got != want:
        raise InputError(
            f"--spm {path}: special ids {got} differ from those train-nmt needs {want}; reuse "
            f"the joint.model that train-nmt wrote into another model's directory, or train it "
            f"with eos_id={EOS_ID} unk_id={UNK_ID} bos_id=-1 pad_id=-1")


def encode(sp, texts: list[str], max_len: int, alpha: float = 0.0, nbest: int = 64,
           seed: int = 0) -> list[list[int]]:
    """Sentencepiece ids plus </s>, truncated like MarianTokenizer(truncation=True) would.

    With ``alpha`` > 0 each segmentation is sampled among the ``nbest`` best (Kudo 2018's subword
    regularization). The same ``seed`` then gives the same ids within one process:
    sentencepiece's sampler is seeded globally and run on one thread, since its thread pool draws
    in an order that differs from call to call. Another process draws other samples from the same
    seed: sentencepiece 0.2 seeds an ``absl::BitGen``, which Abseil salts with per-process
    entropy, so such a training is not reproducible across runs."""
    if alpha > 0:
        import sentencepiece as spm

        spm.set_random_generator_seed(seed)
        pieces = sp.encode(texts, enable_sampling=True, alpha=alpha, nbest_size=nbest,
                           num_threads=1)
    else:
        pieces = sp.encode(texts)
    return [ids[: max_len - 1] + [EOS_ID] for ids in pieces]


def make_batches(src: list[list[int]], tgt: list[list[int]], batch_tokens: int,
                 rng: random.Random) -> list[list[int]]:
    """Token-bucketed batches: pairs sorted by length, cut so padded tokens stay near the budget."""
    order = sorted(range(len(src)), key=lambda i: (len(src[i]), len(tgt[i]), rng.random()))
    batches, cur, longest = [], [], 0
    for i in order:
        longest_new = max(longest, len(src[i]), len(tgt[i]))
        if cur and longest_new * (len(cur) + 1) > batch_tokens:
            batches.append(cur)
            cur, longest_new = [], max(len(src[i]), len(tgt[i]))
        cur.append(i)
        longest = longest_new
    if cur:
        batches.append(cur)
    return batches


def collate(torch, src, tgt, idx, pad):
    """Padded tensors for one batch; decoder inputs are the labels shifted right after <pad>."""
    n = len(idx)
    ls = max(len(src[i]) for i in idx)
    lt = max(len(tgt[i]) for i in idx)
    x = torch.full((n, ls), pad, dtype=torch.long)
    y = torch.full((n, lt), -100, dtype=torch.long)
    d = torch.full((n, lt), pad, dtype=torch.long)
    for r, i in enumerate(idx):
        s, t = src[i], tgt[i]
        x[r, : len(s)] = torch.tensor(s)
        y[r, : len(t)] = torch.tensor(t)
        d[r, 1: len(t)] = torch.tensor(t[:-1])
    return x, (x != pad).long(), d, y


def check_init_model(opts: TrainOptions) -> Path:
    """The directory of ``opts.init_model``, checked: a train-nmt model (config.json and
    joint.model) of this run's direction, and no other vocabulary asked for."""
    init = Path(opts.init_model)
    missing = [n for n in ("config.json", "joint.model") if not (init / n).is_file()]
    if missing:
        raise InputError(f"init_model {init}: no {' or '.join(missing)}; give a model directory "
                         f"that train-nmt wrote")
    if opts.spm:
        raise InputError(f"init_model {init}: give init_model or spm, not both (a continued "
                         f"model keeps its vocabulary)")
    log_file = init / "train_log.json"
    if log_file.is_file():
        info = json.loads(log_file.read_text(encoding="utf-8"))
        theirs = (info.get("src_lang"), info.get("tgt_lang"))
        if theirs != (opts.src_lang, opts.tgt_lang):
            raise InputError(f"init_model {init} translates {theirs[0]}->{theirs[1]}; this "
                             f"training is {opts.src_lang}->{opts.tgt_lang}")
    return init


def detokenize(lines: list[str], lang: str) -> list[str]:
    """Moses-detokenized lines (sacremoses; HTML escapes such as ``&apos;`` undone), for
    corpora released tokenized (IWSLT14, the MLQE-PE post-edits)."""
    from sacremoses import MosesDetokenizer

    md = MosesDetokenizer(lang=lang)
    return [md.detokenize(line.split()) for line in lines]
