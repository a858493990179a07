"""The Ray runner: a run on a local 2-CPU Ray cluster writes exactly what the local
runner writes, on real Tatoeba de-en data (which has duplicates), with driver-side global/stateful
steps between Ray steps.

A mixed CPU/GPU run on Ray (issue #36), without a GPU: the cluster advertises one fake GPU
(``ray.init(num_gpus=1)``), which lets a step with ``resources: {num_gpus: 0.5}`` schedule; its
actor is given GPU 0 (``CUDA_VISIBLE_DEVICES=0``) but sees no CUDA device, so ``device: auto``
resolves to the CPU, while the cheap steps' actors are given no GPU at all. The output must be
the local runner's, byte for byte. One cluster serves every test here: starting Ray costs
seconds of CPU, which a second module's cluster spent again."""

import json
import os
import warnings

import pytest

from bitextforge import ComponentError, Filter, Generator, Paraphraser, RecipeError, Splitter
from bitextforge.hardware import device_field, resolve_device, visible_gpus
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import shared

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.long


class Swap(Paraphraser):
    """Test paraphraser (deterministic): word order reversed, and the last word dropped."""

    name = "swap_test.v1"
    extra_columns = ("trick",)

    def paraphrase(self, sentences):
        out = []
        for s in sentences:
            w = s.split()
            cands = [(" ".join(reversed(w)), -0.25, {"trick": "rev", "provenance": "rev"})]
            if len(w) > 3:
                cands.append((" ".join(w[:-1]), -0.5 - len(w) / 100))
            out.append(cands)
        return out


class Boom(Filter):
    """Fails on rows containing 'Boom', to test that a worker's error reaches the user intact."""

    name = "boom_test.v1"
    default_keep = {"min": 0}

    def score(self, batch):
        for s in batch["src"]:
            if "Boom" in s:
                raise ComponentError("boom_test.v1: found a bomb in src; remove it")
        return [1.0] * len(batch["src"])


class CommaSplit(Splitter):
    """Test splitter: a pair whose sides have the same number of commas splits at them."""

    name = "comma_split_test.v1"

    def split(self, batch):
        out = []
        for s, t in zip(batch["src"], batch["tgt"]):
            a, b = s.split(","), t.split(",")
            out.append(list(zip(a, b)) if len(a) == len(b) > 1 else [])
        return out


class Mirror(Generator):
    """Test generator (deterministic): the words reversed and, for longer sentences, also
    without their last word."""

    name = "mirror_test.v1"

    def generate(self, sentences):
        return [[(" ".join(reversed(s.split())), -0.1)] + ([(" ".join(s.split()[:-1]), -0.2)]
                                                          if len(s.split()) > 4 else [])
                for s in sentences]


DRIVER_PID = os.getpid()


class NoModelOnWorker(Filter):
    """Starts in the driver, but not on a Ray worker: its model is missing there (a ValueError,
    which the Plan turns into a one-line error) or its start-up has a bug (a RuntimeError)."""

    name = "no_model_on_worker_test.v1"
    default_keep = {"min": 0}
    error = ValueError

    def __init__(self, config=None):
        super().__init__(config)
        if os.getpid() != DRIVER_PID:  # the driver's pid, shipped with the class
            raise self.error("no model on this machine")

    def score(self, batch):
        return [1.0] * len(batch["src"])


class BugOnWorker(NoModelOnWorker):
    """NoModelOnWorker with a bug in its start-up instead."""

    name = "bug_on_worker_test.v1"
    error = RuntimeError


