"""The table of the low-resource back-translation experiment (benchmarks/studies/bt-multi30k/recipes/first-arms.yaml) from its
runs' train_and_test.v1 reports: BLEU and chrF per seed, the median, each seed's difference from
the bitext-only model of the same seed with its paired-bootstrap p-value, and the share of the gap
to the 29,000-real-pairs upper bound that the median closes.

The second table gives arms more than one update budget: for each arm the budget with the best
mean BLEU on Multi30k val (train_and_test.v1's valid_src/valid_ref) is chosen, without reading
the test set; the chosen arms are then compared on test2016 seed by seed against the bitext-only
model at its own chosen budget (sacrebleu's paired bootstrap, 1,000 resamples, as the evaluator
does), and the gap closed is measured to the upper bound at its chosen budget.

The third table is the best arm's models fine-tuned on the 5,000 real pairs (train_and_test.v1's
init_models): each fine-tuning configuration with its mean val BLEU, the one val chooses, and its
models seed by seed against the models they continue and against bitext only.

The fourth table is the best arm trained for 12,000 updates (the upper bound's val-chosen budget)
beside its 8,000: val chooses the budget, and the chosen models are compared seed by seed with
bitext only; the gap is measured to the upper bound at 12,000 updates (its run when it is here,
else its documented median, said so).

The fifth is the regularization check (issue #31's correction): each arm's dropout (0.1 or 0.3)
and budget chosen on val, the chosen arm against the chosen bitext-only models seed by seed, and
the gap to the upper bound at its chosen dropout.

The gap on one machine (``--one-machine``) takes each seed from a run of its own (one process a
seed, ``runs/bt-bitext-i-s1`` ...): bitext only, an arm and the upper bound, all trained on one
machine, since a fixed seed does not give the same model on another CPU (benchmarks/studies/bt-multi30k/history.md).

Run from the repository root after the arms:  .venv/bin/python benchmarks/bt_table.py
Two runs made apart, seed by seed:  .venv/bin/python benchmarks/bt_table.py --pair BASE RUN --seeds 1
The gap on one machine:  .venv/bin/python benchmarks/bt_table.py --one-machine \
    bt-bitext-i-s{seed} bt-lex-rep4-i-s{seed} bt-real29k-12k-i-s{seed}
"""

from __future__ import annotations

import gzip
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import shared_data, train_and_test_dir, train_and_test_run  # noqa: E402

ARMS = [("bitext only (5,000 pairs)", "bt-multi30k-bitext"),
        ("+ beam BT", "bt-multi30k-beam"),
        ("+ sampled BT (top-k 10)", "bt-multi30k-sampled"),
        ("+ tagged beam BT", "bt-multi30k-tagged"),
        ("+ beam BT, dual-xent filtered (worst 25 % out)", "bt-multi30k-filtered"),
        ("+ tagged beam BT, bitext x2", "bt-multi30k-tagged-up2"),
        ("29,000 real pairs (upper bound)", "bt-multi30k-real29k")]


def load(run: str) -> dict | None:
    """The train_and_test.v1 report and record of one run, or None when it has not run."""
    d = train_and_test_run(run)
    return d if d and d["models"] else None


def main() -> None:
    """Print the markdown table."""
    data = {run: load(run) for _, run in ARMS}
    med = {run: statistics.median(m["bleu"] for m in d["models"])
           for run, d in data.items() if d}
    base, top = med.get("bt-multi30k-bitext"), med.get("bt-multi30k-real29k")
    print("| arm | rows | BLEU seeds 1 / 2 / 3 | median | chrF median | per seed vs bitext only "
          "(p) | gap closed |")
    print("|---|---|---|---|---|---|---|")
    for label, run in ARMS:
        d = data[run]
        if d is None:
            print(f"| {label} | | not run | | | | |")
            continue
        ms = sorted(d["models"], key=lambda m: m["seed"])
        bleu = " / ".join(f"{m['bleu']:.2f}" for m in ms)
        chrf = statistics.median(m["chrf"] for m in ms)
        n = d["numbers"]
        keys = [(f"seed{m['seed']}_bleu_delta", f"seed{m['seed']}_bleu_p_value") for m in ms]
        per = ", ".join(f"{n[d]:+.2f} ({n[p]:.3f})" for d, p in keys if d in n)
        gap = ""
        if base is not None and top is not None and run not in ("bt-multi30k-bitext",
                                                                  "bt-multi30k-real29k"):
            gap = f"{(med[run] - base) / (top - base):.0%}"
        print(f"| {label} | {int(n['train_rows']):,} | {bleu} | {med[run]:.2f} | {chrf:.2f} | "
              f"{per} | {gap} |")


