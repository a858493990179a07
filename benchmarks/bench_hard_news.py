"""A harder validation bench for the pair classifier (issue #33): real free translations.

The ParaCrawl design rounds chose classifiers on FLORES-200 devtest with synthetic noise, and
since the seventh round every design scores 0.953-0.961 there: the bench can no longer tell
designs apart, while on held-out crawl data free translations and machine translations are what
the classifier misses. This bench adds noise that people made. newstest2019 en->de
(``wmt19-ende-multiref``) has, beside the WMT reference, the human references of Freitag,
Grangier and Caswell (2020, "BLEU might be Guilty but References are not Innocent", EMNLP):

- ``paraphrase_wmt`` / ``paraphrase_ar``: the WMT reference and the AR reference paraphrased "as
  much as possible" by linguists: free translations, which ParaCrawl's annotators mark F, not V;
- ``reference_ar`` / ``reference_ntrex``: two independent, valid translations (AR, and NTREX-128's
  German). They are controls: a classifier that judges adequacy, not the WMT translator's style,
  scores them near 0.5 against the WMT reference.

Clean pairs are the source with the WMT reference on even lines; each kind takes the odd lines
(so no source is on both sides of an AUC), as FLORES's noise does, and the nine synthetic kinds
of the design rounds (seed 7) are there too. Every set is scored in a call of its own (clean rows
and that kind's rows together), because the encoder's margin takes its neighbours from the batch
and a sentence's paraphrase would be its nearest neighbour. The paired win rate is the share of
all 1,997 lines where the WMT reference outscores its own paraphrase (ties count half).

The classifiers are benchmarks/studies/paracrawl-filter/recipes/filter.yaml's designs (the eleventh and the fourth)
trained for en-de the way the recipe trains them for en-fr (FreeDict en-de as dictionary and
eflomal prior, cut to en-cs's size; tables on Multi30k en-de), except that the news pairs (NTREX,
whose source is newstest2019's) are the first 1,997 lines of newstest2017 en-de, so no bench
source is seen in training. FLORES en-de with the nine kinds is scored too, to compare with the
en-fr / en-cs figures.

    apt-get install dict-freedict-eng-deu dict-freedict-deu-eng
    .venv/bin/python scripts/freedict_tsv.py en de models/freedict-en-de.tsv.gz
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hard_news.py
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hard_news.py --combine
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hard_news.py --tilt   # or --tilt-half
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hard_news.py --ted
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hard_news.py --mistranslated
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/bench_hard_news.py --word-for-word   # or -budget

``--combine`` (an exploration, 2026-11-30): on newstest2019 IBM-1 P(target | source) alone ranks
the free translations above the whole classifier, which never saw such noise in training. It
scores the fixed sum logit(p) + z(IBM-1), z standardised over all pairs of the scored set (no
label), against the classifier alone, on newstest2019 (where the idea came from) and on
newstest2020 en-de (1,418 lines, whose WMT reference Google paraphrased too; read only for this
check), each with the nine synthetic kinds and the paraphrases. ``--tilt`` / ``--tilt-half``
(the twelfth and thirteenth ParaCrawl rounds) measure the same idea as the pair classifier's
``tilt`` option, z from the training rows, at weight 1 and 0.5 (docs/benchmarks.md). ``--wmt``
(after ``bitextforge prepare benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml``) scores that recipe's de -> en
classifier and the same with the tilt at 0.5, the sides turned: a measurement, since that
recipe's own measure is BLEU of a model trained on its selection. ``--ted`` (a measurement,
2026-12-01) scores real machine translation: the MQM-rated WMT21 TED talks en-de (Freitag et al.
2021, "Experts, Errors, and Context"; ``mqm-ted-ende``), 13 systems' output against the human
reference, and error-free output against output with a major error (8 minutes on one core).
``--mistranslated`` (rule AI, 2026-12-01, the fourteenth ParaCrawl round) compares the thirteenth
design for en-de with the same plus ``mistranslated`` negatives on FLORES, newstest and TED, and on
real translation errors: MLQE-PE en-de's train split (Wikipedia, WMT20 QE; dev is not read), the
rows whose post-edit changed the MT substantially (TER of the MT against the post-edit >= 0.3);
clean is the source with its post-edit (detokenised) on even rows, noise the source with the MT
on odd rows, and the paired win rate is the share of all those rows where the post-edit
outscores the MT it corrected. ``--word-for-word`` (rule AK, the fifteenth round) does the same
for ``word_for_word`` negatives, and adds TED's human reference against the systems' MT;
``--word-for-word-budget`` (rule AL) the same with 9,332 clean pairs (666 negatives per old kind).
``--post-edit-features`` prints, for each feature of the
thirteenth design, how often the post-edit scores higher than its MT and how often lower.

About 25 minutes on one core the first time (the two classifiers, 8 and 3 minutes, and the
scoring); the models stay in models/ and later runs only score.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from _common import fail, kind_aucs, multi30k_tables, paired_bootstrap, shared_data
from bench_paracrawl_lexical import (LOOSE, eleventh_design, flores_table, recipe_classifier,
                                     tilted, trained, with_budget, with_mistranslated,
                                     with_word_for_word)

#: FreeDict en-de (5.6 million entry pairs from Debian's packages) and the sample of it the bench
#: uses: as many entries as en-cs's (148,873; en-fr's has 17,558), so the dictionary is not
#: stronger than for the pairs the recipe serves
FREEDICT = "models/freedict-en-de.tsv.gz"
DICTIONARY = "models/freedict-en-de-sample.tsv.gz"
SAMPLE = 148873
TABLES = "models/lexical-ende-dict"
NEWS = "runs/hard-news/newstest2017-1997"

#: the real kinds: name -> the newstest2019 German file of the odd lines
REAL = {"paraphrase_wmt": "newstest2019.ref-google-wmtp.de",
        "paraphrase_ar": "newstest2019.ref-google-arp.de",
        "reference_ar": "newstest2019.ref-google-ar.de",
        "reference_ntrex": "newstest2019.ref-ntrex.de"}


def lines(*parts: str) -> list[str]:
    """The lines of a shared data file."""
    return shared_data(*parts).read_text(encoding="utf-8").split("\n")[:-1]


def news_pairs() -> str:
    """Write (once) the first 1,997 lines of newstest2017 en-de, NTREX's size; the file stem."""
    en, de = Path(NEWS + ".en"), Path(NEWS + ".de")
    if not de.exists():
        en.parent.mkdir(parents=True, exist_ok=True)
        for path, lang in ((en, "en"), (de, "de")):
            text = lines("wmt-newstest-deen", f"newstest2017.{lang}")[:1997]
            path.write_text("\n".join(text) + "\n", encoding="utf-8")
    return NEWS