class Counted(Filter):
    """Notes every construction (the process id) in a file: how often a model would load."""

    name = "counted_test.v1"
    default_keep = {"min": 0}

    class Config(Filter.Config):
        """Options of counted_test.v1."""

        log: str

    def __init__(self, config=None):
        super().__init__(config)
        with open(self.config.log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")

    def score(self, batch):
        return [float(len(s)) for s in batch["src"]]


@pytest.fixture
def test_plugins(bitextforge_plugin):
    return bitextforge_plugin(Swap, CommaSplit, Boom, NoModelOnWorker, BugOnWorker, Mirror,
                              Counted, name="raytest")


@pytest.fixture(scope="module")
def cluster():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield
    ray.shutdown()


STEPS = """\
  - filter: dedupe.v1
    with: {'on': src}
  - filter: length.v1
    with: {combine: shorter}
    keep: {min: 3}
    as: len_min
  - filter: length_ratio.v1
    keep: {max: 1.8}
  - paraphrase: swap_test.v1
    side: tgt
  - filter: length.v1
    with: {unit: chars, side: tgt}
    apply_to: paraphrases
    keep: {min: 20, top: 0.6, order: lowest}
    as: para_len
  - filter: length.v1
    with: {side: src}
    keep: {words: 30000, words_side: both}
    as: words
  - weight: distributed.v1
    with: {n: 3}
    resources: {num_cpus: 0.25, concurrency: 1}
"""


def _recipe(src, tgt, out, runner, steps=STEPS, limit=2000, batch=100):
    return parse_recipe(
        f"name: raytest\ninput: {{src: '{src}', tgt: '{tgt}', limit: {limit}}}\n"
        f"output: {{dir: '{out}', formats: [plain, tsv]}}\nprogress: false\nbatch_size: {batch}\n"
        f"runner: {runner}\nsteps:\n{steps}", "r.yaml")


def test_ray_output_identical_to_local(cluster, test_plugins, tmp_path):
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    local = run_recipe(_recipe(src, tgt, tmp_path / "local", "local"))
    onray = run_recipe(_recipe(src, tgt, tmp_path / "ray", "ray"))
    assert local.rows_in == onray.rows_in == 2000
    # every step removed something, so the comparison covers each kind of decision
    steps = local.manifest["steps"]
    assert all(s["rows_in"] != s["rows_out"] for s in steps), steps
    assert local.rejected > 300 and local.rows_out > 700
    for name in ("corpus.tsv", "corpus.src", "corpus.tgt", "rejected.tsv", "corpus.weights"):
        a, b = tmp_path / "local" / name, tmp_path / "ray" / name
        assert a.exists() == b.exists(), name
        if a.exists():
            assert a.read_bytes() == b.read_bytes(), name
    assert (local.rows_out, local.rejected) == (onray.rows_out, onray.rejected)
    m = json.loads((tmp_path / "ray" / "manifest.json").read_text())
    assert m["runner"] == "ray"
    counts = [(s["component"], s["rows_in"], s["rows_out"]) for s in m["steps"]]
    assert counts == [(s["component"], s["rows_in"], s["rows_out"]) for s in steps]
    assert m["steps"][0]["info"] == steps[0]["info"]  # dedupe ran once, in the driver
    # the summary's counts made in the actors (paraphrase, weight) reach the driver's manifest
    assert steps[3]["counts"]["originals"] > 0 and steps[6]["counts"]["groups"] > 0
    assert [s.get("counts") for s in m["steps"]] == [s.get("counts") for s in steps]
    assert [s.get("effective_threshold") for s in m["steps"]] == \
        [s.get("effective_threshold") for s in steps]
    # rejected rows keep the step and score that rejected them
    rej = (tmp_path / "ray" / "rejected.tsv").read_text(encoding="utf-8").splitlines()
    head = rej[0].split("\t")
    whys = {ln.split("\t")[head.index("rejected_by")] for ln in rej[1:]}
    assert {"steps[1]:length.v1", "steps[0]:dedupe.v1", "steps[2]:length_ratio.v1",
            "steps[4]:length.v1", "steps[4]:length.v1 (top 0.6)"} <= whys


def _sharded_recipe(src, tgt, out, runner, steps):
    """600 rows in three shards of 200, batches of 50."""
    return parse_recipe(
        f"name: raytest\ninput: {{src: '{src}', tgt: '{tgt}', limit: 600}}\n"
        f"output: {{dir: '{out}', formats: [tsv], shard_size: 200}}\n"
        f"progress: false\nbatch_size: 50\nrunner: {runner}\nsteps:\n{steps}", "r.yaml")


def test_sharded_run_builds_its_actors_once_and_matches_local(cluster, test_plugins, tmp_path):
    """A sharded run feeds every shard through the same Ray Data pipeline: each actor (and the
    model it loads) is built once for the run, not once per shard, and the output is the local
    runner's, byte for byte, with a driver step between Ray steps."""
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    log = tmp_path / "built.txt"
    steps = (f"  - filter: counted_test.v1\n    with: {{log: '{log}'}}\n"
             f"    resources: {{concurrency: 1}}\n"
             "  - filter: dedupe.v1\n    with: {'on': src}\n"
             "  - paraphrase: swap_test.v1\n    side: tgt\n    resources: {concurrency: 1}\n")
    runs = {}
    for runner in ("local", "ray"):
        recipe = _sharded_recipe(src, tgt, tmp_path / runner, runner, steps)
        log.write_text("", encoding="utf-8")
        runs[runner] = run_recipe(recipe)
        built = log.read_text(encoding="utf-8").split()
        if runner == "ray":
            # the driver's copy, and one actor for all three shards
            workers = [p for p in built if int(p) != os.getpid()]
            assert len(built) == 2 and len(workers) == 1, built
    # three shards of 200 rows: before the pipeline was kept, three actors were built
    assert all(r.manifest["output"]["resumable"] for r in runs.values())
    for name in ("corpus.tsv", "rejected.tsv"):
        assert ((tmp_path / "local" / name).read_bytes()
                == (tmp_path / "ray" / name).read_bytes()), name


def test_a_words_selection_scores_on_actors_and_matches_local(cluster, test_plugins, tmp_path):
    """In a sharded run the scoring of a ``keep: {words}`` step (its first pass) runs on Ray
    actors like any streaming step, one actor for every shard; the selection follows the last
    shard in the driver, and the files are the local runner's."""
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    log = tmp_path / "built.txt"
    steps = (f"  - filter: counted_test.v1\n    with: {{log: '{log}'}}\n"
             f"    keep: {{min: 10, words: 2000}}\n    resources: {{concurrency: 1}}\n"
             "  - filter: length.v1\n    keep: {max: 12}\n")
    for runner in ("local", "ray"):
        recipe = _sharded_recipe(src, tgt, tmp_path / runner, runner, steps)
        log.write_text("", encoding="utf-8")
        res = run_recipe(recipe)
        assert res.manifest["steps"][0]["effective_threshold"]["selected"] > 0
    workers = [p for p in log.read_text(encoding="utf-8").split() if int(p) != os.getpid()]
    assert len(workers) == 1, workers  # scored on an actor, built once for the three shards
    for name in ("corpus.tsv", "rejected.tsv"):
        assert ((tmp_path / "local" / name).read_bytes()
                == (tmp_path / "ray" / name).read_bytes()), name


def test_pools_start_at_their_concurrency_when_all_fit(cluster, test_plugins, tmp_path):
    """A step with ``concurrency: 2`` gets its two actors from the start when every step's actors
    fit the cluster (a pool started at one was seen to stay at one, leaving a core idle)."""
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    log = tmp_path / "built.txt"
    log.write_text("", encoding="utf-8")
    run_recipe(_recipe(src, tgt, tmp_path / "out", "ray", limit=200, batch=50,
                       steps=f"  - filter: counted_test.v1\n    with: {{log: '{log}'}}\n"
                             f"    resources: {{num_cpus: 0.25, concurrency: 2}}\n"))
    workers = {p for p in log.read_text(encoding="utf-8").split() if int(p) != os.getpid()}
    assert len(workers) == 2, workers


def test_a_pool_larger_than_the_input_says_nothing(cluster, test_plugins, tmp_path):
    """Ray Data warns when a pool of two actors gets one block; the input's size is the user's,
    the pool's the recipe's, and the run does the same work either way: the warning is not
    shown."""
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    log = tmp_path / "built.txt"
    log.write_text("", encoding="utf-8")
    with warnings.catch_warnings(record=True) as caught:  # pytest would hide them from stderr
        warnings.simplefilter("default")
        res = run_recipe(_recipe(src, tgt, tmp_path / "out", "ray", limit=20, batch=50,
                                 steps=f"  - filter: counted_test.v1\n    with: {{log: '{log}'}}\n"
                                       f"    resources: {{num_cpus: 0.25, concurrency: 2}}\n"))
    assert res.rows_out == 20
    shown = [f"{w.category.__name__}: {w.message}" for w in caught
             if not issubclass(w.category, DeprecationWarning)]
    assert not shown, shown


def test_worker_error_reaches_user_and_leaves_no_output(cluster, test_plugins, pair_files,
                                                          tmp_path):
    s, t = pair_files(["ein Haus"] * 5 + ["Boom Boom"], ["a house"] * 5 + ["boom boom"])
    steps = "  - filter: boom_test.v1\n  - filter: length.v1\n    keep: {min: 0}\n"
    with pytest.raises(ComponentError, match="found a bomb in src"):
        run_recipe(_recipe(s, t, tmp_path / "x", "ray", steps, limit=10))
    assert not (tmp_path / "x" / "corpus.tsv").exists()


def test_worker_start_up_errors_are_handled_as_the_local_plan_handles_them(
        cluster, test_plugins, pair_files, tmp_path):
    """A worker builds its steps with the driver's Plan loop: a component that cannot start there
    gives the local run's one-line error, and a bug stays the bug it is (as it would locally)."""
    s, t = pair_files(["ein Haus"] * 3, ["a house"] * 3)
    steps = "  - filter: length.v1\n    keep: {{min: 0}}\n  - filter: {name}\n"
    with pytest.raises(ComponentError) as err:
        run_recipe(_recipe(s, t, tmp_path / "x", "ray",
                           steps.format(name="no_model_on_worker_test.v1"), limit=10))
    assert str(err.value) == ("r.yaml: steps[1]: no_model_on_worker_test.v1: cannot start: no "
                              "model on this machine")
    with pytest.raises(RuntimeError) as bug:
        run_recipe(_recipe(s, t, tmp_path / "y", "ray",
                           steps.format(name="bug_on_worker_test.v1"), limit=10))
    assert str(bug.value) == "no model on this machine"
    assert bug.value.__notes__[0].startswith("(on a Ray worker)\nTraceback")  # the worker's
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_actor_resources_beyond_the_cluster_are_refused(cluster, pair_files, tmp_path):
    s, t = pair_files(["ein Haus"], ["a house"])
    steps = "  - filter: length.v1\n    keep: {min: 0}\n    resources: {num_cpus: 3}\n"
    with pytest.raises(RecipeError, match="resources.*need 3 CPUs.*cluster has 2"):
        run_recipe(_recipe(s, t, tmp_path / "y", "ray", steps, limit=10))


def test_global_last_step_with_more_batches_than_the_queue(cluster, pair_files, tmp_path):
    # 20 batches of 2 rows (the feeding queue holds 8); the top: step is last, so its rejections
    # are replayed while its generator is suspended
    src = [" ".join(f"w{j}" for j in range(1 + (i * 7) % 11)) for i in range(40)]
    s, t = pair_files(src, [x.upper() for x in src])
    steps = ("  - filter: length_ratio.v1\n    keep: {max: 3}\n"
             "  - filter: length.v1\n    with: {side: src}\n    keep: {min: 2, top: 0.5}\n")
    for runner in ("local", "ray"):
        run_recipe(_recipe(s, t, tmp_path / runner, runner, steps, limit=40, batch=2))
    for name in ("corpus.tsv", "rejected.tsv"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes()
    assert len((tmp_path / "ray" / "rejected.tsv").read_text().splitlines()) > 15


def test_split_step_runs_in_the_driver_and_matches(cluster, test_plugins, tmp_path):
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    steps = ("  - filter: length.v1\n    keep: {min: 1}\n"
             "  - split: comma_split_test.v1\n"
             "  - filter: length_ratio.v1\n    keep: {max: 2}\n")
    for runner in ("local", "ray"):
        run_recipe(_recipe(src, tgt, tmp_path / runner, runner, steps, limit=500))
    local = (tmp_path / "local" / "corpus.tsv").read_bytes()
    assert local == (tmp_path / "ray" / "corpus.tsv").read_bytes()
    assert b"comma_split_test.v1" in local  # some rows were split


def test_several_inputs_and_generation_match_the_local_runner(cluster, test_plugins, tmp_path):
    """Bitext and monolingual text, a generate step run by Ray workers, then filters: the same
    bytes as the local runner."""
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    for runner in ("local", "ray"):
        run_recipe(parse_recipe(
            f"name: raygen\ninput:\n  - {{name: bitext, src: '{src}', tgt: '{tgt}', limit: 300}}\n"
            f"  - {{name: mono, tgt: '{tgt}', skip: 300, limit: 500}}\n"
            f"output: {{dir: '{tmp_path / runner}'}}\nprogress: false\nbatch_size: 100\n"
            f"runner: {runner}\nsteps:\n  - generate: mirror_test.v1\n    side: src\n"
            f"  - filter: length_ratio.v1\n    keep: {{max: 1.5}}\n    origins: [mono]\n"
            f"  - filter: length.v1\n    keep: {{words: 4000}}\n", "g.yaml"))
    for name in ("corpus.tsv", "rejected.tsv"):
        local = (tmp_path / "local" / name).read_bytes()
        assert local == (tmp_path / "ray" / name).read_bytes(), name
    assert b"mirror_test.v1" in (tmp_path / "local" / "corpus.tsv").read_bytes()


#: the fake-GPU expectations (auto -> cpu) do not hold where a real GPU is visible
FAKE_GPU_ONLY = pytest.mark.skipif(visible_gpus("torch") > 0, reason="a real GPU is visible "
                                   "here: the fake-GPU expectations (auto -> cpu) do not hold")


class Where(Filter):
    """Test filter: the source length in characters; its device fact also says which GPUs Ray
    gave its process, so the test can see where each actor ran."""

    name = "where_test.v1"
    default_keep = {"min": 0}

    class Config(Filter.Config):
        """Options of where_test.v1."""

        device: str = device_field()

    def __init__(self, config=None):
        super().__init__(config)
        self.device = resolve_device(self.config.device, self.name)

    def score(self, batch):
        return [float(len(s)) for s in batch["src"]]

    def manifest_info(self):
        visible = os.environ.get("CUDA_VISIBLE_DEVICES")
        return {"device": f"{self.device} (CUDA_VISIBLE_DEVICES={visible!r})"}


def _gpu_recipe(out, runner, steps):
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    return parse_recipe(
        f"name: raygpu\ninput: {{src: '{src}', tgt: '{tgt}', limit: 600}}\n"
        f"output: {{dir: '{out}', formats: [tsv]}}\nprogress: false\nbatch_size: 100\n"
        f"runner: {runner}\nsteps:\n{steps}", "r.yaml")


GPU_STEPS = """\
  - filter: length_ratio.v1
    keep: {max: 1.8}
    resources: {num_cpus: 0.25, concurrency: 1}
  - filter: where_test.v1
    keep: {min: 12}
    resources: {num_cpus: 0.25, num_gpus: 0.5, concurrency: 1}
  - filter: where_test.v1
    keep: {max: 150}
    as: where_max
    resources: {num_cpus: 0.5, concurrency: 1}
"""


@FAKE_GPU_ONLY
def test_gpu_step_gets_a_gpu_actor_cheap_steps_cpu_actors_same_output(cluster,
                                                                       bitextforge_plugin,
                                                                       tmp_path):
    bitextforge_plugin(Where, name="raygputest")
    local = run_recipe(_gpu_recipe(tmp_path / "local", "local", GPU_STEPS))
    onray = run_recipe(_gpu_recipe(tmp_path / "ray", "ray", GPU_STEPS))
    for name in ("corpus.tsv", "rejected.tsv"):
        assert (tmp_path / "local" / name).read_bytes() == (tmp_path / "ray" / name).read_bytes()
    assert all(s["rows_in"] != s["rows_out"] for s in local.manifest["steps"])
    m = json.loads((tmp_path / "ray" / "manifest.json").read_text(encoding="utf-8"))
    steps = m["steps"]
    # the GPU step's actor was given the fake GPU 0 and, seeing no CUDA device, ran on the CPU
    assert steps[1]["info"]["ray_devices"] == ["cpu (CUDA_VISIBLE_DEVICES='0')"]
    # a step that asked for no GPU is hidden from the node's GPUs (Ray would leave them visible)
    assert steps[2]["info"]["ray_devices"] == ["cpu (CUDA_VISIBLE_DEVICES='')"]
    assert "ray_devices" not in steps[0].get("info", {})  # a component without a device: no fact
    # the local run's component saw the machine as it is
    assert "ray_devices" not in local.manifest["steps"][1].get("info", {})
    assert onray.rows_out == local.rows_out


@FAKE_GPU_ONLY
def test_more_gpus_than_the_cluster_has_are_refused(cluster, bitextforge_plugin, tmp_path):
    bitextforge_plugin(Where, name="raygputest")
    steps = ("  - filter: where_test.v1\n    keep: {min: 0}\n"
             "    resources: {num_cpus: 0.25, num_gpus: 2}\n")
    with pytest.raises(RecipeError, match="need 2 GPUs for one actor each but the cluster has 1"):
        run_recipe(_gpu_recipe(tmp_path / "x", "ray", steps))
    assert not (tmp_path / "x" / "corpus.tsv").exists()


def _ray_command(pair_files, tmp_path, *extra, env=None, timeout=120):
    """``bitextforge run --runner ray`` of a three-pair length recipe writing into
    ``tmp_path/out``, with ``extra`` arguments; the finished process (``timeout`` seconds at
    most)."""
    import subprocess
    import sys

    s, t = pair_files(["ein Haus"] * 3, ["a house"] * 3)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: tiny\ninput: {{src: '{s}', tgt: '{t}'}}\n"
                      f"output: {{dir: '{tmp_path / 'out'}'}}\nsteps:\n  - filter: length.v1\n"
                      "    keep: {max: 80}\n", encoding="utf-8")
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", "run", str(recipe), "--runner",
                           "ray", *extra], capture_output=True, text=True, timeout=timeout, env=env)


