"""The table ``run`` and ``score`` end with, and the warnings about results that look wrong.

Both read the manifest's ``steps`` entries (rows in and out, seconds, the counts paraphrase, clean
and weight steps keep, the rows a rule composite rejected per rule, the effective threshold of a
``top``/``words`` decision), so the table on the
terminal and ``manifest.json`` always agree.
"""

from __future__ import annotations

from typing import Any

from ..pipeline.executors import ADDS
from ..pipeline.kinds import STEP_KINDS
from ..pipeline.notes import (clean_note, filter_note, generate_note,  # noqa: F401 - re-exported
                              paraphrase_note, weight_note)

#: a paraphrase step warns when more than this share of its candidates is degenerate
DEGENERATE_SHARE = 0.5
#: ... and it produced at least this many candidates (a handful says little)
DEGENERATE_MIN = 10
#: a paraphrase or generate step warns when more than this share of its texts repeat a text it
#: made for another sentence (Multi30k's human English: 0.02 %; a collapsed back-translation
#: model: 24 %, 5,388 of 22,254)
DUPLICATE_SHARE = 0.1


def step_label(step: dict[str, Any]) -> str:
    """``steps[2] length_ratio.v1``; a step whose component wraps another (its manifest
    ``info`` names it as ``wraps``) names both, ``steps[3] segmented.v1(length_ratio.v1)``:
    the wrapper's name alone does not tell several such steps apart."""
    wraps = (step.get("info") or {}).get("wraps")
    name = f"{step['component']}({wraps})" if wraps else step["component"]
    return f"steps[{step['index']}] {name}"


def step_note(step: dict[str, Any]) -> str:
    """What the table's last column says about one step: the cut of a top/words decision, else
    what its kind's note (:attr:`bitextforge.pipeline.kinds.StepKind.note`) says about its counts."""
    counts = step.get("counts", {})
    cut = step.get("effective_threshold")
    if cut:
        if cut.get("score") is None:
            return f"{cut['decision']}: nothing selected"
        kept = f"{cut['selected']:,} of {cut['candidates']:,} rows"
        if "words" in cut:
            kept += f", {cut['words']:,} words"
        if cut["selected"] == cut["candidates"]:  # a share or budget that covers every row
            return f"{cut['decision']}: nothing cut (every row kept; {kept})"
        best = "lowest" if cut["order"] == "lowest" else "highest"
        return f"{cut['decision']}: cut at score {cut['score']:.6g} ({best} kept; {kept})"
    kind = _kind(step)
    return kind.note(counts) if kind is not None and kind.note is not None else ""


def _kind(step: dict[str, Any]):
    """The :class:`~bitextforge.pipeline.kinds.StepKind` of a manifest step entry (None if unknown)."""
    return STEP_KINDS.get(step["kind"])


def _cause(step: dict[str, Any]) -> str:
    """What bad output of a step's component most likely means, as its ``learned`` declaration
    allows: an undertrained model, rules that do not fit the input, or either."""
    learned = step.get("learned")
    if learned:
        return "the model is probably undertrained (train longer or on more data)"
    if learned is False:
        return f"{step['component']} works by rules or a dictionary: they do not fit this input"
    return "the component is probably undertrained or wrong for this input"


def step_warnings(step: dict[str, Any]) -> list[str]:
    """Warnings about one step's results: generated texts caught in repetition loops ("the the
    the ..."), texts that repeat one made for another sentence (a collapsed model), degenerate
    paraphrase candidates; each says what that likely means for the kind of component."""
    counts = step.get("counts", {})
    out = []
    made = counts.get("generated", counts.get("candidates", 0))
    loops = counts.get("repetition_loops", 0)
    if loops:
        out.append(f"{step_label(step)}: {loops:,} of {made:,} generated texts are caught in a "
                   f"repetition loop (a word or phrase repeated 4+ times in a row): "
                   f"{_cause(step)}; filter them with a repetition.v1 step")
    dups = counts.get("duplicates", 0)
    if made >= DEGENERATE_MIN and dups > DUPLICATE_SHARE * made:
        out.append(f"{step_label(step)}: {dups:,} of {made:,} generated texts ({dups / made:.0%}) "
                   f"repeat a text already made for another sentence: the output collapsed "
                   f"towards a few sentences; {_cause(step)}; a dedupe.v1 step removes the "
                   f"repeats")
    total = counts.get("candidates", 0)
    kind = _kind(step)
    if kind is None or kind.executor.makes != ADDS or total < DEGENERATE_MIN:
        return out  # only steps that add candidates beside their rows can make degenerate ones
    parts = [(counts.get("empty", 0), "empty"), (counts.get("punctuation_only", 0),
                                                  "punctuation only"),
             (counts.get("identical", 0), "identical to the text they replace")]
    bad = sum(n for n, _ in parts)
    if bad <= DEGENERATE_SHARE * total:
        return out
    detail = ", ".join(f"{n:,} {what}" for n, what in parts if n)
    return out + [f"{step_label(step)}: {bad / total:.0%} of {total:,} paraphrase candidates "
                  f"are degenerate ({detail}); {_cause(step)}"]


def run_warnings(steps: list[dict[str, Any]], prepared: list[dict[str, Any]],
                 evaluations: dict[str, Any] | None = None) -> list[str]:
    """Every warning of a run: its steps', those its trainers reported and those its
    evaluators reported (``evaluate[i]`` in recipe order, as the manifest's ``evaluations``)."""
    out = [w for step in steps for w in step_warnings(step)]
    for entry in prepared:
        for w in (entry.get("info") or {}).get("warnings", []):
            out.append(f"{entry['trainer']} {entry['output']}: {w}")
    for i, (key, result) in enumerate((evaluations or {}).items()):
        for w in (result.get("info") or {}).get("warnings", []):
            out.append(f"evaluate[{i}] {key.split('#')[0]}: {w}")
    return out


def summary_table(steps: list[dict[str, Any]]) -> str:
    """A plain-text table: per step rows in, out, rejected (filters), added (paraphrase, split
    and weight steps), seconds, and a note (the cut of top/words, originals without paraphrase,
    rows a clean step changed, rows a rule composite rejected per rule)."""
    head = ("step", "rows in", "rows out", "rejected", "added", "seconds", "")
    rows = []
    for st in steps:
        diff = st["rows_out"] - st["rows_in"]
        ex = _kind(st).executor
        rejected = f"{-diff:,}" if ex.decides else ""
        added = f"{diff:+,}" if not (ex.decides or ex.changes_text) else ""
        rows.append((step_label(st), f"{st['rows_in']:,}", f"{st['rows_out']:,}", rejected, added,
                     f"{st['seconds']:.1f}", step_note(st)))
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(6)]
    lines = []
    for r in [head, *rows]:
        cells = [r[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(r[1:6], widths[1:])]
        lines.append(("  ".join(cells) + ("  " + r[6] if r[6] else "")).rstrip())
    return "\n".join(lines)