def german(cfg: dict, output: str) -> dict:
    """``cfg`` (the recipe's en-fr classifier options) for en-de: German data, dictionary,
    tables and language, newstest2017 in place of NTREX; written to ``output``."""
    m = "../shared/data/multi30k" if Path("../shared/data").exists() else str(
        shared_data("multi30k"))
    features = []
    for f in cfg["features"]:
        w = dict(f["with"])
        if w.get("tgt_lang") == "fr":
            w["tgt_lang"] = "de"
        if "dictionary" in w:
            w.update(dictionary=DICTIONARY, dictionary_langs=["en", "de"])
        if "tables" in w:
            w["tables"] = TABLES
        features.append({"filter": f["filter"], "with": w})
    stem = news_pairs()
    return {**cfg, "output": output, "features": features,
            "corpus": [[f"{m}/train.en.gz", f"{m}/train.de.gz"], [stem + ".en", stem + ".de"]]}


def dictionary() -> str:
    """Write (once) ``SAMPLE`` random entries of FreeDict en-de (seed 1), header kept; the path."""
    import gzip
    import random

    if Path(DICTIONARY).exists():
        return DICTIONARY
    if not Path(FREEDICT).exists():
        raise fail(f"{FREEDICT} is missing: apt-get install dict-freedict-eng-deu "
                   f"dict-freedict-deu-eng, then scripts/freedict_tsv.py en de {FREEDICT}")
    with gzip.open(FREEDICT, "rt", encoding="utf-8") as fh:
        head, *rows = fh.readlines()
    rows = random.Random(1).sample(rows, SAMPLE)
    with gzip.open(DICTIONARY + ".tmp", "wt", encoding="utf-8") as fh:
        fh.writelines([head] + rows)
    Path(DICTIONARY + ".tmp").rename(DICTIONARY)
    return DICTIONARY