def test_an_address_where_no_cluster_answers_fails_at_once_in_one_line(pair_files, tmp_path):
    """``--address`` to a port where nothing listens: Ray itself retried for minutes and said
    nothing; the run fails in one line naming the address, within seconds, and writes nothing."""
    import socket

    with socket.socket() as sock:  # a port that was free a moment ago: nothing listens there
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    res = _ray_command(pair_files, tmp_path, "--address", f"127.0.0.1:{port}", timeout=60)
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines() == [
        f"bitextforge: error: --address 127.0.0.1:{port}: no Ray cluster answers at "
        f"127.0.0.1:{port} (Connection refused); start one with `ray start --head` and give the "
        f"address it prints, or leave --address out for a local cluster"]
    assert not (tmp_path / "out").exists()


def test_a_local_cluster_that_cannot_start_is_one_line(pair_files, tmp_path):
    """Ray's own start-up failure (here its socket paths under a long ``RAY_TMPDIR`` exceed what
    a Unix socket allows) is one line naming Ray and its reason, not Ray's traceback."""
    deep = tmp_path / ("x" * 60) / ("y" * 60)
    deep.mkdir(parents=True)
    res = _ray_command(pair_files, tmp_path, env={**os.environ, "RAY_TMPDIR": str(deep)})
    assert res.returncode == 2, res.stderr
    (line,) = res.stderr.splitlines()
    assert line.startswith("bitextforge: error: --runner ray: Ray did not start (local): ")
    assert "AF_UNIX path length" in line and line.endswith("; or use --runner local")
    assert not (tmp_path / "out").exists()


