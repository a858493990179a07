"""What a new user trips over: errors that come early and name the recipe key, the step and the
rows; no leftovers; output files readable as the umask allows; plugin authors' mistakes as one
line. Each test writes its own small texts."""

import os
import stat
import subprocess
import sys

import pytest
from conftest import fake_distribution, run_cli

from bitextforge import BitextforgeError, ComponentError, Filter
from bitextforge.recipe.load import parse_recipe
from bitextforge.api import run_recipe


def cli(*args, cwd=None, env=None):
    """``bitextforge ARGS``: in this process, or as a subprocess where ``env`` is given (a plugin
    installed on its PYTHONPATH is found by a fresh interpreter's entry-point discovery)."""
    if env is None:
        return run_cli(*args, cwd=cwd)
    return subprocess.run([sys.executable, "-m", "bitextforge.cli", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd, env=env)


def recipe_text(s, t, out, steps, extra=""):
    return (f"name: t\ninput: {{src: '{s}', tgt: '{t}'}}\noutput: {{dir: '{out}'}}\n"
            f"progress: false\nbatch_size: 3\n{extra}steps:\n{steps}")


class CountingFilter(Filter):
    """Scores 1 and counts the batches it saw."""

    name = "counting_test.v1"
    default_keep = {"min": 0}
    batches = 0

    def score(self, batch):
        type(self).batches += 1
        return [1.0] * len(batch["src"])


def test_misaligned_plain_files_are_counted_before_any_row_is_processed(bitextforge_plugin,
                                                                        pair_files, tmp_path):
    bitextforge_plugin(CountingFilter, name="counting")
    CountingFilter.batches = 0
    s, t = pair_files([f"s{i}" for i in range(7)], [f"t{i}" for i in range(6)])
    with pytest.raises(BitextforgeError) as err:
        run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", "  - filter: counting_test.v1\n"),
                                "r.yaml"))
    assert str(err.value) == f"r.yaml: input: line counts differ: {s} has 7 lines, {t} has 6"
    assert CountingFilter.batches == 0  # the old reader had scored two batches of 3 by then
    assert not (tmp_path / "o").exists()


def test_missing_relative_input_names_the_key_and_the_directory(tmp_path):
    (tmp_path / "a.en").write_text("x\n")
    (tmp_path / "r.yaml").write_text("name: t\ninput: {src: data/a.de, tgt: a.en}\noutput: out\n"
                                     "steps:\n  - filter: length.v1\n    keep: {max: 9}\n")
    res = cli("run", "r.yaml", "-q", cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"bitextforge: error: r.yaml: input.src: data/a.de: no such file (relative paths are "
        f"relative to the current directory, {tmp_path})")
    assert not (tmp_path / "out").exists()


def test_a_pipe_as_input_is_refused_at_once_instead_of_hanging(tmp_path):
    """A named pipe (what ``<(zcat ...)`` gives) can be read once; a run reads an input more than
    once (its lines counted before the run, then read), so it would wait forever on the second
    read. It is refused before anything is read, naming the key, with what to do instead."""
    os.mkfifo(tmp_path / "a.de")
    (tmp_path / "a.en").write_text("x\n")
    (tmp_path / "r.yaml").write_text("name: t\ninput: {src: a.de, tgt: a.en}\noutput: out\n"
                                     "steps:\n  - filter: length.v1\n    keep: {max: 9}\n")
    res = subprocess.run([sys.executable, "-m", "bitextforge.cli", "run", "r.yaml", "-q"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        "bitextforge: error: r.yaml: input.src: a.de: is a pipe or device, not a regular file; a "
        "run reads each input more than once, so write it to a file first (a .gz file is read "
        "as it is)")
    assert not (tmp_path / "out").exists()


def test_validate_lists_every_missing_path_at_once(tmp_path):
    """Input, a model a step loads, a trainer's text; a model that prepare: will write is fine."""
    (tmp_path / "a.en").write_text("x\n")
    (tmp_path / "r.yaml").write_text(f"""name: t
input: {{src: {tmp_path}/a.de, tgt: {tmp_path}/a.en}}
output: {tmp_path}/out
prepare:
  - train: kenlm_model.v1
    with: {{text: {tmp_path}/lm.txt, output: {tmp_path}/models/lm.bin}}
steps:
  - filter: kenlm_perplexity.v1
    with: {{model: {tmp_path}/models/lm.bin}}
    keep: {{max: 1000}}
  - filter: reference_classifier.v1
    with: {{model: {tmp_path}/models/missing.joblib}}
    keep: {{min: 0.5}}
""")
    res = cli("validate", tmp_path / "r.yaml")
    assert res.returncode == 2, res.stdout
    r = tmp_path / "r.yaml"
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {r}: input.src: {tmp_path}/a.de: no such file",
        f"bitextforge: error: {r}: prepare[0].with.text: {tmp_path}/lm.txt: no such file or "
        f"directory",
        f"bitextforge: error: {r}: steps[1] (reference_classifier).with.model: "
        f"{tmp_path}/models/missing.joblib: no such file or directory"]
    (tmp_path / "a.de").write_text("y\n")
    (tmp_path / "lm.txt").write_text("words\n")
    (tmp_path / "r.yaml").write_text((tmp_path / "r.yaml").read_text().replace(
        "missing.joblib", "lm.bin"))
    res = cli("validate", tmp_path / "r.yaml")
    assert res.returncode == 0 and "valid (1 trainer, 2 steps, 0 evaluators)" in res.stdout


