"""``expansion_curve.v1``: the learning curves of Nichols, Bond, Appling & Matsumoto,
*Paraphrasing Training Data for Statistical Machine Translation* (section 6, Figures 4-5 and
Table 4): BLEU against training-corpus size for each corpus expansion scheme (distributed,
first, varying) and number of paraphrases n, each compared with the unexpanded baseline (d.0/f.0)
of the same size by paired bootstrap resampling (Koehn 2004) and with the seed-to-seed spread.

The run's corpus holds the originals and their ranked paraphrases (a paraphrase step and no
weight step). For every size N the first N originals are taken (so the sets nest, as on a
learning curve), every scheme and n expands them with the registered weighter itself, and
``train_and_test.v1`` trains and tests one small NMT model per distinct expanded corpus with a
fixed update budget per size. Expansions that give the same rows (d.2 and f.2 always do) share one
model. The paper trained Moses phrase-based systems to convergence; here each size has a budget in
updates, the same for the baseline and the expanded corpora, so an expanded corpus trades passes
over the originals for passes over paraphrases.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from bitextforge import Evaluator, InputError, Report
from bitextforge.api import CorpusView, TsvWriter, stop_pool, write_atomic

from bitextforge.plugins.weighters import distinct_ranked

from .evaluators import TRAIN_SETTINGS, TRAINING_MODULES, TrainAndTestEvaluator, _SettingsBase

#: short labels of the paper's schemes (Table 3), used in point names such as ``d.4``
SCHEME_LABELS = {"distributed.v1": "d", "first.v1": "f", "varying.v1": "v"}
BASELINE = "base"


def scheme_label(name: str) -> str:
    """``d`` / ``f`` / ``v`` for the paper's schemes, the weighter's name for any other."""
    return SCHEME_LABELS.get(name, name)


def read_groups(corpus) -> list[list[dict[str, Any]]]:
    """The corpus as groups of rows sharing an ``id`` (contiguous, as a run writes them), each
    row a dict of every column, in corpus order."""
    groups: list[list[dict[str, Any]]] = []
    last = None
    for batch in corpus.iter_batches():
        names = list(batch)
        for values in zip(*(batch[c] for c in names)):
            row = dict(zip(names, values))
            if row["id"] != last:
                groups.append([])
                last = row["id"]
            groups[-1].append(row)
    return groups


def expand(groups: list[list[dict[str, Any]]], weighter) -> list[dict[str, Any]]:
    """The training rows ``weighter`` makes of ``groups``, each with its weight."""
    out = []
    for group in groups:
        for i, w in weighter.weight(group):
            out.append({**group[i], "weight": float(w)})
    return out


class ExpansionCurveEvaluator(Evaluator):
    """Nichols et al.'s learning curve (Figures 4-5, Table 4): for each training size (the first
    N originals of the run's corpus) train a small NMT model with ``train_and_test.v1`` on the
    originals alone (d.0/f.0) and on their expansions by each scheme (``distributed.v1``,
    ``first.v1``, ``varying.v1``) at each n; report BLEU and chrF, the difference from the same
    size's baseline with its paired bootstrap p-value, whether it exceeds the baseline's
    seed-to-seed spread (with two or more ``seeds``), and plot BLEU against size (log scale).

    The corpus must still hold the paraphrases as separate variants (no weight step before this
    evaluator). Models, per-point corpora and ``curve.json`` go to ``model_dir``; a point already
    trained on the same corpus with the same settings is reused, so an interrupted curve resumes.
    """

    name = "expansion_curve.v1"
    extra = "nmt"

    class Config(_SettingsBase):
        """Options of expansion_curve.v1: the sizes, schemes and n of the curve, the update
        budget, the test set, the train-nmt model settings (train_and_test.v1's names and
        defaults), seeds, significance and the plot."""

        test_src: str = Field(description="Test source file (.gz ok), in the corpus's src "
                              "language.")
        test_ref: str = Field(description="Test reference file, line-aligned with test_src.")
        src_lang: str = Field("src", description="Source language code of the models.")
        tgt_lang: str = Field("tgt", description="Target language code of the models.")
        sizes: list[int] = Field(description="Training sizes in original pairs: the first N "
                                 "originals of the corpus, smallest first.", min_length=1)
        max_steps: list[int] = Field(description="Update budget per size: one value for every "
                                     "size, or one per size.", min_length=1)
        schemes: list[str] = Field(["distributed.v1", "first.v1", "varying.v1"],
                                   description="Expansion weighters (registered names with an "
                                   "option n).", min_length=1)
        n: list[int] = Field([2, 4], description="Paraphrases per original (the paper's n, at "
                             "least 1); the n = 0 baseline is always trained.", min_length=1)
        seeds: list[int] = Field([1], min_length=1, description="The first seed trains every "
                                 "point; every seed trains the baseline of each size, whose "
                                 "BLEU spread (max - min) marks differences within seed noise.")
        beam: int = Field(1, ge=1, description="Beam size of the test translations (1: greedy).")
        compute_type: str | None = Field(None, description="ctranslate2 quantization of the test "
                                         "decoding (default int8 on CPU).")
        bootstrap_samples: int = Field(1000, gt=0, description="Paired bootstrap resamples.")
        bootstrap_seed: int = Field(12345, description="Seed of the resampling.")
        model_dir: str | None = Field(None, description="Where point corpora, models and "
                                      "curve.json go (default: expansion_curve/ in the run "
                                      "directory).")
        plot: str | None = Field(None, description="PNG of BLEU against size (default: "
                                 "expansion-curve.png in the run directory).")
        workers: int = Field(1, ge=1, description="Train this many models at once, one process "
                             "each with `threads` torch threads (2 with threads: 1 on 2 cores); "
                             "testing and comparing stay sequential.")

        @field_validator("sizes")
        @classmethod
        def _sizes_increase(cls, v):
            if any(s <= 0 for s in v) or v != sorted(set(v)):
                raise ValueError("sizes must be positive and strictly increasing")
            return v

        @field_validator("max_steps", "n")
        @classmethod
        def _positive(cls, v):
            if any(x <= 0 for x in v):
                raise ValueError("every value must be at least 1")
            return v

        @field_validator("schemes")
        @classmethod
        def _schemes_are_expansions(cls, v):
            from bitextforge.api import get_registry

            reg = get_registry()
            for name in v:
                cls_ = reg.get("weighter", name)
                if "n" not in cls_.Config.model_fields:
                    raise ValueError(f"weighter {name} has no option n")
            return v

        @model_validator(mode="after")
        def _steps_per_size(self):
            if len(self.max_steps) not in (1, len(self.sizes)):
                raise ValueError(f"max_steps: give one value or one per size ({len(self.sizes)})")
            return self

    @classmethod
    def input_paths(cls, config):
        """The test files and a given sentencepiece model."""
        return {"test_src": config.test_src, "test_ref": config.test_ref, "spm": config.spm}

    def _steps(self, i: int) -> int:
        steps = self.config.max_steps
        return steps[0] if len(steps) == 1 else steps[i]

    def _evaluator(self, steps: int, seeds: list[int], model_dir: Path,
                   baseline: Path | None = None, spread: tuple | None = None):
        c = self.config
        kw = {k: getattr(c, k) for k in TRAIN_SETTINGS}
        kw.update(test_src=c.test_src, test_ref=c.test_ref, src_lang=c.src_lang,
                  tgt_lang=c.tgt_lang, max_steps=steps, seeds=seeds, model_dir=str(model_dir),
                  beam=c.beam, compute_type=c.compute_type,
                  bootstrap_samples=c.bootstrap_samples, bootstrap_seed=c.bootstrap_seed)
        if baseline is not None:
            kw["baseline"] = str(baseline)
        if spread is not None:
            kw["bleu_spread"], kw["chrf_spread"] = spread
        return TrainAndTestEvaluator(TrainAndTestEvaluator.Config(**kw))

    def evaluate(self, corpus) -> Report:
        """Train and test every point of the curve, write curve.json and the plot."""
        from bitextforge.api import get_registry

        c = self.config
        run_dir = Path(corpus.path).parent
        root = Path(c.model_dir) if c.model_dir else run_dir / "expansion_curve"
        groups = read_groups(corpus)
        if len(groups) < c.sizes[-1]:
            raise InputError(f"{self.name} sizes: the largest size is {c.sizes[-1]} originals but "
                             f"the run's corpus {corpus.path} has {len(groups)}")
        reg = get_registry()
        weighters = {(s, n): reg.get("weighter", s)(reg.get("weighter", s).Config(n=n))
                     for s in c.schemes for n in c.n}
        # how many distinct paraphrases (the paper's m) the originals of the largest size have
        ms = [len(distinct_ranked(g)) - 1 for g in groups[:c.sizes[-1]]]
        numbers: dict[str, float] = {
            "paraphrases_per_original": sum(ms) / len(ms),
            "originals_with_a_paraphrase": sum(m > 0 for m in ms) / len(ms),
            "originals_with_4_paraphrases": sum(m >= 4 for m in ms) / len(ms)}
        # plan: every point's corpus, identical expansions sharing one model
        plan: list[dict[str, Any]] = []
        for i, size in enumerate(c.sizes):
            part, steps = groups[:size], self._steps(i)
            base_dir = root / str(size) / BASELINE
            self._write(base_dir, [{**g[distinct_ranked(g)[0]], "weight": 1.0} for g in part])
            plan.append({"size": size, "point": "d.0/f.0", "scheme": None, "n": 0,
                         "steps": steps, "rows": len(part), "dir": base_dir})
            # v with no paraphrase to add, or any n where no original has one, is the baseline
            seen: dict[str, str] = {_rows_key([{**g[distinct_ranked(g)[0]], "weight": 1.0}
                                               for g in part]): "d.0/f.0"}
            for n in c.n:
                for s in c.schemes:
                    label = f"{scheme_label(s)}.{n}"
                    rows = expand(part, weighters[(s, n)])
                    key = _rows_key(rows)
                    point = {"size": size, "point": label, "scheme": s, "n": n, "steps": steps,
                             "rows": len(rows), "base": base_dir}
                    if key in seen:
                        point["same_as"] = seen[key]
                    else:
                        seen[key] = label
                        point["dir"] = root / str(size) / label
                        self._write(point["dir"], rows)
                    plan.append(point)
        plot = Path(c.plot) if c.plot else run_dir / "expansion-curve.png"
        points: list[dict[str, Any]] = []
        pool, futures = self._start_training(plan) if c.workers > 1 else (None, {})
        try:
            # size by size, so an interrupted curve keeps its finished sizes in curve.json and
            # the plot; the workers meanwhile train the next sizes
            for size in c.sizes:
                for f in futures.get(size, []):
                    f.result()
                points += self._evaluate([p for p in plan if p["size"] == size], root)
                write_atomic(root / "curve.json", json.dumps(
                    {"test_src": c.test_src, "test_ref": c.test_ref, "sizes": c.sizes,
                     "seeds": c.seeds, "points": points}, indent=2) + "\n")
                plot_curve(points, plot, title=f"{self.name}: {Path(c.test_ref).name}, "
                                               f"seed {c.seeds[0]}")
        except BaseException:
            if pool is not None:
                stop_pool(pool)  # not wait for every remaining training
            raise
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
        for p in points:
            for k in ("bleu", "chrf", "rows", "bleu_delta", "bleu_p_value", "chrf_delta",
                      "chrf_p_value", "bleu_spread"):
                if k in p:
                    numbers[f"{p['size']}.{p['point']}.{k}"] = float(p[k])
        summary = (f"{numbers['paraphrases_per_original']:.2f} distinct paraphrases per "
                   f"original ({100 * numbers['originals_with_a_paraphrase']:.1f} % with one or "
                   f"more, {100 * numbers['originals_with_4_paraphrases']:.1f} % with 4 or more)\n"
                   + summarize(points))
        return Report(numbers=numbers, summary=summary)

    def _start_training(self, plan: list[dict[str, Any]]):
        """Start training every model of the plan in ``workers`` processes (each with
        ``threads`` torch threads), smallest size first and within a size the largest corpus
        first; returns the pool and each size's futures. The sequential pass over a size finds
        its models trained and only decodes and compares."""
        from bitextforge.api import say, worker_pool

        c = self.config
        jobs = []
        for p in plan:
            if "dir" not in p:
                continue
            seeds = c.seeds if p["n"] == 0 else c.seeds[:1]
            jobs += [(p["size"], p["steps"], p["rows"], str(p["dir"]), seed) for seed in seeds]
        jobs.sort(key=lambda j: (j[0], -j[1] * j[2]))
        say(self.name, f"training {len(jobs)} models in {c.workers} processes")
        pool = worker_pool(c.workers, (*TRAINING_MODULES, __name__))
        futures: dict[int, list] = {}
        for size, steps, _, d, seed in jobs:
            cfg = self._evaluator(steps, [seed], Path(d)).config.model_dump()
            futures.setdefault(size, []).append(pool.submit(_train_point, cfg, d))
        return pool, futures

    def _evaluate(self, plan: list[dict[str, Any]], root: Path) -> list[dict[str, Any]]:
        """Train (or reuse) and test each point in order, the baseline of a size first; every
        expanded point is compared with its size's baseline."""
        from bitextforge.api import say

        c = self.config
        points: list[dict[str, Any]] = []
        spread: tuple | None = None
        for p in plan:
            point = {k: v for k, v in p.items() if k not in ("dir", "base")}
            if "same_as" in p:
                twin = next(q for q in points if q["size"] == p["size"]
                            and q["point"] == p["same_as"])
                point.update({k: twin[k] for k in twin if k not in point
                              and k not in ("bleu_spread", "chrf_spread", "bleu_mean")})
                points.append(point)
                continue
            point["dir"] = str(p["dir"].relative_to(root))
            corpus = CorpusView(p["dir"] / "corpus.tsv", numeric=["weight"])
            if p["n"] == 0:
                say(self.name, f"size {p['size']}: baseline d.0/f.0, {p['steps']} updates, "
                               f"seeds {c.seeds}")
                r = self._evaluator(p["steps"], c.seeds, p["dir"]).evaluate(corpus)
                spread = ((r.numbers["bleu_spread"], r.numbers["chrf_spread"])
                          if len(c.seeds) > 1 else None)
                if spread:
                    point.update(bleu_spread=spread[0], chrf_spread=spread[1],
                                 bleu_mean=r.numbers["bleu_mean"])
            else:
                say(self.name, f"size {p['size']}: {p['point']}, {p['rows']} rows, "
                               f"{p['steps']} updates")
                r = self._evaluator(p["steps"], c.seeds[:1], p["dir"], baseline=p["base"],
                                    spread=spread).evaluate(corpus)
                for k in ("bleu_delta", "bleu_p_value", "chrf_delta", "chrf_p_value",
                          "bleu_within_seed_spread"):
                    if k in r.numbers:
                        point[k] = r.numbers[k]
            point.update(bleu=r.numbers["bleu"], chrf=r.numbers["chrf"])
            points.append(point)
        return points

    @staticmethod
    def _write(point_dir: Path, rows: list[dict[str, Any]]) -> None:
        """A point's corpus.tsv (id, variant, origin, src, tgt, weight), as a run writes one."""
        point_dir.mkdir(parents=True, exist_ok=True)
        w = TsvWriter(point_dir / "corpus.tsv", extra=["id", "variant", "origin", "src", "tgt",
                                                       "weight"])
        cols = ("id", "variant", "origin", "src", "tgt", "weight")
        w.write({k: [r[k] for r in rows] for k in cols})
        w.finish()
        w.file.commit()