def test_a_run_waiting_for_cpus_held_by_other_work_says_so(cluster, test_plugins, tmp_path,
                                                           capfd):
    """Another job holds the cluster's CPUs: Ray would wait for them in silence; the run says
    in one line what it waits for, and finishes once they are freed."""
    import threading
    import time

    @ray.remote(num_cpus=2)
    class Hold:
        def ping(self):
            return 1

    holder = Hold.remote()
    ray.get(holder.ping.remote())
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    recipe = _recipe(src, tgt, tmp_path / "out", "ray", limit=20, batch=50,
                     steps="  - filter: length.v1\n    keep: {max: 80}\n"
                           "    resources: {num_cpus: 0.5, concurrency: 1}\n")
    capfd.readouterr()
    done: dict = {}
    run = threading.Thread(target=lambda: done.update(res=run_recipe(recipe)))
    run.start()
    err, deadline = "", time.time() + 60
    while "waiting for the cluster" not in err and time.time() < deadline and run.is_alive():
        time.sleep(0.2)
        err += capfd.readouterr().err
    ray.kill(holder)
    run.join(timeout=120)
    assert done["res"].rows_out == 20
    assert ("bitextforge: --runner ray: waiting for the cluster: the steps' actors need 0.5 CPUs "
            "(0 free now); other work holds the rest, and the run starts when it is freed") in err