def test_validate_checks_the_files_evaluators_read(tmp_path):
    """Evaluators declare their files too: a missing test set, benchmark or IDF corpus is listed
    with the others before any training or reading starts."""
    (tmp_path / "a.de").write_text("x\n")
    (tmp_path / "a.en").write_text("x\n")
    (tmp_path / "r.yaml").write_text(f"""name: t
input: {{src: {tmp_path}/a.de, tgt: {tmp_path}/a.en}}
output: {tmp_path}/out
evaluate:
  - evaluator: train_and_test.v1
    with: {{test_src: {tmp_path}/test.de, test_ref: {tmp_path}/a.en}}
  - evaluator: mrpc.v1
    with: {{train: {tmp_path}/mrpc-train.tsv, test: {tmp_path}/a.en}}
  - evaluator: paraphrastic_embeddings.v1
    with: {{benchmarks: {{sick: {tmp_path}/sick.txt}}}}
  - evaluator: corpus_stats.v1
    with: {{idf_corpus: {tmp_path}/idf.txt}}
""")
    res = cli("validate", tmp_path / "r.yaml")
    assert res.returncode == 2, res.stdout
    r = tmp_path / "r.yaml"
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {r}: evaluate[{i}].with.{key}: {tmp_path}/{name}: no such file or "
        f"directory" for i, key, name in [(0, "test_src", "test.de"), (1, "train", "mrpc-train.tsv"),
                                          (2, "benchmarks.sick", "sick.txt"),
                                          (3, "idf_corpus", "idf.txt")]]


def test_run_reports_every_component_that_cannot_start(tmp_path, pair_files):
    s, t = pair_files(["a"], ["b"])
    steps = "".join(f"  - filter: reference_classifier.v1\n    with: {{model: m{i}.joblib}}\n"
                    f"    keep: {{min: 0.5}}\n    as: c{i}\n" for i in range(2))
    with pytest.raises(BitextforgeError) as err:
        run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", steps), "r.yaml"))
    lines = str(err.value).splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("r.yaml: steps[0] (c0).with.model: m0.joblib: no such file")
    assert lines[1].startswith("r.yaml: steps[1] (c1).with.model: m1.joblib: no such file")


def test_train_nmt_checks_test_files_before_training(tmp_path):
    (tmp_path / "a.de").write_text("Hallo\n")
    (tmp_path / "a.en").write_text("Hello\n")
    res = cli("train-nmt", "--src-train", tmp_path / "a.de", "--tgt-train", tmp_path / "a.en",
              "--src-lang", "de", "--tgt-lang", "en", "--output", tmp_path / "m",
              "--test-src", tmp_path / "missing.de", "--test-tgt", tmp_path / "a.en")
    assert res.returncode == 2
    assert res.stderr.strip() == (f"bitextforge: error: train-nmt: no such file: tests[0][0]: "
                                  f"{tmp_path}/missing.de")
    assert not (tmp_path / "m").exists()


def test_tsv_with_too_few_fields_gets_the_right_hint(tmp_path):
    (tmp_path / "c.tsv").write_text("a\tb\tL\nc\td\n")
    (tmp_path / "r.yaml").write_text(
        f"name: t\ninput: {{path: {tmp_path}/c.tsv, columns: [src, tgt, label]}}\n"
        f"output: {tmp_path}/out\nsteps:\n  - filter: length.v1\n    keep: {{max: 9}}\n")
    res = cli("run", tmp_path / "r.yaml", "-q")
    assert res.returncode == 2
    line = res.stderr.strip()
    assert line.startswith(f"bitextforge: error: {tmp_path}/c.tsv:2: 2 tab-separated fields, "
                           f"expected 3 (src, tgt, label)")
    assert "drop-extra" not in line and "missing field" in line