def designs() -> dict[str, str]:
    """Train (once) the two designs for en-de; label -> model path."""
    dictionary()
    multi30k_tables("de", TABLES, DICTIONARY)
    return {"eleventh design": trained(german(
                eleventh_design("fr"), "models/hardnews-ende-ct2-draws3.joblib")),
            "fourth design (no margin)": trained(german(
                recipe_classifier("fr", margin=False), "models/hardnews-ende-fourth.joblib"))}


def score(model: str, src: list[str], tgt: list[str]) -> np.ndarray:
    """``model``'s probability of each pair, in one call (one set of batch neighbours)."""
    from bitextforge.plugins.lexical.pair_classifier import PairClassifierFilter

    filt = PairClassifierFilter(PairClassifierFilter.Config(model=model))
    try:
        return np.array(filt.score({"src": src, "tgt": tgt}))
    finally:
        filt.close()


def newstest(year: str) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """newstest``year`` en-de: the English, the WMT reference and the other German translations
    of the bench (every kind of ``REAL`` for 2019; the paraphrase for 2020)."""
    if year == "2019":
        return (lines("wmt19-ende-multiref", "newstest2019.src.en"),
                lines("wmt19-ende-multiref", "newstest2019.ref-wmt.de"),
                {k: lines("wmt19-ende-multiref", f) for k, f in REAL.items()})
    return (lines("wmt-newstest-deen", "newstest2020-ende.en"),
            lines("wmt-newstest-deen", "newstest2020-ende.de"),
            {"paraphrase_wmt": lines("wmt19-ende-multiref", "newstest2020.ref-google-wmtp.de")})


def main() -> None:
    """Print FLORES en-de and the newstest2019 table for each design, and the differences."""
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.lexical.pair_classifier import make_negatives

    models = designs()
    flores_table("de", models)
    en, wmt, real = newstest("2019")
    cs, ct = en[0::2], wmt[0::2]
    ws, wt, wk = make_negatives(en[1::2], wmt[1::2], LOOSE, 7)
    y = np.r_[np.ones(len(cs)), np.zeros(len(en[1::2]))]
    table, scores = {}, {}
    for label, model in models.items():
        p = score(model, cs + ws, ct + wt)
        row = [roc_auc_score(y, p)] + kind_aucs(p, len(cs), np.array(wk), LOOSE)
        for kind, de in real.items():
            scores[label, kind] = score(model, cs + en[1::2], ct + de[1::2])
            row.append(roc_auc_score(y, scores[label, kind]))
        a, b = score(model, en, wmt), score(model, en, real["paraphrase_wmt"])
        row.append(float(np.mean((a > b) + 0.5 * (a == b))))
        table[label] = row
    print(f"\nnewstest2019 en-de: {len(cs)} clean (WMT reference, even lines) against "
          f"{len(ws)} odd lines per set; ROC-AUC")
    cols = ["synthetic, all", *LOOSE, *REAL, "paired win rate vs paraphrase_wmt"]
    print("| classifier | " + " | ".join(cols) + " |\n|---|" + "---|" * len(cols))
    for label, row in table.items():
        print(f"| {label} | " + " | ".join(f"{v:.3f}" for v in row) + " |")
    first, second = models
    for kind in REAL:
        d = paired_bootstrap(y, scores[first, kind], scores[second, kind])
        print(f"{first} minus {second}, {kind}: {d.mean():+.4f} "
              f"[{np.percentile(d, 2.5):+.4f}, {np.percentile(d, 97.5):+.4f}]")
    features(models[first], cs, ct, en, real)