#: arm -> {update budget: run}, for the table of budgets chosen on val
BUDGETS = [("bitext only (5,000 pairs)", {2000: "bt-multi30k-bitext", 4000: "bt-multi30k-bitext-4k",
                                          8000: "bt-multi30k-bitext-8k"}),
           ("+ beam BT, dual-xent filtered (worst 25 % out)",
            {2000: "bt-multi30k-filtered", 4000: "bt-multi30k-filtered-4k",
             8000: "bt-multi30k-filtered-8k"}),
           ("+ beam BT from a reverse model of 4,000 updates, dual-xent filtered",
            {8000: "bt-multi30k-filtered-rev4k-8k"}),
           ("+ sampled BT (top-k 10) from that reverse model, dual-xent filtered",
            {8000: "bt-multi30k-sampled-filtered-rev4k-8k"}),
           ("+ tagged beam BT from that reverse model, dual-xent filtered",
            {8000: "bt-multi30k-tagged-filtered-rev4k-8k"}),
           ("+ beam BT from a reverse model with dropout 0.3 (8,000 updates), dual-xent filtered",
            {8000: "bt-multi30k-filtered-revd3-8k"}),
           ("+ 3 samples (top-k 10) per sentence from that reverse model, dual-xent filtered, "
            "bitext x2", {8000: "bt-multi30k-sampled3-up2-filtered-revd3-8k"}),
           ("+ 5 samples (top-k 10) per sentence from that reverse model, dual-xent filtered, "
            "bitext x3", {8000: "bt-multi30k-sampled5-up3-filtered-revd3-8k",
                          12000: "bt-multi30k-sampled5-up3-filtered-revd3-12k-s1"}),
           ("29,000 real pairs (upper bound)",
            {2000: "bt-multi30k-real29k", 8000: "bt-multi30k-real29k-8k",
             12000: "bt-multi30k-real29k-12k"})]


def _test_refs() -> list[str]:
    """The English references of test2016."""
    with gzip.open(shared_data("multi30k", "test_2016_flickr.en.gz"), "rt", encoding="utf-8") as fh:
        return [ln.rstrip("\n") for ln in fh]


def _hyp(run: str, seed: int) -> list[str]:
    """The test translations of one seed's model of ``runs/<run>``."""
    return (train_and_test_dir(run) / f"hyp-seed{seed}.txt").read_text(
        encoding="utf-8").splitlines()


def _summary(models: list[dict]) -> dict:
    """A run's figures from its models' records: the models by seed, the val BLEU mean (None
    when a model has no val score), the test BLEU by seed and the chrF median (the keys of a
    DOCUMENTED row, so :func:`_test_row` prints either)."""
    ms = sorted(models, key=lambda m: m["seed"])
    return {"models": ms, "test": [m["bleu"] for m in ms],
            "chrf": statistics.median(m["chrf"] for m in ms),
            "val": (statistics.fmean(m["valid_bleu"] for m in ms)
                    if all("valid_bleu" in m for m in ms) else None)}


def _test_row(f: dict) -> str:
    """The test columns of a table row: BLEU by seed, its median, the chrF median."""
    return (f"{' / '.join(f'{b:.2f}' for b in f['test'])} | {statistics.median(f['test']):.2f} | "
            f"{f['chrf']:.2f}")