@pytest.mark.parametrize("mask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_output_files_respect_the_umask(pair_files, tmp_path, mask, mode):
    s, t = pair_files(["eins", "zwei"], ["one", "two"])
    old = os.umask(mask)
    try:
        run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", "  - filter: dedupe.v1\n"),
                                "r.yaml"))
    finally:
        os.umask(old)
    for name in ("corpus.src", "corpus.tsv", "manifest.json", "rejected.tsv"):
        assert stat.S_IMODE((tmp_path / "o" / name).stat().st_mode) == mode, name


class StringScores(Filter):
    """Returns its scores as text, as a careless plugin might."""

    name = "strings_test.v1"
    default_keep = {"min": 0}

    def score(self, batch):
        return ["0.5"] * len(batch["src"])


class NoneScores(Filter):
    """Returns None for every row."""

    name = "nones_test.v1"
    default_keep = {"min": 0}

    def score(self, batch):
        return [None] * len(batch["src"])


@pytest.mark.parametrize("name,shown", [("strings_test.v1", "'0.5'"), ("nones_test.v1", "None")])
def test_non_numeric_scores_are_refused_naming_the_component(bitextforge_plugin, pair_files,
                                                             tmp_path, name, shown):
    bitextforge_plugin(StringScores, NoneScores, name="nonnumeric")
    s, t = pair_files(["eins"], ["one"])
    with pytest.raises(ComponentError) as err:
        run_recipe(parse_recipe(recipe_text(s, t, tmp_path / "o", f"  - filter: {name}\n"),
                                "r.yaml"))
    assert str(err.value) == (f"steps[0]:{name}: score() returned a non-numeric score {shown} "
                              f"(row 0 of a batch); scores must be numbers")


EXPLODING = '''
import bitextforge


class Exploding(bitextforge.Filter):
    """Fails on the rows of the second batch."""

    name = "exploding.v1"
    default_keep = {"min": 0}

    def score(self, batch):
        if batch["id"][0] > 0:
            raise RuntimeError("boom")
        return [1.0] * len(batch["src"])


@bitextforge.hookimpl
def register_filters(register):
    register(Exploding)
'''


def test_exception_in_score_is_one_line_with_the_traceback_in_a_log(tmp_path):
    (tmp_path / "plugin").mkdir()
    env = fake_distribution(tmp_path / "plugin", "exploding_plugin", EXPLODING)
    (tmp_path / "a.de").write_text("eins\nzwei\ndrei\nvier\nfünf\n")
    (tmp_path / "a.en").write_text("one\ntwo\nthree\nfour\nfive\n")
    recipe = tmp_path / "r.yaml"
    recipe.write_text(recipe_text(tmp_path / "a.de", tmp_path / "a.en", tmp_path / "out",
                                  "  - filter: exploding.v1\n"))
    res = cli("run", recipe, env=env)
    assert res.returncode == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr
    head = ("bitextforge: error: steps[0]:exploding.v1: score() failed on rows with id 3-4: "
            "RuntimeError: boom (traceback in ")
    assert lines[0].startswith(head) and lines[0].endswith(".log; --debug prints it)")
    log = lines[0][len(head):].split(";")[0]
    text = open(log, encoding="utf-8").read()
    assert text.startswith("Traceback") and 'raise RuntimeError("boom")' in text
    os.unlink(log)
    res = cli("--debug", "run", recipe, env=env)
    assert res.returncode == 2 and 'raise RuntimeError("boom")' in res.stderr
    assert res.stderr.strip().splitlines()[-1] == head.split(" (")[0]


def test_error_after_a_finished_shard_keeps_it_and_says_how_to_continue(tmp_path):
    """An error before the first shard leaves nothing (tests/test_run.py); one after keeps the
    finished shard, and the refusal of a changed rerun says how to continue."""
    (tmp_path / "plugin").mkdir()
    env = fake_distribution(tmp_path / "plugin", "exploding_plugin", EXPLODING)
    (tmp_path / "a.de").write_text("eins\nzwei\ndrei\nvier\n")
    (tmp_path / "a.en").write_text("one\ntwo\nthree\nfour\n")
    recipe = tmp_path / "r.yaml"
    body = recipe_text(tmp_path / "a.de", tmp_path / "a.en", tmp_path / "out",
                       "  - filter: exploding.v1\n").replace(
        f"output: {{dir: '{tmp_path / 'out'}'}}",
        f"output: {{dir: '{tmp_path / 'out'}', shard_size: 3}}")
    recipe.write_text(body)
    res = cli("run", recipe, env=env)
    assert res.returncode == 2 and "failed on rows with id 3-3" in res.stderr
    assert (tmp_path / "out" / ".shards" / "00000" / "DONE").exists()
    recipe.write_text(body + "seed: 7\n")
    res = cli("run", recipe, env=env)
    assert res.returncode == 2
    assert res.stderr.strip() == (
        f"bitextforge: error: {tmp_path}/out: holds an unfinished run of a different recipe, "
        f"input or model (changed: the recipe; 1 shard finished); to continue it, rerun with the "
        f"recipe, input files and model files it started with (input files and the files its "
        f"steps read are compared by content); to start again, rerun "
        f"with --restart (discards it) or choose another output directory")


