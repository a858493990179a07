"""train-nmt, the two translation backends and the NMT paraphrasers on a tiny model.

The model is trained in seconds on 300 real Multi30k pairs (read from ../shared/data at test time):
these tests check the pipeline (files, loading, conversion, scores, candidates, recipe rows), not
translation quality, which docs/benchmarks.md (NMT) measures with the real models.
"""

from __future__ import annotations

import json
import math
import os

import pytest

from bitextforge import ComponentError, InputError
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import read_lines, run_cli, shared

pytest.importorskip("transformers")
pytest.importorskip("ctranslate2")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """A 1+1-layer, 32-wide Marian de->en model trained for a few updates, plus its data."""
    from bitextforge.plugins.nmt.train import TrainOptions, train

    de = read_lines(shared("multi30k", "train.de.gz"), 300)
    en = read_lines(shared("multi30k", "train.en.gz"), 300)
    d = tmp_path_factory.mktemp("nmt")
    (d / "t.de").write_text("\n".join(de) + "\n", encoding="utf-8")
    (d / "t.en").write_text("\n".join(en) + "\n", encoding="utf-8")
    (d / "test.de").write_text("\n".join(de[:8]) + "\n", encoding="utf-8")
    (d / "test.en").write_text("\n".join(en[:8]) + "\n", encoding="utf-8")
    opts = TrainOptions(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                        tgt_lang="en", output=str(d / "model"), valid_src=str(d / "test.de"),
                        valid_tgt=str(d / "test.en"), tests=[(str(d / "test.de"),
                                                              str(d / "test.en"))],
                        max_steps=12, vocab_size=400, d_model=32, layers=1, heads=2, ffn_dim=64,
                        batch_tokens=600, lr=3e-3, warmup=5, min_warmup_steps=0, beam=2, threads=1,
                        max_len=24)
    info = train(opts, log=lambda m: None)
    return {"dir": d / "model", "info": info, "de": de, "en": en, "data": d}


def test_train_writes_a_standard_marian_directory(tiny):
    from transformers import MarianMTModel, MarianTokenizer

    d, info = tiny["dir"], tiny["info"]
    assert info["steps"] == 12
    log = json.loads((d / "train_log.json").read_text())
    assert [t["beam"] for t in log["tests"]] == [1, 2]
    assert {t["backend"] for t in log["tests"]} == {"ctranslate2"}  # the fast decoder by default
    assert all(0.0 <= t["bleu"] <= 100.0 and "nrefs:1" in t["signature"] for t in log["tests"])
    assert log["history"][-1]["valid_loss"] > 0
    tok = MarianTokenizer.from_pretrained(str(d))
    model = MarianMTModel.from_pretrained(str(d))
    vocab = json.loads((d / "vocab.json").read_text())
    # <pad> is the last id and starts the decoder (Marian's layout, which CTranslate2 expects).
    assert vocab["<pad>"] == len(vocab) - 1 == model.config.pad_token_id
    assert model.config.decoder_start_token_id == vocab["<pad>"]
    assert model.config.vocab_size == len(vocab)
    ids = tok("Ein Hund läuft.")["input_ids"]
    assert ids[-1] == vocab["</s>"] and vocab["<pad>"] not in ids


def test_bf16_forward_pass_trains_and_is_recorded(tiny, tmp_path):
    """precision: bf16 runs the forward pass under bf16 autocast (it changes the numbers, so it
    is really applied), keeps fp32 weights, learns, and says so in train_log.json; auto follows
    the CPU's flags."""
    import torch
    from transformers import MarianMTModel

    from bitextforge.hardware import cpu_has_bf16, resolve_precision
    from bitextforge.plugins.nmt.train import TrainOptions, train

    d = tiny["data"]
    base = dict(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                tgt_lang="en", valid_src=str(d / "test.de"), valid_tgt=str(d / "test.en"),
                max_steps=12, vocab_size=400, d_model=32, layers=1, heads=2, ffn_dim=64,
                batch_tokens=600, lr=3e-3, warmup=5, min_warmup_steps=0, threads=1, max_len=24,
                spm=str(tiny["dir"] / "joint.model"))
    infos, weights = {}, {}
    for prec in ("fp32", "bf16"):
        infos[prec] = train(TrainOptions(**base, output=str(tmp_path / prec), precision=prec),
                            log=lambda m: None)
        model = MarianMTModel.from_pretrained(str(tmp_path / prec))
        weights[prec] = model.get_input_embeddings().weight
    assert infos["bf16"]["precision"] == "bf16" and infos["fp32"]["precision"] == "fp32"
    assert weights["bf16"].dtype == torch.float32
    assert not torch.equal(weights["bf16"], weights["fp32"])
    hist = infos["bf16"]["history"]
    assert hist[-1]["valid_loss"] < math.log(400)  # better than a uniform guess over the pieces
    assert resolve_precision("auto") == ("bf16" if cpu_has_bf16() else "fp32")


def test_snapshots_are_model_directories_that_translate(tiny, tmp_path):
    """snapshots: true saves the model at every validation (and the final one) as a directory
    a backend loads like the kept model."""
    from bitextforge.plugins.nmt.backends import Decoding, make_backend
    from bitextforge.plugins.nmt.train import TrainOptions, train

    d = tiny["data"]
    opts = TrainOptions(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                        tgt_lang="en", output=str(tmp_path / "m"), max_steps=3, vocab_size=400,
                        d_model=32, layers=1, heads=2, ffn_dim=64, batch_tokens=600, threads=1,
                        max_len=24, snapshots=True)
    info = train(opts, log=lambda m: None)
    snaps = sorted((tmp_path / "m" / "snapshots").iterdir())
    assert [p.name for p in snaps] == ["step-3"] and info["history"][-1]["snapshot"] == str(snaps[0])
    out = make_backend("transformers", str(snaps[0])).translate(["Ein Hund läuft."],
                                                                Decoding(beam=1, k=1))
    assert len(out) == 1 and isinstance(out[0][0][0], str)


def test_weight_average_follows_its_decay_and_gives_the_weights_back():
    import torch

    from bitextforge.plugins.nmt.train import WeightAverage

    lin = torch.nn.Linear(1, 1, bias=False)
    with torch.no_grad():
        lin.weight.fill_(0.0)
    avg = WeightAverage(torch, lin, 0.5)
    with torch.no_grad():
        lin.weight.fill_(4.0)
    avg.update(1)  # decay min(0.5, 2/11): 0 + (1 - 2/11) * 4
    with torch.no_grad():
        lin.weight.fill_(8.0)
    avg.update(100)  # decay 0.5
    want = (1 - 2 / 11) * 4 * 0.5 + 8.0 * 0.5
    with avg.swapped_in():
        assert lin.weight.item() == pytest.approx(want)
    assert lin.weight.item() == 8.0


def _short_run(d, **kw) -> dict:
    """TrainOptions fields (less the output) of a few fp32 updates on the tiny fixture's data in
    ``d``, validated on its test pairs; ``kw`` adds or overrides fields."""
    return dict(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                tgt_lang="en", vocab_size=400, d_model=32, layers=1, heads=2, ffn_dim=64,
                batch_tokens=600, threads=1, max_len=24, precision="fp32",
                valid_src=str(d / "test.de"), valid_tgt=str(d / "test.en"), **kw)


