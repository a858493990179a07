"""Sharded, resumable runs: a run killed with SIGKILL midway resumes after its last finished shard
and produces byte-identical output to an uninterrupted run, on real Multi30k lines; a model
replaced between the stop and the rerun makes the rerun refuse to mix the two models' scores."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from bitextforge import BitextforgeError, Filter
from bitextforge.errors import StepError
from bitextforge.plugins.quality.lm import find_tool
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import ROOT, SMALL_DE, SMALL_EN, fake_distribution, read_lines, read_tsv, shared

SLOW_PLUGIN = '''
"""A test plugin: a filter slow enough (a pause per batch) to kill a run midway."""
import time
import bitextforge
from bitextforge import Filter

class SlowLength(Filter):
    """Target length in characters, after a pause of 0.15 s per batch."""
    name = "slow_length_test.v1"

    def score(self, batch):
        time.sleep(0.15)
        return [float(len(t)) for t in batch["tgt"]]

class SlowLengthThreaded(SlowLength):
    """The same, run by the local runner in a thread of its own (dedupe.v1 before it too)."""
    name = "slow_length_threaded_test.v1"
    releases_gil = True

@bitextforge.hookimpl
def register_filters(register):
    register(SlowLength)
    register(SlowLengthThreaded)
'''


@pytest.fixture(scope="module")
def plugin_env(tmp_path_factory):
    """The example plugin and the slow test plugin as installed distributions (each a module and
    its ``.dist-info``, what pip leaves behind) on the PYTHONPATH of the runs. Not pip-installed:
    pip cost this fixture about 16 s of setup, and installing with pip is what
    test_example_plugin.py checks."""
    site = tmp_path_factory.mktemp("slowplugin")
    fake_distribution(site, "bitextforge_example",
                      ROOT / "docs" / "example-plugin" / "bitextforge_example")
    return fake_distribution(site, "slow_test_plugin", SLOW_PLUGIN)


def make_recipe(tmp_path, de, en):
    p = tmp_path / "resume.yaml"
    p.write_text(f"""name: resume
input: {{src: '{de}', tgt: '{en}'}}
output: {{dir: unused, shard_size: 1600}}
batch_size: 250
progress: false
steps:
  - filter: dedupe.v1
  - filter: slow_length_test.v1
    keep: {{min: 20, max: 90}}
  - paraphrase: contractions.v1
    side: tgt
  - filter: length_ratio.v1
    keep: {{max: 2.2}}
  - weight: distributed.v1
    with: {{n: 2}}
