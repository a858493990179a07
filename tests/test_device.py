"""``device: auto | cpu | cuda | cuda:N`` (issue #36): one resolution for every model-backed
component, a one-line error naming the step when a GPU is asked for and none is visible, the
device on record in the manifest and the trainers' facts, and models saved so that they load on
any device. Written for a machine without a GPU; where one is visible, the expectations follow
(``auto`` is then ``cuda:0``) and the no-GPU error tests skip."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from bitextforge import ComponentError
from bitextforge.hardware import parse_device, resolve_device, visible_gpus

pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")

DE = ["Der Hund schläft im Garten.", "Ich trinke morgens gern Kaffee.", "Wo ist der Bahnhof?",
      "Das Wetter ist heute schön."]
EN = ["The dog is sleeping in the garden.", "I like to drink coffee in the morning.",
      "Where is the train station?", "The weather is nice today."]

NO_GPU = pytest.mark.skipif(visible_gpus("torch") > 0 or visible_gpus("ctranslate2") > 0,
                            reason="a GPU is visible here")


def _auto(library: str) -> str:
    return "cuda:0" if visible_gpus(library) else "cpu"


def test_parse_device_accepts_the_documented_forms_only():
    assert parse_device("auto") == ("auto", None)
    assert parse_device("cpu") == ("cpu", None)
    assert parse_device("cuda") == ("cuda", None)
    assert parse_device("cuda:3") == ("cuda", 3)
    for bad in ("gpu", "cuda:", "cuda:x", "CPU", "cuda:1:2", ""):
        with pytest.raises(ComponentError, match=r"^steps\[1\]: x.v1: device .*: give auto, cpu"):
            parse_device(bad, "steps[1]: x.v1")


def test_auto_follows_the_library_and_cpu_is_cpu():
    for library in ("torch", "ctranslate2"):
        assert resolve_device("auto", "x", library) == _auto(library)
        assert resolve_device("cpu", "x", library) == "cpu"
    # a resolved device resolves to itself: components and backends may both resolve it
    assert resolve_device(resolve_device("auto", "x"), "x") == _auto("torch")


@NO_GPU
def test_cuda_without_a_gpu_names_the_component_and_the_library():
    with pytest.raises(ComponentError) as e:
        resolve_device("cuda", "nmt_logprob.v1")
    assert str(e.value) == "nmt_logprob.v1: device cuda: no GPU visible to torch"
    with pytest.raises(ComponentError) as e:
        resolve_device("cuda:1", "translate.v1", "ctranslate2")
    assert str(e.value) == "translate.v1: device cuda:1: no GPU visible to ctranslate2"


def test_a_torch_model_on_a_gpu_keeps_attention_off_cudnn(monkeypatch):
    """cuDNN attention plans anew for every shape, which made the first epoch of a training on an
    H200 about 6x slower than the later ones; a torch component resolved to a GPU turns it off,
    one on the CPU (or a CTranslate2 one) leaves torch as it was. The GPU is made up here."""
    import torch

    was = torch.backends.cuda.cudnn_sdp_enabled()
    try:
        torch.backends.cuda.enable_cudnn_sdp(True)
        assert resolve_device("cpu", "x") == "cpu"
        assert torch.backends.cuda.cudnn_sdp_enabled()
        monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
        assert resolve_device("cuda:1", "x") == "cuda:1"
        assert not torch.backends.cuda.cudnn_sdp_enabled()
        torch.backends.cuda.enable_cudnn_sdp(True)
        assert resolve_device("auto", "x") == "cuda:0"
        assert not torch.backends.cuda.cudnn_sdp_enabled()
    finally:
        torch.backends.cuda.enable_cudnn_sdp(was)


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A de->en model of one layer, trained for a few updates by nmt_model.v1 (device auto) in
    a recipe's prepare list; the run's manifest and the model directory."""
    from bitextforge.recipe.load import parse_recipe
    from bitextforge.api import run_recipe

    d = tmp_path_factory.mktemp("device")
    (d / "t.de").write_text("\n".join(DE * 20) + "\n", encoding="utf-8")
    (d / "t.en").write_text("\n".join(EN * 20) + "\n", encoding="utf-8")
    (d / "c.tsv").write_text("".join(f"{s}\t{t}\n" for s, t in zip(DE, EN)), encoding="utf-8")
    text = f"""name: device
input: {{path: '{d / "c.tsv"}', format: tsv, columns: [src, tgt]}}
prepare:
  - train: nmt_model.v1
    with: {{src_train: '{d / "t.de"}', tgt_train: '{d / "t.en"}', src_lang: de, tgt_lang: en,
            output: '{d / "de-en"}', max_steps: 5, vocab_size: 60, d_model: 16, layers: 1,
            heads: 2, ffn_dim: 32, batch_tokens: 200, threads: 1, max_len: 16,
            min_warmup_steps: 1, precision: fp32}}
steps:
  - filter: nmt_logprob.v1
    with: {{model: '{d / "de-en"}', threads: 1}}
    keep: {{min: -1000}}
output: {{dir: '{d / "out"}'}}
"""
    run_recipe(parse_recipe(text, str(d / "r.yaml")))
    manifest = json.loads((d / "out" / "manifest.json").read_text(encoding="utf-8"))
    return d, manifest