def test_plugins_shows_summaries_and_filters_by_kind():
    res = cli("plugins", "weighters")
    assert res.returncode == 0, res.stderr
    head, *rows = res.stdout.splitlines()
    assert {r.split()[1] for r in rows} == {"weighter"}
    dist = next(r for r in rows if r.startswith("distributed.v1 "))
    from bitextforge.components.registry import get_registry

    doc = get_registry().get("weighter", "distributed.v1").__doc__.strip().split("\n\n")[0]
    assert dist.endswith(" ".join(doc.split()))
    res = cli("plugins", "filtres")
    assert res.returncode == 2 and "unknown kind 'filtres'; did you mean filter" in res.stderr


def test_describe_shows_literal_values_and_bounds():
    res = cli("describe", "length_ratio.v1")
    assert "| `unit` | 'tokens' \\| 'chars' | `'tokens'` |" in res.stdout
    res = cli("describe", "distributed.v1")
    assert "| `n` | int (>= 0) | `4` |" in res.stdout


def test_a_list_of_declared_paths_is_checked_path_by_path(bitextforge_plugin, tmp_path):
    from pydantic import Field

    from bitextforge import Trainer
    from bitextforge.recipe.checks import preflight
    from bitextforge.components.registry import get_registry

    class Texts(Trainer):
        """Reads several text files."""

        name = "texts_test.v1"

        class Config(Trainer.Config):
            texts: list[str] = Field(description="Files.")

        @classmethod
        def input_paths(cls, config):
            return {"texts": config.texts}

        def train(self):
            """Never asked: the recipe is only checked."""
            return {}

    bitextforge_plugin(Texts, name="texts")
    (tmp_path / "a.txt").write_text("x\n")
    recipe = parse_recipe(f"name: t\nprepare:\n  - train: texts_test.v1\n    with: {{texts: "
                          f"['{tmp_path}/a.txt', '{tmp_path}/b.txt'], output: '{tmp_path}/m'}}\n",
                          "r.yaml")
    assert preflight(recipe, get_registry()) == [
        f"r.yaml: prepare[0].with.texts[1]: {tmp_path}/b.txt: no such file or directory"]


def test_validate_checks_the_erg_grammar_a_recipe_names(tmp_path):
    """A named grammar image that is not there is found before ACE is started."""
    (tmp_path / "a.de").write_text("x\n")
    (tmp_path / "a.en").write_text("x\n")
    r = tmp_path / "r.yaml"
    r.write_text(f"name: t\ninput: {{src: {tmp_path}/a.de, tgt: {tmp_path}/a.en}}\n"
                 f"output: {tmp_path}/out\nsteps:\n  - paraphrase: erg.v1\n    side: tgt\n"
                 f"    with: {{grammar: {tmp_path}/erg.dat}}\n")
    res = cli("validate", r)
    assert res.returncode == 2
    assert res.stderr.strip() == (f"bitextforge: error: {r}: steps[0] (erg).with.grammar: "
                                  f"{tmp_path}/erg.dat: no such file or directory")