def features(model: str, cs, ct, en, real) -> None:
    """ROC-AUC of each of ``model``'s feature columns alone on the real kinds (raw values: above
    0.5 the feature is higher on the WMT reference), to say which signal separates a free
    translation from the WMT reference."""
    import joblib
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.lexical.pair_classifier import SURFACE, FeatureFilter, FeatureScorer

    saved = joblib.load(model)
    specs = [FeatureFilter(**f) if isinstance(f, dict) else f for f in saved["features"]]
    scorer = FeatureScorer(specs, saved.get("surface", SURFACE))
    try:
        cols = {}
        for kind, de in real.items():
            X = scorer.features(cs + en[1::2], ct + de[1::2], batch=len(cs) + len(de[1::2]))
            y = np.r_[np.ones(len(cs)), np.zeros(len(de[1::2]))]
            for j, name in enumerate(scorer.names):
                if np.ptp(X[:, j]) > 0:
                    cols.setdefault(name, {})[kind] = roc_auc_score(y, X[:, j])
    finally:
        scorer.close()
    print("\nsingle features of the first design, ROC-AUC (the WMT reference as clean; below 0.5:"
          " the feature is higher on the other translation)")
    print("| feature | " + " | ".join(real) + " |\n|---|" + "---|" * len(real))
    for name, per in cols.items():
        print(f"| {name} | " + " | ".join(f"{per.get(k, float('nan')):.3f}" for k in real) + " |")


def ibm1(model: str, src: list[str], tgt: list[str], margin: int | None = None) -> np.ndarray:
    """The IBM-1 P(target | source) feature of ``model`` (its src2tgt lexical_translation.v1
    options; ``margin``, when given, in place of the model's), scored on the pairs in one
    call."""
    import joblib

    from bitextforge.api import get_registry

    spec = next(f for f in joblib.load(model)["features"]
                if f["filter"] == "lexical_translation.v1" and f["with"]["direction"] == "src2tgt")
    cls = get_registry().get("filter", spec["filter"])
    options = spec["with"] if margin is None else {**spec["with"], "margin": margin}
    filt = cls(cls.Config(**options))
    try:
        return np.array(filt.score({"src": src, "tgt": tgt}), dtype=float)
    finally:
        filt.close()


def combine() -> None:
    """Print rule AA's check: the eleventh design's classifier against logit(p) + z(IBM-1) on
    newstest2019 and newstest2020 en-de (synthetic kinds and paraphrases)."""
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.lexical.pair_classifier import make_negatives, tilt_probability

    model = designs()["eleventh design"]
    for year in ("2019", "2020"):
        en, wmt, real = newstest(year)
        cs, ct = en[0::2], wmt[0::2]
        ws, wt, _ = make_negatives(en[1::2], wmt[1::2], LOOSE, 7)
        sets = {"synthetic (nine kinds)": (ws, wt)}
        sets.update({k: (en[1::2], de[1::2]) for k, de in real.items() if "paraphrase" in k})
        for kind, (ns, nt) in sets.items():
            src, tgt = cs + ns, ct + nt
            p = score(model, src, tgt)
            lex = ibm1(model, src, tgt)
            c = tilt_probability(p, (lex - lex.mean()) / lex.std(), 1.0)
            y = np.r_[np.ones(len(cs)), np.zeros(len(ns))]
            d = paired_bootstrap(y, c, p)
            print(f"newstest{year} {kind}: classifier {roc_auc_score(y, p):.3f}, IBM-1 "
                  f"{roc_auc_score(y, lex):.3f}, logit(p) + z(IBM-1) {roc_auc_score(y, c):.3f};"
                  f" difference {d.mean():+.4f} [{np.percentile(d, 2.5):+.4f}, "
                  f"{np.percentile(d, 97.5):+.4f}]", flush=True)


