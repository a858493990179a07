"""Judge paraphrase pairs by the sentence embeddings they train (``paraphrastic_embeddings.v1``).

Wieting, Mallinson & Gimpel 2017 (*Learning Paraphrastic Sentence Embeddings from Back-Translated
Bitext*, sections 4-5) and Wieting & Gimpel 2018 (*ParaNMT-50M*, section 4) measure the quality of
a set of paraphrase pairs by training simple sentence encoders on it and correlating their cosine
similarities with human semantic-similarity judgements: better pairs, higher Pearson's r.

The encoders are the papers' WORD (the average of word embeddings) and TRIGRAM (the average of
character-trigram embeddings). Training minimises the margin loss of Wieting et al. 2017, eq. 2,

    max(0, delta - cos(g(s1), g(s2)) + cos(g(s1), g(t1)))
      + max(0, delta - cos(g(s1), g(s2)) + cos(g(s2), g(t2)))

where t1 (t2) is the sentence most similar to s1 (s2) under the current model among the other
pairs' sentences, chosen from a mega-batch of M mini-batches (ParaNMT section 4). Inputs are
``torch.nn.EmbeddingBag`` mean bags (one call per update for the pairs and their negatives), fast on
a CPU. Without PARAGRAM-SL999 (not on this
machine) the embeddings start random, so absolute correlations sit below the papers'; differences
between training sets are what this evaluator is for (``shuffled_baseline`` gives the floor).

``selections`` compares filters the way the papers' Tables 5-7 and 12 do: every candidate pair is
scored once by the recipe's filter steps, and each named selection trains on the pairs whose score
columns lie within its bounds, drawn at random down to the same ``max_pairs``, so that filters are
compared at equal size in one run (Wieting et al. 2017, section 5.2).
"""

from __future__ import annotations

import math
import random
import re
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from bitextforge import Evaluator, InputError, Report
from bitextforge.api import device_field, resolve_device

_TOKEN = re.compile(r"\w+|[^\w\s]", re.UNICODE)

DEFAULT_BENCHMARKS = {
    "sts_dev": "../shared/data/stsbenchmark/sts-dev.csv",
    "sts_test": "../shared/data/stsbenchmark/sts-test.csv",
    "sick": "../shared/data/sick2014/SICK_test_annotated.txt",
}


def tokenize(text: str) -> list[str]:
    """Lowercased word and punctuation tokens (the papers train on tokenised, lowercased text)."""
    return _TOKEN.findall(text.lower())


def trigrams(tokens: list[str]) -> list[str]:
    """Character trigrams of the space-joined sentence with a space at each end (Huang et al. 2013,
    as ParaNMT's TRIGRAM model reads a sentence)."""
    s = " " + " ".join(tokens) + " "
    return [s[i:i + 3] for i in range(len(s) - 2)]