def test_ema_saves_the_average_and_leaves_the_training_alone(tiny, tmp_path):
    """With ema the saved model and the validation use the average, while the training itself
    (its losses) is the one without ema: swapping the average in and out for the checkpoints
    leaves the training weights alone."""
    import torch
    from safetensors.torch import load_file

    from bitextforge.plugins.nmt.train import TrainOptions, train

    base = _short_run(tiny["data"], max_steps=6, valid_every_steps=2)
    weights, losses = {}, {}
    for name, ema in (("plain", 0.0), ("avg", 0.9)):
        info = train(TrainOptions(**base, output=str(tmp_path / name), ema=ema),
                     log=lambda m: None)
        assert info["options"]["ema"] == ema
        weights[name] = load_file(tmp_path / name / "model.safetensors")
        losses[name] = [(h["train_loss"], h["valid_loss"]) for h in info["history"]]
    # the training itself is the same (its losses), what is validated is not
    assert [t for t, _ in losses["avg"]] == [t for t, _ in losses["plain"]]
    assert [v for _, v in losses["avg"]] != [v for _, v in losses["plain"]]
    assert weights["plain"].keys() == weights["avg"].keys()
    assert any(not torch.equal(v, weights["avg"][k]) for k, v in weights["plain"].items())


class _Killed(Exception):
    """Stands for a kill in the middle of a training (the state on disk is what a SIGKILL
    leaves: resume.pt is written whole or not at all)."""


def test_a_killed_training_resumes_to_the_same_model(tiny, tmp_path):
    """A training stopped after its latest resumable state and started again on the same
    output continues from that state (weights, optimizer, schedule, average, data order, dropout's
    random state), across an epoch's end, to the same model byte for byte and the same
    validation history as an uninterrupted run; the state is removed when the training ends."""
    from bitextforge.plugins.nmt.train import RESUME_FILE, TrainOptions, train

    # 12 batches an epoch: the kill falls in the second, the run ends in the third
    base = _short_run(tiny["data"], max_steps=30, valid_every_steps=8, resume_every_steps=5,
                      ema=0.9, dropout=0.2)
    whole = train(TrainOptions(**base, output=str(tmp_path / "whole")), log=lambda m: None)
    assert whole["epochs"] >= 3 and not (tmp_path / "whole" / RESUME_FILE).exists()

    def kill_at_second_validation(msg: str) -> None:
        if msg.startswith("train-nmt: validation") and '"step": 16' in msg:
            raise _Killed

    opts = TrainOptions(**base, output=str(tmp_path / "part"))
    with pytest.raises(_Killed):
        train(opts, log=kill_at_second_validation)
    assert (tmp_path / "part" / RESUME_FILE).is_file()
    said: list[str] = []
    resumed = train(opts, log=said.append)
    assert any(f"resuming from {tmp_path / 'part' / RESUME_FILE} at update 15 (epoch 2" in m
               for m in said), said
    assert resumed["steps"] == 30 and resumed["epochs"] == whole["epochs"]
    assert resumed["history"] == [{**h, "minutes": r["minutes"]} for h, r in
                                  zip(whole["history"], resumed["history"])]
    assert (tmp_path / "part" / "model.safetensors").read_bytes() == \
        (tmp_path / "whole" / "model.safetensors").read_bytes()
    assert not (tmp_path / "part" / RESUME_FILE).exists()


def test_the_step_log_says_the_time_to_go_at_this_process_rate():
    """The update budget left at the rate of the updates this process made (a resumed run's
    earlier minutes do not count), or the time budget left when that ends the run first; nothing
    until 50 updates give a rate."""
    from bitextforge.plugins.nmt.train import time_to_go

    assert time_to_go(49, 30.0, 1000, 1e9) == ""
    assert time_to_go(1000, 600.0, 23000, 1e12) == ", about 230 min to go"
    assert time_to_go(100, 60.0, 23000, 300.0) == ", about 5 min to go"
    assert time_to_go(100, 60.0, None, 45.0) == ", about 45 s to go"


def test_a_state_of_another_training_is_not_resumed(tiny, tmp_path):
    """A resumable state left by a training with other options (here the learning rate) is
    said and discarded: the run starts over and ends as a fresh one."""
    from bitextforge.plugins.nmt.train import RESUME_FILE, TrainOptions, train

    base = _short_run(tiny["data"], max_steps=6, valid_every_steps=3, resume_every_steps=2)

    def kill(msg: str) -> None:
        if msg.startswith("train-nmt: validation"):
            raise _Killed

    with pytest.raises(_Killed):
        train(TrainOptions(**base, output=str(tmp_path / "m"), lr=1e-3), log=kill)
    said: list[str] = []
    train(TrainOptions(**base, output=str(tmp_path / "m")), log=said.append)
    fresh = train(TrainOptions(**base, output=str(tmp_path / "fresh")), log=lambda m: None)
    path = tmp_path / "m" / RESUME_FILE
    assert f"train-nmt: {path} is the state of another training (other options or data); " \
           f"starting over" in said
    assert not any("resuming" in m for m in said) and not path.exists()
    assert (tmp_path / "m" / "model.safetensors").read_bytes() == \
        (tmp_path / "fresh" / "model.safetensors").read_bytes()


def _tiny_train_nmt(d, out, *extra) -> list[str]:
    """A `bitextforge train-nmt` command line for a tiny model on the ``tiny`` data ``d``, fp32 on
    one thread (a few seconds), with the validation set and ``extra`` options."""
    import sys

    return list(map(str, [
        sys.executable, "-m", "bitextforge.cli", "train-nmt", "--src-train", d / "t.de",
        "--tgt-train", d / "t.en", "--src-lang", "de", "--tgt-lang", "en", "--output", out,
        "--vocab-size", "400", "--d-model", "32", "--layers", "1", "--heads", "2", "--ffn-dim",
        "64", "--batch-tokens", "600", "--threads", "1", "--max-len", "24", "--precision", "fp32",
        "--valid-src", d / "test.de", "--valid-tgt", d / "test.en", *extra]))


