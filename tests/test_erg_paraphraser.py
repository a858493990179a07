"""erg.v1 (Nichols et al. section 4.1) through pydelphin's real ACEParser / ACEGenerator.

ACE and a compiled ERG cannot be installed on this machine, so every test here that talks to
"ACE" uses tests/fixtures/erg/fake_ace.py, a small program that STANDS IN FOR THE ACE BINARY: it
replays the real ACE parse transcript in ../shared/data/ace-transcripts and, for generation, the
hand-written --tsdb-stdout answers in tests/fixtures/erg/generate-mrs-*.txt for gold ERG MRSs read
from ../shared/data/erg-gold-profiles. pydelphin's process handling, option checks and s-expression
reading all run for real. test_erg_real.py runs the same path against a real ACE when configured.
"""

import json
import pickle
import stat
import sys
import time
from pathlib import Path

import pytest

from bitextforge import ComponentError
from bitextforge.plugins.erg import ErgParaphraser, change_label, check_mrs, rank_realizations
from bitextforge.plugins.erg import ace as ergace
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe
from bitextforge.testing import ERG_GEN_ITEMS, erg_gold_items, erg_pred_key as pred_key

from conftest import shared

FIX = Path(__file__).parent / "fixtures" / "erg"
GEN_ITEMS = ERG_GEN_ITEMS


def gold_items(profile="mrs", derivations=False):
    """{i-id: (sentence, top gold MRS text[, derivation])} of a gold profile of the shared data."""
    return erg_gold_items(shared("erg-gold-profiles", profile), derivations)


@pytest.fixture
def fake_ace(tmp_path):
    """``make(**table) -> (ace_path, table_path, log_path)``: the stand-in for the ACE binary."""
    def make(parse=None, generate=None, hang=(), crash=()):
        exe = tmp_path / "ace"
        exe.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FIX / "fake_ace.py"}" "$@"\n')
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        log = tmp_path / "ace.log"
        table = {"parse": parse or {}, "generate": generate or {}, "hang": list(hang),
                 "crash": list(crash), "log": str(log), "gold": str(shared("erg-gold-profiles"))}
        tpath = tmp_path / "erg-replay.json"
        tpath.write_text(json.dumps(table), encoding="utf-8")
        return str(exe), str(tpath), log
    return make


def gold_table():
    """Parse answers carrying the gold MRSs of GEN_ITEMS, generation answers from the fixtures,
    and the real recorded transcript for "It rained."."""
    gold = gold_items(derivations=True)
    parse = {GEN_ITEMS[i]: {"mrs": gold[i][1], "derivation": gold[i][2]} for i in GEN_ITEMS}
    parse["It rained."] = {"transcript": str(shared("ace-transcripts",
                                                   "erg2018-parse-it-rained.tsdb-stdout.txt"))}
    generate = {pred_key(gold[i][1]): str(FIX / f"generate-mrs-{i}.txt") for i in GEN_ITEMS}
    return parse, generate


def test_parse_replays_the_real_transcript_through_acepparser(fake_ace):
    # stands in for the ACE binary: replays the recorded ERG 2018 parse of "It rained."
    exe, table, log = fake_ace(parse={"It rained.": {"transcript": str(shared(
        "ace-transcripts", "erg2018-parse-it-rained.tsdb-stdout.txt"))}})
    comp = ErgParaphraser(ErgParaphraser.Config(ace=exe, grammar=table))
    try:
        m = comp.parse_top("It rained.")
        assert [ep.predicate for ep in m.rels] == ["_rain_v_1"]
        assert m.variables["e2"]["TENSE"] == "past"
        assert comp.parse_top("Colourless green ideas.") is None  # no analysis: empty results
        assert comp.parser.proc.run_info["grammar"] == "ERG (2018)"  # read from the run note
    finally:
        comp.close()
    argv = json.loads(log.read_text().splitlines()[0])["argv"]
    # pydelphin passes the roots as one -r value and adds the tsdb options itself
    assert argv[argv.index("-r") + 1] == "root_strict root_informal"
    assert argv[argv.index("-n") + 1] == "1" and "--tsdb-stdout" in argv
    assert comp.counts["parsed"] == 1 and comp.counts["no_parse"] == 1