def _seed_by_seed(base_run: str, run: str, models: list[dict], refs: list[str]) -> str:
    """Each seed's BLEU difference from ``base_run``'s model of the same seed, with the paired
    bootstrap p-value (sacrebleu, 1,000 resamples, as the evaluator does)."""
    from bitextforge.plugins.evaluation.mt_metrics import paired_bootstrap

    parts = []
    for m in models:
        base, system = paired_bootstrap(_hyp(base_run, m["seed"]), _hyp(run, m["seed"]),
                                        [refs])[1]["BLEU"]
        parts.append(f"{system.score - base.score:+.2f} (p {system.p_value:.3f})")
    return ", ".join(parts)


def budgets() -> None:
    """Print the table of update budgets, each arm's budget chosen by its mean val BLEU, and the
    chosen arms against the chosen bitext-only models, seed by seed."""
    refs = _test_refs()
    print("\n| arm | updates | val BLEU mean | test BLEU seeds 1 / 2 / 3 | median | chrF median |")
    print("|---|---|---|---|---|---|")
    chosen = {}
    for label, runs in BUDGETS:
        best = None
        loaded = {steps: load(run) for steps, run in runs.items()}
        ok = {steps: d for steps, d in loaded.items()
              if d is not None and all("valid_bleu" in m for m in d["models"])}
        # budgets are compared on the seeds they all have (a budget run with one seed is not
        # compared with another's mean of three)
        common = set.intersection(*({m["seed"] for m in d["models"]} for d in ok.values())) \
            if ok else set()
        uneven = any({m["seed"] for m in d["models"]} != common for d in ok.values())
        for steps, run in sorted(runs.items()):
            d = ok.get(steps)
            if d is None:
                print(f"| {label} | {steps:,} | not run (or without val) | | | |")
                continue
            f = _summary(d["models"])
            ms = f["models"]
            val_common = statistics.fmean(m["valid_bleu"] for m in ms if m["seed"] in common)
            if best is None or val_common > best[0]:
                best = (val_common, steps, run, ms)
            note = (f" (seed{'s' * (len(common) > 1)} {', '.join(map(str, sorted(common)))}, "
                    f"which every budget ran: {val_common:.2f})" if uneven else "")
            print(f"| {label} | {steps:,} | {f['val']:.2f}{note} | {_test_row(f)} |")
        if best is not None:
            chosen[label] = best
    if BUDGETS[0][0] not in chosen:
        return
    _, b_steps, b_run, b_ms = chosen[BUDGETS[0][0]]
    top = chosen.get(BUDGETS[-1][0])  # the upper bound, when it has run
    t_steps, t_ms = (top[1], top[3]) if top else (None, None)
    med = lambda ms: statistics.median(m["bleu"] for m in ms)
    spread = max(m["bleu"] for m in b_ms) - min(m["bleu"] for m in b_ms)
    print(f"\nChosen on val: bitext only {b_steps:,} updates (median {med(b_ms):.2f}), upper "
          + (f"bound {t_steps:,} (median {med(t_ms):.2f}; " if top else "bound not run (")
          + f"bitext-only seed spread {spread:.2f}).")
    for label in [label for label, _ in BUDGETS[1:-1] if label in chosen]:
        _, s_steps, s_run, s_ms = chosen[label]
        print(f"{label}, {s_steps:,} updates (median {med(s_ms):.2f}) against bitext only, seed "
              f"by seed: {_seed_by_seed(b_run, s_run, s_ms, refs)}; median difference {med(s_ms) - med(b_ms):+.2f} "
              f"BLEU" + (f"; gap closed {(med(s_ms) - med(b_ms)) / (med(t_ms) - med(b_ms)):.0%}"
                         if top else "") + ".")

#: the best arm (three samples per sentence, bitext x2, 8,000 updates), as run on 2026-11-27
BEST = "bt-best"
#: its fine-tunings on the 5,000 real pairs: label -> run (runs/<run>, all three seeds)
FINETUNED = [("1,000 updates, lr 5e-4", "bt-ft-1k-5e4"),
             ("2,000 updates, lr 5e-4", "bt-ft-2k-5e4"),
             ("1,000 updates, lr 1e-3", "bt-ft-1k-1e3"),
             ("1,000 updates, lr 5e-4, dropout 0.3", "bt-ft-1k-5e4-d3")]