def compare(names: tuple[str, str], models: tuple[str, str], german_source: bool = False,
            prefix: str = "") -> None:
    """Print ROC-AUC of the two ``models`` (labelled ``names``; the first is the reference) and
    the paired-bootstrap difference second minus first, on newstest2019 / newstest2020: the
    nine synthetic kinds and every other translation of ``newstest``; with ``german_source`` the
    sides are turned (German source, English target) for a de -> en classifier."""
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.lexical.pair_classifier import make_negatives

    for year in ("2019", "2020"):
        en, wmt_de, real = newstest(year)
        side = (lambda de, e: (de, e)) if german_source else (lambda de, e: (e, de))
        cs, ct = side(wmt_de[0::2], en[0::2])
        ws, wt, _ = make_negatives(*side(wmt_de[1::2], en[1::2]), LOOSE, 7)
        sets = {"synthetic (nine kinds)": (ws, wt),
                **{k: side(de[1::2], en[1::2]) for k, de in real.items()}}
        for kind, (ns, nt) in sets.items():
            y = np.r_[np.ones(len(cs)), np.zeros(len(ns))]
            b, a = (score(m, cs + ns, ct + nt) for m in models)
            d = paired_bootstrap(y, a, b)
            print(f"{prefix}newstest{year} {kind}: {names[0]} {roc_auc_score(y, b):.3f}, "
                  f"{names[1]} {roc_auc_score(y, a):.3f}; difference {d.mean():+.4f} "
                  f"[{np.percentile(d, 2.5):+.4f}, {np.percentile(d, 97.5):+.4f}]", flush=True)


def tilted_ende(weight: float = 0.5) -> dict:
    """The eleventh design for en-de (``designs``) with the tilt at ``weight``: at 0.5, the
    thirteenth design, the recipe's today; its options (``trained`` makes the model)."""
    return tilted(german(eleventh_design("fr"), designs()["eleventh design"]), weight)


def tilt(weight: float = 1.0) -> None:
    """Print rule AB's bench check (rule AC's with ``weight`` 0.5): the eleventh design and the
    same with ``tilt`` (IBM-1 P(target | source) in the log-odds, standardised on the training
    rows, at ``weight``), both for en-de, on FLORES en-de and on newstest2019 / newstest2020
    (synthetic kinds and paraphrases)."""
    first = designs()["eleventh design"]
    model = trained(tilted_ende(weight))
    flores_table("de", {"eleventh design": first, "tilt": model})
    compare(("eleventh", "tilt"), (first, model))


def wmt_classifier(weight: float | None = None) -> str:
    """benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml's pair classifier (de -> en), trained once by its own
    options (``bitextforge prepare benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml`` makes the tables and LMs it
    reads), or the same with ``tilt`` at ``weight``; the model path."""
    import yaml

    recipe = yaml.safe_load(Path("benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml").read_text(encoding="utf-8"))
    cfg = next(s["with"] for s in recipe["prepare"] if s["train"] == "pair_classifier_model.v1")
    missing = [f["with"].get("tables") or f["with"].get("model") for f in cfg["features"]
               if not Path(f["with"].get("tables") or f["with"].get("model") or ".").exists()]
    if missing:
        raise fail(f"{missing[0]} is missing: run bitextforge prepare benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml")
    return trained(cfg if weight is None else tilted(cfg, weight))


def wmt(weight: float = 0.5) -> None:
    """Print rule AD's measurement: benchmarks/studies/wmt-filter-design/recipes/wmt-filter-deen.yaml's classifier and the same with
    ``tilt`` at ``weight``, on newstest2019 / newstest2020 with the sides turned (German, the
    WMT reference or another translation, as source; English as target)."""
    compare(("the WMT recipe's classifier", f"tilt x {weight:g}"),
            (wmt_classifier(), wmt_classifier(weight)), german_source=True, prefix="de-en ")


