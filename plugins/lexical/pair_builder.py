"""Build the WMT-style filter of any language pair from a clean seed corpus
(``bitextforge build-filter``).

The de-en filter (recipes/wmt-filter-deen.yaml) was built by hand around one dictionary and one
pair's habits. This builder makes the same filter for a pair it is told nothing about but its two
language codes, a clean parallel seed and, where one exists, a bilingual dictionary:

1. the seed is read, deduplicated and shuffled; the sides are lowercased when the seed is (so the
   text the filter scores looks like the text its models learned from), and both sides are split
   into words by their language's segmenter (:mod:`.segment`; a sentencepiece model trained on the
   seed where no installed segmenter knows the language);
2. the seed is split three ways: a *bench* share kept apart from everything (its pairs and the
   synthetic noise made from them report the built filter's quality), a *classifier* share, half
   of which no table or language model sees (a classifier that only sees scores of text its
   models learned from trusts them too much), and the rest, from which the tables and LMs learn;
3. the length ratio bound comes from the seed's own distribution (a quantile of the word-count
   ratio of its pairs), the length bound from the longer of a hard bound and the seed's longest
   pairs;
4. eflomal tables (with the dictionary as prior, when given), two KenLM models and the pair
   classifier are trained with the project's trainers, on segmented text;
5. the bench: held-out clean pairs against one synthetic negative made from each (the kinds in
   turn, none equal to a clean pair), scored by the classifier: ROC-AUC per kind;
6. a ready-to-run recipe (the pair's cleaning defaults where the checkout has them, then every
   rule and the classifier wrapped in ``segmented.v1``, so they count the same words) and
   ``build.json`` (sizes, thresholds, seconds, AUCs) are written.

A build that fails removes the folder it created: no half-built model folder is left to look
finished.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from pathlib import Path

import numpy as np

from bitextforge import InputError
from bitextforge.api import phase, say

from .segment import Segmenter, check_segmenter, default_segmenter, train_sentencepiece
from .words import SNOWBALL

WHO = "build-filter"
#: negative kinds the builder trains and benches: the default kinds and the three that look like
#: a real crawl's loose translations and aligner errors (none needs a model or dictionary)
KINDS = ("misaligned", "shuffled", "truncated", "wrong_language", "untranslated", "numbers",
         "partial", "neighbour")
#: ISO 639-3 codes of FreeDict's file names, for the languages a dictionary name may carry
_ISO3 = {"jpn": "ja", "eng": "en", "fra": "fr", "ces": "cs", "deu": "de", "spa": "es",
         "ita": "it", "nld": "nl", "por": "pt", "rus": "ru", "pol": "pl", "swe": "sv",
         "dan": "da", "hun": "hu", "tur": "tr", "ara": "ar", "hin": "hi", "zho": "zh",
         "kor": "ko", "ell": "el", "fin": "fi", "hrv": "hr", "srp": "sr", "lit": "lt"}
#: the longest side the length rule keeps whatever the seed's lengths (as the de-en recipe's 150)
HARD_MAX_WORDS = 150


def dictionary_langs(path: str) -> tuple[str, str] | None:
    """The two languages a dictionary's file name states (``freedict-jpn-eng.index``,
    ``x.de-en.tsv.gz``), or None."""
    import re

    name = Path(path).name.lower()
    m = re.search(r"freedict-([a-z]{3})-([a-z]{3})", name)
    if m and m.group(1) in _ISO3 and m.group(2) in _ISO3:
        return _ISO3[m.group(1)], _ISO3[m.group(2)]
    m = re.search(r"\.([a-z]{2})-([a-z]{2})\.", name)
    return (m.group(1), m.group(2)) if m else None


def _is_lowercased(texts: list[str]) -> bool:
    """Whether the seed was lowercased: under 1 % of its cased letters are capitals."""
    upper = lower = 0
    for t in texts[:5000]:
        for ch in t:
            if ch.isupper():
                upper += 1
            elif ch.islower():
                lower += 1
    return upper + lower > 0 and upper / (upper + lower) < 0.01


def read_seed(seed: list, limit: int | None = None) -> tuple[list[str], list[str]]:
    """The seed's pairs (a TSV file or a [src, tgt] pair of files, or a list of them): both sides
    non-empty, each pair once, in file order."""
    from bitextforge.api import read_tsv_pairs

    src, tgt = read_tsv_pairs(seed)
    seen, out_s, out_t = set(), [], []
    for s, t in zip(src, tgt):
        s, t = s.strip(), t.strip()
        if s and t and (s, t) not in seen:
            seen.add((s, t))
            out_s.append(s)
            out_t.append(t)
    return out_s, out_t


def ratio(a: int, b: int) -> float:
    """length_ratio.v1's score of two word counts."""
    hi, lo = max(a, b), min(a, b)
    return 1.0 if hi == 0 else (math.inf if lo == 0 else hi / lo)


