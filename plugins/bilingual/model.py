"""The bilingual sentence embedding network of Kim, Rosendahl, Rossenbach, Rosendahl, Khadivi & Ney,
*Learning Bilingual Sentence Embeddings via Autoencoding and Neural Machine Translation*
(section 3.1, equations 1-12), and the model directory it is saved in.

Two bidirectional RNN encoders (one per language) and one unidirectional RNN decoder without
attention. A sentence's embedding is the element-wise max-pool of its encoder states (equations 3,
6, 11, 12); the decoder sees the source only through that vector, used as its initial state, so the
vector must carry everything needed to produce the output sentence.

A model directory holds ``config.json`` (sizes and preprocessing), ``spm.model`` (the joint
sentencepiece vocabulary) and ``model.pt`` (the weights). This module imports torch at top level;
components import it lazily so ``bitextforge --help`` stays fast.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import torch
from torch import nn

from bitextforge import ComponentError

CONFIG_FILE = "config.json"
SPM_FILE = "spm.model"
WEIGHTS_FILE = "model.pt"
FORMAT = "bitextforge-bilingual-embedding/1"


@dataclass
class ModelConfig:
    """Sizes and preprocessing of a bilingual embedding model (written to ``config.json``)."""

    vocab_size: int = 8000
    embed_dim: int = 256
    hidden_dim: int = 256
    rnn: str = "gru"
    lowercase: bool = True
    max_tokens: int = 50
    direction: str = "forward"
    shared_encoder: bool = False
    src_lang: str = "src"
    tgt_lang: str = "tgt"
    pad_id: int = 0
    bos_id: int = 2
    eos_id: int = 3
    extra: dict = field(default_factory=dict)

    @property
    def sentence_dim(self) -> int:
        """Size of a sentence embedding: both directions of the encoder, concatenated."""
        return 2 * self.hidden_dim


def _rnn(kind: str, inp: int, hidden: int, bidirectional: bool) -> nn.Module:
    cls = {"gru": nn.GRU, "lstm": nn.LSTM}[kind]
    return cls(inp, hidden, batch_first=True, bidirectional=bidirectional)


class BilingualEmbedder(nn.Module):
    """Encoders for both languages and the shared decoder (Kim et al., Figure 1).

    ``direction="forward"`` trains source->target NMT plus target autoencoding (equations 7-8);
    ``"reverse"`` trains target->source NMT plus source autoencoding (equations 9-10). Either way
    both encoders map into the space of the one decoder's initial state. ``shared_encoder`` uses
    one recurrent network for both languages, which keep their own word embeddings.
    """

    def __init__(self, cfg: ModelConfig):
        """Build the layers from ``cfg``."""
        super().__init__()
        self.cfg = cfg
        V, E, H = cfg.vocab_size, cfg.embed_dim, cfg.hidden_dim
        self.embed = nn.ModuleDict({
            "src": nn.Embedding(V, E, padding_idx=cfg.pad_id),
            "tgt": nn.Embedding(V, E, padding_idx=cfg.pad_id),
            "dec": nn.Embedding(V, E, padding_idx=cfg.pad_id),
        })
        src_rnn = _rnn(cfg.rnn, E, H, True)
        # one recurrent network for both languages (each keeps its own word embeddings) when
        # shared_encoder: then a dictionary start cannot drift apart into two spaces
        self.encoder = nn.ModuleDict({"src": src_rnn, "tgt": src_rnn if cfg.shared_encoder
                                      else _rnn(cfg.rnn, E, H, True)})
        self.decoder = _rnn(cfg.rnn, E, 2 * H, False)
        # projecting to the embedding size and tying with the decoder's input embedding halves the
        # cost of the output softmax, which dominates training time on a CPU
        self.bridge = nn.Linear(2 * H, E)

    def encode(self, side: str, ids: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """Sentence embeddings (equations 11-12): max-pool over time of the bidirectional states.

        ``ids`` is a padded ``[batch, time]`` tensor, ``lengths`` the true lengths (>= 1).
        """
        x = self.embed[side](ids)
        packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        out, _ = self.encoder[side](packed)
        h, _ = nn.utils.rnn.pad_packed_sequence(out, batch_first=True, total_length=ids.shape[1])
        mask = (torch.arange(ids.shape[1], device=ids.device)[None, :]
                < lengths.to(ids.device)[:, None])
        h = h.masked_fill(~mask[:, :, None], float("-inf"))
        return h.max(dim=1).values

    def decoder_states(self, s0: torch.Tensor, out_ids: torch.Tensor) -> torch.Tensor:
        """Decoder outputs ``[batch, time, 2H]`` for every position of padded ``out_ids`` under
        teacher forcing from initial state ``s0`` (equation 2), before the vocabulary projection."""
        cfg = self.cfg
        bos = torch.full((out_ids.shape[0], 1), cfg.bos_id, dtype=out_ids.dtype,
                         device=out_ids.device)
        inp = torch.cat([bos, out_ids[:, :-1]], dim=1)
        h0 = s0.unsqueeze(0).contiguous()
        state = (h0, torch.zeros_like(h0)) if cfg.rnn == "lstm" else h0
        states, _ = self.decoder(self.embed["dec"](inp), state)
        return states

    def decode_loss(self, s0: torch.Tensor, out_ids: torch.Tensor) -> torch.Tensor:
        """Summed cross-entropy of producing ``out_ids`` (padded, ending in EOS) from initial state
        ``s0`` with teacher forcing (equations 2 and 4)."""
        states = self.decoder_states(s0, out_ids)
        # the vocabulary projection is most of a training step: compute it for real tokens
        # only, not for the padding the loss would ignore anyway
        real = out_ids != self.cfg.pad_id
        logits = self.bridge(states[real]) @ self.embed["dec"].weight.T
        return nn.functional.cross_entropy(logits, out_ids[real], reduction="sum")


class BilingualModel:
    """A trained model directory: tokenizer plus network, ready to embed sentences in batches."""

    def __init__(self, cfg: ModelConfig, sp, net: BilingualEmbedder, path: Path | None = None,
                 device: str = "cpu"):
        """Wrap a config, a sentencepiece processor and a network that lives on ``device`` (a
        resolved device: ``cpu`` or ``cuda:N``)."""
        self.cfg = cfg
        self.sp = sp
        self.net = net
        self.path = path
        self.device = device

    @classmethod
    def load(cls, path: str | Path, device: str = "cpu") -> "BilingualModel":
        """Load a directory written by :meth:`save` (or by ``bitextforge train-bilingual``) onto
        ``device`` (a resolved device: ``cpu`` or ``cuda:N``), wherever it was trained."""
        import sentencepiece as spm

        path = Path(path)
        files = [path / CONFIG_FILE, path / SPM_FILE, path / WEIGHTS_FILE]
        missing = [f.name for f in files if not f.is_file()]
        if missing:
            raise ComponentError(f"{path}: not a bilingual embedding model directory (missing "
                                 f"{', '.join(missing)}); train one with `bitextforge "
                                 f"train-bilingual`")
        meta = json.loads(files[0].read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT:
            raise ComponentError(f"{files[0]}: format {meta.get('format')!r} is not {FORMAT!r}; "
                                 f"retrain with this version of bitextforge")
        cfg = ModelConfig(**meta["model"])
        sp = spm.SentencePieceProcessor(model_file=str(files[1]))
        net = BilingualEmbedder(cfg)
        net.load_state_dict(torch.load(files[2], map_location="cpu", weights_only=True))
        net.to(device).eval()
        return cls(cfg, sp, net, path, device)

    def save(self, path: str | Path, spm_bytes: bytes, info: dict | None = None) -> Path:
        """Write the directory: config, vocabulary and weights (plus ``info`` in the config)."""
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        (path / SPM_FILE).write_bytes(spm_bytes)
        tmp = path / (WEIGHTS_FILE + ".tmp")
        from bitextforge.api import cpu_state_dict

        torch.save(cpu_state_dict(self.net), tmp)
        tmp.replace(path / WEIGHTS_FILE)
        meta = {"format": FORMAT, "model": asdict(self.cfg), "info": info or {}}
        (path / CONFIG_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
        self.path = path
        return path

    def tokenize(self, sentences: list[str]) -> list[list[int]]:
        """Subword ids of each sentence, lowercased and cut to ``max_tokens`` as trained; an empty
        sentence becomes a lone EOS so it still has an embedding."""
        cfg = self.cfg
        texts = [s.lower() for s in sentences] if cfg.lowercase else list(sentences)
        ids = self.sp.encode(texts)
        return [(x[:cfg.max_tokens - 1] + [cfg.eos_id]) for x in ids]

    def embed(self, sentences: list[str], side: str, batch_size: int = 256) -> np.ndarray:
        """Embeddings ``[n, sentence_dim]`` (float32) of sentences in language ``side``
        (``"src"`` or ``"tgt"``). Sentences are sorted by length so batches carry little padding."""
        if side not in ("src", "tgt"):
            raise ValueError(f"side must be 'src' or 'tgt', not {side!r}")
        ids = self.tokenize(sentences)
        out = np.zeros((len(ids), self.cfg.sentence_dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        self.net.eval()
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                chunk = order[start:start + batch_size]
                x, lens = pad([ids[i] for i in chunk], self.cfg.pad_id)
                out[chunk] = self.net.encode(side, x.to(self.device), lens).cpu().numpy()
        return out


def pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """A padded ``[batch, time]`` LongTensor and the lengths of ``seqs``."""
    lens = torch.tensor([len(s) for s in seqs], dtype=torch.long)
    x = torch.full((len(seqs), int(lens.max())), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        x[i, :len(s)] = torch.tensor(s, dtype=torch.long)
    return x, lens
