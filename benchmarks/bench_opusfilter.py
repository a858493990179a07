"""Benchmark against OpusFilter: the same real lines (by default 1,000,000 lines of Multi30k de-en
train repeated; ``--input mixed``: mixed-domain text, long news and parliament sentences
interleaved with short everyday ones and captions, from $BITEXTFORGE_SHARED_DATA) through LengthFilter + LengthRatioFilter + a language-ID filter (none, HeliportSimpleFilter
or LinguaFilter, the same library on both sides each time) + remove_duplicates in OpusFilter 3.3.1
(Aulamo et al. 2020, *OpusFilter: A Configurable Parallel Corpus Filtering Toolbox*) and the same
filters in one bitextforge recipe. Whole commands are timed side by side (median of N runs each,
alternating tools), peak memory from ``/usr/bin/time -v``, and the kept rows of both are compared.

Set-up (OpusFilter lives in its own venv, never in .venv):
    python3 -m venv /tmp/opusfilter-venv
    /tmp/opusfilter-venv/bin/pip install -c constraints.txt opusfilter==3.3.1 heliport
Run from the repository root (about 15 minutes on a loaded 2-core machine):
    nice -n 10 .venv/bin/python benchmarks/bench_opusfilter.py --runs 3
    nice -n 10 .venv/bin/python benchmarks/bench_opusfilter.py --runs 3 --lid none heliport
Two benchmarks at once need their own work directories (inputs, configurations and outputs live
there): set BENCH_OPUSFILTER_WORK=/tmp/other-dir for one of them.
Old code against new, side by side: --old names the bitextforge of another checkout (its venv's
bin/bitextforge), timed in the same rounds (OpusFilter, old, this checkout, in turn):
    .venv/bin/python benchmarks/bench_opusfilter.py --runs 5 --old /tmp/old/.venv/bin/bitextforge
Profile the bitextforge side (where the time goes):
    .venv/bin/python benchmarks/bench_opusfilter.py --profile heliport
    .venv/bin/python benchmarks/bench_opusfilter.py --input mixed --lines 300000 --profile none
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from _common import MIXED, ROOT, mixed_corpus, multi30k_corpus, timed  # noqa: F401

WORK = Path(os.environ.get("BENCH_OPUSFILTER_WORK", "/tmp/bench-opusfilter"))

OPUSFILTER = Path(os.environ.get("OPUSFILTER", "/tmp/opusfilter-venv/bin/opusfilter"))
BITEXTFORGE = ROOT / ".venv" / "bin" / "bitextforge"

# Equivalent settings. OpusFilter's LengthRatioFilter accepts ratio < threshold and its LID
# filters accept confidence > threshold (strict); bitextforge's keep bounds are inclusive, hence
# the bounds just inside the strict ones.
OPUS_FILTERS = {
    "none": [],
    "heliport": [{"HeliportSimpleFilter": {"languages": ["de", "en"]}}],
    "lingua": [{"LinguaFilter": {"languages": ["de", "en"], "langid_languages": ["de", "en"],
                                 "lingua_mode": "low"}}],
}
BF_LID = {
    "none": "",
    # HeliportSimpleFilter keeps a side identified as the declared language or as 'und'
    # (heliport's low-confidence label); language_id.v1 scores the signed confidence gap, 'und'
    # as 0 with heliport_undetermined: neutral, and min 0 keeps both kinds.
    "heliport": """
  - filter: language_id.v1
    with: {src_lang: de, tgt_lang: en, backend: heliport, heliport_undetermined: neutral}
    keep: {min: 0}
    cache: false               # time the scoring itself, never a score cache of an earlier run
""",
    # LinguaFilter keeps a side when the declared language is lingua's top language among the
    # candidates (de, en); with two candidates that is a confidence above 0.5.
    "lingua": """
  - filter: language_id.v1
    with: {src_lang: de, tgt_lang: en, backend: lingua, lingua_candidates: [de, en],
           lingua_low_accuracy: true}
    keep: {min: 0.5000001}
    cache: false