def _rows_key(rows: list[dict[str, Any]]) -> str:
    """What makes two expanded corpora the same: the rows (id, variant) and weights, in order."""
    return hashlib.sha256(json.dumps([[r["id"], r["variant"], r["weight"]] for r in rows])
                          .encode()).hexdigest()


def summarize(points: list[dict[str, Any]]) -> str:
    """The curve as Table 4 prints it: one line per point, BLEU with its difference from the
    baseline of the same size, the paired bootstrap p-value and the seed-spread verdict."""
    lines = [f"{'size':>6} {'point':<8} {'rows':>7} {'BLEU':>6} {'delta':>6} {'p':>7} "
             f"{'chrF':>6}  note"]
    for p in points:
        if p["n"] == 0:
            note = (f"seed spread {p['bleu_spread']:.2f} (mean {p['bleu_mean']:.2f})"
                    if "bleu_spread" in p else "")
            lines.append(f"{p['size']:>6} {p['point']:<8} {p['rows']:>7} {p['bleu']:>6.2f} "
                         f"{'':>6} {'':>7} {p['chrf']:>6.2f}  {note}")
            continue
        note = f"same corpus as {p['same_as']}" if "same_as" in p else ""
        if "bleu_within_seed_spread" in p and "same_as" not in p:
            note = "within seed spread" if p["bleu_within_seed_spread"] else "beyond seed spread"
        delta = f"{p['bleu_delta']:>+6.2f}" if "bleu_delta" in p else f"{'':>6}"
        pval = f"{p['bleu_p_value']:>7.4f}" if "bleu_p_value" in p else f"{'':>7}"
        lines.append(f"{p['size']:>6} {p['point']:<8} {p['rows']:>7} {p['bleu']:>6.2f} "
                     f"{delta} {pval} {p['chrf']:>6.2f}  {note}")
    return "\n".join(lines)