def finetuned() -> None:
    """Print the fine-tuning table: val chooses the configuration; the chosen one is compared
    seed by seed with the models it continues and with bitext only at its own budget."""
    best, base = load(BEST), load("bt-multi30k-bitext-4k")
    if best is None or base is None:
        return
    print("\n| best arm, fine-tuned on the 5,000 real pairs | val BLEU mean | test BLEU seeds "
          "1 / 2 / 3 | median | chrF median |")
    print("|---|---|---|---|---|")
    rows = [("not fine-tuned (8,000 updates)", BEST, best)]
    rows += [(label, run, load(run)) for label, run in FINETUNED]
    chosen = None
    for label, run, d in rows:
        if d is None or len(d["models"]) != 3:
            print(f"| {label} | not run (or not all three seeds) | | | |")
            continue
        f = _summary(d["models"])
        if run != BEST and (chosen is None or f["val"] > chosen[0]):
            chosen = (f["val"], label, run, f["models"])
        print(f"| {label} | {f['val']:.2f} | {_test_row(f)} |")
    if chosen is None:
        return
    _, label, run, ms = chosen
    refs = _test_refs()
    for name, other in (("the models it continues", BEST),
                        ("bitext only at 4,000 updates", "bt-multi30k-bitext-4k")):
        print(f"Chosen on val: {label} (median {statistics.median(m['bleu'] for m in ms):.2f}); "
              f"against {name}, seed by seed: {_seed_by_seed(other, run, ms, refs)}.")


#: the best arm at 12,000 updates (runs/<run>, all three seeds)
BEST_12K = "bt-best-12k"
#: the upper bound at 12,000 updates: its run, and its median where that run is not on this
#: machine (benchmarks/studies/bt-multi30k/history.md, "Five samples, and the upper bound trained longer")
UPPER_12K = "bt-multi30k-real29k-12k"


def longer() -> None:
    """Print the best arm at 8,000 and 12,000 updates; val chooses; the chosen budget against
    bitext only seed by seed, and the share of the gap to the upper bound it closes."""
    base = load("bt-multi30k-bitext-4k")
    rows = [(8000, BEST, load(BEST)), (12000, BEST_12K, load(BEST_12K))]
    if base is None or any(d is None or len(d["models"]) != 3 for _, _, d in rows):
        return
    print("\n| best arm | updates | val BLEU mean | test BLEU seeds 1 / 2 / 3 | median | "
          "chrF median |")
    print("|---|---|---|---|---|---|")
    med = lambda ms: statistics.median(m["bleu"] for m in ms)
    chosen = None
    for steps, run, d in rows:
        f = _summary(d["models"])
        if chosen is None or f["val"] > chosen[0]:
            chosen = (f["val"], steps, run, f["models"])
        print(f"| three samples, bitext x2 | {steps:,} | {f['val']:.2f} | {_test_row(f)} |")
    _, steps, run, ms = chosen
    b_ms = base["models"]
    upper = load(UPPER_12K)
    top, where = ((med(upper["models"]), "its run") if upper else
                  (statistics.median(DOCUMENTED[UPPER_12K]["test"]),
                   "its documented median; the run is not on this machine"))
    print(f"Chosen on val: {steps:,} updates (median {med(ms):.2f}); against bitext only at "
          f"4,000 updates, seed by seed: {_seed_by_seed('bt-multi30k-bitext-4k', run, ms, _test_refs())}; "
          f"median difference {med(ms) - med(b_ms):+.2f} BLEU; gap closed "
          f"{(med(ms) - med(b_ms)) / (top - med(b_ms)):.0%} (upper bound at 12,000 updates: "
          f"{top:.2f}, {where}).")


