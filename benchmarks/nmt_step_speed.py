"""Time per training update of train-nmt's model, fp32 against a bf16 autocast forward pass.

``train-nmt``'s ``precision: auto`` picks bf16 where the CPU has native bf16 instructions; this
measures what that buys on the machine at hand, with the trainer's own model builder and loss, on
random token batches of a fixed shape (the default model: 7.7M parameters, vocabulary 8,000;
``--size small`` is the model of the low-resource experiments and of benchmarks/studies/wmt18-filtering/recipes/seed-spread.yaml:
width 128, 2 layers, feed-forward 256, vocabulary 2,000). It prints the median of the timed
updates (the first few are warm-up and not counted).

Run::

    .venv/bin/python benchmarks/nmt_step_speed.py --threads 2 --batch-tokens 1500 4000
    .venv/bin/python benchmarks/nmt_step_speed.py --threads 1
    .venv/bin/python benchmarks/nmt_step_speed.py --threads 1 --size small --batch-tokens 800
"""

from __future__ import annotations

import argparse
import statistics
import time


#: model options per --size (train-nmt's defaults, and the experiments' small model)
SIZES = {"default": ({}, 8000),
         "small": ({"d_model": 128, "layers": 2, "ffn_dim": 256, "vocab_size": 2000}, 2000)}


def time_updates(batch_tokens: int, precision: str, steps: int, length: int = 30,
                 size: str = "default") -> float:
    """Median seconds per update of a train-nmt model of ``size`` on ``batch_tokens`` tokens."""
    import torch

    from bitextforge.plugins.nmt.train import TrainOptions, build_model, weighted_loss

    options, vocab = SIZES[size]
    opts = TrainOptions(src_lang="de", tgt_lang="en", output="unused", train_tsv=["unused"],
                        **options)
    torch.manual_seed(0)
    model = build_model(opts, vocab)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rows = max(1, batch_tokens // length)
    x, d, y = (torch.randint(0, vocab - 1, (rows, length)) for _ in range(3))
    mask = torch.ones_like(x)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
    times = []
    for _ in range(steps + 5):
        t0 = time.perf_counter()
        with autocast:
            logits = model(input_ids=x, attention_mask=mask, decoder_input_ids=d).logits
        loss = weighted_loss(torch, logits.float(), y, torch.ones(rows), 0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times[5:])


def main() -> None:
    """Print ms per update for fp32 and bf16 at each batch size, and the ratio."""
    import torch

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-tokens", type=int, nargs="+", default=[1500])
    ap.add_argument("--steps", type=int, default=25, help="timed updates per setting")
    ap.add_argument("--size", choices=sorted(SIZES), default="default",
                    help="the model: train-nmt's defaults, or the experiments' small model")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from bitextforge.api import cpu_has_bf16

    print(f"threads {args.threads}; model {args.size}; native bf16: {cpu_has_bf16()}")
    for bt in args.batch_tokens:
        fp32 = time_updates(bt, "fp32", args.steps, size=args.size)
        bf16 = time_updates(bt, "bf16", args.steps, size=args.size)
        print(f"batch_tokens {bt}: fp32 {fp32 * 1000:.0f} ms, bf16 {bf16 * 1000:.0f} ms per "
              f"update ({fp32 / bf16:.2f}x)")


if __name__ == "__main__":
    main()