def read_similarity_set(path: str) -> tuple[list[str], list[str], list[float]]:
    """Sentence pairs and gold scores of an STS Benchmark file (tab-separated, score in field 5,
    sentences in fields 6-7; extra fields ignored) or a SICK file (a header naming sentence_A,
    sentence_B and relatedness_score). One clear error naming the file and line otherwise."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"paraphrastic_embeddings.v1: benchmark {path}: no such file")
    lines = p.read_text(encoding="utf-8-sig").splitlines()
    a, b, gold = [], [], []
    header = lines[0].split("\t") if lines else []
    if "relatedness_score" in header:
        ia, ib, isc = (header.index("sentence_A"), header.index("sentence_B"),
                       header.index("relatedness_score"))
        start, fields = 1, None
    else:
        ia, ib, isc, start, fields = 5, 6, 4, 0, 7
    for n, line in enumerate(lines[start:], start + 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if fields:
            parts = parts[:fields]
        try:
            score = float(parts[isc])
            a.append(parts[ia])
            b.append(parts[ib])
        except (IndexError, ValueError):
            raise InputError(f"{path}:{n}: expected an STS Benchmark row (genre, file, year, id, "
                             f"score, sentence 1, sentence 2) or a SICK row; got "
                             f"{line[:60]!r}") from None
        gold.append(score)
    if len(gold) < 3:
        raise InputError(f"{path}: {len(gold)} scored pairs; Pearson's r needs at least 3")
    return a, b, gold


class _Vocab:
    """Feature ids (words or trigrams) seen in the training pairs; unseen features are dropped at
    encoding time, since an untrained random vector would only add noise to the average."""

    def __init__(self, features: Literal["word", "trigram"]):
        self.features = features
        self.ids: dict[str, int] = {}

    def feats(self, text: str) -> list[str]:
        toks = tokenize(text)
        return toks if self.features == "word" else trigrams(toks)

    def add(self, text: str) -> list[int]:
        return [self.ids.setdefault(f, len(self.ids)) for f in self.feats(text)]

    def lookup(self, text: str) -> list[int]:
        return [i for i in (self.ids.get(f) for f in self.feats(text)) if i is not None]


class _Averager:
    """g(s): the mean of a sentence's feature embeddings, through one EmbeddingBag."""

    def __init__(self, n_features: int, dim: int, seed: int, device: str = "cpu"):
        import torch

        gen = torch.Generator().manual_seed(seed)
        self.bag = torch.nn.EmbeddingBag(n_features + 1, dim, mode="mean")
        with torch.no_grad():
            self.bag.weight.copy_(torch.empty(n_features + 1, dim).uniform_(-0.1, 0.1,
                                                                            generator=gen))
        # drawn on the CPU first, so a seed gives the same start on every device
        self.bag.to(device)

    def __call__(self, seqs: list):
        """Embeddings of feature-id sequences (lists or 1-D LongTensors), one row each."""
        import torch

        # an empty sentence (no known feature) gets the all-zero padding row: cosine 0 to all
        pad = torch.tensor([self.bag.num_embeddings - 1])
        seqs = [torch.as_tensor(s, dtype=torch.long) if len(s) else pad for s in seqs]
        lengths = torch.tensor([len(s) for s in seqs])
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths[:-1].cumsum(0)])
        dev = self.bag.weight.device
        return self.bag(torch.cat(seqs).to(dev), offsets.to(dev))


def _normalize(x):
    import torch

    return torch.nn.functional.normalize(x, dim=1, eps=1e-8)