@pytest.mark.long
def test_train_nmt_killed_with_sigkill_continues_on_the_next_command(tiny, tmp_path):
    """`bitextforge train-nmt` killed with SIGKILL leaves its temporary output; the same command
    again (its ``main`` in this process, which has torch imported already) moves it into its own
    temporary name, resumes the state in it, and writes the model an uninterrupted command
    writes."""
    import signal
    import subprocess
    import time

    from bitextforge.cli.main import main

    d = tiny["data"]

    def command(out):
        return _tiny_train_nmt(d, out, "--max-steps", "120", "--resume-every-steps", "5",
                               "--valid-every-steps", "50")

    whole, part = tmp_path / "whole", tmp_path / "part"
    assert main(command(whole)[3:]) == 0  # in this process: the same code path
    proc = subprocess.Popen(command(part), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    state = tmp_path / f".part.partial-{proc.pid}" / "resume.pt"
    t0 = time.monotonic()
    while not state.exists() and proc.poll() is None and time.monotonic() - t0 < 300:
        time.sleep(0.02)
    assert proc.poll() is None, "the training ended before its first resumable state"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not part.exists()
    again = run_cli(*command(part)[3:])  # in this process: the killed one's pid is gone
    assert again.returncode == 0, again.stderr
    assert f"moved {state.parent}, left by a training that was stopped" in again.stderr
    assert "train-nmt: resuming from" in again.stderr
    assert "step 100/120 epoch" in again.stderr
    assert (part / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()
    assert not list(tmp_path.glob(".part.partial-*")) and not (part / "resume.pt").exists()


@pytest.mark.long
def test_train_nmt_stopped_with_sigterm_saves_its_state_and_continues(tiny, tmp_path):
    """SIGTERM (a scheduler's time limit, ``kill``) stops `bitextforge train-nmt` after the update
    in progress with a resumable state of that update, though no periodic state was due, and exit
    143; the same command then continues from that update to the model an uninterrupted one
    writes."""
    import re
    import signal
    import subprocess

    from bitextforge.cli.main import main

    d = tiny["data"]

    def command(out):
        return _tiny_train_nmt(d, out, "--max-steps", "120", "--resume-every-steps", "1000",
                               "--valid-every-steps", "20")

    whole, part = tmp_path / "whole", tmp_path / "part"
    assert main(command(whole)[3:]) == 0  # in this process: the same code path
    proc = subprocess.Popen(command(part), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    seen = []
    for line in proc.stderr:  # the first validation: the training is under way
        seen.append(line)
        if "train-nmt: validation" in line:
            proc.send_signal(signal.SIGTERM)
            break
    seen += proc.stderr.readlines()
    proc.wait()
    log = "".join(seen)
    assert proc.returncode == 143, log
    saved = re.search(r"train-nmt: SIGTERM after update (\d+): saved (\S+); the same command", log)
    assert saved, log
    update = int(saved.group(1))
    assert 20 <= update < 120
    assert not part.exists() and (tmp_path / f".part.partial-{proc.pid}" / "resume.pt").exists()
    again = run_cli(*command(part)[3:])
    assert again.returncode == 0, again.stderr
    assert "train-nmt: resuming from" in again.stderr
    assert f"at update {update} (epoch" in again.stderr
    assert (part / "model.safetensors").read_bytes() == (whole / "model.safetensors").read_bytes()


@pytest.mark.long
def test_sigterm_during_the_last_update_keeps_the_whole_training(tiny, tmp_path):
    """SIGTERM during the last update: the loop has ended, so the state after that update is
    saved before the signal goes on; the rerun has nothing left to train and writes the
    uninterrupted model (no extra update)."""
    import signal

    from bitextforge.plugins.nmt.train import RESUME_FILE, TrainOptions, train

    class Stopped(Exception):
        pass

    def stop(signum, frame):
        raise Stopped()

    base = _short_run(tiny["data"], max_steps=100, resume_every_steps=1000, valid_every_steps=50)
    whole = train(TrainOptions(**base, output=str(tmp_path / "whole")), log=lambda m: None)
    lines = []

    def log(message):  # the step log of the last update comes before the loop ends
        lines.append(message)
        if "step 100/100" in message:
            os.kill(os.getpid(), signal.SIGTERM)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        with pytest.raises(Stopped):
            train(TrainOptions(**base, output=str(tmp_path / "part")), log=log)
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert any("SIGTERM after update 100: saved" in m for m in lines)
    assert (tmp_path / "part" / RESUME_FILE).is_file()
    lines.clear()
    again = train(TrainOptions(**base, output=str(tmp_path / "part")), log=lines.append)
    assert any("resuming from" in m and "at update 100 " in m for m in lines)
    def timeless(history):
        return [{k: v for k, v in h.items() if k != "minutes"} for h in history]

    assert again["steps"] == whole["steps"] == 100 and again["epochs"] == whole["epochs"]
    assert timeless(again["history"]) == timeless(whole["history"])
    assert (tmp_path / "part" / "model.safetensors").read_bytes() == \
        (tmp_path / "whole" / "model.safetensors").read_bytes()


def test_subword_regularization_samples_each_epoch_and_is_reproducible(tiny, tmp_path):
    """subword_alpha (Kudo 2018) segments the training pairs anew every epoch: the training
    differs from the plain one, the same seed gives the same model byte for byte within one
    process (sentencepiece draws otherwise in another), and the sampled ids differ from epoch to
    epoch while the best segmentation stays fixed."""
    import sentencepiece as spm
    from safetensors.torch import load_file

    from bitextforge.plugins.nmt.train import TrainOptions, encode, train

    base = _short_run(tiny["data"], max_steps=8, valid_every_steps=4)
    losses, weights = {}, {}
    for name, alpha in (("plain", 0.0), ("a", 0.1), ("b", 0.1)):
        info = train(TrainOptions(**base, output=str(tmp_path / name), subword_alpha=alpha),
                     log=lambda m: None)
        assert info["options"]["subword_alpha"] == alpha
        losses[name] = [h["train_loss"] for h in info["history"]]
        weights[name] = load_file(tmp_path / name / "model.safetensors")
    assert losses["a"] == losses["b"] and losses["a"] != losses["plain"]
    assert all((weights["a"][k] == v).all() for k, v in weights["b"].items())

    sp = spm.SentencePieceProcessor(model_file=str(tmp_path / "a" / "joint.model"))
    texts = tiny["de"][:50]
    e1 = encode(sp, texts, 24, 0.1, 64, seed=3)
    assert e1 == encode(sp, texts, 24, 0.1, 64, seed=3)
    assert e1 != encode(sp, texts, 24, 0.1, 64, seed=4)
    assert e1 != encode(sp, texts, 24)
    # every sample is a segmentation of the same text (untruncated)
    full = encode(sp, texts, 1000, 0.1, 64, seed=3)
    assert [sp.decode(x[:-1]) for x in full] == [sp.decode(x[:-1]) for x in encode(sp, texts, 1000)]
    with pytest.raises(ValueError, match="subword_nbest 1 samples nothing"):
        TrainOptions(**base, output=str(tmp_path / "x"), subword_alpha=0.1, subword_nbest=1)


def test_budget_schedule_warms_up_then_decays_to_zero():
    from bitextforge.plugins.nmt.train import budget_lr_factor as f

    assert f(0.04, 0.08) == pytest.approx(0.5) and f(0.08, 0.08) == pytest.approx(1.0)
    assert f(0.54, 0.08) == pytest.approx(0.5) and f(0.77, 0.08) == pytest.approx(0.25)
    assert f(0.0, 0.08) == f(1.0, 0.08) == 1e-3  # the floor: never a zero step
    assert all(f(x / 100, 0.08) >= f((x + 1) / 100, 0.08) for x in range(8, 99))
    # a minimum warm-up in updates: 30% of the budget gone after 149 updates, still half the peak
    assert f(0.3, 0.08, 149, 300) == pytest.approx(0.5)
    assert f(0.3, 0.08, 149, 0) == pytest.approx(0.7 / 0.92)
    assert f(0.5, 0.08, 1000, 300) == f(0.5, 0.08)  # after it, the budget's own decay


def test_training_warnings_below_warm_up_and_near_uniform():
    """The issue's case: 21 updates of a 300-update warm-up, loss 8.78 with 8,000 tokens (uniform
    8.99), warned twice; a trained model (loss 3.1 after 5,000 updates) is not."""
    from bitextforge.plugins.nmt.train import TrainOptions, training_warnings

    opts = TrainOptions(src_train="a", tgt_train="b", src_lang="de", tgt_lang="en", output="m")
    ws = training_warnings(opts, 21, 8.78, 8000)
    assert len(ws) == 2
    assert ws[0].startswith("training stopped after 21 updates, before its 300-update warm-up")
    assert ws[1].startswith("final training loss 8.78 is near uniform guessing over the "
                            "8,000-token vocabulary (8.99)")
    assert training_warnings(opts, 5000, 3.1, 8000) == []
    inv = opts.model_copy(update={"schedule": "inverse-sqrt", "warmup": 4000})
    assert "4000-update warm-up" in training_warnings(inv, 3000, 4.0, 8000)[0]


def test_budget_that_cannot_pass_the_warm_up_is_warned_before_training(tiny, tmp_path):
    """max_steps below the warm-up is said before the first update (the warning comes before
    the training's first line), and a time budget too short for the warm-up at the measured
    speed is said once the speed is known."""
    from bitextforge.plugins.nmt.train import TrainOptions, budget_warning, train

    d = tiny["data"]
    opts = TrainOptions(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                        tgt_lang="en", output=str(tmp_path / "m"), max_steps=3, vocab_size=400,
                        d_model=32, layers=1, heads=2, ffn_dim=64, batch_tokens=600, threads=1,
                        max_len=24)
    lines: list[str] = []
    train(opts, log=lines.append)
    warned = [i for i, ln in enumerate(lines) if "max_steps 3 is below the 300-update warm-up"
              in ln]
    first_step = next(i for i, ln in enumerate(lines) if "MarianMTModel with" in ln)
    assert warned and warned[0] < first_step
    assert budget_warning(opts.model_copy(update={"max_steps": 300})) is None
    timed = opts.model_copy(update={"max_steps": 0, "minutes": 0.5})
    assert "give about 150 updates, fewer than the 300-update warm-up" in \
        budget_warning(timed, 5.0)
    assert budget_warning(timed, 20.0) is None  # 600 updates in half a minute


def test_training_logs_progress_by_time(tiny, tmp_path, monkeypatch):
    """Besides every 100 updates, a line at least every LOG_SECONDS (here: every update)."""
    from bitextforge.plugins.nmt import train as train_mod

    monkeypatch.setattr(train_mod, "LOG_SECONDS", 0.0)
    d = tiny["data"]
    opts = train_mod.TrainOptions(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"),
                                  src_lang="de", tgt_lang="en", output=str(tmp_path / "m"),
                                  max_steps=3, vocab_size=400, d_model=32, layers=1, heads=2,
                                  ffn_dim=64, batch_tokens=600, threads=1, max_len=24)
    lines: list[str] = []
    train_mod.train(opts, log=lines.append)
    steps = [ln for ln in lines if ln.startswith("train-nmt: step ")]
    assert [ln.split()[2] for ln in steps] == ["1/3", "2/3", "3/3"]


def test_validation_every_n_updates_does_not_depend_on_the_clock(tiny, tmp_path):
    """valid_every_steps: validations at those updates however fast the machine (valid_every's
    minutes would validate at once here, with a budget of 0 minutes between them), so the
    kept checkpoint is the same on a busy machine as on a quiet one."""
    from bitextforge.plugins.nmt.train import TrainOptions, train

    d = tiny["data"]
    opts = dict(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                tgt_lang="en", valid_src=str(d / "test.de"), valid_tgt=str(d / "test.en"),
                max_steps=6, vocab_size=400, d_model=32, layers=1, heads=2, ffn_dim=64,
                batch_tokens=600, threads=1, max_len=24, valid_every_steps=2)
    steps = []
    for minutes in (1e-9, 1e9):
        info = train(TrainOptions(output=str(tmp_path / f"m{minutes}"), valid_every=minutes,
                                  **opts), log=lambda m: None)
        steps.append([h["step"] for h in info["history"]])
    assert steps == [[2, 4, 6], [2, 4, 6]]


def test_progress_bar_only_on_a_terminal():
    import os
    import subprocess
    import sys

    code = ("from bitextforge.log import progress\n"
            "for _ in progress(range(3), 'counting', minimum=2): pass\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert res.returncode == 0 and res.stderr == ""
    import fcntl
    import struct
    import termios

    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))  # 100 columns
    try:
        proc = subprocess.run([sys.executable, "-c", code], stderr=slave, stdout=subprocess.DEVNULL)
        os.close(slave)
        out = os.read(master, 4096).decode(errors="replace")
    finally:
        os.close(master)
    assert proc.returncode == 0 and "counting:   0%" in out and "/3.00" in out


def test_train_refuses_misaligned_files(tmp_path):
    from bitextforge.io.corpus import read_parallel

    (tmp_path / "a").write_text("x\ny\n", encoding="utf-8")
    (tmp_path / "b").write_text("x\n", encoding="utf-8")
    with pytest.raises(InputError, match="line-aligned"):
        read_parallel(tmp_path / "a", tmp_path / "b")


def test_reused_spm_must_have_train_nmt_special_ids(tiny, tmp_path):
    """A sentencepiece model with the library's default ids (<unk>=0, <s>=1, </s>=2) is refused
    before training; the joint.model train-nmt wrote is accepted."""
    import sentencepiece as spm

    from bitextforge.plugins.nmt.train import TrainOptions, check_spm_ids, train

    check_spm_ids(str(tiny["dir"] / "joint.model"))
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(tiny["de"] + tiny["en"]), model_prefix=str(tmp_path / "default"),
        vocab_size=300, minloglevel=2, hard_vocab_limit=False)
    d = tiny["data"]
    opts = TrainOptions(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), src_lang="de",
                        tgt_lang="en", output=str(tmp_path / "m"), max_steps=1,
                        spm=str(tmp_path / "default.model"))
    with pytest.raises(InputError, match=r"default\.model: special ids .*'eos': 2"):
        train(opts, log=lambda m: None)
    assert not (tmp_path / "m").exists()
    # a file that is no sentencepiece model at all: one line naming it, not the library's error
    (tmp_path / "junk.model").write_bytes(b"not a model")
    with pytest.raises(InputError, match=r"--spm .*junk\.model: not a sentencepiece model"):
        train(opts.model_copy(update={"spm": str(tmp_path / "junk.model")}), log=lambda m: None)
    assert not (tmp_path / "m").exists()