""",
}


def make_mixed_corpus(lines: int) -> tuple[Path, Path]:
    """The mixed-domain input (``_common.mixed_corpus``) of ``lines`` lines, in WORK."""
    return mixed_corpus(lines, WORK)


def make_corpus(lines: int) -> tuple[Path, Path]:
    """Multi30k train (de, en) repeated up to ``lines`` lines, in WORK."""
    return multi30k_corpus(lines, WORK)


def opus_config(lid: str, s: Path, t: Path) -> Path:
    """OpusFilter YAML: filter step (length, ratio, LID) then remove_duplicates."""
    import yaml

    out = WORK / f"opus-{lid}"
    cfg = {"common": {"output_directory": str(out)},
           "steps": [
               {"type": "filter", "parameters": {
                   "inputs": [str(s), str(t)], "outputs": ["filtered.de", "filtered.en"],
                   "filters": [{"LengthFilter": {"unit": "word", "min_length": 1,
                                                 "max_length": 100}},
                               {"LengthRatioFilter": {"unit": "word", "threshold": 3}},
                               *OPUS_FILTERS[lid]]}},
               {"type": "remove_duplicates", "parameters": {
                   "inputs": ["filtered.de", "filtered.en"], "outputs": ["kept.de", "kept.en"]}}]}
    path = WORK / f"opus-{lid}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def bf_recipe(lid: str, s: Path, t: Path) -> Path:
    """The same filters as one bitextforge recipe; only the kept pairs are written, as OpusFilter."""
    text = f"""name: bench-opusfilter-{lid}
input: {{src: '{s}', tgt: '{t}'}}
steps:
  - filter: length.v1
    with: {{unit: tokens, combine: shorter}}
    keep: {{min: 1}}
    as: len_min
  - filter: length.v1
    with: {{unit: tokens, combine: longer}}
    keep: {{max: 100}}
    as: len_max
  - filter: length_ratio.v1
    with: {{unit: tokens}}
    keep: {{max: 2.9999999}}{BF_LID[lid]}
  - filter: dedupe.v1
    with: {{'on': pair, lowercase: false}}
output: {{dir: '{WORK / f"bf-{lid}"}', formats: [plain], write_rejected: false, report: false}}
progress: false
"""
    path = WORK / f"bf-{lid}.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def read_pairs(d: Path, a: str, b: str) -> list[tuple[str, str]]:
    """Kept pairs of one tool's output files."""
    with open(d / a, encoding="utf-8") as fa, open(d / b, encoding="utf-8") as fb:
        return list(zip((x.rstrip("\n") for x in fa), (y.rstrip("\n") for y in fb)))


def compare_paths(a_dir: Path, a_src: str, a_tgt: str, b_dir: Path, b_src: str,
                  b_tgt: str) -> dict:
    """Kept rows of OpusFilter (``a``) and bitextforge (``b``): counts, rows only one of them
    kept, and under ``_differing`` every such pair (OpusFilter's first)."""
    opus = read_pairs(a_dir, a_src, a_tgt)
    bf = read_pairs(b_dir, b_src, b_tgt)
    # OpusFilter writes each segment with trailing whitespace stripped; bitextforge keeps the text
    # as read. Compare the rows modulo that, and count how many texts differ only by it.
    trailing = sum(1 for p in bf if p != (p[0].rstrip(), p[1].rstrip()))
    bf = [(a.rstrip(), b.rstrip()) for a, b in bf]
    so, sb = set(opus), set(bf)
    return {"opusfilter_kept": len(opus), "bitextforge_kept": len(bf), "same_rows_same_order":
            opus == bf, "bitextforge_rows_with_trailing_space": trailing,
            "only_opusfilter": len(so - sb), "only_bitextforge": len(sb - so),
            "examples_only_opusfilter": sorted(so - sb)[:5],
            "examples_only_bitextforge": sorted(sb - so)[:5],
            "_differing": sorted(so - sb) + sorted(sb - so)}


def compare(lid: str) -> dict:
    """Kept rows of both tools: counts, and rows only one of them kept."""
    r = compare_paths(WORK / f"opus-{lid}", "kept.de", "kept.en", WORK / f"bf-{lid}",
                      "corpus.src", "corpus.tgt")
    r.pop("_differing")
    return r