#: issue #31's regularization check: each arm's dropout and budget chosen on val (label, dropout,
#: updates, run); a run's figures come from runs/ when it is here, else from DOCUMENTED. The arm's
#: rows share one synthetic corpus (one draw of the reverse model): at 12,000 updates
#: benchmarks/studies/bt-multi30k/recipes/best.yaml with max_steps 12000 (runs/bt-multi30k-best-12k), at 16,000 the
#: run of the section "The arm trained to 16,000 updates" (the best recipe's models), at 20,000
#: the runs of "Both sides at 20,000 updates" (the baseline recipe and the best recipe with
#: max_steps 20000), at 24,000 those of "Both sides at 24,000 updates"
REGULARIZED = {
    "bitext only": [(0.1, 4000, "bt-multi30k-bitext-4k"), (0.3, 4000, "bt-bitext-4k-d3"),
                    (0.3, 8000, "bt-bitext-8k-d3"), (0.3, 12000, "bt-bitext-12k-d3"),
                    (0.3, 16000, "bt-bitext-16k-d3"), (0.3, 20000, "bt-bitext-20k-d3"),
                    (0.3, 24000, "bt-bitext-24k-d3")],
    "the val rule's back-translation arm": [(0.1, 12000, "bt-multi30k-best-12k"),
                                            (0.3, 12000, "bt-sr12-d3"),
                                            (0.1, 16000, "bt-sr16-arm"),
                                            (0.1, 20000, "bt-sr20-arm"),
                                            (0.1, 24000, "bt-sr24-arm")],
    # the same arm with the Ding dictionary's word-for-word rows beside it (Hu et al. 2019;
    # benchmarks/studies/bt-multi30k/recipes/lex-arm.yaml): a resource the bitext-only baseline does not read
    "the arm + the dictionary's word-for-word rows": [(0.1, 24000, "bt-lex-arm")],
    # the same with the bitext read three times (benchmarks/studies/bt-multi30k/recipes/lex-rep3.yaml; rule V)
    "the arm + the dictionary's rows, bitext x3": [(0.1, 24000, "bt-lex-rep3")],
    # read four times (benchmarks/studies/bt-multi30k/recipes/lex-rep4.yaml; rule X: a tie with x3 on val)
    "the arm + the dictionary's rows, bitext x4": [(0.1, 24000, "bt-lex-rep4")],
    "29,000 real pairs (upper bound)": [(0.1, 12000, UPPER_12K), (0.3, 12000, "bt-real29k-12k-d3")],
}
#: the figures of the runs, for machines that lack them (benchmarks/studies/bt-multi30k/history.md, the back-translation
#: sections from "Is the bitext-only baseline regularized enough?" on): val mean, test BLEU by
#: seed, chrF median. A run on this machine replaces its row; where either side of a comparison
#: is documented only, the seed-by-seed line gives test differences without a paired test (the
#: translations are gone with the models). Every figure here was trained on an AMD EPYC (the two
#: used gave the same model for the one seed checked on both; an Intel Xeon gave others), so val's
#: choices are made on one CPU family; the Intel Xeon's 16,000-update run (val 28.25, test 28.58 /
#: 28.31 / 28.40) chose 16,000 in its day and is in benchmarks/studies/bt-multi30k/history.md only. One exception:
#: bt-lex-rep3's seed 3 was trained on an Intel Xeon beside bitext only's seed 3 there (val 28.47,
#: test 28.44), so its printed seed-3 difference against the AMD baseline (28.69) is not the
#: same-machine +4.16 of benchmarks/studies/bt-multi30k/history.md. bt-lex-rep4's three seeds were all trained on that
#: Intel Xeon (only its seed 3 beside bitext only's there: +4.78)
DOCUMENTED = {
    UPPER_12K: {"val": 37.37, "test": [37.50, 37.32, 37.54], "chrf": 56.67},
    "bt-multi30k-bitext-4k": {"val": 25.06, "test": [25.40, 24.82, 24.80], "chrf": 45.07},
    "bt-bitext-4k-d3": {"val": 25.32, "test": [24.66, 24.56, 25.31], "chrf": 45.06},
    "bt-bitext-8k-d3": {"val": 27.53, "test": [27.31, 27.12, 27.66], "chrf": 47.70},
    "bt-bitext-12k-d3": {"val": 27.78, "test": [28.10, 27.27, 27.61], "chrf": 48.18},
    "bt-bitext-16k-d3": {"val": 27.62, "test": [27.75, 28.12, 28.10], "chrf": 48.28},
    "bt-bitext-20k-d3": {"val": 28.10, "test": [28.10, 28.60, 27.92], "chrf": 48.59},
    "bt-bitext-24k-d3": {"val": 28.78, "test": [29.22, 28.33, 28.69], "chrf": 48.92},
    "bt-multi30k-best-12k": {"val": 30.44, "test": [31.08, 30.53, 30.25], "chrf": 49.91},
    "bt-sr16-arm": {"val": 30.92, "test": [30.66, 30.70, 31.07], "chrf": 49.89},
    "bt-sr20-arm": {"val": 31.00, "test": [30.34, 31.06, 31.38], "chrf": 50.17},
    "bt-sr24-arm": {"val": 31.10, "test": [30.93, 31.09, 30.42], "chrf": 50.09},
    "bt-sr12-d3": {"val": 29.39, "test": [29.42, 29.05, 29.20], "chrf": 48.36},
    "bt-real29k-12k-d3": {"val": 34.64, "test": [34.32, 34.83, 34.21], "chrf": 54.20},
    "bt-lex-arm": {"val": 32.11, "test": [31.91, 32.05, 32.24], "chrf": 51.14},
    "bt-lex-rep3": {"val": 32.63, "test": [32.67, 32.15, 32.59], "chrf": 51.74},
    "bt-lex-rep4": {"val": 32.89, "test": [33.00, 32.45, 33.22], "chrf": 52.05},
}


