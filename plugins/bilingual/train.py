"""Training of the bilingual sentence embedding model of Kim, Rosendahl, Rossenbach, Rosendahl,
Khadivi & Ney, *Learning Bilingual Sentence Embeddings via Autoencoding and Neural Machine
Translation* (section 3.2, equations 7-10).

Each update sums two cross-entropies over a mini-batch holding the two objectives 1:1: NMT from the
source encoder to the target sentence, and autoencoding from the target encoder to a target
sentence (monolingual data plus the target side of the parallel data, as in the paper). With
``direction="reverse"`` the roles swap (target->source NMT, source autoencoding). A joint
sentencepiece vocabulary is trained on both languages first; word embeddings can be initialised
from a text file of vectors (the paper uses mapped bilingual skip-gram vectors).
"""

from __future__ import annotations

import io
import json
import random
import time
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, ConfigDict, Field

from bitextforge import InputError
from bitextforge.api import read_lines, text_lines
from bitextforge.api import Precision, device_field


class TrainConfig(BaseModel):
    """Options of ``bitextforge train-bilingual`` (sizes, preprocessing, optimiser, budget)."""

    model_config = ConfigDict(extra="forbid")

    vocab_size: int = Field(8000, ge=50, description="Joint sentencepiece vocabulary size "
                            "(smaller when the training text cannot fill it).")
    vocab: str | None = Field(None, description="Reuse this sentencepiece model (the spm.model "
                              "of another bilingual model directory) instead of training one.")
    embed_dim: int = Field(256, ge=8, description="Word embedding size.")
    hidden_dim: int = Field(256, ge=8, description="Encoder RNN size per direction; sentence "
                            "embeddings and the decoder state have twice this size.")
    rnn: Literal["gru", "lstm"] = Field("gru", description="Recurrent cell of encoders and decoder.")
    lowercase: bool = Field(True, description="Lowercase all text before the vocabulary.")
    max_tokens: int = Field(50, ge=2, description="Subword length limit: longer training pairs "
                            "are skipped, longer sentences to embed are cut.")
    direction: Literal["forward", "reverse"] = Field("forward", description="forward: source->target "
                                                     "NMT + target autoencoding (eq. 7-8); reverse: "
                                                     "target->source NMT + source autoencoding (eq. 9-10).")
    batch_size: int = Field(64, ge=1, description="Parallel pairs per update; as many "
                            "autoencoding sentences are added (the paper's 1:1 ratio).")
    optimizer: Literal["adam", "sgd"] = Field("adam", description="adam, or plain SGD as in the paper.")
    lr: float = Field(2e-3, gt=0, description="Initial learning rate (the paper: SGD at 1.0).")
    warmup: int = Field(0, ge=0, description="Updates over which the learning rate rises "
                        "linearly from lr/warmup to lr (0: none); Adam's first steps move every "
                        "weight by about lr whatever its gradient, which scrambles a dictionary "
                        "start (init_lexicon) before the decoder has learnt anything.")
    decay_after: int = Field(0, ge=0, description="Updates before the learning rate starts to "
                             "decay (0: never decay; the paper: 100k).")
    decay_every: int = Field(50000, ge=1, description="Multiply the rate by `decay` every this "
                             "many updates once decaying.")
    decay: float = Field(0.9, gt=0, le=1, description="Decay factor.")
    clip: float = Field(1.0, gt=0, description="Gradient norm clipping.")
    max_steps: int = Field(0, ge=0, description="Stop after this many updates (0: no limit).")
    max_minutes: float = Field(30.0, ge=0, description="Stop after this much wall time (0: no limit).")
    epochs: float = Field(0, ge=0, description="Stop after this many passes over the parallel "
                          "data (0: no limit).")
    save_minutes: float = Field(5.0, gt=0, description="Write the model directory this often "
                                "while training, so an interrupted run leaves a usable model.")
    init_embeddings: str | None = Field(None, description="Text file of vectors ('piece v1 v2 ..', "
                                        "word2vec text format, header optional) to initialise all "
                                        "word embeddings of matching subwords.")
    init_lexicon: str | None = Field(None, description="Bilingual dictionary in Ding's layout "
                                     "(line number, first-language side, second-language side; "
                                     "';' between synonyms; .gz ok) to start from: source "
                                     "encoder and word embeddings begin as copies of the target "
                                     "ones, each whole-word source subword at the mean of its "
                                     "one-word translations, so translations start close.")
    init_lexicon_langs: str | None = Field(None, pattern=r"^[A-Za-z_]+-[A-Za-z_]+$",
                                           description="Languages of init_lexicon's two sides, "
                                           "e.g. de-en (default: src_lang-tgt_lang).")
    shared_encoder: bool = Field(False, description="One recurrent encoder for both "
                                 "languages (each keeps its own word embeddings) instead of the "
                                 "paper's two; keeps a dictionary start (init_lexicon) in one "
                                 "space while training.")
    threads: int = Field(1, ge=1, description="torch CPU threads (1 is fastest on a shared "
                         "machine: idle OpenMP threads spin and slow everyone down).")
    device: str = device_field("the training")
    precision: Precision = Field(
        "auto", description="Arithmetic of the training forward pass: bf16 autocast (weights, "
        "optimizer and loss stay fp32) or fp32; auto takes bf16 where the device computes it "
        "natively (a CPU with avx512_bf16 or amx_bf16, a GPU of compute capability 8.0 or "
        "later) and fp32 elsewhere, where emulated bf16 would be slower. Embedding sentences "
        "for use is always fp32.")
    snapshots: bool = Field(False, description="Also keep the model of every save in "
                            "snapshots/step-N of the output directory, to measure the "
                            "similarities against training time afterwards.")
    seed: int = Field(1, description="Random seed.")
    src_lang: str = Field("src", description="Name of the source language (for the record).")
    tgt_lang: str = Field("tgt", description="Name of the target language (for the record).")