def ted_segments() -> tuple[list[str], dict[str, list[str]], dict[tuple[str, int], float]]:
    """The MQM-rated WMT21 TED talks en-de (Freitag et al. 2021): the English of each rated
    segment (in segment order), each system's German for them (the human reference is system
    ``ref``; error marks removed), and each (system, segment index)'s MQM score (0: no error)."""
    import csv

    def strip(text: str) -> str:
        return text.replace("<v>", "").replace("</v>", "")

    src, out = {}, {}
    with shared_data("mqm-ted-ende", "mqm_ted_ende.tsv").open(encoding="utf-8", newline="") as fh:
        for row in list(csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]:
            seg = int(row[3])
            src.setdefault(seg, strip(row[5]))
            out.setdefault(seg, {}).setdefault(row[0], strip(row[6]))
    order = sorted(src)
    index = {seg: i for i, seg in enumerate(order)}
    mqm = {}
    for line in shared_data("mqm-ted-ende", "mqm_ted_ende.avg_seg_scores.tsv").read_text(
            encoding="utf-8").split("\n")[1:]:
        system, _, rest = line.partition("\t")
        value, _, seg = rest.partition(" ")
        if value and value != "None" and int(seg) in index:
            # the score file names the human reference ref-A, the annotation file ref
            mqm["ref" if system == "ref-A" else system, index[int(seg)]] = float(value)
    systems = sorted(out[order[0]])
    return ([src[s] for s in order], {k: [out[s][k] for s in order] for k in systems}, mqm)


def ted_scores(scored, ref: list[str], german_by: dict[str, list[str]],
               mqm: dict[tuple[str, int], float]) -> dict:
    """Score the human reference and each system's translations with ``scored`` (German
    translations -> scores, one call per system, so a sentence's other translations are never its
    batch neighbours): ``ref_y`` / ``ref_p``, labels and scores of the reference's even segments
    against every system's odd ones; ``per`` each system's AUC of that; ``wins`` each system's
    share of segments where the reference scores higher (ties half); ``err_y`` / ``err_p``,
    error-free (MQM 0, True) against major-error (MQM <= -5) system segments, pooled."""
    from sklearn.metrics import roc_auc_score

    r = scored(ref)
    per, wins, pooled, err_y, err_p = [], [], [], [], []
    for system, de in german_by.items():
        m = scored(de)
        per.append(roc_auc_score(np.r_[np.ones(len(r[0::2])), np.zeros(len(m[1::2]))],
                                 np.r_[r[0::2], m[1::2]]))
        wins.append(np.mean((r > m) + 0.5 * (r == m)))
        pooled.append(m[1::2])
        for i, v in enumerate(m):
            value = mqm.get((system, i))
            if value is not None and (value == 0 or value <= -5):
                err_y.append(value == 0)
                err_p.append(v)
    pooled = np.concatenate(pooled)
    return {"ref_y": np.r_[np.ones(len(r[0::2])), np.zeros(len(pooled))],
            "ref_p": np.r_[r[0::2], pooled], "per": per, "wins": wins,
            "err_y": np.array(err_y), "err_p": np.array(err_p)}


