"""The model side of ``train-nmt``: the Marian model of the requested size, the weighted loss, the
moving average of the weights, the validation loss, and translation and BLEU of a saved model."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

from bitextforge.api import read_parallel

from .train_data import EOS_ID, collate
from .train_options import TrainOptions


def weighted_loss(torch, logits, labels, weights, label_smoothing: float):
    """Label-smoothed cross-entropy of a batch with each sentence's token losses multiplied by its
    weight (Marian ``--data-weighting-type sentence``), divided by the weighted number of target
    tokens.

    Marian divides by the plain token count; the two agree when a batch's weights average 1, and
    only the weighted count makes weight 0 exactly the same as leaving the pair out and weight 2
    exactly the same as repeating it, whatever else the batch holds. With all weights 1 this is
    the ordinary per-token mean."""
    per_token = torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.size(-1)), labels.reshape(-1), ignore_index=-100,
        label_smoothing=label_smoothing, reduction="none").view(labels.shape)
    tok_w = (labels != -100).to(per_token.dtype) * weights.to(per_token.dtype)[:, None]
    return (per_token * tok_w).sum() / tok_w.sum().clamp_min(1e-9)


class WeightAverage:
    """An exponential moving average of a model's trainable weights (Marian's
    ``--exponential-smoothing``; Polyak averaging), kept beside the model in fp32 on its device.

    The decay at update ``n`` is ``min(decay, (1 + n) / (10 + n))``, so the average of a short
    run is not dominated by its random initial weights."""

    def __init__(self, torch, model, decay: float):
        """Start the average at the model's current weights."""
        self.torch, self.decay = torch, decay
        self.params = [p for p in model.parameters() if p.requires_grad]
        self.avg = [p.detach().clone() for p in self.params]

    def update(self, step: int) -> None:
        """Fold the weights after update ``step`` into the average."""
        d = min(self.decay, (1 + step) / (10 + step))
        with self.torch.no_grad():
            for a, p in zip(self.avg, self.params):
                a.lerp_(p, 1 - d)

    def _swap(self) -> None:
        with self.torch.no_grad():
            for a, p in zip(self.avg, self.params):
                tmp = p.detach().clone()
                p.copy_(a)
                a.copy_(tmp)

    @contextlib.contextmanager
    def swapped_in(self):
        """A context in which the model holds the averaged weights (to validate or save them);
        the training weights come back on exit."""
        self._swap()
        try:
            yield
        finally:
            self._swap()


def build_model(opts: TrainOptions, vocab: int):
    """A MarianMTModel from a MarianConfig of the requested size, with tied embeddings."""
    from transformers import MarianConfig, MarianMTModel

    pad = vocab - 1
    cfg = MarianConfig(
        vocab_size=vocab, decoder_vocab_size=vocab, d_model=opts.d_model,
        encoder_layers=opts.layers, decoder_layers=opts.layers,
        encoder_attention_heads=opts.heads, decoder_attention_heads=opts.heads,
        encoder_ffn_dim=opts.ffn_dim, decoder_ffn_dim=opts.ffn_dim, dropout=opts.dropout,
        attention_dropout=0.0, activation_dropout=0.0, activation_function="relu",
        max_position_embeddings=max(256, opts.max_len * 2), scale_embedding=True,
        pad_token_id=pad, eos_token_id=EOS_ID, decoder_start_token_id=pad,
        forced_eos_token_id=EOS_ID, share_encoder_decoder_embeddings=True,
        tie_word_embeddings=True, num_beams=opts.beam, max_length=opts.max_len * 2)
    return MarianMTModel(cfg)


def translate(model, tok, texts: list[str], beam: int, batch_size: int = 64,
              max_len: int = 256) -> list[str]:
    """Translate with transformers ``generate``, in batches sorted by length, in input order."""
    import torch

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[str] = [""] * len(texts)
    # neither the source nor the output may run past the model's position table (news sentences
    # can be longer than anything in Multi30k)
    table = getattr(model.config, "max_position_embeddings", None) or max_len + 1
    from bitextforge.api import progress

    model.eval()
    with torch.inference_mode():
        for b in progress(range(0, len(order), batch_size), f"translating {len(texts)} sentences",
                          unit=" batches"):
            idx = order[b: b + batch_size]
            enc = tok([texts[i] for i in idx], return_tensors="pt", padding=True,
                      truncation=True, max_length=min(max_len, table)).to(model.device)
            new = min(int(enc["input_ids"].shape[1] * 2 + 10), table - 1)
            gen = model.generate(**enc, num_beams=beam, do_sample=False, max_new_tokens=new)
            for i, t in zip(idx, tok.batch_decode(gen, skip_special_tokens=True)):
                out[i] = t
    return out


def evaluate_bleu(model_dir: str | Path, src_file: str, ref_file: str, beam: int,
                  limit: int | None = None, backend: str = "transformers",
                  threads: int = 2, device: str = "cpu") -> dict:
    """sacrebleu BLEU and chrF of a saved model on a test set, with the signature and timing.

    ``backend``: ``transformers`` (the reference implementation) or ``ctranslate2`` (float32, the
    model converted on the fly: the same greedy output, several times faster); ``device``: a
    resolved device (``cpu`` or ``cuda:N``)."""
    import sacrebleu

    src, ref = read_parallel(src_file, ref_file)
    if limit:
        src, ref = src[:limit], ref[:limit]
    t0 = time.perf_counter()
    if backend == "ctranslate2":
        from .backends import Decoding, make_backend

        be = make_backend("ctranslate2", str(model_dir), threads=threads, compute_type="float32",
                          device=device, option="train-nmt test")
        try:
            hyp = [r[0][0] if r else "" for r in be.translate(src, Decoding(beam=beam, k=1))]
        finally:
            be.close()
    else:
        import torch
        from transformers import MarianMTModel, MarianTokenizer

        tok = MarianTokenizer.from_pretrained(str(model_dir))
        model = MarianMTModel.from_pretrained(str(model_dir)).to(device)
        torch.manual_seed(0)
        hyp = translate(model, tok, src, beam)
    secs = time.perf_counter() - t0
    metric = sacrebleu.metrics.BLEU()
    bleu = metric.corpus_score(hyp, [ref])
    return {"test": str(src_file), "backend": backend, "device": device, "beam": beam,
            "sentences": len(src),
            "bleu": round(bleu.score, 2), "chrf": round(sacrebleu.corpus_chrf(hyp, [ref]).score, 2),
            "signature": str(metric.get_signature()), "seconds": round(secs, 1)}


def valid_loss(torch, model, src, tgt, batches, pad, device: str = "cpu") -> float:
    """Per-token cross-entropy (no smoothing) of the validation set."""
    model.eval()
    tot, n = 0.0, 0
    with torch.inference_mode():
        for idx in batches:
            x, m, d, y = (t.to(device) for t in collate(torch, src, tgt, idx, pad))
            logits = model(input_ids=x, attention_mask=m, decoder_input_ids=d).logits
            tot += torch.nn.functional.cross_entropy(
                logits.view(-1, logits.size(-1)), y.view(-1), ignore_index=-100,
                reduction="sum").item()
            n += int((y != -100).sum())
    model.train()
    return tot / max(n, 1)