def test_gold_mrs_wellformedness_checks():
    from delphin import mrs as M
    from delphin.codecs import simplemrs

    rejected = {"full": 0, "basic": 0, "off": 0}
    total = 0
    for profile in ("mrs", "esd", "ccs", "fracas"):  # csli too would triple the time
        for _, (_, text) in gold_items(profile).items():
            m = simplemrs.decode(text)
            total += 1
            for level in rejected:
                why = check_mrs(m, level)
                rejected[level] += why is not None
            assert (check_mrs(m, "full") is None) == M.is_well_formed(m)
    # measured on the shared gold profiles: a few gold MRSs fail pydelphin's scoping heuristic
    # ("three twenty", "four o'clock") and fewer fail connectedness/intrinsic variables
    assert total > 800
    assert 0 < rejected["basic"] <= rejected["full"] < 20 and rejected["off"] == 0
    # an MRS with an EP cut off from the rest is refused before it can reach the generator
    m = simplemrs.decode(gold_items()[41][1])  # Abrams chased Browne.
    broken = M.MRS(top=m.top, index=m.index, rels=[ep for ep in m.rels
                                                    if ep.predicate != "_chase_v_1"],
                   hcons=m.hcons, variables=m.variables)
    assert check_mrs(broken, "full") == "not connected"


def test_paraphrases_from_gold_mrss(fake_ace):
    # stands in for the ACE binary: parse answers carry gold MRSs, generation answers are the
    # hand-written transcripts in tests/fixtures/erg
    parse, generate = gold_table()
    exe, table, log = fake_ace(parse=parse, generate=generate)
    comp = ErgParaphraser(ErgParaphraser.Config(ace=exe, grammar=table, n=8))
    try:
        out = comp.paraphrase([GEN_ITEMS[i] for i in (11, 451, 421, 1011, 681)])
        info = comp.manifest_info()
        # derivations reach the Figure 3 labels: the parse's and each realization's
        assert comp.last_derivation.startswith("(root_strict")
        gen = comp.generate(comp.parse_top(GEN_ITEMS[681]))
        assert [r["derivation"][:12] for r in gen] == ["(root_strict"] * 2
    finally:
        comp.close()
    rained, probably, couldnt, somebody, squeezed = out
    assert rained == []  # the only realization is the input itself
    assert [(t, s, x["change"]) for t, s, x in probably] == [
        ("Probably the dog barked.", 1.2047, "syntactic"),
        ("The dog barked probably.", -0.3521, "syntactic")]
    assert [(t, x["change"]) for t, _, x in couldnt] == [("The dog could not bark.", "lexical")]
    assert [(t, x["change"]) for t, _, x in somebody] == [("Someone chased Abrams.", "lexical")]
    assert [(t, x["provenance"]) for t, _, x in squeezed] == [
        ("Browne squeezed the cat in.", "syntactic")]
    assert info["sentences"] == 5 and info["parsed"] == 5 and info["generated"] == 5
    assert info["with_distinct_paraphrase"] == 4 and info["paraphrases"] == 5
    assert info["percent"]["with_distinct_paraphrase"] == 80.0
    assert info["distinct_at_least"] == {"1": 4, "2": 1}
    assert info["change"] == {"lexical": 2, "syntactic": 3}
    gen_argv = [json.loads(x)["argv"] for x in log.read_text().splitlines()
                if "argv" in x and "-e" in x]
    assert gen_argv and gen_argv[0][gen_argv[0].index("-r") + 1] == "root_strict"