def _figures(run: str) -> tuple[str | None, dict] | None:
    """(``run`` when it is under runs/ with three seeds, else None; its {val, test, chrf}) for one
    row of REGULARIZED, from the run here or else from DOCUMENTED; None when neither has it."""
    d = load(run)
    if d is not None and len(d["models"]) == 3:
        return run, _summary(d["models"])
    return (None, DOCUMENTED[run]) if run in DOCUMENTED else None


def regularized() -> None:
    """Print each arm's dropout and budget as val chooses them, the chosen arm against the chosen
    bitext-only models seed by seed, and the share of the gap to the chosen upper bound.

    Val's choice is made on the documented val means where a row has them: a model trained again
    on another CPU gives other figures (benchmarks/studies/bt-multi30k/history.md, "The baseline and the arm on one
    machine"), so a row trained again here changes the figures of the chosen row, not which row
    is chosen."""
    med = statistics.median
    print("\n| arm | dropout | updates | val BLEU mean | test BLEU seeds 1 / 2 / 3 | median | "
          "chrF median |")
    print("|---|---|---|---|---|---|---|")
    chosen = {}
    for label, rows in REGULARIZED.items():
        for dropout, steps, run in rows:
            got = _figures(run)
            if got is None:
                print(f"| {label} | {dropout} | {steps:,} | not run | | | |")
                continue
            where, f = got
            doc = DOCUMENTED.get(run, {})
            doc_val = doc.get("val", f["val"])
            if label not in chosen or doc_val > chosen[label][0]:
                chosen[label] = (doc_val, dropout, steps, where, f["test"])
            if where is None:
                note = " (documented; the run is not on this machine)"
            elif abs(doc_val - f["val"]) >= 0.005:
                note = f" (val chose on the documented {doc_val:.2f}; this run trained here)"
            else:
                note = ""
            print(f"| {label} | {dropout} | {steps:,} | {f['val']:.2f}{note} | {_test_row(f)} |")
    names = list(REGULARIZED)
    if not all(n in chosen for n in names):
        return
    (_, bd, bs, b_run, b_test), (_, ud, us, _, u_test) = chosen[names[0]], chosen[names[-1]]
    base, top = med(b_test), med(u_test)
    print(f"\nChosen on val: bitext only dropout {bd} at {bs:,} updates (median {base:.2f}, seed "
          f"spread {max(b_test) - min(b_test):.2f}); the upper bound dropout {ud} at {us:,} "
          f"(median {top:.2f}).")
    ms = [{"seed": s} for s in (1, 2, 3)]
    for name in names[1:-1]:
        _, ad, as_, a_run, a_test = chosen[name]
        arm = med(a_test)
        if b_run and a_run:
            by_seed = _seed_by_seed(b_run, a_run, ms, _test_refs())
        else:
            by_seed = (", ".join(f"{a - b:+.2f}" for a, b in zip(a_test, b_test))
                       + " (test BLEU only: a side's models are not on this machine, no paired "
                         "test)")
        print(f"{name[:1].upper()}{name[1:]}: dropout {ad} at {as_:,} (median {arm:.2f}); "
              f"against bitext only, seed by seed: {by_seed}; median difference "
              f"{arm - base:+.2f} BLEU; gap closed {(arm - base) / (top - base):.0%}.")


