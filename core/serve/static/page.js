// The page of `bitextforge serve`: renders a run from /api/run and re-decides it through
// /api/decide whenever a bound moves (typed, or dragged on a histogram). All text from the run is
// inserted with textContent, never as HTML.
"use strict";

const state = { keep: {}, overview: null, summary: null, views: {}, axis: "score" };
// the server's log-odds axis (serve/data.py: logit, LOGIT_EPS): probabilities clipped off 0 and 1
const LOGIT_EPS = 1e-7;
const logit = (p) => { const q = Math.min(Math.max(p, LOGIT_EPS), 1 - LOGIT_EPS); return Math.log(q / (1 - q)); };
const sigmoid = (x) => 1 / (1 + Math.exp(-x));
let timer = null;

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === null || v === undefined) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

function fmt(x) {
  if (x === null || x === undefined) return "–";
  if (typeof x === "number" && !Number.isInteger(x)) return Number(x.toPrecision(6)).toString();
  return typeof x === "number" ? x.toLocaleString("en") : String(x);
}

async function api(path, params = {}, init = undefined) {
  const q = new URLSearchParams(params).toString();
  const res = await fetch(path + (q ? "?" + q : ""), init);
  const body = await res.json();
  if (!res.ok) throw new Error(body.error || res.statusText);
  return body;
}

function keepParam() { return JSON.stringify(state.keep); }

async function init() {
  const ov = await api("/api/run");
  state.overview = ov;
  document.getElementById("run-name").textContent = ov.recipe_name;
  document.getElementById("signature").textContent = ov.signature;
  document.getElementById("recipe").textContent = ov.recipe;
  document.getElementById("manifest").textContent = JSON.stringify(ov.manifest, null, 2);
  const warn = document.getElementById("warnings");
  for (const w of ov.warnings) warn.append(el("div", { class: "warn", text: w }));
  const steps = document.getElementById("steps");
  for (const st of ov.steps) {
    // the server says what a step does (its executor's decides / makes), not which kind it is
    if (st.decides) steps.append(filterPanel(st));
    else if (st.makes === "adds") steps.append(paraphrasePanel(st));
    else if (st.changes_text) steps.append(cleanPanel(st));
    else steps.append(otherPanel(st));
  }
  // what a clean step changed does not depend on the bounds: loaded once
  for (const st of ov.steps) if (st.changes_text) await loadChanges(st.index);
  renderEvaluations(ov.evaluations, ov.evaluation_plots || {});
  document.getElementById("save").addEventListener("click", save);
  if (ov.steps.some((st) => st.probability)) {
    // scores in [0, 1] crowd near 1 (or 0): their histograms can be drawn on log-odds
    const box = document.getElementById("axis-logit");
    box.closest("label").hidden = false;
    box.addEventListener("change", () => { state.axis = box.checked ? "logit" : "score"; refresh(); });
  }
  await refresh();
  document.body.dataset.ready = "1";
}