def test_recipe_run_writes_change_column_and_manifest(fake_ace, pair_files, tmp_path):
    # stands in for the ACE binary (see module docstring)
    parse, generate = gold_table()
    exe, table, _ = fake_ace(parse=parse, generate=generate)
    en = [GEN_ITEMS[451], GEN_ITEMS[11], "An unparsable line without analysis"]
    s, t = pair_files(["犬はたぶん吠えた。", "雨が降った。", "解析できない行"], en)
    out = tmp_path / "run"
    text = (f"name: erg\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nsteps:\n"
            f"  - paraphrase: erg.v1\n    side: tgt\n    with: {{ace: '{exe}', grammar: '{table}'}}\n"
            f"  - weight: distributed.v1\n    with: {{n: 2}}\n")
    res = run_recipe(parse_recipe(text, "erg.yaml"))
    rows = [dict(zip(*[ln.split("\t") for ln in [lines[0], r]]))
            for lines in [(out / "corpus.tsv").read_text(encoding="utf-8").splitlines()]
            for r in lines[1:]]
    assert [r["tgt"] for r in rows[:3]] == [en[0], "Probably the dog barked.",
                                            "The dog barked probably."]
    assert rows[1]["origin"] == "erg.v1:syntactic" and rows[1]["change"] == "syntactic"
    assert rows[1]["src"] == "犬はたぶん吠えた。"
    assert res.rows_out == 9  # d.2: 3 rows for each of the 3 originals
    m = json.loads((out / "manifest.json").read_text())
    info = m["steps"][0]["info"]
    assert (info["parsed"], info["no_parse"], info["generated"]) == (2, 1, 2)
    assert info["percent"]["parsed"] == 66.7 and info["ace"]["version"] == "0.9.34"


@pytest.mark.long
def test_hung_ace_is_killed_and_restarted(fake_ace):
    # stands in for the ACE binary: it never answers "Hang here." nor the MRS of item 451
    parse, generate = gold_table()
    gold = gold_items()
    parse["Hang here."] = {"mrs": gold[11][1]}
    exe, table, log = fake_ace(parse=parse, generate=generate,
                               hang=["Hang here.", pred_key(gold[451][1])])
    comp = ErgParaphraser(ErgParaphraser.Config(ace=exe, grammar=table, timeout=3.0))
    t0 = time.monotonic()
    try:
        out = comp.paraphrase(["Hang here.", GEN_ITEMS[421], GEN_ITEMS[451], GEN_ITEMS[1011]])
    finally:
        comp.close()
    assert time.monotonic() - t0 < 40  # two 3 s timeouts plus restarts on a loaded machine
    assert out[0] == [] and out[2] == []
    assert [t for t, _, _ in out[1]] == ["The dog could not bark."]  # after a parser restart
    assert [t for t, _, _ in out[3]] == ["Someone chased Abrams."]  # after a generator restart
    info = comp.manifest_info()
    assert (info["parse_timeouts"], info["generate_timeouts"], info["timeouts"]) == (1, 1, 2)
    assert info["ace"]["restarts"] == 2 and info["percent"]["timeouts"] == 50.0


def test_crashed_ace_counts_as_no_parse_and_recovers(fake_ace):
    # stands in for the ACE binary: it exits without answering "Crash here."
    parse, generate = gold_table()
    exe, table, _ = fake_ace(parse=parse, generate=generate, crash=["Crash here."])
    comp = ErgParaphraser(ErgParaphraser.Config(ace=exe, grammar=table, timeout=5.0))
    try:
        out = comp.paraphrase(["Crash here.", GEN_ITEMS[421]])
        # a copy for another worker (Ray pickles components) starts its own ACE processes
        clone = pickle.loads(pickle.dumps(comp))
        assert clone.parser.proc is None and comp.parser.proc is not None
        assert [t for t, _, _ in clone.paraphrase([GEN_ITEMS[1011]])[0]] == [
            "Someone chased Abrams."]
        clone.close()
    finally:
        comp.close()
    assert out[0] == [] and [t for t, _, _ in out[1]] == ["The dog could not bark."], (
        dict(comp.counts), comp.parser.restarts, comp.generator.restarts)
    assert comp.counts["no_parse"] == 1 and comp.counts["parsed"] == 1


def test_too_long_sentences_are_not_sent(fake_ace):
    exe, table, log = fake_ace()
    comp = ErgParaphraser(ErgParaphraser.Config(ace=exe, grammar=table, max_words=3))
    try:
        assert comp.paraphrase(["one two three four"]) == [[]]
    finally:
        comp.close()
    assert comp.counts["too_long"] == 1 and comp.parser.starts == 0


