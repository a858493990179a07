"""A mixed CPU/GPU run on Ray (issue #36), without a GPU: a local cluster that advertises one
fake GPU (``ray.init(num_gpus=1)``) lets a step with ``resources: {num_gpus: 0.5}`` schedule; its
actor is given GPU 0 (``CUDA_VISIBLE_DEVICES=0``) but sees no CUDA device, so ``device: auto``
resolves to the CPU, while the cheap steps' actors are given no GPU at all. The output must be
the local runner's, byte for byte."""

from __future__ import annotations

import json
import os

import pytest

from bitextforge import Filter, RecipeError
from bitextforge.hardware import device_field, resolve_device, visible_gpus
from bitextforge.recipe.load import parse_recipe
from bitextforge.pipeline.run import run_recipe

from conftest import shared

ray = pytest.importorskip("ray")

pytestmark = pytest.mark.skipif(visible_gpus("torch") > 0, reason="a real GPU is visible here: "
                                "the fake-GPU expectations (auto -> cpu) do not hold")


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


@pytest.fixture(scope="module")
def gpu_cluster():
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, log_to_driver=False,
             logging_level="ERROR")
    yield
    ray.shutdown()


def _recipe(out, runner, steps):
    src, tgt = (shared("tatoeba-test-v2021-08-07", "deu-eng.deu"),
                shared("tatoeba-test-v2021-08-07", "deu-eng.eng"))
    return parse_recipe(
        f"name: raygpu\ninput: {{src: '{src}', tgt: '{tgt}', limit: 600}}\n"
        f"output: {{dir: '{out}', formats: [tsv]}}\nprogress: false\nbatch_size: 100\n"
        f"runner: {runner}\nsteps:\n{steps}", "r.yaml")


STEPS = """\
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


def test_gpu_step_gets_a_gpu_actor_cheap_steps_cpu_actors_same_output(gpu_cluster,
                                                                       bitextforge_plugin,
                                                                       tmp_path):
    bitextforge_plugin(Where, name="raygputest")
    local = run_recipe(_recipe(tmp_path / "local", "local", STEPS))
    onray = run_recipe(_recipe(tmp_path / "ray", "ray", STEPS))
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


def test_more_gpus_than_the_cluster_has_are_refused(gpu_cluster, bitextforge_plugin, tmp_path):
    bitextforge_plugin(Where, name="raygputest")
    steps = ("  - filter: where_test.v1\n    keep: {min: 0}\n"
             "    resources: {num_cpus: 0.25, num_gpus: 2}\n")
    with pytest.raises(RecipeError, match="need 2 GPUs for one actor each but the cluster has 1"):
        run_recipe(_recipe(tmp_path / "x", "ray", steps))
    assert not (tmp_path / "x" / "corpus.tsv").exists()