def read_text(path: str | Path, limit: int | None = None) -> list[str]:
    """Lines of a plain or gzipped UTF-8 file, without line ends (the core reader's checks)."""
    return read_lines(path, limit)


def read_pairs(src_files: list[str], tgt_files: list[str]) -> tuple[list[str], list[str]]:
    """Concatenate line-aligned file pairs, refusing pairs of files with different line counts."""
    if len(src_files) != len(tgt_files):
        raise InputError(f"{len(src_files)} source files but {len(tgt_files)} target files; give "
                         f"--src and --tgt once per parallel corpus")
    src, tgt = [], []
    for s, t in zip(src_files, tgt_files):
        a, b = read_text(s), read_text(t)
        if len(a) != len(b):
            raise InputError(f"{s} has {len(a)} lines but {t} has {len(b)}; they must be "
                             f"line-aligned")
        src += a
        tgt += b
    return src, tgt


def train_sentencepiece(texts: list[str], vocab_size: int, seed: int) -> bytes:
    """A joint unigram sentencepiece model over ``texts`` (ids: pad 0, unk 1, bos 2, eos 3)."""
    import sentencepiece as spm

    buf = io.BytesIO()
    rng = random.Random(seed)
    sample = texts if len(texts) <= 400_000 else rng.sample(texts, 400_000)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(t for t in sample if t.strip()), model_writer=buf,
        vocab_size=vocab_size, model_type="unigram", character_coverage=1.0,
        pad_id=0, unk_id=1, bos_id=2, eos_id=3, hard_vocab_limit=False,
        minloglevel=2, num_threads=1)
    return buf.getvalue()


def load_vectors(path: str, sp, dim: int):
    """Rows of a vector text file for the subwords of ``sp``: ``(ids, matrix)``."""
    import torch

    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: no such embedding file (init_embeddings)")
    ids, rows = [], []
    for n, line in enumerate(text_lines(p)):
        parts = line.split(" ")
        if n == 0 and len(parts) == 2:
            continue  # word2vec header: count and dimension
        if len(parts) != dim + 1:
            raise InputError(f"{p}:{n + 1}: {len(parts) - 1} numbers, but embed_dim is {dim}")
        pid = sp.piece_to_id(parts[0])
        if pid != sp.unk_id():
            ids.append(pid)
            rows.append([float(v) for v in parts[1:]])
    return ids, torch.tensor(rows, dtype=torch.float32).reshape(-1, dim)