def test_paths_from_env_and_user_file(fake_ace, tmp_path, monkeypatch):
    exe, table, _ = fake_ace()
    monkeypatch.delenv(ergace.ENV_ACE, raising=False)
    monkeypatch.delenv(ergace.ENV_ERG, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ComponentError, match="no ACE executable configured.*doctor"):
        ErgParaphraser()
    checks = ErgParaphraser.doctor()
    assert [ok for ok, _, _ in checks] == [False, False]
    assert "erg-2025-x86-64-0.9.34.dat.bz2" in checks[1][2]
    cfg = tmp_path / "cfg" / "bitextforge" / "erg.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'ace = "{exe}"\ngrammar = "{table}"\n')
    comp = ErgParaphraser()
    assert (comp.ace_path, comp.grammar_path) == (exe, table)
    checks = ErgParaphraser.doctor()
    assert all(ok for ok, _, _ in checks) and "ACE 0.9.34" in checks[0][1]
    monkeypatch.setenv(ergace.ENV_ERG, str(tmp_path / "missing.dat"))
    with pytest.raises(ComponentError, match="missing.dat.*BITEXTFORGE_ERG.*does not exist"):
        ErgParaphraser()
    assert ErgParaphraser(ErgParaphraser.Config(grammar=table)).grammar_path == table  # option wins
    cfg.write_text('ace = "x"\ngrammer = "y"\n')
    with pytest.raises(ComponentError, match="unknown keys"):
        ErgParaphraser()


def test_change_labels_follow_figure_3():
    src = "Everybody often goes to the the movies."
    assert change_label(src, "Everybody goes to the movies often.") == "both"  # the the -> the
    assert change_label("Everybody often goes to the movies.",
                        "Everybody goes often to the movies.") == "syntactic"
    assert change_label("Everybody often goes to the movies.",
                        "Everyone often goes to the movies.") == "lexical"
    assert change_label("Everybody often goes to the movies.",
                        "Everyone goes to the movies often.") == "both"
    assert change_label("It rained.", "it  rained.") == "none"


def test_change_labels_from_real_erg_derivations():
    # gold derivations of the ERG profile 'mrs' stand for the parse of an input and of a
    # realization; the paper compares lexical items and parse trees
    from delphin import itsdb

    ts = itsdb.TestSuite(shared("erg-gold-profiles", "mrs"))
    d = {int(r["i-id"]): (r["i-input"], r["results"][0]["derivation"])
         for r in ts.processed_items() if r["results"]}

    def label(i, j):
        return change_label(d[i][0], d[j][0], d[i][1], d[j][1])

    assert label(671, 681) == "syntactic"  # squeezed the cat in / squeezed in the cat
    assert label(51, 61) == "both"  # handed Browne the cigarette / the cigarette to Browne
    assert label(151, 161) == "lexical"  # The cat chased it. / The cat chased itself.
    assert label(111, 241) == "lexical"  # Every cat barked. / No cat barked.
    assert label(21, 141) == "both"  # a name and a pronoun head different noun phrases
    assert label(451, 451) == "none"
    # unreadable derivations fall back to the surface comparison
    assert change_label("The dog barked.", "The dog barked .", "(x", "(y") == "none"


def test_rank_dedupes_lowercase_and_drops_input():
    results = [{"surface": "B c."}, {"surface": "a b.", "score": "3.0"},
               {"surface": "b C."}, {"surface": "A B."}, {"surface": ""}]
    kept, distinct = rank_realizations("A b.", results, n=5)
    assert kept == [("B c.", -0.0, None)] and distinct == 1
    kept, distinct = rank_realizations("x", [{"surface": f"s{i}", "score": i} for i in range(5)],
                                       n=2)
    assert kept == [("s4", 4.0, None), ("s3", 3.0, None)] and distinct == 5


def test_pydelphin_refuses_non_whitelisted_options(fake_ace):
    from delphin import ace

    exe, table, _ = fake_ace()
    comp = ErgParaphraser(ErgParaphraser.Config(ace=exe, grammar=table))
    comp.parser.cmdargs.append("--bogus")  # not in pydelphin's whitelist of ACE options
    with pytest.raises(ComponentError, match="refused by pydelphin"):
        comp.parse_top("It rained.")
    comp.close()
    # why roots go through -r: pydelphin's whitelist takes "--root" as an abbreviation of
    # --rooted-derivations, so it would pass silently and set no root at all
    assert ace._ace_argparser.parse_args(["--root"]).rooted_derivations is True