def seed_thresholds(src_len: list[int], tgt_len: list[int], quantile: float = 0.995) -> dict:
    """The rule bounds the seed's own distribution gives: the length ratio that ``quantile`` of
    its pairs stay within (rounded up to a tenth), and the longest side to keep (the longer of
    :data:`HARD_MAX_WORDS` and twice the seed's longest side at that quantile)."""
    r = np.array([ratio(a, b) for a, b in zip(src_len, tgt_len)], dtype=float)
    r = r[np.isfinite(r)]
    longest = np.maximum(np.array(src_len), np.array(tgt_len))
    return {"ratio_max": float(math.ceil(float(np.quantile(r, quantile)) * 10) / 10),
            "length_max": int(max(HARD_MAX_WORDS, 2 * np.quantile(longest, quantile))),
            "quantile": quantile}


def _write_tsv(path: Path, src: list[str], tgt: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        for s, t in zip(src, tgt):
            fh.write(f"{s}\t{t}\n")


def segmented_dictionary(path: str, langs: tuple[str, str], seg: tuple[Segmenter, Segmenter],
                         out: Path, columns: tuple[int, int] = (1, 2)) -> dict:
    """The dictionary ``path`` (a TSV or a dictd ``.index``; its columns in ``langs`` order,
    either way round to the seed's) cleaned of notes and placeholders, each side segmented and
    lowercased as the seed is, oriented as the seed, written to ``out`` in Ding's layout
    (number, src, tgt). Entries of up to three words a side are kept: the lexical components
    take their one-word pairs. Returns the counts."""
    from .dictionary import _clean, read_entries

    entries = read_entries(path, columns)
    swap = False
    given = dictionary_langs(path) or langs
    if given == (seg[1].lang, seg[0].lang):
        swap = True
    elif given != (seg[0].lang, seg[1].lang):
        raise InputError(f"{path}: a {given[0]}-{given[1]} dictionary cannot serve the "
                         f"{seg[0].lang}-{seg[1].lang} pair")
    rows: dict[tuple[str, str], None] = {}
    for a, b in entries:
        if swap:
            a, b = b, a
        ta = seg[0].tokens(_clean(a, seg[0].lang).lower())
        tb = seg[1].tokens(_clean(b, seg[1].lang).lower())
        ta = [w for w in ta if any(ch.isalnum() for ch in w)]
        tb = [w for w in tb if any(ch.isalnum() for ch in w)]
        if 0 < len(ta) <= 3 and 0 < len(tb) <= 3:
            rows[" ".join(ta), " ".join(tb)] = None
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("n\tsrc\ttgt\n")
        for n, (a, b) in enumerate(rows, 1):
            fh.write(f"{n}\t{a}\t{b}\n")
    one = sum(1 for a, b in rows if " " not in a and " " not in b)
    return {"entries": len(entries), "kept": len(rows), "one_word_pairs": one}


def pair_defaults(src_lang: str, tgt_lang: str) -> Path | None:
    """The checkout's cleaning defaults for the pair in this orientation
    (``recipes/defaults/<src>-<tgt>.yaml``), or None (another pair, or an installed package
    without the recipes)."""
    p = Path(__file__).resolve().parents[2] / "recipes" / "defaults"
    p = p / f"{src_lang}-{tgt_lang}.yaml"
    return p if p.is_file() else None


def recipe_text(name: str, out: str, src_lang: str, tgt_lang: str, segs: list[str],
                lowercase: bool, thresholds: dict, input_path: list[str] | None,
                has_dictionary: bool, defaults: Path | None = None,
                langid: bool = True) -> str:
    """The ready-to-run recipe of a built filter: the pair's cleaning defaults first where the
    checkout has them (``extends:``, relative to the recipe), then the segmented rules and the
    classifier."""
    import os

    def seg(inner: str, with_: str) -> str:
        return (f"    with: {{src_lang: {src_lang}, tgt_lang: {tgt_lang}, src_segmenter: "
                f"'{segs[0]}', tgt_segmenter: '{segs[1]}', lowercase: {str(lowercase).lower()},\n"
                f"           filter: {inner}, with: {with_}}}\n")
    if input_path and len(input_path) == 2:
        inp = f"  src: {input_path[0]}\n  tgt: {input_path[1]}\n"
    else:
        inp = (f"  path: {input_path[0] if input_path else f'my.{src_lang}-{tgt_lang}.tsv'}\n"
               f"  format: tsv\n  columns: [src, tgt]\n")
    head = (f"# The WMT-style {src_lang}-{tgt_lang} filter that `bitextforge build-filter` built "
            f"in {out}/\n"
            f"# (what it learned from, the held-out AUC per noise kind: {out}/build.json). Every "
            f"rule and the\n# classifier count words as the segmenters split them; the output "
            f"keeps the text as it was.\n"
            f"# Point input: at your corpus, then: .venv/bin/bitextforge run {out}/recipe.yaml\n")
    if defaults is not None:
        rel = os.path.relpath(defaults, Path(out).resolve())
        head += (f"# The pair's cleaning defaults run first (extends:); their last step is "
                 f"language ID.\nextends: {rel}\n")
    steps = (
        f"  - filter: segmented.v1           # no empty side\n"
        + seg("length.v1", "{combine: shorter}")
        + "    keep: {min: 1}\n    as: shorter_words\n"
        f"  - filter: segmented.v1           # the longest side: the longer of {HARD_MAX_WORDS} "
        f"words and twice the seed's\n"
        + seg("length.v1", "{combine: longer}")
        + f"    keep: {{max: {thresholds['length_max']}}}\n    as: longer_words\n"
        f"  - filter: segmented.v1           # word-count ratio: {thresholds['quantile']:.1%} of "
        f"the seed's pairs stay within it\n"
        + seg("length_ratio.v1", "{unit: tokens}")
        + f"    keep: {{max: {thresholds['ratio_max']}}}\n    as: word_ratio\n")
    if defaults is None and langid:
        steps += (f"  - filter: language_id.v1\n"
                  f"    with: {{src_lang: {src_lang}, tgt_lang: {tgt_lang}, backend: heliport}}\n"
                  f"    keep: {{min: 0}}\n")
    steps += (f"  - filter: segmented.v1           # P(clean) of the pair classifier"
              f"{' (dictionary coverage among its features)' if has_dictionary else ''}\n"
              + seg("pair_classifier.v1", f"{{model: {out}/classifier.joblib}}")
              + "    keep: {min: 0.5}\n    as: pair_classifier\n")
    return (head + f"name: {name}\n"
            + (f"description: the {src_lang}-{tgt_lang} filter built from a seed corpus\n"
               if defaults is not None else "")
            + f"input:\n{inp}"
            + ("steps+:\n" if defaults is not None else "steps:\n") + steps
            + f"output: {{dir: runs/{name}, formats: [tsv]}}\n")


def build_filter(src_lang: str, tgt_lang: str, seed: list, output: str,
                 dictionary: str | None = None, dictionary_columns: tuple[int, int] = (1, 2),
                 src_segmenter: str | None = None, tgt_segmenter: str | None = None,
                 lowercase: bool | None = None, sample: int = 20000,
                 classifier_pairs: int = 4000, bench_pairs: int = 1000,
                 kinds: tuple[str, ...] = KINDS, order: int = 4, iterations: int | None = None,
                 corpus: list[str] | None = None, seed_value: int = 1,
                 force: bool = False, clean_first: bool = True) -> dict:
    """Build the filter (see the module docstring) into the folder ``output`` and return the
    facts written to ``build.json``. ``sample`` caps the pairs the tables and LMs learn from,
    ``classifier_pairs`` the clean pairs of the classifier (half of them unseen by the tables
    and LMs), ``bench_pairs`` the held-out clean pairs of the bench; ``corpus`` (a TSV, or a
    source and a target file) becomes the recipe's input, which first runs the pair's cleaning
    defaults where the checkout has them (``clean_first``)."""
    from .components import LexicalTranslationTrainer
    from .pair_classifier import PairClassifierTrainer

    t_start = time.perf_counter()
    out = Path(output)
    # everything a user can get wrong is checked before anything is read or trained
    for side, lang in (("--src-lang", src_lang), ("--tgt-lang", tgt_lang)):
        if not (2 <= len(lang) <= 3 and lang.isalpha() and lang.islower()):
            raise InputError(f"{WHO}: {side} {lang!r} is not an ISO 639-1 code (ja, en, fr...)")
    if src_lang == tgt_lang:
        raise InputError(f"{WHO}: --src-lang and --tgt-lang are both {src_lang!r}")
    segs = [src_segmenter or default_segmenter(src_lang),
            tgt_segmenter or default_segmenter(tgt_lang)]
    for flag, spec, lang in (("--src-segmenter", segs[0], src_lang),
                             ("--tgt-segmenter", segs[1], tgt_lang)):
        if spec is not None and not spec.startswith("sentencepiece"):
            why = check_segmenter(spec, lang)
            if why:
                raise InputError(f"{WHO}: {flag}: {why}")
    if dictionary is not None:
        if not Path(dictionary).exists():
            raise InputError(f"{WHO}: --dictionary {dictionary}: no such file")
        given = dictionary_langs(dictionary)
        if given and set(given) != {src_lang, tgt_lang}:
            raise InputError(f"{WHO}: --dictionary {dictionary} is {given[0]}-{given[1]}, the "
                             f"pair is {src_lang}-{tgt_lang}")
    for entry in list(seed) + list(corpus or []):
        for p in ([entry] if isinstance(entry, str) else entry):
            if not Path(p).is_file():
                raise InputError(f"{WHO}: {p}: no such file")
    if out.exists() and any(out.iterdir()) and not force:
        raise InputError(f"{WHO}: {out} exists and is not empty; choose another -o or pass "
                         f"--force to build it again")
    if force and out.exists():
        shutil.rmtree(out)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        facts = _build(src_lang, tgt_lang, seed, out, dictionary, tuple(dictionary_columns),
                       segs, lowercase, sample, classifier_pairs, bench_pairs, tuple(kinds),
                       order, iterations, corpus, seed_value, LexicalTranslationTrainer,
                       PairClassifierTrainer, clean_first)
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        raise
    facts["seconds"] = round(time.perf_counter() - t_start, 1)
    (out / "build.json").write_text(json.dumps(facts, indent=2, ensure_ascii=False) + "\n",
                                    encoding="utf-8")
    return facts


def _one_word_share(lines: list[str]) -> float:
    """Share of ``lines`` that are a single whitespace token."""
    return round(sum(1 for t in lines if len(t.split()) == 1) / max(1, len(lines)), 4)


def _prepare_seed(src_lang, tgt_lang, seed, out: Path, segs, lowercase, sample,
                  classifier_pairs, bench_pairs, seed_value) -> dict:
    """Read, sample, lowercase and segment the seed, split it into bench, classifier-only and
    training pairs, write the three TSVs under ``out/seed`` and derive the rule bounds."""
    src, tgt = read_seed(seed)
    need = bench_pairs + classifier_pairs // 2 + 50
    if len(src) < need:
        raise InputError(f"{WHO}: the seed has {len(src):,} distinct pairs; --bench-pairs "
                         f"{bench_pairs} and --classifier-pairs {classifier_pairs} need at "
                         f"least {need:,} (ask for fewer)")
    order = list(range(len(src)))
    random.Random(seed_value).shuffle(order)
    b, c = bench_pairs, bench_pairs + classifier_pairs // 2
    order = order[:c + min(sample, len(src) - c)]
    src, tgt = [src[i] for i in order], [tgt[i] for i in order]
    if lowercase is None:
        lowercase = _is_lowercased(src + tgt)
    for k, lang in enumerate((src_lang, tgt_lang)):
        if segs[k] is None:
            side = (src if k == 0 else tgt)[c:]
            with phase(WHO, f"training a sentencepiece segmenter for {lang} on "
                            f"{len(side):,} lines"):
                model = train_sentencepiece([t.lower() if lowercase else t for t in side],
                                            out / f"segmenter-{lang}")
            segs[k] = f"sentencepiece:{model}"
    seg = (Segmenter(segs[0], src_lang, lowercase), Segmenter(segs[1], tgt_lang, lowercase))
    with phase(WHO, f"segmenting {len(src):,} seed pairs ({segs[0]} / {segs[1]})"):
        ss = [seg[0](t) for t in src]
        st = [seg[1](t) for t in tgt]
    bench, unseen, train = (ss[:b], st[:b]), (ss[b:c], st[b:c]), (ss[c:], st[c:])
    data = out / "seed"
    _write_tsv(data / "train.tsv", *train)
    # the classifier's clean pairs: half never seen by the tables and LMs, half seen by them
    more = classifier_pairs - len(unseen[0])
    _write_tsv(data / "classifier.tsv", unseen[0] + train[0][:more], unseen[1] + train[1][:more])
    _write_tsv(data / "bench.tsv", *bench)
    return {"seg": seg, "segs": segs, "lowercase": lowercase, "data": data,
            "bench": bench, "unseen": len(unseen[0]), "train": len(train[0]),
            "classifier": len(unseen[0]) + len(train[0][:more]),
            "thresholds": seed_thresholds([len(x.split()) for x in train[0]],
                                          [len(x.split()) for x in train[1]])}


def language_id_missing(src_lang: str, tgt_lang: str) -> str | None:
    """Why language_id.v1 (heliport) cannot identify the pair's languages, or None: a
    low-resource language heliport has no model for still gets a filter, without that feature
    and step."""
    from bitextforge.api import ComponentError, get_registry

    cls = get_registry().get("filter", "language_id.v1")
    try:
        cls(cls.Config(src_lang=src_lang, tgt_lang=tgt_lang)).close()
    except ComponentError as e:
        return str(e)
    return None


def _features(src_lang: str, tgt_lang: str, out: Path, dict_path: Path | None,
              normalise: str, langid: bool = True) -> list[dict]:
    """The classifier's feature filters: IBM-1 both ways, dictionary coverage (with a
    dictionary), language ID (where heliport knows both languages) and the two KenLM
    perplexities."""
    pair = {"src_lang": src_lang, "tgt_lang": tgt_lang}
    features = [{"filter": "lexical_translation.v1",
                 "with": {"tables": str(out / "tables"), **pair, "direction": d}}
                for d in ("src2tgt", "tgt2src")]
    if dict_path is not None:
        features.append({"filter": "lexical_coverage.v1", "with": {
            "dictionary": str(dict_path), "dictionary_langs": [src_lang, tgt_lang], **pair,
            "normalise": normalise}})
    if langid:
        features.append({"filter": "language_id.v1", "with": {**pair, "backend": "heliport"}})
    return features + [
        {"filter": "kenlm_perplexity.v1",
         "with": {"model": str(out / f"lm.{src_lang}.binary"), "column": "src"}},
        {"filter": "kenlm_perplexity.v1",
         "with": {"model": str(out / f"lm.{tgt_lang}.binary"), "column": "tgt"}}]


def _bench(out: Path, bench: tuple[list[str], list[str]], kinds, seed_value: int) -> dict:
    """The held-out clean pairs against one synthetic negative of each kind made from each (none
    equal to a clean pair), scored by the built classifier: ROC-AUC per kind."""
    from bitextforge.plugins.evaluation.label_auc import roc_auc_by_kind

    from .pair_classifier import PairClassifierFilter, drop_equal_to_clean, make_negatives

    ns, nt, nk = make_negatives(bench[0], bench[1], kinds, seed_value + 1000)
    ns, nt, nk, _ = drop_equal_to_clean(bench[0], bench[1], ns, nt, nk)
    scorer = PairClassifierFilter(PairClassifierFilter.Config(
        model=str(out / "classifier.joblib")))
    try:
        with phase(WHO, f"the bench: {len(bench[0]):,} held-out clean pairs against "
                        f"{len(ns):,} synthetic negatives"):
            p_clean = np.asarray(scorer.score({"src": bench[0], "tgt": bench[1]}))
            p_neg = np.asarray(scorer.score({"src": ns, "tgt": nt}))
    finally:
        scorer.close()
    kinds_all = ["clean"] * len(p_clean) + nk
    by_kind = {k: round(v, 4) for k, v in roc_auc_by_kind(
        np.r_[np.ones(len(p_clean)), np.zeros(len(p_neg))], np.r_[p_clean, p_neg],
        kinds_all).items()}
    # every bench row with its kind and score, to read which noise passes for clean
    with open(out / "seed" / "bench-scored.tsv", "w", encoding="utf-8") as fh:
        fh.write("kind\tscore\tsrc\ttgt\n")
        for k, p, a, b in zip(kinds_all, np.r_[p_clean, p_neg], bench[0] + ns, bench[1] + nt):
            fh.write(f"{k}\t{p:.4f}\t{a}\t{b}\n")
    return {"clean": len(bench[0]), "negatives": len(ns), "roc_auc_by_kind": by_kind,
            "mean_roc_auc": round(float(np.mean(list(by_kind.values()))), 4)}


def _build(src_lang, tgt_lang, seed, out: Path, dictionary, dictionary_columns, segs,
           lowercase, sample, classifier_pairs, bench_pairs, kinds, order, iterations, corpus,
           seed_value, TablesTrainer, ClassifierTrainer, clean_first) -> dict:
    from bitextforge.plugins.quality.trainers import KenlmTrainer

    times: dict[str, float] = {}
    t0 = time.perf_counter()
    S = _prepare_seed(src_lang, tgt_lang, seed, out, segs, lowercase, sample, classifier_pairs,
                      bench_pairs, seed_value)
    times["read_and_segment"] = round(time.perf_counter() - t0, 1)
    seg, data, thresholds = S["seg"], S["data"], S["thresholds"]
    normalise = ("stem" if src_lang in SNOWBALL and tgt_lang in SNOWBALL
                 and S["segs"] == ["words", "words"] else "lowercase")
    missing = language_id_missing(src_lang, tgt_lang)
    langid = missing is None
    if missing:
        say(WHO, f"{missing}: the filter is built without language ID")
    dict_facts = dict_path = None
    if dictionary is not None:
        t0 = time.perf_counter()
        dict_path = out / "dictionary.tsv"
        with phase(WHO, f"reading and segmenting the dictionary {dictionary}"):
            dict_facts = segmented_dictionary(dictionary, (src_lang, tgt_lang), seg, dict_path,
                                              dictionary_columns)
        times["dictionary"] = round(time.perf_counter() - t0, 1)
    tables = TablesTrainer(TablesTrainer.Config(
        corpus=[str(data / "train.tsv")], langs=(src_lang, tgt_lang), normalise=normalise,
        dictionary=None if dict_path is None else str(dict_path),
        dictionary_langs=(src_lang, tgt_lang), iterations=iterations,
        output=str(out / "tables")))
    lms = [KenlmTrainer(KenlmTrainer.Config(
        text=str(data / "train.tsv"), field=k, lang=lang, order=order, tokenize=False,
        # lmplz's default share of the machine's memory takes seconds to claim; a seed sample
        # needs a few megabytes
        lowercase=False, memory="200M", output=str(out / f"lm.{lang}.binary")))
        for k, lang in enumerate((src_lang, tgt_lang))]
    clf = ClassifierTrainer(ClassifierTrainer.Config(
        corpus=[str(data / "classifier.tsv")], limit=None,
        features=_features(src_lang, tgt_lang, out, dict_path, normalise, langid),
        negatives=list(kinds), seed=seed_value, output=str(out / "classifier.joblib")))
    t0 = time.perf_counter()
    table_facts = tables.train()
    times["tables"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    for lm in lms:
        with phase(WHO, f"training the KenLM model {lm.config.output}"):
            lm.train()
    times["kenlm"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    clf_facts = clf.train()
    times["classifier"] = round(time.perf_counter() - t0, 1)
    t0 = time.perf_counter()
    bench = _bench(out, S["bench"], kinds, seed_value)
    times["bench"] = round(time.perf_counter() - t0, 1)
    rule_rejects = sum(1 for s, t in zip(*S["bench"])
                       if not s.split() or not t.split()
                       or max(len(s.split()), len(t.split())) > thresholds["length_max"]
                       or ratio(len(s.split()), len(t.split())) > thresholds["ratio_max"])
    name = f"wmt-filter-{src_lang}{tgt_lang}-built"
    (out / "recipe.yaml").write_text(recipe_text(
        name, str(out), src_lang, tgt_lang, S["segs"], S["lowercase"], thresholds, corpus,
        dict_path is not None, pair_defaults(src_lang, tgt_lang) if clean_first else None,
        langid), encoding="utf-8")
    one_word = None
    if corpus:
        from bitextforge.api import read_tsv_pairs

        cs, _ = read_tsv_pairs([corpus[0] if len(corpus) == 1 else tuple(corpus)])
        cs = cs[:2000]
        one_word = {"corpus_src_raw": _one_word_share(cs),
                    "corpus_src_segmented": _one_word_share([seg[0](t) for t in cs])}
    return {
        "pair": f"{src_lang}-{tgt_lang}",
        "seed": [e if isinstance(e, str) else list(e) for e in seed],
        "segmenters": S["segs"], "lowercase": S["lowercase"], "normalise": normalise,
        "one_word_lines": one_word,
        "pairs": {"tables_and_lms": S["train"], "classifier": S["classifier"],
                  "classifier_unseen_by_tables": S["unseen"], "bench": len(S["bench"][0])},
        "thresholds": thresholds,
        "bench_clean_rejected_by_rules": rule_rejects,
        "dictionary": None if dictionary is None else {"path": dictionary, **dict_facts},
        "tables": {k: table_facts[k] for k in ("pairs", "dictionary_pairs", "src_words",
                                               "tgt_words", "seconds") if k in table_facts},
        "classifier": {k: clf_facts.get(k) for k in (
            "clean_pairs", "train_rows", "negatives_equal_to_clean_left_out",
            "held_out_roc_auc", "held_out_roc_auc_by_kind")},
        "bench": bench, "language_id": langid, "times": times,
        "recipe": str(out / "recipe.yaml"),
    }


def report_lines(facts: dict) -> list[str]:
    """What the command prints: sizes, thresholds and the bench's AUC per noise kind."""
    p = facts["pairs"]
    lines = [f"{facts['pair']} filter built in {facts['seconds']:.0f} s from "
             f"{p['tables_and_lms']:,} pairs (tables, LMs), {p['classifier']:,} "
             f"(classifier; {p['classifier_unseen_by_tables']:,} unseen by the tables) and "
             f"{p['bench']:,} held out",
             f"segmenters {facts['segmenters'][0]} / {facts['segmenters'][1]}"
             f"{', lowercased' if facts['lowercase'] else ''}"
             + ("" if not facts["one_word_lines"] else
                f"; one-word source lines of the corpus: "
                f"{facts['one_word_lines']['corpus_src_raw']:.1%} raw, "
                f"{facts['one_word_lines']['corpus_src_segmented']:.1%} segmented"),
             f"rules from the seed: word ratio <= {facts['thresholds']['ratio_max']}, longest "
             f"side <= {facts['thresholds']['length_max']} words "
             f"({facts['bench_clean_rejected_by_rules']} of {p['bench']} held-out clean pairs "
             f"rejected)"]
    if facts.get("dictionary"):
        d = facts["dictionary"]
        lines.append(f"dictionary: {d['entries']:,} entries read, {d['one_word_pairs']:,} "
                     f"one-word pairs")
    else:
        lines.append("no dictionary: the tables learn from the seed alone")
    lines.append(f"held-out ROC-AUC per noise kind ({facts['bench']['clean']:,} clean pairs "
                 f"against {facts['bench']['negatives']:,} negatives):")
    for k, v in facts["bench"]["roc_auc_by_kind"].items():
        lines.append(f"  {k:<16} {v:.3f}")
    lines.append(f"  {'mean':<16} {facts['bench']['mean_roc_auc']:.3f}")
    lines.append(f"recipe: {facts['recipe']}")
    return lines


def build_filter_command(parser):
    """``bitextforge build-filter``: its arguments; returns its handler."""
    parser.add_argument("--src-lang", required=True, help="ISO 639-1 code of the source side")
    parser.add_argument("--tgt-lang", required=True, help="ISO 639-1 code of the target side")
    parser.add_argument("--seed-src", action="append", default=[],
                        help="clean seed, source side (one sentence a line; repeatable)")
    parser.add_argument("--seed-tgt", action="append", default=[],
                        help="clean seed, target side, line-aligned (one per --seed-src)")
    parser.add_argument("--seed-tsv", action="append", default=[],
                        help="clean seed as src<TAB>tgt lines (repeatable; .gz ok)")
    parser.add_argument("--dictionary", help="bilingual dictionary: a TSV of ;-separated "
                        "synonyms (Ding's layout) or a dictd .index (FreeDict); none: the "
                        "tables learn from the seed alone")
    parser.add_argument("--dictionary-columns", type=int, nargs=2, default=(1, 2),
                        metavar=("SRC", "TGT"), help="a TSV dictionary's 0-based columns")
    parser.add_argument("--src-segmenter", help="words, fugashi, sudachipy, jieba or "
                        "sentencepiece:<model> (default: the language's; a sentencepiece model "
                        "trained on the seed where none is installed)")
    parser.add_argument("--tgt-segmenter", help="the same for the target side")
    parser.add_argument("--lowercase", choices=("auto", "yes", "no"), default="auto",
                        help="lowercase both sides before scoring (auto: when the seed is)")
    parser.add_argument("--sample", type=int, default=20000,
                        help="at most this many seed pairs for the tables and LMs (20000)")
    parser.add_argument("--classifier-pairs", type=int, default=4000,
                        help="clean pairs of the classifier, half unseen by the tables (4000)")
    parser.add_argument("--bench-pairs", type=int, default=1000,
                        help="held-out clean pairs of the bench (1000)")
    parser.add_argument("--kinds", default=",".join(KINDS),
                        help="synthetic noise kinds the classifier learns and the bench reports, "
                        f"comma-separated (default {','.join(KINDS)}; also appended, "
                        "mistranslated)")
    parser.add_argument("--iterations", type=int, help="eflomal iterations per model "
                        "(default: eflomal's)")
    parser.add_argument("--corpus", nargs="+", metavar="FILE",
                        help="the noisy corpus the recipe filters: a TSV, or a source and a "
                        "target file")
    parser.add_argument("--no-clean", action="store_true", help="leave the pair's cleaning "
                        "defaults (recipes/defaults/<src>-<tgt>.yaml) out of the recipe")
    parser.add_argument("--force", action="store_true", help="replace an existing model folder")
    parser.add_argument("-o", "--output", required=True, help="model folder to write")

    def run(args) -> int:
        seed: list = list(args.seed_tsv)
        if len(args.seed_src) != len(args.seed_tgt):
            raise InputError(f"{WHO}: give one --seed-tgt per --seed-src")
        seed += list(zip(args.seed_src, args.seed_tgt))
        if not seed:
            raise InputError(f"{WHO}: give a seed: --seed-src and --seed-tgt, or --seed-tsv")
        if args.corpus and len(args.corpus) > 2:
            raise InputError(f"{WHO}: --corpus takes a TSV or a source and a target file")
        kinds = tuple(k.strip() for k in args.kinds.split(",") if k.strip())
        allowed = KINDS + ("appended", "mistranslated")
        bad = [k for k in kinds if k not in allowed]
        if bad or not kinds:
            raise InputError(f"{WHO}: --kinds: unknown kind {bad[0] if bad else '(none)'!r}; "
                             f"choose from {', '.join(allowed)}")
        for flag in ("sample", "classifier_pairs", "bench_pairs"):
            if getattr(args, flag) < 2:
                raise InputError(f"{WHO}: --{flag.replace('_', '-')} must be at least 2")
        facts = build_filter(
            args.src_lang, args.tgt_lang, seed, args.output, args.dictionary,
            tuple(args.dictionary_columns), args.src_segmenter, args.tgt_segmenter,
            {"auto": None, "yes": True, "no": False}[args.lowercase], args.sample,
            args.classifier_pairs, args.bench_pairs, kinds=kinds, iterations=args.iterations,
            corpus=args.corpus, force=args.force, clean_first=not args.no_clean)
        for line in report_lines(facts):
            say(WHO, line)
        return 0

    return run