def test_train_nmt_flags_come_from_train_options(tmp_path, capsys):
    """train-nmt is the nmt_model.v1 trainer: every TrainOptions field is a flag generated from
    its Config, documented with the field's default; a bad value is one line naming the flag,
    before any work."""
    import argparse

    from bitextforge.cli.main import main
    from bitextforge.cli.commands import trainer_command
    from bitextforge.plugins.nmt.train import TrainOptions
    from bitextforge.plugins.nmt.trainers import NmtModelTrainer

    p = argparse.ArgumentParser()
    trainer_command("nmt_model.v1")(p)
    flags = {a.dest: a.help for a in p._actions if a.dest != "help" and a.help != argparse.SUPPRESS}
    for name, f in TrainOptions.model_fields.items():
        if name != "tests":
            assert name in flags, name
            assert f.is_required() or f"default {f.get_default(call_default_factory=True)}" in \
                flags[name].replace("%%", "%"), name
    assert set(TrainOptions.model_fields) <= set(NmtModelTrainer.Config.model_fields)
    args = ["train-nmt", "--src-train", "a", "--tgt-train", "b", "--src-lang", "de",
            "--tgt-lang", "en", "--output", str(tmp_path / "m")]
    assert main(args + ["--lr", "fast"]) == 2
    assert main(args + ["--schedule", "cosine"]) == 2
    assert main(args + ["--valid-src", "v.de"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 3 and "--lr" in err[0] and "--schedule" in err[1]
    assert "--valid-tgt" in err[2]
    assert not (tmp_path / "m").exists()


def test_backends_agree_greedy_and_scores(tiny):
    from bitextforge.plugins.nmt.backends import Decoding, make_backend

    src = tiny["de"][:10]
    dec = Decoding(beam=1, k=1, max_length=24)
    hf = make_backend("transformers", str(tiny["dir"]), threads=1, batch_size=4).translate(src, dec)
    # float32 conversion: outputs must be identical to transformers, scores nearly so.
    ct = make_backend("ctranslate2", str(tiny["dir"]), threads=1, batch_size=4,
                      compute_type="float32").translate(src, dec)
    assert [c[0][0] for c in ct] == [h[0][0] for h in hf]
    # An untrained model runs to max_length, where transformers scores a forced </s> that
    # CTranslate2 does not, so the scores agree only roughly here.
    diffs = [abs(h[0][1] - c[0][1]) for h, c in zip(hf, ct)]
    assert all(h[0][1] < 0 for h in hf) and sum(diffs) / len(diffs) < 0.5


def test_ct2_conversion_is_cached_by_hash(tiny):
    from bitextforge.plugins.nmt.backends import CTranslate2Backend, model_hash

    a = CTranslate2Backend(str(tiny["dir"]), threads=1, compute_type="int8")
    assert a.ct2_dir.parent == tiny["dir"] and model_hash(tiny["dir"]) in a.ct2_dir.name
    stamp = os.stat(a.ct2_dir / "model.bin").st_mtime_ns
    b = CTranslate2Backend(str(tiny["dir"]), threads=1, compute_type="int8")
    assert b.ct2_dir == a.ct2_dir and os.stat(b.ct2_dir / "model.bin").st_mtime_ns == stamp


def test_ct2_child_process_translates_like_in_process(tiny):
    """On CPU the translator runs in a child process (torch's and CTranslate2's OpenMP runtimes
    clash in one process) and decodes one batch per thread at once; its k-best and sampled
    outputs are those of an in-process translator doing one batch at a time, close() leaves the
    child without a model for the next translator (which translates as a fresh one) until
    shutdown_idle() stops it, and a child that died is one clear error."""
    from bitextforge import ComponentError
    from bitextforge.plugins.nmt import ct2_worker
    from bitextforge.plugins.nmt.backends import CTranslate2Backend, Decoding

    src = tiny["de"][:12]
    child = CTranslate2Backend(str(tiny["dir"]), threads=2, batch_size=4, compute_type="float32")
    local = CTranslate2Backend(str(tiny["dir"]), threads=1, batch_size=4, compute_type="float32",
                               separate_process=False)
    assert child.info()["separate_process"] and not local.info()["separate_process"]
    assert child.info()["parallel_batches"] == 2 and local.info()["parallel_batches"] == 1
    for dec in (Decoding(beam=3, k=2, max_length=24),
                Decoding(beam=1, k=3, sampling=True, top_k=5, seed=7, max_length=24)):
        assert child.translate(src, dec) == local.translate(src, dec)
    proc = child.translator.proc
    child.close()
    again = CTranslate2Backend(str(tiny["dir"]), threads=2, batch_size=4, compute_type="float32")
    assert again.translator.proc is proc and proc.poll() is None  # the same child, reused
    for dec in (Decoding(beam=3, k=2, max_length=24),
                Decoding(beam=1, k=3, sampling=True, top_k=5, seed=7, max_length=24)):
        assert again.translate(src, dec) == local.translate(src, dec)
    again.close()
    ct2_worker.shutdown_idle()
    assert proc.poll() is not None
    dead = CTranslate2Backend(str(tiny["dir"]), threads=1, compute_type="float32")
    dead.translator.proc.kill()
    dead.translator.proc.wait()
    with pytest.raises(ComponentError, match="translator process died"):
        dead.translate(src[:2], Decoding(beam=1, max_length=24))


def test_a_forked_process_does_not_take_the_parents_waiting_translator(tiny):
    """A waiting CTranslate2 child belongs to the process that started it: after os.fork the
    child process's list of waiting translators is empty (sharing one pipe, two processes would
    wait for each other's replies), and the parent still reuses its own."""
    import os

    from bitextforge.plugins.nmt import ct2_worker
    from bitextforge.plugins.nmt.backends import CTranslate2Backend

    first = CTranslate2Backend(str(tiny["dir"]), threads=1, compute_type="float32")
    proc = first.translator.proc
    first.close()
    pid = os.fork()
    if pid == 0:  # the forked child: report through the exit status only
        os._exit(0 if not ct2_worker._IDLE else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    again = CTranslate2Backend(str(tiny["dir"]), threads=1, compute_type="float32")
    assert again.translator.proc is proc
    again.close()
    ct2_worker.shutdown_idle()


@pytest.mark.parametrize("backend", ["transformers", "ctranslate2"])
def test_backtranslate_kbest_nll_and_drop_reference(tiny, backend):
    from bitextforge.plugins.nmt.paraphrasers import BackTranslateParaphraser as BT

    cfg = BT.Config(model=str(tiny["dir"]), min_model_bleu=0, backend=backend, k=3, beam=3, max_length=24,
                    threads=1)
    comp = BT(cfg)
    src = tiny["de"][:4]
    res = comp.paraphrase(src)
    assert len(res) == 4
    for cands in res:
        assert 1 <= len(cands) <= 3
        scores = [c[1] for c in cands]
        assert scores == sorted(scores, reverse=True)
        assert all(c[2]["nll"] == pytest.approx(-c[1]) for c in cands)
        assert len({c[0].lower() for c in cands}) == len(cands)
    drop = BT(cfg.model_copy(update={"drop_equal_to_reference": True}))
    refs = [("  " + c[0][0].upper()) if c else "x" for c in res]
    kept = drop.paraphrase(src, side=refs)
    for before, after in zip(res, kept):
        assert [c[0] for c in after] == [c[0] for c in before[1:]]
    assert drop.manifest_info()["dropped_equal_to_reference"] == 4
    comp.close()
    drop.close()


def test_sampling_is_seeded(tiny):
    from bitextforge.plugins.nmt.paraphrasers import BackTranslateParaphraser as BT

    cfg = BT.Config(model=str(tiny["dir"]), min_model_bleu=0, backend="ctranslate2", k=4, sampling=True,
                    top_p=0.9, seed=7, max_length=24, threads=1)
    a = BT(cfg).paraphrase(tiny["de"][:3])
    b = BT(cfg).paraphrase(tiny["de"][:3])
    assert a == b and max(len(c) for c in a) > 1


def test_recipe_backtranslate_and_roundtrip(tiny, tmp_path):
    d = tiny["data"]
    m = str(tiny["dir"])
    text = f"""\
name: nmt-test
input: {{src: '{d / "test.de"}', tgt: '{d / "test.en"}'}}
output: {{dir: '{tmp_path / "out"}'}}
progress: false
steps:
  - paraphrase: backtranslate.v1
    side: tgt
    read: src
    with: {{model: '{m}', min_model_bleu: 0, k: 2, max_length: 24, threads: 1}}
  - paraphrase: roundtrip.v1
    side: tgt
    with:
      k: 1
      max_length: 24
      threads: 1
      keep_identical: true
      vocab_map: model
      pivots:
        - {{lang: de, forward: '{m}', backward: '{m}'}}
"""
    res = run_recipe(parse_recipe(text, "r.yaml"))
    assert res.rows_in == 8 and res.rows_out > 8
    lines = (tmp_path / "out" / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    head = lines[0].split("\t")
    rows = [dict(zip(head, ln.split("\t"))) for ln in lines[1:]]
    assert {"nll", "pivot", "pivot_text", "tgt_original"} <= set(head)
    bt = [r for r in rows if r["origin"] == "backtranslate.v1"]
    rt = [r for r in rows if r["origin"].startswith("roundtrip.v1:de")]
    assert bt and rt and all(r["pivot"] == "de" for r in rt)
    assert all(float(r["nll"]) > 0 for r in bt + rt)
    legs = json.loads((tmp_path / "out" / "manifest.json").read_text(encoding="utf-8"))
    assert f'{m}/vmap.txt' in json.dumps(legs)  # the round trip decoded over the model's map


def test_missing_model_dir_is_one_clear_line(tmp_path):
    from bitextforge.plugins.nmt.backends import resolve_model

    with pytest.raises(ComponentError, match="does not exist; train one"):
        resolve_model(str(tmp_path / "nope"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(ComponentError, match="no config.json"):
        resolve_model(str(tmp_path / "empty"))


def test_missing_tokenizer(tiny, tmp_path):
    from bitextforge.plugins.nmt.backends import TransformersBackend

    d = tmp_path / "m"
    d.mkdir()
    for f in ("config.json", "model.safetensors"):
        (d / f).write_bytes((tiny["dir"] / f).read_bytes())
    with pytest.raises(ComponentError, match="no usable tokenizer"):
        TransformersBackend(str(d))


def test_hub_id_offline_says_no_network(tmp_path, monkeypatch):
    from bitextforge.plugins.nmt.backends import resolve_model

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(ComponentError, match="no network; pass a local model directory"):
        resolve_model("Helsinki-NLP/opus-mt-de-en")


def test_recipe_prepare_trains_the_model_it_back_translates_with(tiny, tmp_path):
    """nmt_model.v1 in prepare: trains a tiny model on first run, the step loads it, a second run
    reuses it."""
    d = tiny["data"]
    model = tmp_path / "models" / "de-en"
    text = f"""\
name: nmt-prepare
input: {{src: '{d / "test.de"}', tgt: '{d / "test.en"}'}}
output: {{dir: '{tmp_path / "out"}'}}
progress: false
prepare:
  - train: nmt_model.v1
    with: {{src_train: '{d / "t.de"}', tgt_train: '{d / "t.en"}', src_lang: de, tgt_lang: en,
           output: '{model}', max_steps: 3, vocab_size: 400, d_model: 32, layers: 1, heads: 2,
           ffn_dim: 64, batch_tokens: 600, threads: 1}}
steps:
  - paraphrase: backtranslate.v1
    side: tgt
    read: src
    with: {{model: '{model}', k: 1, max_length: 12, threads: 1, backend: transformers}}
"""
    res = run_recipe(parse_recipe(text, "r.yaml"))
    assert res.manifest["prepare"][0]["status"] == "trained"
    assert res.manifest["prepare"][0]["info"]["steps"] == 3
    # 3 updates of a 300-update warm-up, loss near ln(401) (400 pieces + <pad>): in the manifest
    # and the training log
    warned = [w for w in res.manifest["warnings"] if w.startswith(f"nmt_model.v1 {model}: ")]
    assert len(warned) == 2, res.manifest["warnings"]
    assert "before its 300-update warm-up ended" in warned[0]
    assert "near uniform guessing over the 401-token vocabulary (5.99)" in warned[1]
    saved = json.loads((model / "train_log.json").read_text())["warnings"]
    assert [f"nmt_model.v1 {model}: {w}" for w in saved] == warned
    assert (model / "config.json").exists() and (model / "train_log.json").exists()
    assert res.rows_out > res.rows_in == 8
    res = run_recipe(parse_recipe(text, "r.yaml"))
    assert res.manifest["prepare"][0]["status"] == "exists"


@pytest.mark.parametrize("backend", ["transformers", "ctranslate2"])
def test_inputs_longer_than_the_position_table_are_truncated(tiny, backend):
    """A news sentence can be longer than the model's position table (256 here); both backends
    cut the source and the output to fit instead of failing with an index error."""
    from bitextforge.plugins.nmt.backends import Decoding, make_backend

    be = make_backend(backend, str(tiny["dir"]), threads=1)
    assert be.hf_config.max_position_embeddings == 256
    long = " ".join(["Ein Hund läuft über die Wiese ."] * 60)  # about 400 pieces
    res = be.translate([long, tiny["de"][0]], Decoding(beam=1, k=1, max_length=1000))
    assert len(res) == 2 and all(r and isinstance(r[0][0], str) for r in res)
    assert be.lengths(Decoding(max_length=1000)) == (256, 255)
    assert be.lengths(Decoding(max_length=1000), 20) == (256, 50)  # 2 x 20 + 10


def test_compute_type_the_cpu_lacks_is_one_clear_line(tiny):
    import ctranslate2

    from bitextforge.plugins.nmt.backends import make_backend

    have = ctranslate2.get_supported_compute_types("cpu")
    lacking = [t for t in ("int16", "bfloat16", "float16", "int8_float16") if t not in have]
    if not lacking:
        pytest.skip("this CPU supports every CTranslate2 compute type")
    with pytest.raises(ComponentError, match=f"compute_type {lacking[0]} is not supported on "
                                             f"this cpu; choose one of"):
        make_backend("ctranslate2", str(tiny["dir"]), compute_type=lacking[0])


def test_vocab_map_lists_translations_common_tokens_and_copies():
    """The shortlist of a toy corpus: the most frequent target tokens always, each source token's
    best Dice partners, a source token that is also a target token itself, no special ids."""
    from bitextforge.plugins.nmt.vocab_map import build_vocab_map

    names = ["</s>", "<unk>", "Hund", "Katze", "rennt", "Berlin", "a", "dog", "cat", "runs",
             "Berlin_", "<pad>"]
    ids = {n: i for i, n in enumerate(names)}
    ids["Berlin_"] = ids["Berlin"]  # a name copied from source to target: the same piece
    pairs = [("Hund rennt", "a dog runs"), ("Katze rennt", "a cat runs"), ("Hund", "a dog"),
             ("Katze", "a cat"), ("Berlin", "Berlin")]
    src = [[ids[w] for w in s.split()] + [0] for s, _ in pairs]
    tgt = [[ids[w] for w in t.split()] + [0] for _, t in pairs]
    lines = build_vocab_map(src, tgt, names, per_source=1, common=1, skip_ids=[0, 1, 11])
    rules = dict(line.split("\t") for line in lines)
    assert rules[""] == "a"
    assert rules["Hund"] == "dog" and rules["Katze"] == "cat"
    assert rules["Berlin"] == "Berlin"
    assert rules["rennt"] == "runs" and rules["rennt"] != "rennt"
    assert not any(k in rules for k in ("</s>", "<unk>", "<pad>"))


def _fresh_translations(ct2_dir, jobs):
    """Each job on a translator of its own: what every batch should give with the map."""
    import ctranslate2

    out = []
    for src, kw in jobs:
        t = ctranslate2.Translator(str(ct2_dir), intra_threads=1)
        out.append([(r.hypotheses, r.scores) for r in t.translate_batch(src, **kw)])
    return out


@pytest.mark.parametrize("separate_process", [False, True])
def test_vocab_map_every_batch_as_on_a_fresh_translator(tiny, tmp_path, separate_process):
    """With a shortlist each batch gets its own output vocabulary. CTranslate2 keeps a stale id
    map from one batch to the next on the same worker (see ct2_worker.LocalTranslator); the
    backend resets it, so batch after batch, on two workers, the outputs equal those of a fresh
    translator per batch. A small map makes the batches' vocabularies differ."""
    from bitextforge.plugins.nmt.backends import CTranslate2Backend, Decoding
    from bitextforge.plugins.nmt.vocab_map import build_for_model

    vmap = build_for_model(tiny["dir"], tiny["de"], tiny["en"], tmp_path / "small.vmap",
                           per_source=3, common=10)
    lines = vmap.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith("\t") and len(lines) > 50
    src = tiny["de"][:40]
    for dec in (Decoding(beam=1, k=1, max_length=24), Decoding(beam=3, k=2, max_length=24)):
        be = CTranslate2Backend(str(tiny["dir"]), threads=2, batch_size=4, compute_type="float32",
                                vocab_map=str(vmap), separate_process=separate_process)
        assert be.info()["vocab_map"] == str(vmap) and "vmap" in be.ct2_dir.name
        order = sorted(range(len(src)), key=lambda i: len(src[i]))
        jobs = [be._job([src[i] for i in order[b: b + 4]], dec) for b in range(0, len(src), 4)]
        assert all(kw["use_vmap"] for _, kw in jobs)
        got = be.translator.translate_batches(jobs)
        want = _fresh_translations(be.ct2_dir, jobs)
        assert [[hyps for hyps, _ in b] for b in got] == [[hyps for hyps, _ in b] for b in want]
        assert all(s1 == pytest.approx(s2, abs=1e-4)
                   for b1, b2 in zip(got, want) for (_, s1), (_, s2) in zip(b1, b2))
        # the map changes the candidates of this undertrained model; the full vocabulary differs
        full = CTranslate2Backend(str(tiny["dir"]), threads=2, batch_size=4,
                                  compute_type="float32", separate_process=separate_process)
        assert full.translate(src, dec) != be.translate(src, dec)
        be.close()
        full.close()


def test_train_nmt_writes_the_models_vocab_map(tiny):
    """train-nmt writes vmap.txt beside the model, so `vocab_map: model` works on its models: a
    list of always-allowed tokens, then rules in the model's vocabulary without special tokens."""
    from bitextforge.plugins.nmt.vocab_map import VMAP_NAME

    lines = (tiny["dir"] / VMAP_NAME).read_text(encoding="utf-8").splitlines()
    vocab = json.loads((tiny["dir"] / "vocab.json").read_text(encoding="utf-8"))
    always = lines[0].split("\t")[1].split()
    assert lines[0].startswith("\t") and 0 < len(always) < len(vocab)
    for line in lines[1:]:
        key, values = line.split("\t")
        assert key in vocab and all(v in vocab for v in values.split())
        assert "</s>" not in values.split() and "<pad>" not in values.split()


def test_vocab_map_mistakes_are_one_clear_line(tiny, tmp_path, capsys):
    from bitextforge.cli.main import main
    from bitextforge.plugins.nmt.backends import make_backend
    from bitextforge.plugins.nmt.paraphrasers import BackTranslateParaphraser as BT

    bare = tmp_path / "bare"
    bare.mkdir()
    for f in tiny["dir"].iterdir():
        if f.is_file() and f.name != "vmap.txt":
            (bare / f.name).write_bytes(f.read_bytes())
    with pytest.raises(ComponentError, match="vmap.txt does not exist; build it with "
                       "`bitextforge build-vocab-map"):
        make_backend("ctranslate2", str(bare), compute_type="float32", vocab_map="model")
    with pytest.raises(ComponentError, match="vocab_map needs backend: ctranslate2"):
        make_backend("transformers", str(bare), vocab_map="model")
    with pytest.raises(Exception, match="vocab_map needs backend: ctranslate2"):
        BT.Config(model=str(bare), backend="transformers", vocab_map="model")
    d = tiny["data"]
    assert main(["build-vocab-map", "--model", str(bare), "--src-train", str(d / "t.de"),
                 "--tgt-train", str(d / "t.en")]) == 0
    assert json.loads(capsys.readouterr().out)["output"] == str(bare / "vmap.txt")
    assert make_backend("ctranslate2", str(bare), compute_type="float32",
                        vocab_map="model").info()["vocab_map"] == str(bare / "vmap.txt")
    assert main(["build-vocab-map", "--model", str(bare), "--src-train", str(d / "t.de"),
                 "--tgt-train", str(d / "test.en")]) != 0
    assert "they must be line-aligned" in capsys.readouterr().err
    assert main(["build-vocab-map", "--model", str(bare), "--src-train", str(d / "t.de"),
                 "--tgt-train", str(d / "t.en"), "--common", "-1"]) != 0
    assert "--common: -1 is negative" in capsys.readouterr().err


def test_init_model_continues_the_model_with_its_vocabulary(tiny, tmp_path):
    """Domain adaptation: init_model starts from the given model's weights, vocabulary and size
    (the size options are ignored), detokenize undoes Moses tokenization of the new pairs, and
    the vocabulary map keeps every rule of the first training."""
    import torch
    from sacremoses import MosesTokenizer
    from transformers import MarianMTModel

    from bitextforge.plugins.nmt.train import TrainOptions, detokenize, train

    de_tok, en_tok = MosesTokenizer(lang="de"), MosesTokenizer(lang="en")
    rows = [f"{de_tok.tokenize(d, return_str=True)}\t{en_tok.tokenize(e, return_str=True)}"
            for d, e in zip(tiny["de"][:40], tiny["en"][:40])]
    (tmp_path / "tok.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert detokenize(["Das Kind , das &quot; Hallo &quot; sagt ."], "de") == [
        'Das Kind, das "Hallo" sagt.']
    # a learning rate too small to move any weight: what comes out is what went in
    opts = TrainOptions(train_tsv=[str(tmp_path / "tok.tsv")], src_lang="de", tgt_lang="en",
                        output=str(tmp_path / "adapted"), init_model=str(tiny["dir"]),
                        detokenize=True, max_steps=2, lr=1e-12, warmup=1, min_warmup_steps=0,
                        batch_tokens=600, threads=1, max_len=24, d_model=64)
    info = train(opts, log=lambda m: None)
    assert info["steps"] == 2 and info["options"]["init_model"] == str(tiny["dir"])
    assert (tmp_path / "adapted" / "joint.model").read_bytes() == \
        (tiny["dir"] / "joint.model").read_bytes()
    first = MarianMTModel.from_pretrained(str(tiny["dir"])).state_dict()
    adapted = MarianMTModel.from_pretrained(str(tmp_path / "adapted"))
    assert adapted.config.d_model == 32  # the init model's size, not d_model: 64
    for name, weight in adapted.state_dict().items():
        assert torch.allclose(weight, first[name], atol=1e-6), name
    old_rules = (tiny["dir"] / "vmap.txt").read_text(encoding="utf-8").splitlines()
    new_rules = {line.split("\t")[0]: set(line.split("\t")[1].split())
                 for line in (tmp_path / "adapted" / "vmap.txt").read_text(
                     encoding="utf-8").splitlines()}
    for line in old_rules:
        src, _, tgts = line.partition("\t")
        assert set(tgts.split()) <= new_rules[src]


def test_init_model_mistakes_are_one_clear_line(tiny, tmp_path):
    """A directory that is not a train-nmt model, or a model of the other direction, is refused
    before anything is written."""
    from bitextforge.plugins.nmt.train import TrainOptions, train

    d = tiny["data"]
    common = dict(src_train=str(d / "t.de"), tgt_train=str(d / "t.en"), max_steps=1,
                  output=str(tmp_path / "out"))
    with pytest.raises(InputError, match=r"init_model .*: no config\.json or joint\.model"):
        train(TrainOptions(src_lang="de", tgt_lang="en", init_model=str(tmp_path), **common),
              log=lambda m: None)
    with pytest.raises(InputError, match=r"translates de->en; this training is en->de"):
        train(TrainOptions(src_lang="en", tgt_lang="de", init_model=str(tiny["dir"]), **common),
              log=lambda m: None)
    assert not (tmp_path / "out").exists()


def test_machine_translated_negatives_are_the_models_translations(tiny, tmp_path):
    from pydantic import ValidationError

    from bitextforge.plugins.lexical.pair_classifier import PairClassifierTrainer, make_negatives
    from bitextforge.plugins.nmt.backends import Decoding, make_backend

    from conftest import CAPTIONS_DE, CAPTIONS_EN

    backend = make_backend("transformers", str(tiny["dir"]))
    try:
        want = [c[0][0] for c in backend.translate(CAPTIONS_DE, Decoding(beam=4, k=1))]
    finally:
        backend.close()
    corpus = tmp_path / "clean.tsv"
    corpus.write_text("".join(f"{d}\t{e}\n" for d, e in zip(tiny["de"][:40], tiny["en"][:40])),
                      encoding="utf-8")
    cfg = PairClassifierTrainer.Config(
        output=str(tmp_path / "pc.joblib"), corpus=[str(corpus)], held_out=0.25,
        negatives=["misaligned", "machine_translated"], mt_model=str(tiny["dir"]),
        mt_backend="transformers")
    trainer = PairClassifierTrainer(cfg)
    ns, nt, kinds = make_negatives(CAPTIONS_DE, CAPTIONS_EN, tuple(cfg.negatives), 1,
                                   trainer._translate)
    assert kinds == ["misaligned", "machine_translated"] * 6
    assert ns == CAPTIONS_DE
    assert nt[1::2] == want[1::2]   # the model's translation of the row's own source
    facts = trainer.train()
    assert facts["mt_model"] == str(tiny["dir"])
    assert set(facts["held_out_roc_auc_by_kind"]) == {"misaligned", "machine_translated"}

    # the kind without a model, a model without the kind, a model that is not there: one line
    with pytest.raises(ValidationError, match="mt_model: the machine_translated negatives need"):
        PairClassifierTrainer.Config(output="x", corpus=["c"], negatives=["machine_translated"])
    with pytest.raises(ValidationError, match="mt_model: set, but negatives has no"):
        PairClassifierTrainer.Config(output="x", corpus=["c"], mt_model=str(tiny["dir"]))
    with pytest.raises(ComponentError, match="machine_translated negatives need a translation"):
        make_negatives(CAPTIONS_DE, CAPTIONS_EN, ("machine_translated",))
    with pytest.raises(ComponentError, match="does not exist; train one"):
        PairClassifierTrainer(cfg.model_copy(update={"mt_model": str(tmp_path / "nope")})).train()



def test_benchmark_translations_are_the_trainers_negatives(tiny, tmp_path):
    """translate_best, which bench_paracrawl_lexical.py --mt uses for FLORES's validation noise,
    gives the trainer's machine_translated targets (default ctranslate2 backend, beam 4) on
    sentences the model never trained on (it saw the first 300)."""
    from bitextforge.plugins.lexical.pair_classifier import (PairClassifierTrainer,
                                                             make_negatives, translate_best)

    de = read_lines(shared("multi30k", "train.de.gz"), 312)[300:]
    en = read_lines(shared("multi30k", "train.en.gz"), 312)[300:]
    cfg = PairClassifierTrainer.Config(output=str(tmp_path / "pc.joblib"), corpus=["c.tsv"],
                                       negatives=["misaligned", "machine_translated"],
                                       mt_model=str(tiny["dir"]))
    ns, nt, _ = make_negatives(de, en, tuple(cfg.negatives), 1,
                               PairClassifierTrainer(cfg)._translate)
    assert nt[1::2] == translate_best(de[1::2], str(tiny["dir"]))
    assert ns[1::2] == de[1::2]


@pytest.mark.long
def test_ctrl_c_during_ctranslate2_decoding_stops_at_once_without_the_childs_traceback(
        tiny, tmp_path):
    """Ctrl-C in a terminal reaches the whole job, the CTranslate2 child too: the child ignores
    it and the parent, interrupted while it waits for the child's reply, kills it and stops
    within seconds, with no traceback of the child's protocol loop on stderr."""
    import signal
    import subprocess
    import sys
    import time

    script = tmp_path / "decode.py"
    script.write_text(
        "import signal, sys\n"
        "from bitextforge.plugins.nmt.backends import CTranslate2Backend, Decoding\n"
        f"b = CTranslate2Backend({str(tiny['dir'])!r}, threads=1, batch_size=64,\n"
        "                       compute_type='float32')\n"
        f"src = {tiny['de'][:64]!r} * 50\n"
        "print('decoding', flush=True)\n"
        "while True:\n"
        "    b.translate(src, Decoding(beam=4, k=4, max_length=60))\n", encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert proc.stdout.readline().strip() == "decoding"
    time.sleep(3)  # inside a decoding call
    t0 = time.monotonic()
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole group
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - t0 < 15
    assert "KeyboardInterrupt" in err and "_serve" not in err, err  # the child's loop: silent
    left = subprocess.run(["pgrep", "-g", str(proc.pid)], capture_output=True).stdout
    assert left == b"", left  # the child too: killed when the parent exits