def test_manifest_and_training_facts_record_the_device(model):
    d, manifest = model
    prep = manifest["prepare"][0]
    assert prep["info"]["device"] == _auto("torch")
    log = json.loads((d / "de-en" / "train_log.json").read_text(encoding="utf-8"))
    assert log["device"] == _auto("torch") and log["options"]["device"] == "auto"
    step = manifest["steps"][0]
    assert step["info"]["model"]["device"] == _auto("ctranslate2")
    filled = (d / "out" / "recipe.filled.yaml").read_text(encoding="utf-8")
    assert "device: auto" in filled


def test_bad_device_is_a_recipe_error_naming_the_key(tmp_path):
    from bitextforge import RecipeError
    from bitextforge.recipe.load import parse_recipe

    text = f"""name: bad
input: {{src: a, tgt: b}}
steps:
  - filter: nmt_logprob.v1
    with: {{model: m, device: gpu}}
output: {{dir: '{tmp_path / "out"}'}}
"""
    with pytest.raises(RecipeError, match=r"steps\[0\] \(\w+\)\.with\.device: String should match "
                                          r"pattern .*auto\|cpu\|cuda"):
        parse_recipe(text, str(tmp_path / "r.yaml"))


@NO_GPU
def test_cuda_step_without_a_gpu_fails_in_one_line_before_any_output(model, tmp_path):
    d, _ = model
    (tmp_path / "r.yaml").write_text(f"""name: cuda
input: {{path: '{d / "c.tsv"}', format: tsv, columns: [src, tgt]}}
steps:
  - filter: length_ratio.v1
    keep: {{max: 3}}
  - filter: nmt_logprob.v1
    with: {{model: '{d / "de-en"}', device: cuda, backend: transformers}}
    keep: {{min: -1000}}
output: {{dir: '{tmp_path / "out"}'}}
""", encoding="utf-8")
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "run",
                          str(tmp_path / "r.yaml"), "-q"], capture_output=True, text=True)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert lines == [f"bitextforge: error: {tmp_path / 'r.yaml'}: steps[1]: nmt_logprob.v1: "
                     f"device cuda: no GPU visible to torch"]
    assert not (tmp_path / "out" / "corpus.tsv").exists()
    assert not (tmp_path / "out" / "manifest.json").exists()


@NO_GPU
def test_training_on_a_missing_gpu_fails_before_reading_or_writing(tmp_path):
    from bitextforge.plugins.nmt.train import TrainOptions, train

    opts = TrainOptions(src_train=str(tmp_path / "absent.de"), tgt_train=str(tmp_path / "x"),
                        src_lang="de", tgt_lang="en", output=str(tmp_path / "m"),
                        device="cuda:0")
    # the missing corpus is reported first (nothing read yet); with files, the device
    with pytest.raises(Exception, match="no such file"):
        train(opts)
    (tmp_path / "absent.de").write_text("a\n", encoding="utf-8")
    (tmp_path / "x").write_text("b\n", encoding="utf-8")
    with pytest.raises(ComponentError, match=r"^nmt_model.v1: device cuda:0: no GPU visible"):
        train(opts, where="nmt_model.v1")
    assert not (tmp_path / "m").exists()


