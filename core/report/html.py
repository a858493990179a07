"""The run report: ``report.html``, a read-only snapshot of the page ``bitextforge serve`` shows.

It is written from the finished run directory (``manifest.json``, ``corpus.tsv``,
``rejected.tsv``, ``reports/*.json``) with the page's own stylesheet and data code
(:mod:`bitextforge.serve.data`): the rows in and out of every step as a funnel with its time, each
filter step's score histogram split into kept and rejected with its bounds drawn, the rows nearest
each bound on both sides, originals next to their paraphrases, and the evaluators' numbers as
tables. It is one self-contained file (inline CSS and SVG, no script), so it opens anywhere.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

from ..pipeline.executors import ADDS
from .summary import step_note

SAMPLE_ROWS = 8
# Above this many rows the report reads a seeded random sample of them (histograms and sample rows
# then describe the sample; every count comes from the manifest), so memory stays bounded.
MAX_ROWS = 1_000_000


def write_report(out_dir: Path) -> str:
    """Write ``out_dir/report.html``; return a note instead when the run cannot be read back."""
    from ..io.corpus import write_atomic
    from ..errors import BitextforgeError
    from ..serve.data import load_run

    try:
        data = load_run(out_dir, max_rows=MAX_ROWS)
    except BitextforgeError as exc:
        return f"no report.html: {exc}"
    except ImportError as exc:
        # pyarrow is a core dependency: only a broken install gets here
        return f"no report.html: {exc.name} is missing (reinstall bitextforge, which requires it)"
    write_atomic(Path(out_dir) / "report.html", render_report(data))
    return ""


def render_report(data) -> str:
    """The snapshot page of a loaded run (:class:`bitextforge.serve.data.RunData`) as HTML."""
    e = html.escape
    css = resources.files("bitextforge.serve").joinpath("static", "page.css").read_text("utf-8")
    dec = data.as_run()
    ov = data.overview()
    parts = [
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>bitextforge report: {e(ov['recipe_name'])}</title><style>{css}</style></head><body>",
        f"<header><h1>bitextforge <span>{e(ov['recipe_name'])}</span></h1>"
        f"<div class='mono'>{e(ov['signature'])}</div>"
        "<div class='mono'>read-only snapshot; <code>bitextforge serve "
        f"{e(str(data.run_dir))}</code> moves the thresholds</div></header><main>",
        f"<div class='warn'>histograms and sample rows are drawn from a random sample of "
        f"{data.n:,} rows; every count is the run's</div>" if data.fraction else "",
        "<section id='summary'><h2>Run summary</h2><div class='totals'>",
        _total(ov["input_rows"], "rows in"), _total(ov["output_rows"], "rows out"),
        _total(ov["seconds"], "seconds"), "</div>",
        _funnel(data, dec),
        f"<details><summary>Recipe as run</summary><pre class='mono'>{e(ov['recipe'])}</pre></details>",
        "<details><summary>Manifest</summary><pre class='mono'>"
        f"{e(json.dumps(ov['manifest'], indent=2, ensure_ascii=False))}</pre></details></section>",
    ]
    for st in data.steps:
        if st.decides:
            parts.append(_filter_panel(data, dec, st))
        elif st.makes == ADDS:  # candidates beside their originals
            parts.append(_paraphrase_panel(data, dec, st))
        else:
            # the kind's note says what the step did to its rows (a clean step: the rows it
            # changed, per side), as the terminal's table does
            note = step_note(st.stored) if st.stored.get("kind") else ""
            parts.append(f"<div class='panel'><h3>steps[{st.index}] {st.kind} {e(st.component)}"
                         f"</h3><div class='note'>{_fmt(st.stored.get('rows_in'))} rows in, "
                         f"{_fmt(st.stored.get('rows_out'))} rows out"
                         f"{'; ' + e(note) if note else ''}, "
                         f"{_fmt(st.stored.get('seconds'))} s</div></div>")
    if ov["evaluations"]:
        parts.append("<section id='evaluations'><h2>Evaluators</h2>")
        for name, rep in ov["evaluations"].items():
            parts.append(f"<h3>{e(name)}</h3>")
            if isinstance(rep, dict):
                if rep.get("summary"):
                    parts.append(f"<pre>{e(rep['summary'])}</pre>")
                plots = ov["evaluation_plots"].get(name) or []
                if plots:
                    parts.append("<div class='evalplots'>" + "".join(
                        f"<div><div class='note'>{e(p['key'])} (n {p['n']:,}, mean "
                        f"{_fmt(p['mean'])})</div>"
                        + _histogram_svg({"edges": p["edges"], "kept": p["counts"],
                                          "rejected": [0] * len(p["counts"])}, None, p["key"])
                        + "</div>" for p in plots) + "</div>")
                rows = _flatten(rep.get("numbers") or {})
                if rows:
                    parts.append("<table class='eval'>" + "".join(
                        f"<tr><td>{e(k)}</td><td class='num'>{e(_fmt(v))}</td></tr>"
                        for k, v in rows) + "</table>")
        parts.append("</section>")
    parts.append("</main></body></html>\n")
    return "\n".join(parts)


def _fmt(x: Any) -> str:
    if x is None:
        return "–"
    if isinstance(x, float):
        return f"{x:,.0f}" if x.is_integer() and abs(x) >= 1000 else format(x, ".6g")
    if isinstance(x, int):
        return f"{x:,}"
    return str(x)


def _total(value: Any, label: str) -> str:
    return f"<div><b>{html.escape(_fmt(value))}</b>{html.escape(label)}</div>"


def _funnel(data, dec) -> str:
    top = max([1] + [s["rows_in"] or 0 for s in dec.steps])
    rows = []
    for s in dec.steps:
        st = data.steps[s["index"]]
        out = s["rows_out"] if s["rows_out"] is not None else st.stored.get("rows_out")
        width = 100 * (out if out is not None else s["rows_in"] or 0) / top
        rows.append(f"<tr><td>{html.escape(st.label)}</td><td>{st.kind}</td>"
                    f"<td>{_fmt(s['rows_in'])}</td><td>{_fmt(out)}</td>"
                    f"<td>{_fmt(s.get('rejected'))}</td><td>{_fmt(st.stored.get('seconds'))}</td>"
                    f"<td style='width:30%'><div class='bar' style='width:{width:.1f}%'></div></td></tr>")
    return ("<table class='funnel report-funnel'><thead><tr><th>step</th><th>kind</th>"
            "<th>rows in</th><th>rows out</th><th>rejected</th><th>seconds</th><th></th></tr>"
            "</thead><tbody>" + "".join(rows) + "</tbody></table>")


def _histogram_svg(hist: dict, keep, column: str) -> str:
    """Stacked kept/rejected bars with the bounds as dashed lines, as inline SVG."""
    w, h, left, bottom = 900, 220, 50, 30
    edges, kept, rej = hist["edges"], hist["kept"], hist["rejected"]
    lo, hi = edges[0], edges[-1]
    peak = max([1] + [a + b for a, b in zip(kept, rej)])
    pw, ph = w - left - 10, h - bottom - 10

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * pw

    out = [f"<svg viewBox='0 0 {w} {h}' width='100%' role='img' "
           f"aria-label='histogram of {html.escape(column)}'>"]
    for k in range(len(kept)):
        x0, x1 = x(edges[k]), x(edges[k + 1])
        hk, hr = kept[k] / peak * ph, rej[k] / peak * ph
        base = h - bottom
        if kept[k]:
            out.append(f"<rect x='{x0:.1f}' y='{base - hk:.1f}' width='{max(x1 - x0 - 1, 1):.1f}' "
                       f"height='{hk:.1f}' fill='#3b75af'><title>{kept[k]} kept</title></rect>")
        if rej[k]:
            out.append(f"<rect x='{x0:.1f}' y='{base - hk - hr:.1f}' "
                       f"width='{max(x1 - x0 - 1, 1):.1f}' height='{hr:.1f}' fill='#e07b39'>"
                       f"<title>{rej[k]} rejected</title></rect>")
    out.append(f"<line x1='{left}' x2='{w - 10}' y1='{h - bottom}' y2='{h - bottom}' stroke='#999'/>")
    for k in range(0, len(edges), max(1, len(edges) // 6)):
        out.append(f"<text x='{x(edges[k]):.1f}' y='{h - 12}' text-anchor='middle'>"
                   f"{format(edges[k], '.4g')}</text>")
    out.append(f"<text x='{left - 6}' y='16' text-anchor='end'>{peak}</text>")
    for name in ("min", "max"):
        b = getattr(keep, name, None) if keep else None
        if b is not None and lo <= b <= hi:
            out.append(f"<line x1='{x(b):.1f}' x2='{x(b):.1f}' y1='8' y2='{h - bottom}' "
                       f"stroke='#c0392b' stroke-width='2' stroke-dasharray='6 4'/>"
                       f"<text x='{x(b) + (-4 if x(b) > w * 0.8 else 4):.1f}' y='16' "
                       f"text-anchor='{'end' if x(b) > w * 0.8 else 'start'}' "
                       f"style='fill:#c0392b'>{name} "
                       f"{format(b, 'g')}</text>")
    cut = hist.get("cutoff")
    if cut is not None and lo <= cut <= hi:
        out.append(f"<line x1='{x(cut):.1f}' x2='{x(cut):.1f}' y1='8' y2='{h - bottom}' "
                   f"stroke='#6b4c9a' stroke-width='2' stroke-dasharray='2 3'/>"
                   f"<text x='{x(cut) + 4:.1f}' y='28' style='fill:#6b4c9a'>selection cut "
                   f"{format(cut, '.4g')}</text>")
    out.append("</svg>")
    return "".join(out)


def _rows_table(data, dec, index: int, side: str, column: str) -> str:
    e = html.escape
    page = data.rows(dec, index, side, limit=SAMPLE_ROWS)
    if not page["total"]:
        return f"<p class='note'>no {side} rows</p>"
    body = "".join(
        f"<tr><td class='num'>{r['id']}{'.' + str(r['variant']) if r['variant'] else ''}</td>"
        f"<td class='text'><div class='clip'>{e(r['src'])}</div></td>"
        f"<td class='text'><div class='clip'>{e(r['tgt'])}</div></td>"
        f"<td class='num'>{e(_fmt(r['score']))}</td><td>{e(r['rejected_by'] or 'kept')}</td></tr>"
        for r in page["rows"])
    return (f"<p class='note'>{side}: {len(page['rows'])} of {_fmt(page['total'])} rows, nearest "
            f"the bound first</p><table class='rows'><tr><th>id</th><th>source</th><th>target</th>"
            f"<th>{e(column)}</th><th>decided by</th></tr>{body}</table>")


def _filter_panel(data, dec, st) -> str:
    e = html.escape
    s = dec.steps[st.index]
    hist = data.histogram(dec, st)
    keep = st.keep.model_dump(exclude_none=True) if st.keep else {}
    decision = ", ".join(f"{k}: {v}" for k, v in keep.items())
    notes = []
    if hist["nan"]:
        notes.append(f"{hist['nan']} without a number (NaN fails)")
    return (f"<div class='panel' id='step-{st.index}'><h3>steps[{st.index}] filter "
            f"{e(st.component)} → {e(st.column)}</h3><div class='controls'>"
            f"<span class='mono'>keep {{{e(decision)}}}</span><span class='counts'>in "
            f"{_fmt(s['rows_in'])} · <span class='k'>kept {_fmt(s['rows_out'])}</span> · "
            f"<span class='r'>rejected {_fmt(s['rejected'])}</span></span>"
            f"<span class='note'>{e('; '.join(notes))}</span></div>"
            f"{_histogram_svg(hist, st.keep, st.column)}"
            f"{_rows_table(data, dec, st.index, 'rejected', st.column)}"
            f"{_rows_table(data, dec, st.index, 'kept', st.column)}</div>")


def _paraphrase_panel(data, dec, st) -> str:
    e = html.escape
    groups = data.groups(dec, st.index, limit=5)
    parts = [f"<div class='panel' id='step-{st.index}'><h3>steps[{st.index}] paraphrase "
             f"{e(st.component)} (side {e(st.side or '')})</h3><p class='note'>"
             f"{_fmt(groups['total'])} originals with candidates; the first "
             f"{len(groups['groups'])}</p>"]
    for g in groups["groups"]:
        rows = "".join(f"<tr><td class='num'>{r['variant']}</td><td class='text'>{e(r['src'])}</td>"
                       f"<td class='text'>{e(r['tgt'])}</td><td class='num'>{e(_fmt(r['score']))}"
                       f"</td><td class='num'>{e(_fmt(r['weight']))}</td>"
                       f"<td>{e(r['rejected_by'] or 'kept')}</td></tr>" for r in g["rows"])
        parts.append(f"<div class='group'><div class='orig'>#{g['id']} original {e(g['side'])}: "
                     f"{e(g['original'])}</div><table><tr><th>variant</th><th>source</th>"
                     f"<th>target</th><th>score</th><th>weight</th><th>decided by</th></tr>"
                     f"{rows}</table></div>")
    parts.append("</div>")
    return "".join(parts)


def _flatten(obj: dict, prefix: str = "") -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for k, v in obj.items():
        if isinstance(v, dict):
            out.extend(_flatten(v, f"{prefix}{k}."))
        else:
            out.append((f"{prefix}{k}", ", ".join(map(str, v)) if isinstance(v, list) else v))
    return out