function filterPanel(st) {
  const i = st.index;
  const keep = st.keep || {};
  const view = { side: "rejected", offset: 0, q: "" };
  state.views[i] = view;
  const input = (name) => {
    const box = el("input", { type: "number", step: "any", id: `${name}-${i}`,
                              value: keep[name] ?? "" });
    if (!st.editable) box.disabled = true;
    box.addEventListener("change", () => setKeep(i));
    box.addEventListener("keydown", (e) => { if (e.key === "Enter") setKeep(i); });
    return el("label", {}, name + " ", box);
  };
  const tabs = el("span", { class: "tabs" },
    el("button", { id: `tab-kept-${i}`, text: "kept", onclick: () => { view.side = "kept"; view.offset = 0; loadRows(i); } }),
    el("button", { id: `tab-rejected-${i}`, class: "on", text: "rejected", onclick: () => { view.side = "rejected"; view.offset = 0; loadRows(i); } }));
  const search = el("input", { type: "text", id: `search-${i}`, placeholder: "search text" });
  search.addEventListener("change", () => { view.q = search.value; view.offset = 0; loadRows(i); });
  search.addEventListener("keydown", (e) => { if (e.key === "Enter") { view.q = search.value; view.offset = 0; loadRows(i); } });
  return el("div", { class: "panel", id: `step-${i}` },
    el("h3", { text: `steps[${i}] filter ${st.component} → ${st.column}` +
                     (st.apply_to !== "all" ? ` (${st.apply_to})` : "") }),
    el("div", { class: "controls" }, input("min"), input("max"), input("top"), input("words"),
       el("span", { class: "counts", id: `counts-${i}` }),
       el("span", { class: "note", id: `near-${i}` })),
    st.editable ? "" : el("div", { class: "note", text: "after a weight step: shown as run, not re-decided" }),
    el("div", { class: "plot", id: `plot-${i}` }),
    el("div", { class: "controls" }, tabs, search, el("span", { class: "note", id: `pageinfo-${i}` })),
    el("table", { class: "rows", id: `rows-${i}` }),
    el("div", { class: "pager" },
      el("button", { id: `prev-${i}`, text: "‹ previous", onclick: () => { view.offset = Math.max(0, view.offset - 10); loadRows(i); } }),
      el("button", { id: `next-${i}`, text: "next ›", onclick: () => { view.offset += 10; loadRows(i); } })));
}

function paraphrasePanel(st) {
  const i = st.index;
  const view = { offset: 0, q: "" };
  state.views[i] = view;
  const search = el("input", { type: "text", id: `search-${i}`, placeholder: "search text" });
  search.addEventListener("change", () => { view.q = search.value; view.offset = 0; loadGroups(i); });
  return el("div", { class: "panel", id: `step-${i}` },
    el("h3", { text: `steps[${i}] paraphrase ${st.component} (side ${st.side}) → ${st.column}` }),
    el("div", { class: "controls" }, search, el("span", { class: "note", id: `pageinfo-${i}` })),
    el("div", { id: `groups-${i}` }),
    el("div", { class: "pager" },
      el("button", { text: "‹ previous", onclick: () => { view.offset = Math.max(0, view.offset - 10); loadGroups(i); } }),
      el("button", { text: "next ›", onclick: () => { view.offset += 10; loadGroups(i); } })));
}

function otherPanel(st) {
  return el("div", { class: "panel", id: `step-${st.index}` },
    el("h3", { text: `steps[${st.index}] ${st.kind} ${st.component}` }),
    el("div", { class: "note", text: `as run: ${fmt(st.rows_in)} rows in, ${fmt(st.rows_out)} rows out, ${fmt(st.seconds)} s` +
                (st.info ? "; " + JSON.stringify(st.info) : "") }));
}

function cleanPanel(st) {
  const i = st.index;
  state.views[i] = { offset: 0 };
  const view = state.views[i];
  return el("div", { class: "panel", id: `step-${i}` },
    el("h3", { text: `steps[${i}] clean ${st.component}` }),
    el("div", { class: "controls" }, el("span", { class: "counts", id: `changecounts-${i}` }),
       el("span", { class: "note", id: `pageinfo-${i}` })),
    el("table", { class: "rows changes", id: `changes-${i}` }),
    el("div", { class: "pager" },
      el("button", { id: `prev-${i}`, text: "‹ previous", onclick: () => { view.offset = Math.max(0, view.offset - 10); loadChanges(i); } }),
      el("button", { id: `next-${i}`, text: "next ›", onclick: () => { view.offset += 10; loadChanges(i); } })));
}

