"""The Ray runner on a cluster of several Ray nodes on this machine (``ray.cluster_utils.Cluster``:
a head node with no CPU, so every actor runs on a worker node, and two worker nodes of one CPU
each, each its own raylet and object store). The output must be the local runner's, byte for
byte: when the steps' actors sit on different nodes, and when a worker node is killed in the
middle of a run. ``bitextforge run --address`` to that cluster prints nothing of Ray's.

One cluster serves the module (starting nodes costs seconds of CPU); the data is 600 real
Tatoeba pairs, so each run takes a few seconds."""

import warnings
import os
import threading
import time

import pytest

from bitextforge import Filter, RecipeError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import shared

ray = pytest.importorskip("ray", reason="the Ray runner needs the ray extra "
                                        "(pip install 'bitextforge[ray]')")
cluster_utils = pytest.importorskip("ray.cluster_utils")
pytestmark = pytest.mark.long


class OnNode(Filter):
    """Test filter: the source length in characters; notes the Ray node of every batch it scores
    (one line a batch in ``log``), and waits ``pause`` seconds a batch so that a node can be
    killed while batches are still in flight."""

    name = "on_node_test.v1"
    default_keep = {"min": 0}

    class Config(Filter.Config):
        """Options of on_node_test.v1."""

        log: str
        pause: float = 0.0

    def score(self, batch):
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else "driver"
        with open(self.config.log, "a", encoding="utf-8") as f:
            f.write(f"{node}\n")
        time.sleep(self.config.pause)
        return [float(len(s)) for s in batch["src"]]


DRIVER_PID = os.getpid()


class DriverOnlyModel(Filter):
    """Test filter that reads a model file (declared in ``input_paths``) which only the driver's
    disk has: the driver's copy reads it and then removes it, as if the other nodes lacked it."""

    name = "driver_only_model_test.v1"
    default_keep = {"min": 0}

    class Config(Filter.Config):
        """Options of driver_only_model_test.v1."""

        model: str

    @classmethod
    def input_paths(cls, config):
        return {"model": config.model}

    def __init__(self, config=None):
        super().__init__(config)
        with open(self.config.model, encoding="utf-8") as f:
            self.weight = float(f.read())
        if os.getpid() == DRIVER_PID:
            os.remove(self.config.model)

    def score(self, batch):
        return [self.weight] * len(batch["src"])


@pytest.fixture(scope="module")
def cluster():
    """The cluster, joined as ``--address`` joins it: through ``RAY_ADDRESS``, by the runner's
    own ``ray.init`` at the first run."""
    if ray.is_initialized():
        ray.shutdown()
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={
        "num_cpus": 0, "include_dashboard": False})
    workers = [c.add_node(num_cpus=1) for _ in range(2)]
    c.wait_for_nodes()
    before = os.environ.get("RAY_ADDRESS")
    os.environ["RAY_ADDRESS"] = c.address
    yield c, workers
    ray.shutdown()
    c.shutdown()
    if before is None:
        del os.environ["RAY_ADDRESS"]
    else:
        os.environ["RAY_ADDRESS"] = before


@pytest.fixture
def on_node(bitextforge_plugin):
    return bitextforge_plugin(OnNode, DriverOnlyModel, name="rayclustertest")


def _recipe(out, runner, steps, limit=600, batch=50, shard_size=None):
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    shards = f", shard_size: {shard_size}" if shard_size else ""
    return parse_recipe(
        f"name: rayclustertest\ninput: {{src: '{src}', tgt: '{tgt}', limit: {limit}}}\n"
        f"output: {{dir: '{out}', formats: [tsv]{shards}}}\nprogress: false\n"
        f"batch_size: {batch}\nrunner: {runner}\nsteps:\n{steps}", "c.yaml")


def _same_files(tmp_path, a="local", b="ray"):
    for name in ("corpus.tsv", "rejected.tsv"):
        left, right = tmp_path / a / name, tmp_path / b / name
        assert left.read_bytes() == right.read_bytes(), name


def _nodes(log):
    return log.read_text(encoding="utf-8").split()


def test_a_run_on_an_existing_cluster_prints_nothing_of_rays(cluster, on_node, tmp_path, capfd):
    """The first run joins the cluster (as ``--address`` does); Ray's INFO lines (its dataset
    log and progress reports, which ignored ``-q``) and its C++ warnings stay out of stderr,
    even with the run's progress on; so does Ray Data's warning that a pool of two actors got
    fewer blocks than actors (the 200 rows are one packet), which a user cannot act on."""
    assert not ray.is_initialized()
    steps = (f"  - filter: on_node_test.v1\n    with: {{log: '{tmp_path / 'n.log'}'}}\n"
             "    resources: {num_cpus: 0.25, concurrency: 2}\n")
    recipe = _recipe(tmp_path / "ray", "ray", steps, limit=200)
    capfd.readouterr()
    with warnings.catch_warnings(record=True) as caught:  # pytest would hide them from stderr
        warnings.simplefilter("default")
        res = run_recipe(recipe, progress=True)
    assert res.rows_out == 200 and len(ray.nodes()) == 3
    err = capfd.readouterr().err
    assert "INFO" not in err and "core_worker" not in err and "ray" not in err.lower(), err
    shown = [f"{w.category.__name__}: {w.message}" for w in caught
             if not issubclass(w.category, DeprecationWarning)]
    assert not shown, shown