""")
    return p


def cli(env, *args, **kw):
    return [sys.executable, "-m", "bitextforge.cli", *map(str, args)]


@pytest.fixture(scope="module")
def full_run(tmp_path_factory, plugin_env):
    """The recipe over its input (4,000 Multi30k lines and 600 repeated), and a function giving
    the directory of an uninterrupted local run of it with the given ``--set`` arguments: a
    resumed run must write the same. Each variant runs once for the module (the local and the
    Ray cases share theirs)."""
    d = tmp_path_factory.mktemp("resume")
    lines_de = read_lines(shared("multi30k", "train.de.gz"), 4000)
    lines_en = read_lines(shared("multi30k", "train.en.gz"), 4000)
    # repeat a slice so dedupe state must survive the kill (duplicates span shards)
    de, en = d / "in.de", d / "in.en"
    de.write_text("\n".join(lines_de + lines_de[:600]) + "\n", encoding="utf-8")
    en.write_text("\n".join(lines_en + lines_en[:600]) + "\n", encoding="utf-8")
    recipe = make_recipe(d, de, en)
    done: dict = {}

    def full(*variant):
        if variant not in done:
            out = d / f"full{len(done)}"
            res = subprocess.run(cli(plugin_env, "run", recipe, "-o", out, *variant),
                                 env=plugin_env, capture_output=True, text=True)
            assert res.returncode == 0, res.stderr
            done[variant] = out
        return done[variant]

    return recipe, full


WORDS = ["--set", "steps[3].keep.words=15000"]  # a corpus-wide selection, then a weight step


@pytest.mark.long
@pytest.mark.parametrize("runner", ["local", "local-threads", "local-words", "ray"])
def test_killed_run_resumes_identically(tmp_path, plugin_env, full_run, runner):
    """Kill the driver with SIGKILL after a few shards; the resumed run (same runner) writes what
    an uninterrupted local run writes. Under Ray the killed driver owned a local Ray cluster: its
    orphaned Ray processes are cleaned up afterwards, and the resumed run starts its own.
    local-threads: the slow filter releases the GIL, so it and the stateful dedupe before it run
    in threads of their own, ahead of the sink that saves the shards' states.
    local-words: the length ratio step keeps the best pairs up to a words budget; the shards
    run up to its first pass and the selection follows them, and what it writes is what one
    pass without shards writes."""
    if runner == "ray":
        pytest.importorskip("ray")
    recipe, full_of = full_run
    part = tmp_path / "part"

    threads = ["--set", "steps[1].filter=slow_length_threaded_test.v1"]
    variant = {"local-threads": threads, "local-words": WORDS}.get(runner, [])
    full = full_of(*variant)
    extra = ["--runner", runner.split("-")[0], *variant]
    if runner == "local-words":  # one pass, no shards: what the sharded selection must match
        one = full_of(*WORDS, "--set", "output.shard_size=1000000")
        for name in ("corpus.tsv", "rejected.tsv", "corpus.src"):
            assert (one / name).read_bytes() == (full / name).read_bytes(), name
    # three shards of 1,600 rows, killed after the first: under Ray each shard starts its own
    # actors (each imports the plugins and builds the steps), and with ten shards of 500 the Ray
    # case took 37 s of CPU alone, with these 22 s
    kill_after_shards(cli(plugin_env, "run", recipe, "-o", part, *extra), plugin_env, part,
                      shards=1, total=3)
    assert not (part / "corpus.src").exists() and not (part / "manifest.json").exists()

    if runner == "local":  # checked before any runner starts: once is enough
        # a different recipe may not resume into this directory
        res = subprocess.run(cli(plugin_env, "run", recipe, "-o", part, "--set",
                                 "steps[1].keep.max=80"),
                             env=plugin_env, capture_output=True, text=True)
        assert res.returncode == 2 and "holds an unfinished run of a different recipe" in res.stderr

    res = subprocess.run(cli(plugin_env, "run", recipe, "-o", part, *extra), env=plugin_env,
                         capture_output=True, text=True, start_new_session=True)
    assert res.returncode == 0, res.stderr
    for name in ("corpus.src", "corpus.tgt", "corpus.tsv", "rejected.tsv"):
        assert (part / name).read_bytes() == (full / name).read_bytes(), name
    assert not (part / ".shards").exists()
    m_full = json.loads((full / "manifest.json").read_text())
    m_part = json.loads((part / "manifest.json").read_text())
    counts = lambda m: [(s["component"], s["rows_in"], s["rows_out"]) for s in m["steps"]]
    assert counts(m_full) == counts(m_part)
    assert m_part["output"]["rows"] == m_full["output"]["rows"] and m_part["output"]["resumable"]
    assert m_part["runner"] == extra[1]
    cut = lambda m: [s.get("effective_threshold") for s in m["steps"]]
    assert cut(m_full) == cut(m_part)
    # no duplicated and no missing rows: every kept (id, variant) pair appears as often as in full
    ids = lambda p: [ln.split("\t")[:2] for ln in (p / "corpus.tsv").read_text().splitlines()[1:]]
    assert ids(part) == ids(full)


def kill_after_shards(command: list, env: dict, part, shards: int = 3, total: int = 10) -> None:
    """Start ``command`` (a sharded run into ``part`` of ``total`` shards), SIGKILL it once
    ``shards`` shards are finished, and check that it was killed midway (at least that many
    shards, not all of them)."""
    # its own session, so the Ray processes a killed driver leaves behind can be found and ended
    # its stderr goes to a file beside the output, read back only when the run ended early
    err = part.parent / f"{part.name}.stderr"
    with open(err, "wb") as sink:
        proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=sink,
                                start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        done = list((part / ".shards").glob("*/DONE")) if (part / ".shards").exists() else []
        if len(done) >= shards or proc.poll() is not None:
            break
        time.sleep(0.05)
    assert proc.poll() is None, ("the run finished before it could be killed (exit "
                                 f"{proc.returncode}):\n{err.read_text(errors='replace')[-3000:]}")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    _kill_session(proc.pid)
    assert shards <= len(list((part / ".shards").glob("*/DONE"))) < total


def _kill_session(sid: int) -> None:
    """SIGKILL every process left in session ``sid`` (Ray's GCS and raylet outlive a killed
    driver for a while); the local runner leaves none."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getsid(int(entry)) == sid:
                os.kill(int(entry), signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


class ExplodingAfterFirstShard(Filter):
    """Test filter: target length, or an error on a row after the first shard while ``armed``
    (a run that stops with finished shards, as a killed one does); counts the rows it scores."""

    name = "explode_after_first_shard_test.v1"
    armed = True
    scored = 0

    def score(self, batch):
        if ExplodingAfterFirstShard.armed and any(int(i) >= 4 for i in batch["id"]):
            raise RuntimeError("stopped on purpose")
        ExplodingAfterFirstShard.scored += len(batch["tgt"])
        return [float(len(t)) for t in batch["tgt"]]


def exploding_recipe(src, tgt, out):
    """A recipe of shards of 4 rows over ``src`` / ``tgt`` into ``out`` whose one step is
    :class:`ExplodingAfterFirstShard` (registered by the test)."""
    return parse_recipe(
        f"name: resume-input\ninput: {{src: '{src}', tgt: '{tgt}'}}\n"
        f"output: {{dir: '{out}', shard_size: 4}}\nprogress: false\nbatch_size: 2\nsteps:\n"
        f"  - filter: explode_after_first_shard_test.v1\n    keep: {{min: 0}}\n", "r.yaml")


@pytest.mark.skipif(find_tool("lmplz") is None, reason="KenLM lmplz not built (run make env)")
def test_model_replaced_before_resume_is_refused_and_restart_scores_all_with_it(
        bitextforge_plugin, pair_files, tmp_path):
    """A sharded run stops after its first shard; the KenLM model it scores with is retrained at
    the same path. The rerun is refused, naming the model (the finished shard was scored by the
    old one); --restart scores every row with the new model, as an uninterrupted run does. With
    the model unchanged, the rerun resumes (the fingerprint is stable)."""
    from test_cache import TEXT_A, TEXT_B, train_lm

    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    s, t = pair_files(SMALL_DE, SMALL_EN)
    model = tmp_path / "lm.binary"

    def recipe(out):
        return parse_recipe(
            f"name: resume-model\ninput: {{src: '{s}', tgt: '{t}'}}\n"
            f"output: {{dir: '{out}', shard_size: 4}}\nprogress: false\nbatch_size: 2\nsteps:\n"
            f"  - filter: explode_after_first_shard_test.v1\n    keep: {{min: 0}}\n"
            f"  - filter: kenlm_perplexity.v1\n    with: {{model: '{model}'}}\n    as: ppl\n"
            f"    keep: {{max: 1.0e+12}}\n", "r.yaml")

    def ppl(out):
        return [r["ppl"] for r in read_tsv(out / "corpus.tsv")]

    train_lm(TEXT_A, model)
    ExplodingAfterFirstShard.armed = False
    run_recipe(recipe(tmp_path / "old"))
    ExplodingAfterFirstShard.armed = True
    part = tmp_path / "part"
    with pytest.raises(StepError, match="stopped on purpose"):
        run_recipe(recipe(part))
    assert (part / ".shards" / "00000" / "DONE").exists()
    assert not (part / ".shards" / "00001" / "DONE").exists()

    train_lm(TEXT_B, model)  # the same path, another model
    ExplodingAfterFirstShard.armed = False
    with pytest.raises(BitextforgeError) as err:
        run_recipe(recipe(part))
    assert str(err.value).startswith(f"{part}: holds an unfinished run of a different recipe, "
                                     f"input or model (changed: steps[1].with.model; 1 shard "
                                     f"finished)")
    assert (part / ".shards" / "00000" / "DONE").exists()  # refused: nothing discarded
    run_recipe(recipe(part), restart=True)
    run_recipe(recipe(tmp_path / "new"))
    assert ppl(part) == ppl(tmp_path / "new") != ppl(tmp_path / "old")
    assert ppl(part)[:4] != ppl(tmp_path / "old")[:4]  # the first shard too

    # the model unchanged: the rerun resumes after the finished shard
    ExplodingAfterFirstShard.armed = True
    again = tmp_path / "again"
    with pytest.raises(StepError):
        run_recipe(recipe(again))
    ExplodingAfterFirstShard.armed = False
    ExplodingAfterFirstShard.scored = 0
    run_recipe(recipe(again))
    assert ExplodingAfterFirstShard.scored == 4  # the second shard's rows only
    assert (again / "corpus.tsv").read_bytes() == (tmp_path / "new" / "corpus.tsv").read_bytes()


def test_input_copied_again_resumes_and_input_changed_in_place_is_refused(
        bitextforge_plugin, pair_files, tmp_path):
    """Input files count by content: the same bytes written again (data synced anew between a
    kill and the rerun, every file with a new modification time) continue the run after its
    finished shard; other bytes at the same size with the old modification time put back (what
    a size-and-time check cannot see) are refused, naming the input."""
    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    s, t = pair_files(SMALL_DE, SMALL_EN)

    def recipe(out):
        return exploding_recipe(s, t, out)

    def stopped_after_first_shard(out):
        ExplodingAfterFirstShard.armed = True
        with pytest.raises(StepError, match="stopped on purpose"):
            run_recipe(recipe(out))
        assert (out / ".shards" / "00000" / "DONE").exists()
        ExplodingAfterFirstShard.armed = False
        ExplodingAfterFirstShard.scored = 0

    first = tmp_path / "first"
    stopped_after_first_shard(first)
    for f in (s, t):  # copied again: the same bytes, a new file with a new modification time
        data, st = f.read_bytes(), f.stat()
        f.unlink()
        f.write_bytes(data)
        os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    run_recipe(recipe(first))
    assert ExplodingAfterFirstShard.scored == len(SMALL_DE) - 4  # the finished shard kept
    assert read_lines(first / "corpus.tgt") == SMALL_EN

    second = tmp_path / "second"
    stopped_after_first_shard(second)
    st = s.stat()
    changed = s.read_text(encoding="utf-8").replace("Hund", "Hahn")  # same length in bytes
    s.write_text(changed, encoding="utf-8")
    os.utime(s, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (s.stat().st_size, s.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
    with pytest.raises(BitextforgeError) as err:
        run_recipe(recipe(second))
    assert str(err.value).startswith(f"{second}: holds an unfinished run of a different recipe, "
                                     f"input or model (changed: input.src; 1 shard finished)")
    assert ExplodingAfterFirstShard.scored == 0


def test_a_large_input_is_said_when_it_is_read_for_its_identity_and_not_again(
        pair_files, tmp_path, monkeypatch, capsys):
    """The first fingerprint of a large input reads it whole, which is said with the file's
    name; its hash is then remembered, so a second run neither reads it nor says so. (Small
    inputs are hashed on every run, without the sidecar: the sizes are lowered here.)"""
    from bitextforge.cache import identity
    from bitextforge.pipeline import shards

    monkeypatch.setenv("BITEXTFORGE_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(shards, "LARGE_INPUT", 10)
    monkeypatch.setattr(shards, "REMEMBER_FROM", 10)
    # files just written are hashed every time (their change time is too recent to trust)
    monkeypatch.setattr(identity, "RACY_SECONDS", -1.0)
    s, t = pair_files(SMALL_DE, SMALL_EN)
    recipe = parse_recipe(f"name: big\ninput: {{src: '{s}', tgt: '{t}'}}\n"
                          f"output: {{dir: '{tmp_path / 'out'}'}}\n", "r.yaml")
    first = shards.input_fingerprint(recipe)
    err = capsys.readouterr().err
    assert f"bitextforge: {s}: reading its 0.0 GB once to identify it by content" in err
    assert str(t) in err
    assert shards.input_fingerprint(recipe) == first
    assert capsys.readouterr().err == ""


def test_a_run_started_under_the_size_and_time_test_still_continues(
        bitextforge_plugin, pair_files, tmp_path):
    """A run killed before inputs counted by content recorded them as ``path:size:mtime``; its
    rerun continues while the files have that size and time (the test it started under), and is
    refused, naming the input, when they do not."""
    import hashlib
    import json

    bitextforge_plugin(ExplodingAfterFirstShard, name="exploding-after-first-shard")
    s, t = pair_files(SMALL_DE, SMALL_EN)

    def stopped_with_legacy_record(out):
        r = exploding_recipe(s, t, out)
        ExplodingAfterFirstShard.armed = True
        with pytest.raises(StepError):
            run_recipe(r)
        meta = out / ".shards" / "run.json"
        parts = json.loads(meta.read_text())["parts"]
        for key, f in (("input.src", s), ("input.tgt", t)):  # what the former code wrote
            st = os.stat(f)
            parts[key] = f"{os.path.abspath(f)}:{st.st_size}:{st.st_mtime_ns}"
        digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()
        meta.write_text(json.dumps({"fingerprint": digest, "parts": parts}) + "\n")
        ExplodingAfterFirstShard.armed = False
        ExplodingAfterFirstShard.scored = 0
        return r

    r = stopped_with_legacy_record(tmp_path / "a")
    run_recipe(r)
    assert ExplodingAfterFirstShard.scored == len(SMALL_DE) - 4

    r = stopped_with_legacy_record(tmp_path / "b")
    st = t.stat()
    os.utime(t, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    with pytest.raises(BitextforgeError, match=r"\(changed: input\.tgt; 1 shard finished\)"):
        run_recipe(r)