def train_averager(pairs: list[tuple[str, str]], features: Literal["word", "trigram"], *,
                   dim: int, epochs: int, batch_size: int, megabatch: int, margin: float,
                   lr: float, seed: int, device: str = "cpu") -> tuple[_Vocab, _Averager]:
    """Train a WORD or TRIGRAM averaging encoder on ``pairs`` with the margin loss and
    mega-batch negatives (see the module docstring) on ``device`` (a resolved device); returns
    the vocabulary and the encoder."""
    import torch

    torch.manual_seed(seed)
    vocab = _Vocab(features)
    left = [torch.tensor(vocab.add(a), dtype=torch.long) for a, _ in pairs]
    right = [torch.tensor(vocab.add(b), dtype=torch.long) for _, b in pairs]
    # the same text on two pairs is never the other's negative (it would be a paraphrase)
    text_id: dict[str, int] = {}
    lt = torch.tensor([text_id.setdefault(a.strip().lower(), len(text_id)) for a, _ in pairs])
    rt = torch.tensor([text_id.setdefault(b.strip().lower(), len(text_id)) for _, b in pairs])
    lt, rt = lt.to(device), rt.to(device)
    model = _Averager(len(vocab.ids), dim, seed, device)
    # dense Adam, as the papers: SparseAdam was no faster here, since coalescing the tens of
    # thousands of rows an update touches (400 sentences of ~100 trigrams) costs as much
    opt = torch.optim.Adam(model.bag.parameters(), lr=lr)
    rng = random.Random(seed)
    order = list(range(len(pairs)))
    mega = batch_size * megabatch
    for _ in range(epochs):
        rng.shuffle(order)
        for m0 in range(0, len(order), mega):
            idx = order[m0:m0 + mega]
            n = len(idx)
            if n < 2:
                continue
            with torch.no_grad():
                e1 = _normalize(model([left[i] for i in idx]))
                e2 = _normalize(model([right[i] for i in idx]))
                pool = torch.cat([e1, e2])                      # candidates: both sides
                pool_text = torch.cat([lt[idx], rt[idx]])
                pair_of = torch.arange(n, device=device).repeat(2)
                own = torch.arange(n, device=device)
                blocked = (pair_of[None, :] == own[:, None]) \
                    | (pool_text[None, :] == lt[idx][:, None]) \
                    | (pool_text[None, :] == rt[idx][:, None])
                s1 = (e1 @ pool.T).masked_fill(blocked, -math.inf)
                s2 = (e2 @ pool.T).masked_fill(blocked, -math.inf)
                neg1, neg2 = s1.argmax(1), s2.argmax(1)
                # a pair whose every candidate is blocked has no negative: it contributes nothing
                has1 = torch.isfinite(s1.max(1).values)
                has2 = torch.isfinite(s2.max(1).values)
            seqs = [left[i] for i in idx] + [right[i] for i in idx]
            for b0 in range(0, n, batch_size):
                b = list(range(b0, min(b0 + batch_size, n)))
                k = len(b)
                # one bag call for s1, s2, t1 and t2: one backward per update
                g = _normalize(model([left[idx[i]] for i in b] + [right[idx[i]] for i in b]
                                     + [seqs[j] for j in neg1[b].tolist()]
                                     + [seqs[j] for j in neg2[b].tolist()]))
                g1, g2, t1, t2 = g[:k], g[k:2 * k], g[2 * k:3 * k], g[3 * k:]
                pos = (g1 * g2).sum(1)
                loss = (torch.relu(margin - pos + (g1 * t1).sum(1)) * has1[b]
                        + torch.relu(margin - pos + (g2 * t2).sum(1)) * has2[b]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
    return vocab, model


def pearson_of(vocab: _Vocab, model: _Averager, a: list[str], b: list[str],
               gold: list[float]) -> float:
    """Pearson's r (scipy) between the encoder's cosine similarities and the gold scores."""
    import torch
    from scipy.stats import pearsonr

    with torch.no_grad():
        ea = _normalize(model([vocab.lookup(x) for x in a]))
        eb = _normalize(model([vocab.lookup(x) for x in b]))
        cos = (ea * eb).sum(1).tolist()
    if len(set(cos)) < 2:
        return 0.0  # constant predictions (nothing known): no correlation, not NaN
    return float(pearsonr(cos, gold)[0])


class Bounds(BaseModel):
    """Bounds on one score column: a pair is selected when ``min <= score <= max`` and, with
    ``top``, when its score is among the best ``top`` share of all candidates' (NaN never)."""

    model_config = ConfigDict(extra="forbid")
    min: float | None = Field(None, description="Lowest score selected.")
    max: float | None = Field(None, description="Highest score selected.")
    top: float | None = Field(None, gt=0, lt=1, description="Select the best share of the "
                              "candidates by this column (0.25: the best quarter), whatever the "
                              "scale of its scores.")
    order: Literal["highest", "lowest"] = Field("highest", description="For top: whether high "
                                                "or low scores are best (cost, perplexity: "
                                                "lowest).")

    @model_validator(mode="after")
    def _check(self):
        if self.min is None and self.max is None and self.top is None:
            raise ValueError("give min, max, top or several")
        if self.min is not None and self.max is not None and self.min > self.max:
            raise ValueError(f"min ({self.min}) is greater than max ({self.max})")
        return self

    def accepted(self, scores: list[float]) -> list[bool]:
        """For each score, whether it lies within the bounds (NaN fails every bound)."""
        ok = [s == s and (self.min is None or s >= self.min) and (self.max is None or s <= self.max)
              for s in scores]
        if self.top is not None:
            ranked = sorted((s for s in scores if s == s), reverse=self.order == "highest")
            if ranked:
                cut = ranked[max(1, math.ceil(self.top * len(ranked))) - 1]
                ok = [k and (s >= cut if self.order == "highest" else s <= cut)
                      for k, s in zip(ok, scores)]
        return ok


def _train_task(pairs: list[tuple[str, str]], feats: str, options: dict,
                benches: dict) -> dict[str, float]:
    """Train one encoder and score it on every benchmark: one unit of work, run in this process
    or in a worker process (``workers``); the result depends only on its arguments."""
    import torch

    torch.set_num_threads(options.pop("threads"))
    t0 = time.perf_counter()
    vocab, model = train_averager(pairs, feats, **options)
    out = {"train_seconds": time.perf_counter() - t0}
    for name, (a, b, gold) in benches.items():
        out[name] = pearson_of(vocab, model, a, b, gold)
    return out


class ParaphrasticEmbeddingsEvaluator(Evaluator):
    """Pearson's r on STS Benchmark and SICK of WORD / TRIGRAM sentence embeddings trained on the
    run's paraphrase pairs (Wieting, Mallinson & Gimpel 2017, sections 4-5; Wieting & Gimpel 2018,
    ParaNMT-50M, section 4).

    The pairs are (``<side>_original``, ``<side>``) of the paraphrase rows when the run paraphrased
    a side, else (src, tgt) of every row (a corpus of paraphrase pairs, such as MRPC's positives);
    ``columns`` names two columns explicitly. ``max_pairs`` draws a fixed-size random sample so that
    filters are compared at equal size, as the papers do. ``shuffled_baseline`` also trains on the
    same sentences with the second side shuffled (no paraphrase signal), the floor any real
    paraphrase data must clear. ``selections`` trains once per named selection of the pairs by
    their score columns (a filter's bounds), each at the same ``max_pairs``: one table of filters
    at equal size, as in Wieting et al. 2017, Tables 5-7 and 12.
    """

    name = "paraphrastic_embeddings.v1"
    extra = "embeddings"

    class Config(Evaluator.Config):
        """Options of paraphrastic_embeddings.v1."""

        models: list[Literal["word", "trigram"]] = Field(
            ["word", "trigram"], min_length=1,
            description="Encoders to train: word (word averaging, WORD) and/or trigram "
                        "(character-trigram averaging, TRIGRAM).")
        columns: list[str] | None = Field(
            None, min_length=2, max_length=2,
            description="The two text columns of a pair; default: <side>_original and <side> of "
                        "paraphrase rows (variant > 0) when the corpus has them, else src and tgt.")
        max_pairs: int | None = Field(
            None, ge=2, description="Train on a random sample of this many pairs (the papers "
                                    "compare data sets at 24,000 or 100,000 pairs); default all.")
        benchmarks: dict[str, str] = Field(
            default_factory=lambda: dict(DEFAULT_BENCHMARKS),
            description="Name -> file of a similarity benchmark: STS Benchmark format (score in "
                        "field 5, sentences in fields 6-7) or SICK (header with sentence_A, "
                        "sentence_B, relatedness_score).")
        dim: int = Field(300, ge=1, description="Embedding dimension (the papers: 300).")
        epochs: int = Field(10, ge=1, description="Passes over the pairs (Wieting et al. 2017 "
                                                  "tune 1-20; ParaNMT trains 5).")
        batch_size: int = Field(100, ge=2, description="Mini-batch size (the papers: 100).")
        megabatch: int = Field(20, ge=1, description="M: mini-batches pooled to choose negatives "
                                                     "(ParaNMT Table 6: 1, 20, 40).")
        margin: float = Field(0.4, gt=0, description="delta of the margin loss (the papers: 0.4).")
        lr: float = Field(0.001, gt=0, description="Learning rate of Adam (the papers: "
                                                   "0.001).")
        shuffled_baseline: bool = Field(False, description="Also train on the pairs with the "
                                        "second side shuffled and report those numbers as "
                                        "shuffled.*.")
        seed: int = Field(1234, description="Seed of sampling, initialisation and batch order.")
        seeds: list[int] | None = Field(
            None, min_length=1, description="Train once per seed (each draws its own sample, "
                                            "initialisation and batch order) instead of `seed`; "
                                            "numbers are then the mean over the seeds, with "
                                            "<key>.min, <key>.max and <key>.seed<N>.")
        threads: int = Field(1, ge=1, description="torch threads while training. One is fastest "
                             "for these small updates; more threads only wait on each other, "
                             "ten times slower on a busy 2-core machine.")
        selections: dict[str, dict[str, Bounds]] | None = Field(
            None, description="Name -> {score column: {min, max, top, order}}: train once per "
                              "selection on the pairs whose columns lie within all its bounds "
                              "(`top` shares are of every candidate pair; `{}` selects "
                              "every pair: the random baseline), each sampled to max_pairs. "
                              "Numbers are then <name>.<model>.<benchmark>. Default: one "
                              "training on every pair.")
        device: str = device_field("the trainings")
        workers: int = Field(1, ge=1, description="Trainings run side by side in this many "
                             "processes (each with `threads` threads); the numbers do not "
                             "depend on it.")

    def _pairs(self, corpus) -> list[tuple[str, str]]:
        """The training pairs of the corpus, sampled to ``max_pairs``."""
        pairs, _ = self._rows(corpus)
        return self._sample(pairs, self.config.seed)

    def _sample(self, pairs: list[tuple[str, str]], seed: int) -> list[tuple[str, str]]:
        c = self.config
        if c.max_pairs is not None and len(pairs) > c.max_pairs:
            pairs = random.Random(seed).sample(pairs, c.max_pairs)
        return pairs

    def _rows(self, corpus) -> tuple[list[tuple[str, str]], list[int]]:
        """Every candidate pair and its row number in the corpus."""
        c = self.config
        cols = corpus.columns
        variant = None
        if c.columns:
            first, second = c.columns
            missing = [x for x in c.columns if x not in cols]
            if missing:
                raise InputError(f"{self.name}: columns {missing} are not in the corpus; columns "
                                 f"are {', '.join(cols)}")
        else:
            side = next((s for s in ("tgt", "src") if f"{s}_original" in cols), None)
            if side:
                first, second, variant = f"{side}_original", side, corpus.column("variant")
            else:
                first, second = "src", "tgt"
        a = [str(x) for x in corpus.column(first)]
        b = [str(x) for x in corpus.column(second)]
        rows = [k for k, (x, y) in enumerate(zip(a, b))
                if x.strip() and y.strip() and (variant is None or variant[k] > 0)]
        if len(rows) < 2:
            raise InputError(f"{self.name}: {len(rows)} non-empty pairs in columns {first}, "
                             f"{second}; training needs at least 2")
        return [(a[k], b[k]) for k in rows], rows

    def _selected(self, corpus) -> dict[str, list[tuple[str, str]]]:
        """Selection name -> the pairs within its bounds ("" -> every pair when there are no
        selections), not yet sampled. Every named column is checked before anything trains."""
        c = self.config
        pairs, rows = self._rows(corpus)
        if not c.selections:
            return {"": pairs}
        names = sorted({col for bounds in c.selections.values() for col in bounds})
        missing = [n for n in names if n not in corpus.columns]
        if missing:
            raise InputError(f"{self.name}: selections name columns {missing} that are not in "
                             f"the corpus; columns are {', '.join(corpus.columns)}")
        scores = {}
        for n in names:
            values = corpus.column(n)
            if any(isinstance(values[k], str) for k in rows):
                raise InputError(f"{self.name}: selections: column {n!r} is not numeric")
            scores[n] = [values[k] for k in rows]
        out = {}
        for sel, bounds in c.selections.items():
            accepted = [b.accepted(scores[col]) for col, b in bounds.items()]
            keep = [i for i in range(len(pairs)) if all(a[i] for a in accepted)]
            if len(keep) < 2:
                raise InputError(f"{self.name}: selections.{sel}: {len(keep)} pairs lie within "
                                 f"its bounds; training needs at least 2")
            if c.max_pairs is not None and len(keep) < c.max_pairs:
                self.log(f"selections.{sel}: only {len(keep):,} pairs lie within its bounds, "
                         f"fewer than max_pairs ({c.max_pairs:,}): not an equal-size comparison")
            out[sel] = [pairs[i] for i in keep]
        return out

    def _tasks(self, selected: dict[str, list[tuple[str, str]]],
               seeds: list[int]) -> list[tuple[str, int, str, list]]:
        """(number prefix, seed, model, pairs) of every training the config asks for."""
        c = self.config
        tasks = []
        for seed in seeds:
            for sel, candidates in selected.items():
                pairs = self._sample(candidates, seed)
                prefix = f"{sel}." if sel else ""
                variants = [("", pairs)]
                if c.shuffled_baseline:
                    seconds = [b for _, b in pairs]
                    random.Random(seed + 1).shuffle(seconds)
                    variants.append(("shuffled.", [(a, b) for (a, _), b in zip(pairs, seconds)]))
                for shuffled, train_pairs in variants:
                    for feats in c.models:
                        tasks.append((prefix + shuffled, seed, feats, train_pairs))
        return tasks

    def _run_tasks(self, tasks: list, benches: dict) -> list[dict[str, float]]:
        c = self.config
        options = dict(dim=c.dim, epochs=c.epochs, batch_size=c.batch_size,
                       megabatch=c.megabatch, margin=c.margin, lr=c.lr, threads=c.threads,
                       device=self.device)
        self.log(f"{len(tasks)} trainings ({c.epochs} epochs each), {c.workers} at a time")
        if c.workers == 1 or len(tasks) == 1:
            return [_train_task(pairs, feats, dict(options, seed=seed), benches)
                    for _, seed, feats, pairs in tasks]
        from bitextforge.api import worker_pool

        with worker_pool(min(c.workers, len(tasks)), ("torch", __name__)) as pool:
            futures = [pool.submit(_train_task, pairs, feats, dict(options, seed=seed), benches)
                       for _, seed, feats, pairs in tasks]
            return [f.result() for f in futures]

    @classmethod
    def input_paths(cls, config):
        """The STS / SICK benchmark files."""
        return {f"benchmarks.{k}": v for k, v in config.benchmarks.items()}

    def evaluate(self, corpus) -> Report:
        """Numbers ``<model>.<benchmark>`` (Pearson's r) and, with ``shuffled_baseline``,
        ``shuffled.<model>.<benchmark>`` and their differences ``delta.<model>.<benchmark>``;
        with ``selections``, each prefixed by the selection's name, and ``<name>.pairs``; with
        ``seeds``, means over the seeds and their ``.min``, ``.max`` and ``.seed<N>``."""
        import torch

        c = self.config
        self.device = resolve_device(c.device, self.name)
        # read every benchmark before training, so a bad path fails in a second, not a minute
        benches = {name: read_similarity_set(path) for name, path in c.benchmarks.items()}
        if not benches:
            raise InputError(f"{self.name}: benchmarks is empty; name at least one STS or SICK "
                             f"file")
        seeds = c.seeds or [c.seed]
        selected = self._selected(corpus)
        tasks = self._tasks(selected, seeds)
        before = torch.get_num_threads()
        try:
            results = self._run_tasks(tasks, benches)
        finally:
            torch.set_num_threads(before)
        per_seed: dict[int, dict[str, float]] = {seed: {} for seed in seeds}
        for (prefix, seed, feats, _), result in zip(tasks, results):
            for key, value in result.items():
                per_seed[seed][f"{prefix}{feats}.{key}"] = value
        for seed, nums in per_seed.items():
            for sel in selected:
                p = f"{sel}." if sel else ""
                for feats in c.models if c.shuffled_baseline else ():
                    for name in benches:
                        nums[f"{p}delta.{feats}.{name}"] = (nums[f"{p}{feats}.{name}"]
                                                            - nums[f"{p}shuffled.{feats}.{name}"])
        numbers: dict[str, float] = {}
        for sel, candidates in selected.items():
            n = len(self._sample(candidates, seeds[0]))
            numbers[f"{sel}.pairs" if sel else "pairs"] = float(n)
        keys = list(per_seed[seeds[0]])
        for key in keys:
            values = [per_seed[seed][key] for seed in seeds]
            numbers[key] = sum(values) / len(values)
            if c.seeds:
                numbers[f"{key}.min"], numbers[f"{key}.max"] = min(values), max(values)
                numbers.update({f"{key}.seed{seed}": v for seed, v in zip(seeds, values)})
        return Report(numbers=numbers, summary=self._summary(numbers, selected, benches))

    def manifest_info(self):
        """The device the encoders were trained on."""
        return {"device": self.device} if getattr(self, "device", None) else {}

    def _summary(self, numbers: dict, selected: dict, benches: dict) -> str:
        """One row per selection and model (and shuffled floor): r x 100 on each benchmark, the
        mean (min-max) over the seeds when there are several."""
        c = self.config
        spread = bool(c.seeds) and len(c.seeds) > 1

        def cell(key: str) -> str:
            text = f"{100 * numbers[key]:.1f}"
            if spread:
                text += f" ({100 * numbers[key + '.min']:.1f}-{100 * numbers[key + '.max']:.1f})"
            return text

        rows = []
        for sel in selected:
            p = f"{sel}." if sel else ""
            pairs = int(numbers[f"{sel}.pairs" if sel else "pairs"])
            for shuffled in ("", "shuffled.") if c.shuffled_baseline else ("",):
                for feats in c.models:
                    rows.append([(f"{sel} " if sel else "") + shuffled + feats, str(pairs)]
                                + [cell(f"{p}{shuffled}{feats}.{n}") for n in benches])
        head = ["model", "pairs", *benches]
        widths = [max(len(r[i]) for r in rows + [head]) + 2 for i in range(len(head))]
        seeds = f"seeds {', '.join(map(str, c.seeds))} (mean, min-max)" if spread else \
            f"seed {(c.seeds or [c.seed])[0]}"
        out = [f"{c.epochs} epochs, M={c.megabatch}, {seeds}; Pearson's r x 100"]
        for r in [head] + rows:
            out.append(r[0].ljust(widths[0]) + "".join(x.rjust(w) for x, w in
                                                       zip(r[1:], widths[1:])))
        return "\n".join(out)