def test_validate_checks_model_paths_that_escaped_it(tmp_path):
    """Issue #35: validate passed recipes whose models were never trained. The lexical filters and
    trainers declared no paths at all, a corpus given as a [src, tgt] pair was not flattened, and a
    relative ``models/name`` looked like a model-hub id; it is a path when ``models/`` is a local
    directory."""
    (tmp_path / "a.de").write_text("x\n")
    (tmp_path / "a.en").write_text("x\n")
    (tmp_path / "models").mkdir()
    r = tmp_path / "r.yaml"
    r.write_text("""name: t
input: {src: a.de, tgt: a.en}
output: out
prepare:
  - train: lexical_translation_model.v1
    with: {corpus: [[train.de, a.en]], dictionary: dict.tsv, output: models/written}
  - train: pair_classifier_model.v1
    with:
      corpus: [train.tsv]
      output: models/pc.joblib
      features: [{filter: lexical_translation.v1, with: {tables: models/old-tables}}]
steps:
  - filter: lexical_translation.v1
    with: {tables: models/written}
    keep: {min: 0}
  - filter: lexical_translation.v1
    as: old_tables
    with: {tables: models/lexical-deen}
    keep: {min: 0}
  - filter: lexical_coverage.v1
    with: {dictionary: ding.tsv.gz}
    keep: {min: 0}
  - filter: pair_classifier.v1
    with: {model: models/pair-classifier.joblib}
    keep: {min: 0}
  - filter: embedding_cosine.v1
    with: {model: models/minilm}
    keep: {min: 0}
""")
    res = cli("validate", r, cwd=tmp_path)
    assert res.returncode == 2, res.stdout
    where = f" (relative paths are relative to the current directory, {tmp_path})"
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {r}: {key}: {path}: no such file or directory{where}"
        for key, path in [("prepare[0].with.corpus[0][0]", "train.de"),
                          ("prepare[0].with.dictionary", "dict.tsv"),
                          ("prepare[1].with.corpus[0]", "train.tsv"),
                          ("prepare[1].with.features[0].with.tables", "models/old-tables"),
                          ("steps[1] (old_tables).with.tables", "models/lexical-deen"),
                          ("steps[2] (lexical_coverage).with.dictionary", "ding.tsv.gz"),
                          ("steps[3] (pair_classifier).with.model",
                           "models/pair-classifier.joblib"),
                          ("steps[4] (embedding_cosine).with.model", "models/minilm")]]


def test_an_output_dir_that_is_a_file_is_called_a_file(tmp_path, pair_files):
    """Issue #35: output.dir naming a file said "output directory is not writable (File exists)"."""
    s, t = pair_files(["a"], ["b"])
    (tmp_path / "out").write_text("not a directory\n")
    r = tmp_path / "r.yaml"
    r.write_text(recipe_text(s, t, tmp_path / "out", "  - filter: length.v1\n    keep: {max: 5}\n"))
    for command in ("validate", "run"):
        res = cli(command, r)
        assert res.returncode == 2
        assert res.stderr.strip() == (f"bitextforge: error: {r}: output.dir: {tmp_path}/out: is a "
                                      f"file, expected a directory")
    res = cli("run", r, "-o", tmp_path / "out" / "sub")
    assert res.returncode == 2
    assert res.stderr.strip() == (f"bitextforge: error: --output: {tmp_path}/out/sub: "
                                  f"{tmp_path}/out is a file, not a directory")
    assert (tmp_path / "out").read_text() == "not a directory\n"


def test_validate_finds_plain_text_named_gz(tmp_path):
    """The same check runs in validate, naming the recipe key."""
    (tmp_path / "a.de.gz").write_text("Der Hund\n")
    (tmp_path / "a.en").write_text("The dog\n")
    r = tmp_path / "r.yaml"
    r.write_text(recipe_text(tmp_path / "a.de.gz", tmp_path / "a.en", tmp_path / "out",
                             "  - filter: length.v1\n    keep: {max: 5}\n"))
    res = cli("validate", r)
    assert res.returncode == 2
    assert res.stderr.strip() == (f"bitextforge: error: {r}: input.src: {tmp_path}/a.de.gz: not "
                                  f"gzip-compressed, although its name ends in .gz; compress it "
                                  f"or rename it without .gz")


def test_machine_translated_negatives_name_their_model_in_one_line(tmp_path):
    """The pair classifier's machine_translated negatives need mt_model, and the model named
    must be there: both found by validate, with the recipe key path."""
    (tmp_path / "a.de").write_text("x\n")
    (tmp_path / "a.en").write_text("x\n")
    (tmp_path / "models").mkdir()
    (tmp_path / "train.tsv").write_text("a\tb\nc\td\n")
    r = tmp_path / "r.yaml"
    head = ("name: t\ninput: {src: a.de, tgt: a.en}\noutput: out\nprepare:\n"
            "  - train: pair_classifier_model.v1\n    with: {corpus: [train.tsv], "
            "output: models/pc.joblib, negatives: [misaligned, machine_translated]")
    steps = "}\nsteps:\n  - filter: length_ratio.v1\n    keep: {min: 0}\n"
    r.write_text(head + steps)
    res = cli("validate", r, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {r}: prepare[0].with: mt_model: the "
        f"machine_translated negatives need it"]
    r.write_text(head + ", mt_model: models/nope" + steps)
    res = cli("validate", r, cwd=tmp_path)
    assert res.returncode == 2
    assert res.stderr.splitlines() == [
        f"bitextforge: error: {r}: prepare[0].with.mt_model: models/nope: no such file or "
        f"directory (relative paths are relative to the current directory, {tmp_path})"]
