"""A JSONL input carries only src, tgt and its ``extra_fields`` as columns. A step or evaluator
that names another key of the file's objects passed ``validate`` and failed only when the run
reached it; ``validate`` (and the first moment of ``run``) now say so, naming the key."""

import json

from bitextforge.cli.main import main


def _write(tmp_path, extra_fields=None):
    rows = [{"src": f"Satz {i} hier .", "tgt": f"sentence {i} here .", "domain": "news",
             "note": "x"} for i in range(6)]
    data = tmp_path / "in.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    extra = f", extra_fields: {json.dumps(extra_fields)}" if extra_fields else ""
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"name: j\ninput: {{path: {data}{extra}}}\n"
                      f"steps:\n  - filter: length.v1\n    keep: {{min: 1}}\n"
                      f"evaluate:\n  - evaluator: corpus_stats.v1\n"
                      f"    with: {{columns: [src, domain]}}\n"
                      f"output: {{dir: {tmp_path / 'out'}}}\n", encoding="utf-8")
    return recipe, data


def test_a_jsonl_key_a_component_names_but_extra_fields_drops_fails_validate(tmp_path, capsys):
    recipe, data = _write(tmp_path)
    assert main(["validate", str(recipe)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"bitextforge: error: {recipe}: input.extra_fields: evaluate[0] "
                   f"(corpus_stats.v1) names 'domain', a key of {data}'s JSON objects that is "
                   f"not read as a column (only src, tgt and extra_fields are); add it to "
                   f"extra_fields")
    assert not (tmp_path / "out").exists()
    assert main(["run", str(recipe), "-q"]) == 2
    assert not (tmp_path / "out").exists()


def test_with_the_key_in_extra_fields_it_validates_and_runs(tmp_path, capsys):
    recipe, _ = _write(tmp_path, extra_fields=["domain"])
    assert main(["validate", str(recipe)]) == 0  # 'note', named by nothing, stays unread
    assert main(["run", str(recipe), "-q"]) == 0
    header = (tmp_path / "out" / "corpus.tsv").read_text(encoding="utf-8").splitlines()[0]
    assert "domain" in header.split("\t")


def test_validate_notes_the_keys_that_are_not_read(tmp_path, capsys):
    recipe, data = _write(tmp_path, extra_fields=["domain"])
    assert main(["validate", str(recipe)]) == 0
    assert capsys.readouterr().err == (
        f"bitextforge: note: {recipe}: input: {data}: the keys 'note' of its JSON objects are "
        f"not read (list them in extra_fields to keep them as columns)\n")
