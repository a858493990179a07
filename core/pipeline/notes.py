"""What the run's summary table says about a step's counts, one function per step kind that has
something to say (the ``note`` of its row in :mod:`bitextforge.pipeline.kinds`). Each reads the
counts its kind's executor keeps (:mod:`bitextforge.pipeline.executors`), as the manifest holds
them.
"""

from __future__ import annotations


def paraphrase_note(counts: dict[str, int]) -> str:
    """Originals that got no paraphrase."""
    if not counts.get("originals"):
        return ""
    return (f"{counts['without_candidates']:,} of {counts['originals']:,} originals got no "
            f"paraphrase")


def generate_note(counts: dict[str, int]) -> str:
    """Texts generated, sentences without output, repetition loops."""
    if not counts.get("sentences"):
        return ""
    note = f"{counts['generated']:,} texts for {counts['sentences']:,} sentences"
    if counts.get("without_output"):
        note += f", {counts['without_output']:,} without output (rejected)"
    if counts.get("repetition_loops"):
        note += f", {counts['repetition_loops']:,} in repetition loops"
    return note


def clean_note(counts: dict[str, int]) -> str:
    """Rows changed, per side."""
    if "changed" not in counts:
        return ""
    sides = ", ".join(f"{side} {counts[f'changed_{side}']:,}" for side in ("src", "tgt")
                      if f"changed_{side}" in counts)
    return f"{counts['changed']:,} rows changed ({sides})"


def filter_note(counts: dict[str, int]) -> str:
    """Rows a rule composite rejected, per rule, most first."""
    by_rule = sorted(((n, k.split(":", 1)[1]) for k, n in counts.items()
                      if k.startswith("rejected_by:")), key=lambda x: (-x[0], x[1]))
    return "rejected by " + ", ".join(f"{rule} {n:,}" for n, rule in by_rule) if by_rule else ""


def weight_note(counts: dict[str, int]) -> str:
    """Originals left without a paraphrase."""
    if not counts.get("groups"):
        return ""
    return (f"{counts['groups_without_paraphrase']:,} of {counts['groups']:,} originals have "
            f"no paraphrase left")