// A changed run of characters made visible: spaces, tabs, line breaks and other invisible
// characters are what unicode.v1 and unwrap_quotes.v1 often change
function visible(text) {
  return text.replace(/[\s\p{C}]/gu, (c) => ({ " ": "␣", "\t": "→", "\n": "↵", "\u00a0": "⍽" })[c]
    ?? `⟨U+${c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
}

function marked(runs) {
  const cell = el("div", { class: "clip" });
  for (const [op, text] of runs) {
    if (op === "=") cell.append(text);
    else cell.append(el(op === "-" ? "del" : "ins", { title: text, text: visible(text) }));
  }
  return cell;
}

async function loadChanges(i) {
  const view = state.views[i];
  const st = state.overview.steps[i];
  let res;
  try {
    res = await api("/api/changes", { step: i, offset: view.offset, limit: 10 });
  } catch (err) {
    document.getElementById(`pageinfo-${i}`).replaceChildren(el("span", { class: "warn", text: err.message }));
    return;
  }
  const c = res.counts;
  const counts = document.getElementById(`changecounts-${i}`);
  counts.textContent = `changed ${fmt(c.changed)} of ${fmt(st.rows_in)} rows (src ${fmt(c.changed_src)}, tgt ${fmt(c.changed_tgt)})`;
  counts.dataset.changed = c.changed;
  const info = document.getElementById(`pageinfo-${i}`);
  info.textContent = res.total ? `texts ${res.offset + 1}–${res.offset + res.rows.length} of ` +
    (res.sampled < res.total ? `a sample of ${fmt(res.sampled)} of the ${fmt(res.total)} changed` : `${fmt(res.total)} changed`) +
    " (cleaned.tsv), in stream order" : "no text changed";
  info.dataset.total = res.total;
  document.getElementById(`changes-${i}`).replaceChildren(
    el("tr", {}, ...["id", "side", "before", "after"].map((t) => el("th", { text: t }))),
    ...res.rows.map((r) => el("tr", { "data-id": `${r.id}.${r.variant}.${r.column}` },
      el("td", { class: "num", text: r.variant ? `${r.id}.${r.variant}` : String(r.id) }),
      el("td", { text: r.column }),
      el("td", { class: "text before" }, marked(r.before_marked)),
      el("td", { class: "text after" }, marked(r.after_marked)))));
  document.getElementById(`prev-${i}`).disabled = view.offset === 0;
  document.getElementById(`next-${i}`).disabled = view.offset + res.rows.length >= res.total
    || view.offset + res.rows.length >= res.sampled;
}

function readKeep(i) {
  const out = {};
  for (const name of ["min", "max", "top", "words"]) {
    const v = document.getElementById(`${name}-${i}`).value.trim();
    if (v !== "") out[name] = Number(v);
  }
  const orig = state.overview.steps[i].keep || {};
  if (orig.order) out.order = orig.order;
  if (orig.words_side) out.words_side = orig.words_side;
  return out;
}

function setKeep(i) {
  state.keep[i] = readKeep(i);
  state.editing = i;
  clearTimeout(timer);
  timer = setTimeout(refresh, 60);
}

async function refresh() {
  const status = document.getElementById("save-result");
  let sum;
  try {
    sum = await api("/api/decide", { keep: keepParam(), axis: state.axis });
  } catch (err) {
    status.textContent = "error: " + err.message;
    document.body.dataset.error = err.message;
    if (state.editing !== undefined) {
      const note = document.getElementById(`near-${state.editing}`);
      note.textContent = err.message;
      note.className = "warn";
    }
    return;
  }
  delete document.body.dataset.error;
  state.summary = sum;
  renderTotals(sum);
  renderFunnel(sum);
  for (const st of state.overview.steps) {
    if (st.decides) { renderHist(st, sum); renderCounts(st, sum); state.views[st.index].offset = 0; await loadRows(st.index); }
    else if (st.makes === "adds") await loadGroups(st.index);
  }
  document.body.dataset.decided = String(Number(document.body.dataset.decided || 0) + 1);
}

function renderTotals(sum) {
  const ov = state.overview;
  const box = document.getElementById("totals");
  box.replaceChildren(
    el("div", {}, el("b", { id: "total-in", text: fmt(ov.input_rows ?? sum.rows) }), "rows in"),
    el("div", {}, el("b", { id: "total-kept", text: fmt(sum.kept) }), "kept now"),
    el("div", {}, el("b", { text: fmt(ov.output_rows) }), "rows out as run"),
    el("div", {}, el("b", { id: "total-unscored", text: fmt(sum.unscored) }), "unscored (rerun to decide)"),
    el("div", {}, el("b", { id: "decide-ms", text: fmt(sum.ms) + " ms" }), "to re-decide"));
}

function renderFunnel(sum) {
  const body = document.querySelector("#funnel tbody");
  const max = Math.max(1, ...sum.steps.map((s) => s.rows_in));
  body.replaceChildren(...sum.steps.map((s) => {
    const st = state.overview.steps[s.index];
    const out = s.rows_out;
    return el("tr", { id: `funnel-${s.index}` },
      el("td", { text: st.label }), el("td", { text: st.kind }),
      el("td", { text: fmt(s.rows_in) }),
      el("td", { class: s.changed || (st.rows_out !== null && out !== st.rows_out) ? "changed" : "", text: out === null ? "rerun" : fmt(out) }),
      el("td", { text: fmt(s.rejected) }),
      el("td", { text: fmt(st.rows_out) }),
      el("td", { text: fmt(st.seconds) }),
      el("td", { style: "width:30%" }, el("div", { class: "bar", style: `width:${100 * (out ?? s.rows_in) / max}%` })));
  }));
}

function renderCounts(st, sum) {
  const s = sum.steps[st.index];
  const h = sum.histograms[String(st.index)];
  const c = document.getElementById(`counts-${st.index}`);
  c.replaceChildren(`in ${fmt(s.rows_in)} · `, el("span", { class: "k", text: `kept ${fmt(s.rows_out)}` }),
                    " · ", el("span", { class: "r", text: `rejected ${fmt(s.rejected)}` }));
  c.dataset.in = s.rows_in; c.dataset.kept = s.rows_out; c.dataset.rejected = s.rejected;
  const notes = [];
  if (h.nan) notes.push(`${h.nan} without a number (NaN fails)`);
  if (h.near_bound) notes.push(`${h.near_bound} within rounding of a bound`);
  if (s.unscored) notes.push(`${s.unscored} reach this step unscored`);
  if (s.stale) notes.push(`${st.component} depends on earlier rows, which changed: its stored scores are stale, rerun to decide`);
  const near = document.getElementById(`near-${st.index}`);
  near.textContent = notes.join("; ");
  near.className = s.stale ? "warn" : "note";
}

function renderHist(st, sum) {
  const h = sum.histograms[String(st.index)];
  // on the log-odds axis the edges are log-odds; bounds, cutoff and labels stay scores
  const onLogit = h.axis === "logit";
  const toX = onLogit ? logit : (v) => v;
  const fromX = onLogit ? sigmoid : (v) => v;
  // bins differ in width (finer where the scores are dense): each bar spans its own bin
  const centers = h.edges.slice(0, -1).map((e, k) => (e + h.edges[k + 1]) / 2);
  const width = h.edges.slice(0, -1).map((e, k) => h.edges[k + 1] - e);
  const range = h.edges.slice(0, -1).map((e, k) => `${fmt(fromX(e))} to ${fmt(fromX(h.edges[k + 1]))}`);
  const keep = sum.keep[String(st.index)] || st.keep || {};
  const shapes = [];
  const names = [];
  const values = [];
  for (const b of ["min", "max"]) {
    if (keep[b] === undefined || keep[b] === null) continue;
    names.push(b);
    values.push(keep[b]);
    shapes.push({ type: "line", x0: toX(keep[b]), x1: toX(keep[b]), y0: 0, y1: 1, yref: "paper",
                  line: { color: "#c0392b", width: 3, dash: "dash" }, editable: st.editable });
  }
  if (h.cutoff !== null && h.cutoff !== undefined) {
    // where top/words cut: drawn, not draggable (type top or words instead)
    names.push(null);
    values.push(h.cutoff);
    shapes.push({ type: "line", x0: toX(h.cutoff), x1: toX(h.cutoff), y0: 0, y1: 1, yref: "paper",
                  line: { color: "#6b4c9a", width: 2, dash: "dot" }, editable: false });
  }
  const traces = [
    { type: "bar", name: "kept", x: centers, y: h.kept, width, customdata: range,
      hovertemplate: "%{customdata}: %{y} kept<extra></extra>", marker: { color: "#3b75af" } },
    { type: "bar", name: "rejected", x: centers, y: h.rejected, width, customdata: range,
      hovertemplate: "%{customdata}: %{y} rejected<extra></extra>", marker: { color: "#e07b39" } }];
  const layout = { barmode: "stack", margin: { l: 50, r: 10, t: 28, b: 35 }, shapes,
                   xaxis: onLogit ? logitAxis(st.column, h.edges) : { title: { text: st.column } },
                   yaxis: { title: { text: "rows" } },
                   legend: { orientation: "h", x: 1, xanchor: "right", y: 1.02, yanchor: "bottom" },
                   annotations: names.map((n, k) => ({ x: shapes[k].x0, yref: "paper",
                                                       text: `${n || (keep.top !== undefined ? "top" : "words") + " cut"} ${fmt(values[k])}`,
                                                       showarrow: false, yanchor: "top", y: 0.98, xanchor: "left", xshift: 4,
                                                       bgcolor: "rgba(255,255,255,0.8)", font: { color: n ? "#c0392b" : "#6b4c9a" } })) };
  const div = document.getElementById(`plot-${st.index}`);
  Plotly.react(div, traces, layout, { displaylogo: false, responsive: true, edits: { shapePosition: st.editable } });
  div.dataset.bounds = JSON.stringify(names);
  if (!div.dataset.bound) {
    div.dataset.bound = "1";
    div.on("plotly_relayout", (ev) => {
      const which = JSON.parse(div.dataset.bounds);
      let moved = false;
      for (const [k, v] of Object.entries(ev)) {
        const m = /^shapes\[(\d+)\]\.x0$/.exec(k);
        if (m && which[Number(m[1])]) {
          const score = state.summary.histograms[String(st.index)].axis === "logit" ? sigmoid(v) : v;
          document.getElementById(`${which[Number(m[1])]}-${st.index}`).value = Number(score.toPrecision(6));
          moved = true;
        }
      }
      if (moved) setKeep(st.index);
    });
  }
}

function logitAxis(column, edges) {
  // ticks at readable probabilities (0.5, 0.9, 0.99, ..., and their mirrors) within the range
  const lo = edges[0], hi = edges[edges.length - 1];
  const probs = [0.5];
  for (let k = 1; k <= 7; k++) { probs.push(1 - 10 ** -k, 10 ** -k); }
  const ticks = probs.map(logit).filter((x) => x >= lo && x <= hi).sort((a, b) => a - b);
  return { title: { text: `${column} (log-odds axis)` }, tickvals: ticks,
           ticktext: ticks.map((x) => fmt(Number(sigmoid(x).toPrecision(7)))) };
}

async function loadRows(i) {
  const view = state.views[i];
  const res = await api("/api/rows", { keep: keepParam(), step: i, side: view.side,
                                       q: view.q, offset: view.offset, limit: 10 });
  const st = state.overview.steps[i];
  document.getElementById(`tab-kept-${i}`).className = view.side === "kept" ? "on" : "";
  document.getElementById(`tab-rejected-${i}`).className = view.side === "rejected" ? "on" : "";
  const info = document.getElementById(`pageinfo-${i}`);
  info.textContent = res.total ? `${view.side} rows ${res.offset + 1}–${res.offset + res.rows.length} of ${fmt(res.total)}, nearest the bound first`
                               : `no ${view.side} rows`;
  info.dataset.total = res.total;
  const table = document.getElementById(`rows-${i}`);
  table.replaceChildren(
    el("tr", {}, ...["id", "source", "target", st.column, "decided by"].map((t) => el("th", { text: t }))),
    ...res.rows.map((r) => el("tr", { "data-id": `${r.id}.${r.variant}` },
      el("td", { class: "num", text: r.variant ? `${r.id}.${r.variant}` : String(r.id) }),
      el("td", { class: "text" }, el("div", { class: "clip", title: r.src, text: r.src })),
      el("td", { class: "text" }, el("div", { class: "clip", title: r.tgt, text: r.tgt })),
      el("td", { class: "num", text: fmt(r.score) }),
      el("td", { text: r.rejected_by ? r.rejected_by : (r.unscored ? "kept (unscored later)" : "kept") }))));
  document.getElementById(`prev-${i}`).disabled = view.offset === 0;
  document.getElementById(`next-${i}`).disabled = view.offset + res.rows.length >= res.total;
}

async function loadGroups(i) {
  const view = state.views[i];
  const res = await api("/api/groups", { keep: keepParam(), step: i, q: view.q, offset: view.offset, limit: 10 });
  document.getElementById(`pageinfo-${i}`).textContent = `${fmt(res.total)} originals with candidates`;
  const box = document.getElementById(`groups-${i}`);
  box.replaceChildren(...res.groups.map((g) => el("div", { class: "group" },
    el("div", { class: "orig", text: `#${g.id} original ${g.side}: ${g.original}` }),
    el("table", {}, el("tr", {}, ...["variant", "source", "target", "score", "weight", "decided by"].map((t) => el("th", { text: t }))),
       ...g.rows.map((r) => el("tr", {}, el("td", { class: "num", text: r.variant }),
         el("td", { class: "text", text: r.src }), el("td", { class: "text", text: r.tgt }),
         el("td", { class: "num", text: fmt(r.score) }), el("td", { class: "num", text: fmt(r.weight) }),
         el("td", { text: r.rejected_by || "kept" })))))));
}