def train_bilingual(cfg: TrainConfig, src: list[str], tgt: list[str], out_dir: str | Path,
                    mono: list[str] | None = None, dev: tuple[list[str], list[str]] | None = None,
                    log: Callable[[str], None] = print,
                    tests: dict[str, tuple[list[str], list[str]]] | None = None,
                    where: str = "train-bilingual") -> Path:
    """Train on parallel ``src``/``tgt`` (plus monolingual sentences ``mono`` in the decoded
    language) and write the model directory ``out_dir``. Returns the directory.

    ``dev`` pairs, when given, are used to log the cosine alignment-recovery error at every save;
    each of the named ``tests`` pair sets logs its cosine and CSLS (k=4) alignment-recovery error
    there too (both directions averaged), so the log holds error against training time.
    """
    import torch

    from bitextforge.api import autocast, resolve_device, resolve_precision

    if not src:
        raise InputError("no parallel training data")
    device = resolve_device(cfg.device, where)
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    rng = random.Random(cfg.seed)
    t_start = time.perf_counter()
    mono = list(mono or [])
    spm_bytes, net, model = _build_model(cfg, src, tgt, mono, device, log)
    pairs, nmt_in, ae_pool = _training_data(cfg, model, src, tgt, mono, rng, log)

    net.to(device)  # after the CPU-side initialisations, before the optimizer sees the weights
    params = list(net.parameters())
    if cfg.optimizer == "adam":
        opt = torch.optim.Adam(params, lr=cfg.lr)
    else:
        opt = torch.optim.SGD(params, lr=cfg.lr)

    precision = resolve_precision(cfg.precision, device)
    # autocast runs the matrix products of the GRU cells, the bridge and the output projection in
    # bf16 (about 2x faster per update on an AVX-512 bf16 CPU); cross-entropy and the weights
    # Adam updates stay fp32
    log(f"training in {precision} on "
        + (f"{cfg.threads} thread(s)" if device == "cpu" else device))
    info: dict = {"train_pairs": len(pairs), "autoencoding_sentences": len(ae_pool),
                  "precision": precision, "device": device, "config": cfg.model_dump(),
                  "log": []}
    clock = {"start": t_start, "checkpoint_seconds": 0.0}
    step = 0
    tokens = 0
    loss_sum = 0.0
    if dev is not None or tests:
        # the starting point, which a dictionary start makes far from chance
        _checkpoint(model, spm_bytes, out_dir, info, 0, 0, 0, 0.0, clock, dev, tests,
                    cfg.snapshots, log)
    last_save = time.perf_counter()
    net.train()
    for epoch, b in _batches(pairs, cfg.batch_size, rng):
        if cfg.epochs and epoch >= cfg.epochs:
            break
        minutes = (time.perf_counter() - t_start) / 60
        if (cfg.max_steps and step >= cfg.max_steps) or (cfg.max_minutes and
                                                         minutes >= cfg.max_minutes):
            break
        for g in opt.param_groups:
            g["lr"] = learning_rate(cfg, step)
        start = rng.randrange(max(1, len(ae_pool) - len(b) + 1))
        ae = [ae_pool[(start + i) % len(ae_pool)] for i in range(len(b))]
        with autocast(torch, device, precision):
            loss, ntok = batch_loss(net, nmt_in, [pairs[i] for i in b], ae, device)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, cfg.clip)
        opt.step()
        step += 1
        tokens += ntok
        loss_sum += float(loss.detach()) * ntok
        if time.perf_counter() - last_save >= cfg.save_minutes * 60:
            _checkpoint(model, spm_bytes, out_dir, info, step, epoch, tokens, loss_sum, clock,
                        dev, tests, cfg.snapshots, log)
            net.train()
            tokens, loss_sum = 0, 0.0
            last_save = time.perf_counter()
    if not info["log"] or info["log"][-1]["step"] != step:  # not saved at this step already
        _checkpoint(model, spm_bytes, out_dir, info, step, epoch, tokens, loss_sum, clock, dev,
                    tests, cfg.snapshots, log)
    return Path(out_dir)


