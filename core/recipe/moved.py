"""Where the recipes that left the shelf went: one row per recipe moved out of ``recipes/``.

The shelf (``recipes/``) keeps what a user starts from; the experiment arms of the project's
studies live under ``benchmarks/studies/<study>/recipes/``. A recipe a user still names by its old
path fails with one line naming its new place. The table is read only when a recipe file or an
``extends:`` target does not exist, so it never changes what an existing file means.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the shelf's index, named in every hint
SHELF_INDEX = "recipes/README.md"

#: old path (relative to the repository root) -> new path (relative to the repository root)
MOVED: dict[str, str] = {
    "recipes/bt-multi30k.yaml":
        "benchmarks/studies/bt-multi30k/recipes/first-arms.yaml",
    "recipes/bt-multi30k-baseline.yaml":
        "benchmarks/studies/bt-multi30k/recipes/baseline.yaml",
    "recipes/bt-multi30k-best.yaml":
        "benchmarks/studies/bt-multi30k/recipes/best.yaml",
    "recipes/bt-multi30k-bitext.yaml":
        "benchmarks/studies/bt-multi30k/recipes/bitext.yaml",
    "recipes/bt-multi30k-copy-arm.yaml":
        "benchmarks/studies/bt-multi30k/recipes/copy-arm.yaml",
    "recipes/bt-multi30k-diverse.yaml":
        "benchmarks/studies/bt-multi30k/recipes/diverse.yaml",
    "recipes/bt-multi30k-filtered.yaml":
        "benchmarks/studies/bt-multi30k/recipes/filtered.yaml",
    "recipes/bt-multi30k-lex-arm.yaml":
        "benchmarks/studies/bt-multi30k/recipes/lex-arm.yaml",
    "recipes/bt-multi30k-lex-only.yaml":
        "benchmarks/studies/bt-multi30k/recipes/lex-only.yaml",
    "recipes/bt-multi30k-lex-rep3.yaml":
        "benchmarks/studies/bt-multi30k/recipes/lex-rep3.yaml",
    "recipes/bt-multi30k-lex-rep4.yaml":
        "benchmarks/studies/bt-multi30k/recipes/lex-rep4.yaml",
    "recipes/bt-multi30k-lex-rev-arm.yaml":
        "benchmarks/studies/bt-multi30k/recipes/lex-rev-arm.yaml",
    "recipes/bt-multi30k-lex-rev-corpus.yaml":
        "benchmarks/studies/bt-multi30k/recipes/lex-rev-corpus.yaml",
    "recipes/bt-multi30k-mixed.yaml":
        "benchmarks/studies/bt-multi30k/recipes/mixed.yaml",
    "recipes/bt-multi30k-selftrain.yaml":
        "benchmarks/studies/bt-multi30k/recipes/selftrain.yaml",
    "recipes/bt-multi30k-sr-arm.yaml":
        "benchmarks/studies/bt-multi30k/recipes/sr-arm.yaml",
    "recipes/bt-multi30k-st-arm.yaml":
        "benchmarks/studies/bt-multi30k/recipes/st-arm.yaml",
    "recipes/bt-news.yaml":
        "benchmarks/studies/bt-news/recipes/bt.yaml",
    "recipes/bt-news-bitext.yaml":
        "benchmarks/studies/bt-news/recipes/bitext.yaml",
    "recipes/para-multi30k.yaml":
        "benchmarks/studies/para-multi30k/recipes/para.yaml",
    "recipes/para-bt-multi30k.yaml":
        "benchmarks/studies/para-multi30k/recipes/para-bt.yaml",
    "recipes/nichols-weighting.yaml":
        "benchmarks/studies/nichols-erg/recipes/weighting.yaml",
    "recipes/wmt-filter-deen-auc.yaml":
        "benchmarks/studies/wmt-filter-design/recipes/auc.yaml",
    "recipes/opus100-clean-deen.yaml":
        "benchmarks/studies/cleaning/recipes/opus100.yaml",
    "recipes/paracrawl-auc-clean.yaml":
        "benchmarks/studies/cleaning/recipes/paracrawl-auc.yaml",
    "recipes/wmt18-filtering-clean.yaml":
        "benchmarks/studies/cleaning/recipes/wmt18.yaml",
    "recipes/wmt18-filtering.yaml":
        "benchmarks/studies/wmt18-filtering/recipes/filtering.yaml",
    "recipes/wmt18-filtering-auc.yaml":
        "benchmarks/studies/wmt18-filtering/recipes/auc.yaml",
    "recipes/wmt18-filtering-news.yaml":
        "benchmarks/studies/wmt18-filtering/recipes/news.yaml",
    "recipes/seed-spread.yaml":
        "benchmarks/studies/wmt18-filtering/recipes/seed-spread.yaml",
    "recipes/kim-filter.yaml":
        "benchmarks/studies/kim-bilingual/recipes/filter.yaml",
    "recipes/kim-paracrawl-auc.yaml":
        "benchmarks/studies/kim-bilingual/recipes/paracrawl-auc.yaml",
    "recipes/paracrawl-filter.yaml":
        "benchmarks/studies/paracrawl-filter/recipes/filter.yaml",
    "recipes/paracrawl-auc.yaml":
        "benchmarks/studies/paracrawl-filter/recipes/auc.yaml",
    "recipes/combine-paracrawl.yaml":
        "benchmarks/studies/paracrawl-filter/recipes/combine.yaml",
    "recipes/mlqe-qe.yaml":
        "benchmarks/studies/mlqe-qe/recipes/qe.yaml",
    "recipes/mlqe-embedding-qe.yaml":
        "benchmarks/studies/mlqe-qe/recipes/embedding-qe.yaml",
    "recipes/bet-mrpc.yaml":
        "benchmarks/studies/bet/recipes/mrpc.yaml",
    "recipes/bet-roundtrip.yaml":
        "benchmarks/studies/bet/recipes/roundtrip.yaml",
}


def moved_to(path: str | Path) -> str | None:
    """The new place of a moved recipe named by ``path`` (any spelling that ends in
    ``recipes/<name>.yaml``: relative, absolute or through ``..``), spelled with the same prefix
    as ``path``; None when ``path`` is not a recipe that moved."""
    norm = Path(os.path.normpath(str(path)))
    if norm.parent.name != "recipes":
        return None
    new = MOVED.get(f"recipes/{norm.name}")
    if new is None:
        return None
    prefix = norm.parent.parent
    return new if str(prefix) == "." else str(prefix / new)


def moved_hint(path: str | Path) -> str | None:
    """The one-line message for a moved recipe named by ``path``, or None when it did not move."""
    new = moved_to(path)
    if new is None:
        return None
    return f"{os.path.normpath(str(path))} moved to {new} (the recipe shelf: {SHELF_INDEX})"