def test_actors_on_two_nodes_write_the_local_runners_bytes(cluster, on_node, tmp_path):
    """Two Ray steps of 0.75 CPU each on nodes of one CPU each: their actors run on different
    nodes; a driver step (dedupe) sits between them."""
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    steps = (f"  - filter: on_node_test.v1\n    with: {{log: '{logs[0]}'}}\n"
             "    resources: {num_cpus: 0.75, concurrency: 1}\n"
             "  - filter: dedupe.v1\n    with: {'on': src}\n"
             f"  - filter: on_node_test.v1\n    with: {{log: '{logs[1]}'}}\n"
             "    keep: {max: 60}\n    as: second\n"
             "    resources: {num_cpus: 0.75, concurrency: 1}\n"
             "  - filter: length_ratio.v1\n    keep: {max: 1.8}\n"
             "    resources: {num_cpus: 0.25, concurrency: 1}\n")
    local = run_recipe(_recipe(tmp_path / "local", "local", steps))
    for log in logs:
        log.write_text("", encoding="utf-8")
    onray = run_recipe(_recipe(tmp_path / "ray", "ray", steps))
    _same_files(tmp_path)
    assert (local.rows_out, local.rejected) == (onray.rows_out, onray.rejected)
    assert all(s["rows_in"] != s["rows_out"] for s in local.manifest["steps"][1:])
    first, second = (set(_nodes(log)) for log in logs)
    workers = {n["NodeID"] for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")}
    assert len(first) == len(second) == 1 and first | second == workers, (first, second)


def test_a_model_missing_on_a_node_is_refused_before_any_actor_starts(cluster, on_node,
                                                                      tmp_path):
    """A Ray step's declared files are looked for on every node first: one that a node lacks is
    refused with the step, the path and the node, and no output is written."""
    model = tmp_path / "weight.txt"
    model.write_text("1.0", encoding="utf-8")
    steps = (f"  - filter: driver_only_model_test.v1\n    with: {{model: '{model}'}}\n"
             "    resources: {num_cpus: 0.5, concurrency: 1}\n")
    with pytest.raises(RecipeError, match=r"^c\.yaml: steps\[0\]\.with\.model: .*weight\.txt "
                                          r"is not on Ray node .* needs it at the same path"):
        run_recipe(_recipe(tmp_path / "ray", "ray", steps, limit=100))
    assert not (tmp_path / "ray" / "corpus.tsv").exists()


def test_a_worker_node_killed_mid_run_the_run_finishes_identical(cluster, on_node, tmp_path):
    """A worker node is removed (its raylet and actors killed) while its actor is scoring:
    Ray restarts the actor on the node left and retries the lost batches; the run finishes
    with the local runner's bytes."""
    c, workers = cluster
    log = tmp_path / "n.log"
    steps = (f"  - filter: on_node_test.v1\n    with: {{log: '{log}', pause: 0.1}}\n"
             "    resources: {num_cpus: 0.5, concurrency: 1}\n"
             "  - filter: dedupe.v1\n"
             "  - filter: length_ratio.v1\n    keep: {max: 1.8}\n"
             "    resources: {num_cpus: 0.5, concurrency: 1}\n")
    run_recipe(_recipe(tmp_path / "local", "local", steps, shard_size=200))
    log.write_text("", encoding="utf-8")
    by_id = {w.node_id: w for w in workers}
    killed = []

    def kill_when_busy():
        deadline = time.time() + 60
        while time.time() < deadline:
            seen = _nodes(log)
            if len(seen) >= 4:
                victim = by_id[seen[-1]]
                c.remove_node(victim, allow_graceful=False)
                killed.append((victim.node_id, len(seen)))
                return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_when_busy, daemon=True)
    killer.start()
    run_recipe(_recipe(tmp_path / "ray", "ray", steps, shard_size=200))
    killer.join(timeout=5)
    assert killed, "the run ended before a node could be killed"
    _same_files(tmp_path)
    # the node killed had run batches, and the batches after it ran elsewhere
    seen = _nodes(log)
    assert killed[0][0] in seen[:killed[0][1]]
    assert seen[-1] != killed[0][0]
    # (the last test of the module: the cluster stays one worker short)