def plot_curve(points: list[dict[str, Any]], target: Path, title: str = "") -> None:
    """BLEU against training size on a logarithmic axis, one line per point label (d.0/f.0
    black, as in the paper's Figures 4-5; colour by n, line style by scheme); written beside the target and moved over it, so no
    half-written PNG is left."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    lines: dict[str, list[tuple[int, float]]] = {}
    style: dict[str, tuple[Any, str]] = {}
    ns = sorted({p["n"] for p in points if p["n"]})
    colours = plt.get_cmap("tab10")
    dashes = {"d": "-", "f": "--", "v": ":"}
    for p in points:
        lines.setdefault(p["point"], []).append((p["size"], p["bleu"]))
        if p["n"]:
            # colour by n, line style by scheme, so lines of equal corpora stay visible
            style[p["point"]] = (colours(ns.index(p["n"])),
                                 dashes.get(scheme_label(p["scheme"]), "-."))
    fig, ax = plt.subplots(figsize=(6.5, 4.5))
    for label, xy in lines.items():
        xs, ys = zip(*xy)
        if label == "d.0/f.0":
            ax.plot(xs, ys, color="black", marker="s", linewidth=2, label=label, zorder=3)
        else:
            colour, dash = style[label]
            ax.plot(xs, ys, color=colour, linestyle=dash, marker="o", linewidth=1.2, alpha=0.85,
                    label=label)
    ax.set_xscale("log")
    sizes = sorted({p["size"] for p in points})
    ax.set_xticks(sizes)
    ax.set_xticklabels([f"{s // 1000}k" if s % 1000 == 0 else str(s) for s in sizes])
    ax.minorticks_off()
    ax.set_xlabel("training corpus size (original pairs, log scale)")
    ax.set_ylabel("BLEU")
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=8)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(target.name + ".part")
    fig.savefig(tmp, format="png", dpi=100, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, target)


def _train_point(config: dict[str, Any], model_dir: str) -> None:
    """Train (or find trained) one point's model in a worker process."""
    TrainAndTestEvaluator(TrainAndTestEvaluator.Config(**config)).evaluate(
        CorpusView(Path(model_dir) / "corpus.tsv", numeric=["weight"]))