def ted() -> None:
    """Print rule AF's measurement: real machine translation against the human reference on the
    MQM-rated WMT21 TED talks en-de (13 systems), and error-free machine translations against
    ones with a major error, for the en-de designs, IBM-1 alone and the WMT recipe's classifier
    (sides turned). Each system's translations are scored in a call of their own, so a
    sentence's neighbours in the batch are never its other translations."""
    from sklearn.metrics import roc_auc_score

    en, german_by, mqm = ted_segments()
    ref = german_by.pop("ref")
    built = designs()
    first = built["eleventh design"]
    thirteenth = trained(tilted_ende())
    wmt_plain, wmt_tilted = wmt_classifier(), wmt_classifier(0.5)
    # label -> the scores of (English source, each German translation of ``de``)
    scorers = {"eleventh design": lambda de: score(first, en, de),
               "thirteenth design (tilt 0.5)": lambda de: score(thirteenth, en, de),
               "fourth design (no margin)":
                   lambda de: score(built["fourth design (no margin)"], en, de),
               "IBM-1 P(target given source) alone": lambda de: ibm1(first, en, de),
               "the WMT recipe's classifier (de -> en)": lambda de: score(wmt_plain, de, en),
               "the same, tilt 0.5": lambda de: score(wmt_tilted, de, en)}

    print(f"\nMQM TED en-de: {len(en)} segments, {len(german_by)} systems; ROC-AUC of the human "
          f"reference (even segments) against machine translation (odd segments); the paired win "
          f"rate over all segments; error-free MT (MQM 0) against MT with a major error (MQM <= "
          f"-5), every system's segments pooled")
    print("| scorer | MT, all systems | per system, min - max | reference beats MT | no error vs "
          "major error |\n|---|---|---|---|---|")
    good = {(k, i) for (k, i), v in mqm.items() if k in german_by and v == 0}
    bad = {(k, i) for (k, i), v in mqm.items() if k in german_by and v <= -5}
    for label, scored in scorers.items():
        t = ted_scores(scored, ref, german_by, mqm)
        print(f"| {label} | {roc_auc_score(t['ref_y'], t['ref_p']):.3f} | {min(t['per']):.3f} - "
              f"{max(t['per']):.3f} | {100 * np.mean(t['wins']):.1f} % | "
              f"{roc_auc_score(t['err_y'], t['err_p']):.3f} |", flush=True)
    print(f"({len(good)} error-free and {len(bad)} major-error MT segments; mean MQM score of the "
          f"reference {np.mean([v for (k, _), v in mqm.items() if k == 'ref']):.2f}, of the "
          f"systems {np.mean([v for (k, _), v in mqm.items() if k != 'ref']):.2f})")


#: rows of MLQE-PE whose MT a post-editor changed by at least this TER
EDITED = 0.3


def post_edits(min_ter: float = EDITED) -> tuple[list[str], list[str], list[str]]:
    """MLQE-PE en-de train: the English source, the human post-edit (detokenised) and the MT it
    corrected, for the rows whose TER of the MT against the post-edit is at least ``min_ter``."""
    from _common import mlqe_post_edits, mlqe_split

    src, mt, _, _ = mlqe_split("train")
    pe, ter = mlqe_post_edits("train")
    keep = np.flatnonzero(ter >= min_ter)
    return [src[i] for i in keep], [pe[i] for i in keep], [mt[i] for i in keep]


def against_thirteenth(label: str, variant) -> None:
    """Print a round's en-de benches for the thirteenth design and ``variant`` of it (a function
    of its options), labelled ``label``: FLORES en-de; MLQE-PE's post-edits against the MT they
    corrected; TED's human reference against the 13 systems' MT and error-free against
    major-error MT; newstest2019 / 2020 (synthetic kinds and free translations)."""
    from sklearn.metrics import roc_auc_score

    base = tilted_ende()
    models = {"the thirteenth design": trained(base), label: trained(variant(base))}
    old, new = models.values()
    flores_table("de", models)

    def gain(name: str, y, p) -> None:
        d = paired_bootstrap(np.asarray(y), p[label], p["the thirteenth design"])
        print(f"{name}: {label} minus the thirteenth design {d.mean():+.4f} "
              f"[{np.percentile(d, 2.5):+.4f}, {np.percentile(d, 97.5):+.4f}]", flush=True)

    en, pe, mt = post_edits()
    y = np.r_[np.ones(len(en[0::2])), np.zeros(len(en[1::2]))]
    p = {}
    print(f"\nMLQE-PE en-de train, {len(en)} rows with TER(MT, post-edit) >= {EDITED}: "
          f"post-edit (even rows) against MT (odd rows)")
    for name, model in models.items():
        p[name] = score(model, en[0::2] + en[1::2], pe[0::2] + mt[1::2])
        a, b = score(model, en, pe), score(model, en, mt)
        print(f"{name}: ROC-AUC {roc_auc_score(y, p[name]):.3f}, the post-edit beats its MT "
              f"{100 * np.mean((a > b) + 0.5 * (a == b)):.1f} %")
    gain("MLQE-PE post-edit vs MT", y, p)

    ted_en, german_by, mqm = ted_segments()
    ref = german_by.pop("ref")
    t = {name: ted_scores(lambda de, m=model: score(m, ted_en, de), ref, german_by, mqm)
         for name, model in models.items()}
    for name, got in t.items():
        print(f"TED MQM, {name}: reference vs MT {roc_auc_score(got['ref_y'], got['ref_p']):.3f}, "
              f"no error vs major error {roc_auc_score(got['err_y'], got['err_p']):.3f}")
    some = t[label]  # the labels are the same for both models
    gain("TED reference vs MT", some["ref_y"], {k: v["ref_p"] for k, v in t.items()})
    gain("TED no error vs major error", some["err_y"], {k: v["err_p"] for k, v in t.items()})
    compare(("thirteenth", label), (old, new))