function flatten(obj, prefix = "", out = []) {
  for (const [k, v] of Object.entries(obj || {})) {
    if (v && typeof v === "object" && !Array.isArray(v)) flatten(v, prefix + k + ".", out);
    else out.push([prefix + k, Array.isArray(v) ? v.join(", ") : v]);
  }
  return out;
}

function renderEvaluations(evals, plots) {
  const box = document.getElementById("evaluations");
  const names = Object.keys(evals || {});
  if (!names.length) { box.remove(); return; }
  box.append(el("h2", { text: "Evaluators" }));
  for (const name of names) {
    const rep = evals[name];
    box.append(el("h3", { text: name }));
    if (rep.summary) box.append(el("pre", { text: rep.summary }));
    const grid = el("div", { class: "evalplots" });
    for (const p of plots[name] || []) {
      const div = el("div", { class: "evalplot" });
      grid.append(div);
      const centers = p.edges.slice(0, -1).map((e, k) => (e + p.edges[k + 1]) / 2);
      requestAnimationFrame(() => Plotly.newPlot(div, [{ type: "bar", x: centers, y: p.counts, width: p.edges[1] - p.edges[0], marker: { color: "#3b75af" } }],
        { title: { text: `${p.key} (n ${fmt(p.n)}, mean ${fmt(p.mean)})`, font: { size: 12 } }, margin: { l: 40, r: 10, t: 30, b: 25 }, height: 180 },
        { displaylogo: false, responsive: true, staticPlot: true }));
    }
    if (grid.children.length) box.append(grid);
    const rows = flatten(rep.numbers);
    if (rows.length) box.append(el("table", { class: "eval" },
      ...rows.map(([k, v]) => el("tr", {}, el("td", { text: k }), el("td", { class: "num", text: fmt(v) })))));
  }
}

async function save() {
  const out = document.getElementById("save-result");
  const name = document.getElementById("save-name").value.trim();
  try {
    const res = await api("/api/export", {}, { method: "POST", headers: { "Content-Type": "application/json" },
                                              body: JSON.stringify({ name, keep: state.keep }) });
    out.textContent = `saved ${res.path} (${fmt(res.kept)} rows kept); its paths are absolute, so it runs from any directory: ${res.command}`;
    out.dataset.path = res.path;
  } catch (err) {
    out.textContent = "error: " + err.message;
  }
}

init().catch((err) => { document.body.dataset.error = err.message; document.getElementById("warnings").append(el("div", { class: "warn", text: err.message })); });