def _build_model(cfg: TrainConfig, src: list[str], tgt: list[str], mono: list[str],
                 device: str, log: Callable[[str], None]):
    """The sentencepiece model's bytes, the network and the model around it, with its
    embeddings initialised from vectors or a dictionary when asked."""
    import sentencepiece as spm
    import torch

    from .model import BilingualEmbedder, BilingualModel, ModelConfig

    translations = None
    if cfg.init_lexicon:
        from .lexicon_init import dictionary_translations

        langs = tuple((cfg.init_lexicon_langs or f"{cfg.src_lang}-{cfg.tgt_lang}").split("-"))
        translations = dictionary_translations(cfg.init_lexicon, langs, cfg.src_lang, cfg.tgt_lang)
    lower = (lambda xs: [x.lower() for x in xs]) if cfg.lowercase else list
    if cfg.vocab:
        if not Path(cfg.vocab).is_file():
            raise InputError(f"{cfg.vocab}: no such sentencepiece model (vocab)")
        spm_bytes = Path(cfg.vocab).read_bytes()
    else:
        spm_bytes = train_sentencepiece(lower(src + tgt + mono), cfg.vocab_size, cfg.seed)
    sp = spm.SentencePieceProcessor(model_proto=spm_bytes)
    mcfg = ModelConfig(vocab_size=sp.get_piece_size(), embed_dim=cfg.embed_dim,
                       hidden_dim=cfg.hidden_dim, rnn=cfg.rnn, lowercase=cfg.lowercase,
                       max_tokens=cfg.max_tokens, direction=cfg.direction,
                       shared_encoder=cfg.shared_encoder,
                       src_lang=cfg.src_lang, tgt_lang=cfg.tgt_lang)
    net = BilingualEmbedder(mcfg)
    model = BilingualModel(mcfg, sp, net, device=device)
    if cfg.init_embeddings:
        ids, mat = load_vectors(cfg.init_embeddings, sp, cfg.embed_dim)
        with torch.no_grad():
            for emb in net.embed.values():
                emb.weight[ids] = mat
        log(f"initialised {len(ids)} of {mcfg.vocab_size} subword embeddings from "
            f"{cfg.init_embeddings}")
    if translations is not None:
        from .lexicon_init import init_from_dictionary

        n = init_from_dictionary(net, sp, translations)
        log(f"initialised the {cfg.src_lang} side from {cfg.init_lexicon}: {n} whole-word "
            f"subwords at the mean of their translations, the rest and the encoder copied")
    return spm_bytes, net, model


def _training_data(cfg: TrainConfig, model, src: list[str], tgt: list[str], mono: list[str],
                   rng: random.Random, log: Callable[[str], None]):
    """The NMT pairs (input side first), which side is the NMT input, and the length-sorted
    autoencoding pool."""
    S, T = model.tokenize(src), model.tokenize(tgt)
    # pairs over the length limit were cut by tokenize(); skip them rather than learn truncations
    pairs = [(s, t) for s, t in zip(S, T)
             if len(s) < cfg.max_tokens and len(t) < cfg.max_tokens]
    if cfg.direction == "forward":
        nmt_in = "src"
        ae_pool = [t for _, t in pairs]
    else:
        nmt_in = "tgt"
        pairs = [(t, s) for s, t in pairs]
        ae_pool = [t for _, t in pairs]
    ae_pool += [m for m in model.tokenize(mono) if len(m) < cfg.max_tokens]
    # Autoencoding batches are runs of this length-sorted pool from a random start: sentences of
    # similar length, so the decoder does not spend half its time on padding, as it did on random
    # draws (the parallel batches are length-sorted too).
    rng.shuffle(ae_pool)  # so sentences of one length come in random order, not corpus order
    ae_pool.sort(key=len)
    log(f"{len(pairs)} training pairs ({len(S) - len(pairs)} over {cfg.max_tokens} subwords "
        f"skipped), {len(ae_pool)} autoencoding sentences, vocabulary {model.cfg.vocab_size}")
    if not pairs:
        raise InputError(f"every training pair is longer than max_tokens={cfg.max_tokens}")
    return pairs, nmt_in, ae_pool