def profile(lid: str, recipe: Path) -> None:
    """cProfile of one bitextforge run of ``recipe``, top functions by own time."""
    out = WORK / f"bf-{lid}.prof"
    subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), str(BITEXTFORGE), "run",
                    str(recipe)], check=True)
    import pstats

    pstats.Stats(str(out)).sort_stats("tottime").print_stats(18)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--lid", nargs="+", default=["none", "heliport", "lingua"],
                    choices=["none", "heliport", "lingua"])
    ap.add_argument("--profile", choices=["none", "heliport", "lingua"])
    ap.add_argument("--json", help="also write the results here")
    ap.add_argument("--old", type=Path, help="the bitextforge executable of another checkout "
                    "(e.g. /tmp/old/.venv/bin/bitextforge), timed in the same rounds")
    ap.add_argument("--input", choices=["captions", "mixed"], default="captions",
                    help="captions: Multi30k repeated; mixed: mixed-domain text (see MIXED)")
    args = ap.parse_args()
    s, t = make_mixed_corpus(args.lines) if args.input == "mixed" else make_corpus(args.lines)
    if args.profile:
        profile(args.profile, bf_recipe(args.profile, s, t))
        return 0
    # byte-compile bitextforge's modules first, as installing a package does (OpusFilter's venv
    # has them compiled): otherwise an editable checkout under PYTHONDONTWRITEBYTECODE compiles
    # its sources again in every timed run
    roots = [ROOT] + ([args.old.resolve().parents[2]] if args.old else [])
    subprocess.run([sys.executable, "-m", "compileall", "-q",
                    *(str(r / d) for r in roots for d in ("core", "plugins"))], check=True)
    results = {}
    for lid in args.lid:
        oc, br = opus_config(lid, s, t), bf_recipe(lid, s, t)
        runs = {"opusfilter": [], "bitextforge": []}
        if args.old:
            runs["bitextforge_old"] = []
        for _ in range(args.runs):  # alternate the tools so both see the same machine load
            runs["opusfilter"].append(timed([str(OPUSFILTER), "--overwrite", str(oc)]))
            if args.old:
                shutil.rmtree(WORK / f"bf-old-{lid}", ignore_errors=True)
                runs["bitextforge_old"].append(timed([str(args.old), "run", str(br), "-o",
                                                      str(WORK / f"bf-old-{lid}")]))
            # a fresh output directory each time (a killed run would otherwise be resumed)
            shutil.rmtree(WORK / f"bf-{lid}", ignore_errors=True)
            runs["bitextforge"].append(timed([str(BITEXTFORGE), "run", str(br)]))
        r: dict = {"input": args.input, "lines": args.lines, "runs": args.runs}
        for tool, vals in runs.items():
            r[tool] = {"wall_s": [round(v[0], 2) for v in vals],
                       "median_wall_s": round(statistics.median(v[0] for v in vals), 2),
                       "median_cpu_s": round(statistics.median(v[1] for v in vals), 2),
                       "max_rss_mb": round(max(v[2] for v in vals), 1)}
        r["throughput_ratio"] = round(r["opusfilter"]["median_wall_s"]
                                      / r["bitextforge"]["median_wall_s"], 2)
        r["cpu_ratio"] = round(r["opusfilter"]["median_cpu_s"]
                               / r["bitextforge"]["median_cpu_s"], 2)
        r["rows"] = compare(lid)
        if args.old:
            r["throughput_ratio_old"] = round(r["opusfilter"]["median_wall_s"]
                                              / r["bitextforge_old"]["median_wall_s"], 2)
            r["new_over_old_pair_by_pair"] = [round(n[0] / o[0], 3) for n, o in
                                              zip(runs["bitextforge"], runs["bitextforge_old"])]
            r["old_new_identical"] = all(
                (WORK / f"bf-old-{lid}" / n).read_bytes() == (WORK / f"bf-{lid}" / n).read_bytes()
                for n in ("corpus.src", "corpus.tgt"))
        results[lid] = r
        print(json.dumps({lid: r}, indent=2, ensure_ascii=False), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