def test_models_saved_from_any_device_load_on_the_cpu(model, tmp_path):
    """The bilingual model's weights are saved as CPU tensors (torch.save keeps devices), and a
    CPU model's file is byte for byte what it was before the device option existed."""
    import io

    import torch

    from bitextforge.hardware import cpu_state_dict
    from bitextforge.plugins.bilingual.model import BilingualEmbedder, ModelConfig

    net = BilingualEmbedder(ModelConfig(vocab_size=20, embed_dim=4, hidden_dim=4))
    state = cpu_state_dict(net)
    assert all(t.device.type == "cpu" for t in state.values())
    a, b = io.BytesIO(), io.BytesIO()
    torch.save(net.state_dict(), a)
    torch.save(state, b)
    assert a.getvalue() == b.getvalue()
    # (a GPU module's copy to the CPU is checked by benchmarks/gpu_check.py on a GPU)
    # the train-nmt model directory holds safetensors weights, which carry no device
    d, _ = model
    assert (d / "de-en" / "model.safetensors").is_file()
    assert not (d / "de-en" / "pytorch_model.bin").exists()


def test_ray_driver_builds_a_gpu_step_on_the_cpu_when_it_has_no_gpu(tmp_path):
    """Under Ray a step with resources: {num_gpus} runs in GPU actors; the driver's own copy,
    built by the plan on a head node that may have no GPU, must start rather than fail with "no
    GPU visible", while the actors get the recipe's config as written."""
    from bitextforge.pipeline.plan import driver_config
    from bitextforge.recipe.load import parse_recipe

    def recipe(runner, resources):
        return parse_recipe(f"""name: d
input: {{src: a, tgt: b}}
runner: {runner}
steps:
  - filter: nmt_logprob.v1
    with: {{model: m, device: cuda}}
    keep: {{min: -9}}
{resources}output: {{dir: '{tmp_path / "out"}'}}
""", str(tmp_path / "r.yaml"))

    gpu = "    resources: {num_gpus: 0.5}\n"
    for runner, res, driver in (("ray", gpu, "cpu" if not visible_gpus("torch")
                                  and not visible_gpus("ctranslate2") else "cuda"),
                                ("ray", "", "cuda"), ("local", gpu, "cuda")):
        r = recipe(runner, res)
        assert driver_config(r, r.steps[0], r.configs[0]).device == driver, (runner, res)
        assert r.configs[0].device == "cuda"


@NO_GPU
def test_ctranslate2_counting_gpus_it_cannot_run_on_sees_none(monkeypatch):
    """CTranslate2's wheels count the GPUs of any driver but load cuBLAS of their own CUDA major
    version at the first translation: on a lent H200 with CUDA 13 only, ``auto`` chose the GPU
    and every decoding then failed with "libcublas.so.12 is not found". This machine has no
    cuBLAS at all, so the real check of the installed wheel finds that library missing; with the
    count made to say 1, ``auto`` must still choose the CPU and ``cuda`` must say why."""
    import ctranslate2

    from bitextforge.hardware import ctranslate2_cuda_problem

    problem = ctranslate2_cuda_problem()
    assert problem is not None and "cannot load libcublas.so." in problem, problem
    monkeypatch.setattr(ctranslate2, "get_cuda_device_count", lambda: 1)
    assert visible_gpus("ctranslate2") == 0
    assert resolve_device("auto", "steps[0]: translate.v1", "ctranslate2") == "cpu"
    with pytest.raises(ComponentError, match=r"no GPU visible to ctranslate2 \(ctranslate2 .* "
                       r"counts a GPU but cannot load libcublas\.so\.[0-9]+"):
        resolve_device("cuda", "steps[0]: translate.v1", "ctranslate2")