def _batches(pairs: list, batch_size: int, rng: random.Random):
    """Endless epochs of (epoch, row indices); within a window of 50 batches pairs are sorted by
    length to limit padding, then the batches are shuffled."""
    order = list(range(len(pairs)))
    epoch = 0
    while True:
        rng.shuffle(order)
        window = batch_size * 50
        for w in range(0, len(order), window):
            chunk = sorted(order[w:w + window], key=lambda i: len(pairs[i][0]))
            bs = [chunk[i:i + batch_size] for i in range(0, len(chunk), batch_size)]
            rng.shuffle(bs)
            for b in bs:
                yield epoch, b
        epoch += 1


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """The learning rate of update ``step`` (0-based): linear warm-up, constant, then the
    paper's step decay."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    if not cfg.decay_after or step < cfg.decay_after:
        return cfg.lr
    return cfg.lr * cfg.decay ** ((step - cfg.decay_after) // cfg.decay_every + 1)


def batch_loss(net, nmt_in: str, pairs: list[tuple[list[int], list[int]]],
               ae: list[list[int]], device: str = "cpu"):
    """The loss of one update (equations 7-8, or 9-10 with ``nmt_in="tgt"``): summed
    cross-entropy of decoding each pair's output from the ``nmt_in`` encoder's embedding of its
    input, plus that of reconstructing each autoencoding sentence ``ae`` from the other
    encoder's embedding of it, per real output token. Returns ``(loss, tokens)``."""
    from .model import pad

    pad_id = net.cfg.pad_id
    ae_side = "tgt" if nmt_in == "src" else "src"
    x, xl = pad([p[0] for p in pairs], pad_id)
    y, _ = pad([p[1] for p in pairs], pad_id)
    a, al = pad(ae, pad_id)
    ntok = int((y != pad_id).sum() + (a != pad_id).sum())
    x, y, a = x.to(device), y.to(device), a.to(device)
    loss = (net.decode_loss(net.encode(nmt_in, x, xl), y)
            + net.decode_loss(net.encode(ae_side, a, al), a)) / ntok
    return loss, ntok


def _checkpoint(model, spm_bytes, out_dir, info, step, epoch, tokens, loss_sum, clock, dev, tests,
                snapshots, log):
    """Evaluate, append a log entry and write the model directory (and a snapshot). The time
    spent here is left out of ``train_minutes``, so error against training time does not depend
    on how many test sets were evaluated on the way."""
    from .similarity import alignment_errors

    t0 = time.perf_counter()
    entry = {"step": step, "epoch": epoch, "minutes": round((t0 - clock["start"]) / 60, 2),
             "train_minutes": round((t0 - clock["start"] - clock["checkpoint_seconds"]) / 60, 2),
             "loss_per_token": round(loss_sum / tokens, 4) if tokens else None}
    if dev is not None:
        a = model.embed(dev[0], "src")
        b = model.embed(dev[1], "tgt")
        entry["dev_cosine_error"] = round(alignment_errors(a, b, "cosine")["error"], 4)
    for name, (src, tgt) in (tests or {}).items():
        a, b = model.embed(src, "src"), model.embed(tgt, "tgt")
        entry[name] = {m: round(alignment_errors(a, b, m, k=4)["error"], 4)
                       for m in ("cosine", "csls")}
    info["log"].append(entry)
    model.save(out_dir, spm_bytes, info)
    if snapshots:
        model.save(Path(out_dir) / "snapshots" / f"step-{step}", spm_bytes, info)
        model.path = Path(out_dir)
    log(json.dumps(entry))
    clock["checkpoint_seconds"] += time.perf_counter() - t0