def pair(base_run: str, run: str, seeds: list[int]) -> None:
    """Print ``run``'s models against ``base_run``'s of the same seeds (for runs made apart, such
    as one seed trained again on this machine)."""
    print(_seed_by_seed(base_run, run, [{"seed": s} for s in seeds], _test_refs()))


def one_machine(base: str, arm: str, upper: str, seeds: list[int]) -> None:
    """Bitext only, an arm and the upper bound, each seed from its own run (``base``, ``arm``
    and ``upper`` are run names with ``{seed}`` in them): their figures, the arm against bitext
    only seed by seed, and the share of the gap the arm's median closes."""
    rows, missing = {}, []
    for label, pattern in (("bitext only", base), ("arm", arm), ("upper bound", upper)):
        models = []
        for seed in seeds:
            d = load(pattern.format(seed=seed))
            found = [m for m in d["models"] if m["seed"] == seed] if d else []
            if not found:
                missing.append(pattern.format(seed=seed))
            models += found
        rows[label] = (pattern, models)
    if missing:
        sys.exit(f"bt_table.py: no model of its seed in runs/{', runs/'.join(missing)}")
    print("| row | runs | val BLEU mean | test BLEU by seed | median | chrF median | per seed vs bitext only |")
    print("|---|---|---|---|---|---|---|")
    med = {}
    for label, (pattern, models) in rows.items():
        f = _summary(models)
        med[label] = statistics.median(f["test"])
        vs = ""
        if label == "arm":
            refs = _test_refs()
            vs = ", ".join(_seed_by_seed(base.format(seed=m["seed"]), pattern.format(seed=m["seed"]),
                                         [m], refs) for m in f["models"])
        val = f"{f['val']:.2f}" if f["val"] is not None else "-"
        print(f"| {label} | `{pattern}` | {val} | {_test_row(f)} | {vs} |")
    gap = med["upper bound"] - med["bitext only"]
    closed = (med["arm"] - med["bitext only"]) / gap
    half = med["bitext only"] + gap / 2
    print(f"\nGap closed by the arm's median: {closed:.1%} ({med['arm']:.2f} - {med['bitext only']:.2f}) "
          f"/ ({med['upper bound']:.2f} - {med['bitext only']:.2f}); half the gap is a median of {half:.2f}")


if __name__ == "__main__":
    import argparse

    ap = argparse.ArgumentParser(description="Without options: every table. With --pair: one "
                                 "run's test2016 translations against another's, seed by seed "
                                 "(paired bootstrap).")
    ap.add_argument("--pair", nargs=2, metavar=("BASE_RUN", "RUN"),
                    help="two run names under runs/ (train_and_test.v1 reports)")
    ap.add_argument("--one-machine", nargs=3, metavar=("BASE", "ARM", "UPPER"),
                    help="run names with {seed} in them, one run a seed, all of one machine: "
                         "bitext only, the arm and the upper bound, and the gap the arm closes")
    ap.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3],
                    help="with --pair or --one-machine: the seeds to compare")
    args = ap.parse_args()
    if args.pair:
        pair(*args.pair, args.seeds)
    elif args.one_machine:
        one_machine(*args.one_machine, args.seeds)
    else:
        main()
        budgets()
        finetuned()
        longer()
        regularized()
