"""The quick-start recipe and the core steps on real data from ../shared/data (skipped without it)."""

import json

from conftest import ROOT, read_lines, run_cli, shared


def test_quickstart_recipe_on_multi30k(tmp_path):
    de, en = shared("multi30k", "train.de.gz"), shared("multi30k", "train.en.gz")
    out = tmp_path / "m30k"
    res = run_cli("run", ROOT / "recipes" / "quickstart.yaml", "-q", "--set", f"input.src={de}",
                  "--set", f"input.tgt={en}", "-o", out, cwd=ROOT)
    assert res.returncode == 0, res.stderr
    m = json.loads((out / "manifest.json").read_text())
    assert m["input"]["rows"] == 29000
    kept = (out / "corpus.src").read_text(encoding="utf-8").splitlines()
    rejected = (out / "rejected.tsv").read_text(encoding="utf-8").splitlines()[1:]
    assert len(kept) + len(rejected) == 29000  # nothing silently dropped
    assert 28000 < len(kept) < 29000  # Multi30k is clean: a few duplicates and ratio outliers
    src = read_lines(de)
    reasons = {r.split("\t")[-2].split(":")[1] for r in rejected}
    assert reasons <= {"dedupe.v1", "length.v1", "length_ratio.v1"}
    # kept lines are real input lines in input order
    pos = 0
    for line in kept[:500]:
        pos = src.index(line, pos)


def test_mrpc_tsv_with_bom_and_crlf(tmp_path):
    """MRPC has a BOM, CRLF line ends and a header; read as TSV with named columns."""
    path = shared("mrpc")
    train = next(p for p in sorted(path.iterdir()) if "train" in p.name)
    head = train.read_bytes()[:3]
    out = tmp_path / "mrpc"
    recipe = tmp_path / "r.yaml"
    recipe.write_text(f"""name: mrpc
input: {{path: '{train}', format: tsv, header: true,
         columns: [quality, id1, id2, src, tgt], extra_fields_policy: error}}
output: '{out}'
progress: false
steps:
  - filter: length_ratio.v1
    keep: {{max: 1.5}}
""")
    res = run_cli("run", recipe)
    assert res.returncode == 0, res.stderr
    rows = (out / "corpus.tsv").read_text(encoding="utf-8").splitlines()
    assert rows[0].split("\t")[:7] == ["id", "variant", "origin", "src", "tgt", "weight", "quality"]
    assert not any("\r" in r for r in rows)
    assert head == b"\xef\xbb\xbf"
