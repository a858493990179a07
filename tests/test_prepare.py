"""A recipe's ``prepare:`` list: trainers run before the steps, are skipped when their outputs
exist, write atomically (a failed training leaves nothing under the final names), and are validated
with the rest of the recipe. The real trainers are exercised on real data: KenLM (the real
``lmplz``) feeding ``kenlm_perplexity.v1``, and word vectors feeding ``paraphrase_score.v1``."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from pydantic import Field

from bitextforge import BitextforgeError, ComponentError, RecipeError, Trainer
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe

from conftest import SMALL_DE, SMALL_EN, read_lines, shared

CALLS: list[str] = []


class CountTrainer(Trainer):
    """Test trainer: writes a word-count table of a text file, and a sidecar; can fail midway."""

    name = "count_test.v1"

    class Config(Trainer.Config):
        """Options of count_test.v1."""

        text: str = Field(description="Text file.")
        fail: bool = Field(False, description="Raise after writing half the outputs.")
        lower: bool = Field(False, description="Count lowercased words.")
        threads: int = Field(1, description="A run option: does not change the table.")

    @classmethod
    def input_paths(cls, config):
        """The text file."""
        return {"text": config.text}

    def outputs(self):
        """The table and its sidecar."""
        out = Path(self.config.output)
        return [out, out.with_name(out.name + ".meta")]

    def train(self):
        """Count words."""
        CALLS.append(self.config.output)
        counts: dict[str, int] = {}
        for line in Path(self.config.text).read_text(encoding="utf-8").splitlines():
            for w in (line.lower() if self.config.lower else line).split():
                counts[w] = counts.get(w, 0) + 1
        Path(self.config.output).write_text(json.dumps(counts), encoding="utf-8")
        if self.config.fail:
            raise ComponentError("count_test.v1: failing on purpose")
        Path(self.config.output + ".meta").write_text("ok", encoding="utf-8")
        return {"words": len(counts)}


@pytest.fixture
def trainer_plugin(bitextforge_plugin):
    return bitextforge_plugin(CountTrainer, name="preparetest")


def _recipe(tmp_path, prepare: str, steps: str = "  - filter: length.v1\n    keep: {max: 50}\n"):
    s, t = tmp_path / "in.de", tmp_path / "in.en"
    s.write_text("\n".join(SMALL_DE) + "\n", encoding="utf-8")
    t.write_text("\n".join(SMALL_EN) + "\n", encoding="utf-8")
    return (f"name: prep\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{tmp_path / 'out'}'}}\n"
            f"progress: false\nprepare:\n{prepare}steps:\n{steps}")


def test_prepare_trains_once_then_skips_and_force_retrains(tmp_path, trainer_plugin):
    CALLS.clear()
    out = tmp_path / "models" / "counts.json"
    prep = f"  - train: count_test.v1\n    with: {{text: '{tmp_path / 'in.en'}', output: '{out}'}}\n"
    res = run_recipe(parse_recipe(_recipe(tmp_path, prep), "r.yaml"))
    assert len(CALLS) == 1 and ".partial-" in CALLS[0]  # trained under a temporary name
    assert json.loads(out.read_text())["the"] >= 1 and (tmp_path / "models/counts.json.meta").exists()
    assert not list(out.parent.glob(".*partial*"))
    entry = res.manifest["prepare"][0]
    assert entry["status"] == "trained" and entry["info"]["words"] > 5
    res = run_recipe(parse_recipe(_recipe(tmp_path, prep), "r.yaml"))
    assert len(CALLS) == 1 and res.manifest["prepare"][0]["status"] == "exists"
    forced = prep + "    force: true\n"
    run_recipe(parse_recipe(_recipe(tmp_path, forced), "r.yaml"))
    assert len(CALLS) == 2
    # a missing sidecar means unfinished: trained again
    (tmp_path / "models/counts.json.meta").unlink()
    run_recipe(parse_recipe(_recipe(tmp_path, prep), "r.yaml"))
    assert len(CALLS) == 3


def test_a_model_trained_with_other_options_is_refused_not_reused(tmp_path, trainer_plugin,
                                                                    capsys):
    """An existing output trained with other options is refused before anything runs, naming the
    recipe, the trainer, the output and each changed option (not silently reused); run options
    (``threads``) do not count; ``force: true`` retrains; an option missing from the kept file
    counts as its default (a model trained before the option existed); a model without the
    file is reused as before."""
    from bitextforge.cli.main import main
    from bitextforge.components.registry import get_registry
    from bitextforge.pipeline.prepare import options_path, run_prepare

    CALLS.clear()
    out = tmp_path / "models" / "counts.json"
    recipe = tmp_path / "r.yaml"

    def prep(extra: str = "") -> str:
        return (f"  - train: count_test.v1\n    with: {{text: '{tmp_path / 'in.en'}', "
                f"output: '{out}'{extra}}}\n")

    def run(extra: str = "", force: bool = False) -> int:
        recipe.write_text(_recipe(tmp_path, prep(extra) + ("    force: true\n" if force else "")),
                          encoding="utf-8")
        runs.append(tmp_path / f"out{len(runs)}")
        return main(["run", str(recipe), "-q", "-o", str(runs[-1])])

    runs: list[Path] = []

    assert run() == 0 and len(CALLS) == 1
    kept = json.loads(options_path(out).read_text())
    assert kept["trainer"] == "count_test.v1" and kept["options"]["lower"] is False
    assert "threads" not in kept["options"] and "output" not in kept["options"]
    assert run(", threads: 2") == 0 and len(CALLS) == 1  # a run option: reused
    capsys.readouterr()
    assert run(", lower: true") == 2 and len(CALLS) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "r.yaml" in err and "prepare[0] count_test.v1" in err
    assert f"{out} exists but was trained with other options (lower false then, true now)" in err
    assert "force: true" in err
    before = out.read_text()
    with pytest.raises(BitextforgeError, match="lower false then, true now"):  # the API too
        run_recipe(parse_recipe(_recipe(tmp_path, prep(", lower: true")), "r.yaml"))
    with pytest.raises(RecipeError, match="lower false then, true now"):  # and run_prepare
        run_prepare(parse_recipe(_recipe(tmp_path, prep(", lower: true")), "r.yaml"),
                    get_registry(), log=lambda m: None)
    assert out.read_text() == before and len(CALLS) == 1
    assert run(", lower: true", force=True) == 0 and len(CALLS) == 2
    assert json.loads(options_path(out).read_text())["options"]["lower"] is True
    assert run(", lower: true") == 0 and len(CALLS) == 2
    # a file written before an option existed: the option is taken at its default
    kept = json.loads(options_path(out).read_text())
    del kept["options"]["fail"]
    options_path(out).write_text(json.dumps(kept))
    assert run(", lower: true") == 0 and len(CALLS) == 2
    assert run(", lower: true, fail: true") == 2 and len(CALLS) == 2
    assert "fail false then, true now" in capsys.readouterr().err
    options_path(out).unlink()  # a model without the file: reused as before
    assert run() == 0 and len(CALLS) == 2


def test_shipped_recipes_that_share_a_model_ask_for_the_same_options():
    """Recipes that train the same output (recipes/wmt-filter-deen.yaml reuses
    recipes/models-deen.yaml's KenLM models, for instance) must train it with the same options,
    or whichever runs second would be refused."""
    from bitextforge.components.registry import get_registry
    from bitextforge.pipeline.prepare import trained_options

    registry = get_registry()
    seen: dict[str, tuple[str, dict]] = {}
    shared_outputs = 0
    shipped = sorted(Path("recipes").glob("*.yaml")) \
        + sorted(Path("benchmarks/studies").glob("*/recipes/*.yaml"))
    for path in shipped:
        recipe = parse_recipe(path.read_text(encoding="utf-8"), str(path))
        for i, (prep, cfg) in enumerate(zip(recipe.prepare, recipe.prepare_configs)):
            options = trained_options(registry.get("trainer", prep.train), cfg)
            key = str(Path(cfg.output))
            if key in seen:
                shared_outputs += 1
                assert seen[key][1] == options, f"{path} prepare[{i}] and {seen[key][0]}: {key}"
            else:
                seen[key] = (f"{path} prepare[{i}]", options)
    assert shared_outputs >= 2  # the check compares something


def test_prepare_only_trains_the_chosen_trainers(tmp_path, trainer_plugin, capsys):
    """``bitextforge prepare --only I`` trains just prepare[I] (so independent trainings can run in
    separate processes), a later plain ``prepare`` trains the rest, and a wrong index is one line."""
    from bitextforge.cli.main import main

    CALLS.clear()
    outs = [tmp_path / "models" / f"c{i}.json" for i in range(2)]
    prep = "".join(f"  - train: count_test.v1\n    with: {{text: '{tmp_path / 'in.en'}', "
                   f"output: '{o}'}}\n" for o in outs)
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_recipe(tmp_path, prep), encoding="utf-8")
    assert main(["prepare", str(recipe), "--only", "1"]) == 0
    assert outs[1].exists() and not outs[0].exists() and len(CALLS) == 1
    assert main(["prepare", str(recipe)]) == 0
    assert outs[0].exists() and len(CALLS) == 2
    assert "(exists)" in capsys.readouterr().out
    assert main(["prepare", str(recipe), "--only", "2"]) == 2
    assert "no prepare[2]" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # prepare runs no steps


def test_prepare_needs_only_its_own_files(tmp_path, trainer_plugin, capsys):
    """``prepare`` refuses when a trainer lacks a file, naming its key; a model that only the
    steps read (made by another recipe, say) is a note on stderr, not a refusal: it is the run,
    which still refuses, that needs it."""
    from bitextforge.cli.main import main

    out = tmp_path / "models" / "c.json"
    steps = (f"  - filter: kenlm_perplexity.v1\n    with: {{model: '{tmp_path / 'lm.binary'}', "
             f"column: src}}\n    keep: {{max: 1000}}\n")
    recipe = tmp_path / "r.yaml"
    prep = f"  - train: count_test.v1\n    with: {{text: 'TEXT', output: '{out}'}}\n"
    recipe.write_text(_recipe(tmp_path, prep.replace("TEXT", str(tmp_path / "in.en")), steps), encoding="utf-8")
    assert main(["prepare", str(recipe)]) == 0
    err = capsys.readouterr().err
    assert out.exists() and "note (prepare goes on" in err
    assert "steps[0] (kenlm_perplexity).with.model" in err
    assert main(["run", str(recipe)]) == 2
    assert "steps[0] (kenlm_perplexity).with.model" in capsys.readouterr().err
    recipe.write_text(_recipe(tmp_path, prep.replace("TEXT", str(tmp_path / "none.en")), steps),
                      encoding="utf-8")
    out.unlink()
    assert main(["prepare", str(recipe)]) == 2
    err = capsys.readouterr().err
    assert "prepare[0].with.text" in err and not out.exists()
    # --only 1: prepare[0]'s missing file is a note, not a refusal
    other = tmp_path / "models" / "d.json"
    two = prep.replace("TEXT", str(tmp_path / "none.en")) + prep.replace(
        "TEXT", str(tmp_path / "in.en")).replace(str(out), str(other))
    recipe.write_text(_recipe(tmp_path, two, steps), encoding="utf-8")
    assert main(["prepare", str(recipe), "--only", "1"]) == 0
    err = capsys.readouterr().err
    assert other.exists() and "note (prepare goes on" in err and "prepare[0].with.text" in err


def test_a_trained_model_does_not_need_its_training_files(tmp_path, trainer_plugin, capsys):
    """A trainer whose outputs exist is not trained again, so ``validate`` and ``run`` do not ask
    for its inputs (a model trained on another run's corpus, since removed); with the model gone,
    or with ``force``, the missing input refuses again."""
    from bitextforge.cli.main import main

    text, out = tmp_path / "train.en", tmp_path / "models" / "c.json"
    text.write_text("a b c\n", encoding="utf-8")
    prep = f"  - train: count_test.v1\n    with: {{text: '{text}', output: '{out}'}}\n"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_recipe(tmp_path, prep), encoding="utf-8")
    assert main(["prepare", str(recipe)]) == 0 and out.exists()
    text.unlink()
    capsys.readouterr()
    assert main(["validate", str(recipe)]) == 0
    assert main(["run", str(recipe)]) == 0 and (tmp_path / "out" / "corpus.tsv").exists()
    recipe.write_text(_recipe(tmp_path, prep + "    force: true\n"), encoding="utf-8")
    assert main(["validate", str(recipe)]) == 2
    assert "prepare[0].with.text" in capsys.readouterr().err
    recipe.write_text(_recipe(tmp_path, prep), encoding="utf-8")
    out.unlink()
    assert main(["validate", str(recipe)]) == 2
    assert "prepare[0].with.text" in capsys.readouterr().err


def test_failed_training_leaves_no_output(tmp_path, trainer_plugin):
    out = tmp_path / "models" / "c.json"
    prep = (f"  - train: count_test.v1\n    with: {{text: '{tmp_path / 'in.en'}', output: '{out}', "
            f"fail: true}}\n")
    with pytest.raises(ComponentError, match="failing on purpose"):
        run_recipe(parse_recipe(_recipe(tmp_path, prep), "r.yaml"))
    assert not out.exists() and not list(out.parent.iterdir())
    assert not (tmp_path / "out" / "corpus.src").exists()


def test_partials_of_killed_trainings_are_removed_and_running_ones_kept(tmp_path, trainer_plugin):
    out = tmp_path / "models" / "c.json"
    out.parent.mkdir()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(gone.stdout)  # a process that has exited: its partials are debris
    dead = [out.with_name(f".c.json.partial-{dead_pid}"),
            out.with_name(f".c.json.partial-{dead_pid}.meta")]
    running = out.with_name(f".c.json.partial-{os.getppid()}")  # a live process: left alone
    for p in (*dead, running):
        p.write_text("half", encoding="utf-8")
    prep = f"  - train: count_test.v1\n    with: {{text: '{tmp_path / 'in.en'}', output: '{out}'}}\n"
    run_recipe(parse_recipe(_recipe(tmp_path, prep), "r.yaml"))
    assert out.exists() and not any(p.exists() for p in dead)
    assert running.exists()


SLOW_TRAINER_SCRIPT = """
import sys, time
from pathlib import Path
from bitextforge import Trainer
from bitextforge.cli.main import main
from bitextforge.components.registry import get_registry
from bitextforge.testing import plugin_module

class SlowTrainer(Trainer):
    \"\"\"Writes half its output, then waits to be killed.\"\"\"
    name = "slow_test.v1"

    def train(self):
        \"\"\"Half a model, then sleep.\"\"\"
        Path(self.config.output).write_text("half", encoding="utf-8")
        time.sleep(120)

get_registry().add_plugin(plugin_module(SlowTrainer), name="slowtest")
sys.exit(main(["run", "--quiet", sys.argv[1]]))
"""


def test_sigterm_during_training_leaves_no_partial_model(tmp_path):
    out = tmp_path / "models" / "slow.bin"
    prep = "  - train: slow_test.v1\n    with: {output: '" + str(out) + "'}\n"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(_recipe(tmp_path, prep), encoding="utf-8")
    script = tmp_path / "slow.py"
    script.write_text(textwrap.dedent(SLOW_TRAINER_SCRIPT), encoding="utf-8")
    proc = subprocess.Popen([sys.executable, str(script), str(recipe)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not list(out.parent.glob(".slow.bin.partial-*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert list(out.parent.glob(".slow.bin.partial-*")), "the trainer never started"
    proc.send_signal(signal.SIGTERM)  # what `kill` and a batch scheduler's time limit send
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "terminated (SIGTERM)" in err and "Traceback" not in err
    assert not out.exists() and not list(out.parent.iterdir())


def test_prepare_is_validated_with_the_recipe(tmp_path, trainer_plugin):
    bad = ("  - train: count_tst.v1\n    with: {text: a, output: b}\n"
           "  - train: count_test.v1\n    with: {txt: a, output: b}\n"
           "  - train: count_test.v1\n    with: {text: a, output: x}\n"
           "  - train: count_test.v1\n    with: {text: b, output: x}\n")
    with pytest.raises(RecipeError) as err:
        parse_recipe(_recipe(tmp_path, bad), "r.yaml")
    msg = str(err.value)
    assert "r.yaml: prepare[0].train: unknown trainer 'count_tst.v1'" in msg
    assert "did you mean count_test.v1" in msg
    assert "prepare[1].with.txt: unknown field" in msg
    assert "prepare[3].with.output: x is also written by prepare[2]" in msg


def test_kenlm_trainer_feeds_the_perplexity_filter(tmp_path):
    """The real lmplz trains on Multi30k English in prepare; the filter then loads the model."""
    from bitextforge.plugins.quality.lm import find_tool

    if not find_tool("lmplz"):
        pytest.skip("KenLM's lmplz is not built here (run `make env`)")
    text = tmp_path / "lm.en"
    text.write_text("\n".join(read_lines(shared("multi30k", "train.en.gz"), 3000)) + "\n",
                    encoding="utf-8")
    model = tmp_path / "lm" / "en.bin"
    prep = (f"  - train: kenlm_model.v1\n    with: {{text: '{text}', output: '{model}', "
            f"order: 3}}\n  - train: word_vectors.v1\n    with: {{text: '{text}', "
            f"output: '{tmp_path / 'lm' / 'en.vec'}', dim: 20}}\n")
    steps = (f"  - filter: kenlm_perplexity.v1\n    with: {{model: '{model}', column: tgt}}\n"
             f"    keep: {{max: 100000}}\n"
             f"  - filter: paraphrase_score.v1\n    with: {{vectors: '{tmp_path / 'lm' / 'en.vec'}', "
             f"columns: [tgt, tgt]}}\n    keep: {{min: 0.99}}\n")
    res = run_recipe(parse_recipe(_recipe(tmp_path, prep, steps), "r.yaml"))
    assert [p["status"] for p in res.manifest["prepare"]] == ["trained", "trained"]
    assert model.exists() and Path(str(model) + ".json").exists()
    tsv = (tmp_path / "out" / "corpus.tsv").read_text().splitlines()
    col = tsv[0].split("\t").index("kenlm_perplexity")
    ppl = [float(r.split("\t")[col]) for r in tsv[1:]]
    # identical columns score cosine 1, except a sentence without any known word (no vector)
    assert len(ppl) == res.rows_out >= len(SMALL_EN) - 1 and all(1 < p < 100000 for p in ppl)


class DrawTrainer(Trainer):
    """Test trainer: writes a number drawn from Python's global random generator."""

    name = "draw_test.v1"

    def train(self):
        """Draw."""
        import random

        Path(self.config.output).write_text(repr(random.random()), encoding="utf-8")
        return {}


def test_prepare_trains_from_the_recipe_seed_as_a_run_does(tmp_path, bitextforge_plugin):
    """``bitextforge prepare`` and a run's ``prepare:`` start their trainings from the recipe's
    seed, whatever the generator's state before: the same recipe trains the same model either way."""
    import random

    from bitextforge.cli.main import main

    bitextforge_plugin(DrawTrainer, name="drawtest")
    texts = {}
    for how in ("prepare", "run"):
        out = tmp_path / how / "drawn.txt"
        recipe = tmp_path / f"{how}.yaml"
        recipe.write_text(_recipe(tmp_path, f"  - train: draw_test.v1\n    with: {{output: '{out}'}}\n")
                          .replace("progress: false", "progress: false\nseed: 7"),
                          encoding="utf-8")
        random.seed(1 if how == "prepare" else 2)  # what ran before in the process
        if how == "prepare":
            assert main(["prepare", str(recipe)]) == 0
        else:
            run_recipe(parse_recipe(recipe.read_text(encoding="utf-8"), str(recipe)))
        texts[how] = out.read_text(encoding="utf-8")
    random.seed(7)
    assert texts["prepare"] == texts["run"] == repr(random.random())