def mistranslated() -> None:
    """Rule AI's en-de benches: the thirteenth design and the same with ``mistranslated``
    negatives (``against_thirteenth``)."""
    against_thirteenth("+ mistranslated", with_mistranslated)


def word_for_word(budget: bool = False) -> None:
    """Rule AK's en-de benches: the thirteenth design and the same with ``word_for_word``
    negatives glossed from the bench's FreeDict en-de sample (``against_thirteenth``); with
    ``budget``, rule AL's: also ``with_budget``'s larger limit."""
    if budget:
        against_thirteenth("+ word_for_word, 9,332",
                           lambda cfg: with_budget(with_word_for_word(cfg, "de", dictionary())))
    else:
        against_thirteenth("+ word_for_word",
                           lambda cfg: with_word_for_word(cfg, "de", dictionary()))


def post_edit_features() -> None:
    """Print, for each feature of the thirteenth design for en-de, the share of MLQE-PE's edited
    train rows (``post_edits``) where the post-edit scores higher than its MT, and lower."""
    from bitextforge.plugins.lexical.pair_classifier import PairClassifierFilter

    model = trained(tilted_ende())
    en, pe, mt = post_edits()
    filt = PairClassifierFilter(PairClassifierFilter.Config(model=model))
    try:
        a = np.array(filt.scorer.features(en, pe), float)
        b = np.array(filt.scorer.features(en, mt), float)
        names = filt.scorer.names
    finally:
        filt.close()
    print(f"MLQE-PE en-de train, {len(en)} rows with TER(MT, post-edit) >= {EDITED}; the "
          f"thirteenth design's features\n| feature | post-edit higher | MT higher |\n|---|---|---|")
    for k, name in enumerate(names):
        print(f"| {name} | {np.mean(a[:, k] > b[:, k]):.3f} | {np.mean(a[:, k] < b[:, k]):.3f} |")


if __name__ == "__main__":
    if sys.argv[1:] == ["--word-for-word"]:
        word_for_word()
    elif sys.argv[1:] == ["--word-for-word-budget"]:
        word_for_word(budget=True)
    elif sys.argv[1:] == ["--post-edit-features"]:
        post_edit_features()
    elif sys.argv[1:] == ["--mistranslated"]:
        mistranslated()
    elif sys.argv[1:] == ["--wmt"]:
        wmt()
    elif sys.argv[1:] == ["--ted"]:
        ted()
    elif sys.argv[1:] == ["--combine"]:
        combine()
    elif sys.argv[1:] == ["--tilt"]:
        tilt()
    elif sys.argv[1:] == ["--tilt-half"]:
        tilt(0.5)
    elif sys.argv[1:]:
        raise fail("bench_hard_news.py takes no arguments but --combine, --tilt, --tilt-half, "
                   "--wmt, --ted, --mistranslated, --word-for-word(-budget) or "
                   "--post-edit-features")
    else:
        main()
