// The live view's page: plain JavaScript, no build step. It reads /view/api/* once and
// then follows /view/events (server-sent events); it never writes anything.
"use strict";

const PAGE = 50;
const PALETTE = ["#1c7ed6", "#e8590c", "#2b8a3e", "#ae3ec9", "#f08c00", "#0c8599", "#c2255c", "#5c940d", "#6741d9", "#862e9c"];
const view = { key: null, offset: 0, query: "", source: null, labels: [], refetch: null, rows: new Map() };

const $ = (sel) => document.querySelector(sel);
const el = (tag, attrs, text) => {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const svgEl = (tag, attrs) => {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
};
const fmt = (x, d = 3) => (x === null || x === undefined ? "–" : Number(x).toFixed(d));
const signed = (x) => (x >= 0 ? "+" : "") + Number(x).toFixed(4);
const time = (ms) => (ms ? new Date(ms).toLocaleTimeString() : "–");

// A colour per class label, stable while the page is open: in the order labels are seen.
function colour(label) {
  let i = view.labels.indexOf(label);
  if (i < 0) { view.labels.push(label); i = view.labels.length - 1; }
  return PALETTE[i % PALETTE.length];
}

// ---- streams table ----
function rowCells(tr, r) {
  tr.replaceChildren(
    el("td", { class: "id", title: r.key }, r.key),
    el("td", {}, r.model),
    (() => { const td = el("td"); td.append(el("span", { class: "chip", style: `background:${colour(r.label)}` }, r.label)); return td; })(),
    el("td", { class: "num" }, fmt(r.margin)),
    el("td", { class: "num" }, time(r.at_ms)),
  );
  tr.dataset.key = r.key;
  tr.dataset.kind = r.kind;
  tr.dataset.label = r.label;
  tr.dataset.at = String(r.at_ms);
  tr.classList.toggle("selected", r.key === view.key);
}

async function loadPage() {
  const q = new URLSearchParams({ q: view.query, offset: view.offset, limit: PAGE });
  const res = await fetch(`/view/api/series?${q}`);
  if (!res.ok) return;
  const page = await res.json();
  const body = $("#streams tbody");
  view.rows.clear();
  body.replaceChildren(...page.rows.map((r) => {
    const tr = el("tr");
    rowCells(tr, r);
    view.rows.set(r.key, tr);
    return tr;
  }));
  const last = Math.min(page.offset + page.rows.length, page.matched);
  $("#pageinfo").textContent = `${page.matched ? page.offset + 1 : 0}–${last} of ${page.matched}` + (view.query ? ` (${page.total} in all)` : "");
  $("#prev").disabled = page.offset === 0;
  $("#next").disabled = last >= page.matched;
  if (!view.key) {
    // Nothing chosen yet: the newest series window, so the page explains something at once.
    const first = page.rows.find((r) => r.kind === "window") || page.rows[0];
    if (first) select(first.key);
  }
}

// Refetches the page soon, once however many events ask.
function refetchSoon() {
  if (view.refetch) return;
  view.refetch = setTimeout(() => { view.refetch = null; loadPage(); }, 1000);
}

function onRows(rows) {
  let unseen = false;
  for (const r of rows) {
    const tr = view.rows.get(r.key);
    if (tr) {
      rowCells(tr, r);
      tr.classList.remove("fresh");
      void tr.offsetWidth; // restart the flash
      tr.classList.add("fresh");
    } else {
      unseen = true;
    }
    if (r.key === view.key) pushStrip(r);
  }
  // New series land on the first page (most recently scored first).
  if (unseen && view.offset === 0) refetchSoon();
}

function onSummary(s) {
  const counts = $("#counts");
  counts.replaceChildren(...s.counts.map((c) =>
    el("span", { class: "chip", style: `background:${colour(c.label)}`, "data-label": c.label, title: `model ${c.model}` }, `${c.model}: ${c.label} · ${c.series}`)));
  if (view.rows.size === 0 && s.series > 0) refetchSoon();
  $("#clients").textContent = `${s.series} series · ${s.scored} predictions seen · ${s.clients} page(s) open`;
}

// ---- one series, explained ----
function select(key) {
  view.key = key;
  location.hash = encodeURIComponent(key);
  for (const tr of view.rows.values()) tr.classList.toggle("selected", tr.dataset.key === key);
  $("#explained-title").textContent = key;
  connect();
}

function pushStrip(r) {
  const strip = $("#strip");
  strip.append(el("span", { style: `background:${colour(r.label)}`, title: `${r.label} · margin ${fmt(r.margin)} · ${time(r.at_ms)}`, "data-label": r.label }));
  while (strip.children.length > 40) strip.firstChild.remove();
}

function onSeries(s) {
  if (s.key !== view.key) return;
  $("#strip").replaceChildren();
  if (!s.found) { $("#explained-title").textContent = `${s.key} (not scored yet)`; return; }
  for (const r of s.strip) pushStrip(r);
  if (s.explained) draw(s.explained);
  else $("#explained-title").textContent = `${s.key}: waiting for its next window`;
}

// The height below the series kept for the findings' bars.
const lanes = (findings) => 6 + 11 * findings.length;

// Warm for the positive class, cool for the negative one, as the figure of `explain`.
const side = (v) => (v >= 0 ? "var(--warm)" : "var(--cool)");

function draw(x) {
  if (x.key !== view.key) return;
  const box = $("#explained");
  box.dataset.key = x.key;
  box.dataset.scores = JSON.stringify(x.scores);
  box.dataset.classes = JSON.stringify(x.classes);
  box.dataset.end = String(x.window_end_ms ?? x.emitted_at_ms);
  const lg = x.legend;
  $("#explained-title").textContent = `${x.key}: ${x.label} (${x.model} ${x.version}, window ${time(x.window_start_ms)}–${time(x.window_end_ms)})`;
  const svg = $("#window-svg");
  svg.replaceChildren();
  const W = 640, H = 220, pad = 14, n = x.values.length;
  if (n > 1) {
    const lo = Math.min(...x.values), hi = Math.max(...x.values), span = hi - lo || 1;
    const px = (i) => pad + (i * (W - 2 * pad)) / (n - 1);
    const py = (v) => H - lanes(lg ? lg.findings : []) - pad - ((v - lo) * (H - lanes(lg ? lg.findings : []) - 2 * pad)) / span;
    const line = (a, b) => x.values.slice(a, b + 1).map((v, j) => `${j ? "L" : "M"}${px(a + j).toFixed(1)},${py(v).toFixed(1)}`).join("");
    // Each finding: a faint band over the positions it covers, its match drawn over the
    // series, and a numbered bar in its own lane below (findings often overlap).
    const findings = lg ? lg.findings : [];
    findings.forEach((f, i) => {
      const a = Math.max(0, Math.min(f.start, n - 1)), b = Math.max(a, Math.min(f.end, n - 1));
      svg.append(svgEl("rect", { class: "band", x: px(a).toFixed(1), y: 0, width: Math.max(2, px(b) - px(a)).toFixed(1), height: H - lanes(findings), fill: side(f.value) }));
    });
    svg.append(svgEl("path", { class: "series", d: line(0, n - 1) }));
    findings.forEach((f, i) => {
      const a = Math.max(0, Math.min(f.start, n - 1)), b = Math.max(a, Math.min(f.end, n - 1));
      svg.append(svgEl("path", { class: "finding", d: line(a, b), stroke: side(f.value), "data-index": i + 1 }));
      const y = H - lanes(findings) + 9 + 11 * i;
      svg.append(svgEl("path", { class: "bar", d: `M${px(a).toFixed(1)},${y}H${Math.max(px(a) + 2, px(b)).toFixed(1)}`, stroke: side(f.value) }));
      const t = svgEl("text", { class: "num", x: (px(a) - 4).toFixed(1), y: y + 4, fill: side(f.value), "text-anchor": "end" });
      t.textContent = String(i + 1);
      svg.append(t);
    });
  }
  const legend = $("#legend");
  legend.replaceChildren();
  if (!lg) { legend.append(el("li", {}, "this model kind has no shapelets to draw")); return; }
  const entry = (cls, swatch, text, value) => {
    const li = el("li", { class: cls, "data-value": String(value) });
    li.append(el("span", { class: "swatch", style: `background:${swatch}` }), el("span", {}, text), el("span", { class: "v" }, signed(value)));
    legend.append(li);
  };
  lg.findings.forEach((f, i) => entry("entry finding", side(f.value), `${i + 1}. ${f.text}${f.channel ? ` [${f.channel}]` : ""}`, f.value));
  if (lg.other) entry("entry other", "#bbb", `the rest (${lg.other.hypotheses} hypotheses)`, lg.other.value);
  const bias = el("li", { class: "bias", "data-bias": String(lg.bias) });
  bias.append(el("span", { class: "swatch", style: "background:#eee" }), el("span", {}, "baseline"), el("span", { class: "v" }, signed(lg.bias)));
  legend.append(bias);
  const total = el("li", { class: "total", "data-score": String(lg.score), "data-positive": lg.positive, "data-negative": lg.negative, "data-single": String(lg.single) });
  const share = lg.shown_share === null || lg.shown_share === undefined ? "" : ` · findings carry ${(100 * lg.shown_share).toFixed(0)}%`;
  total.append(el("span", { class: "swatch", style: `background:${colour(x.label)}` }),
    el("span", {}, `score ${lg.positive} vs ${lg.negative}${share}`), el("span", { class: "v" }, signed(lg.score)));
  legend.append(total);
}

// ---- models ----
function onModels(m) {
  const box = $("#models");
  box.replaceChildren(...m.models.map((x) => {
    const d = el("div", { class: "model", "data-model": x.model, "data-version": x.version });
    const title = el("div");
    title.append(el("b", {}, x.model), document.createTextNode(` serves ${x.version}`));
    d.append(title);
    const kv = el("div", { class: "kv" });
    const item = (k, v, cls) => { const s = el("span", {}, `${k} `); s.append(el("b", cls ? { class: cls } : {}, v)); kv.append(s); };
    item("since", time(x.since_ms));
    if (x.from) item("promoted from", x.from);
    item("accuracy", x.accuracy === null ? "–" : `${(100 * x.accuracy).toFixed(1)}%`);
    item("labels", x.labeled === null ? "0" : String(x.labeled));
    const drift = ["stable", "warning", "drift"][x.drift_state] || "–";
    item("errors", drift, x.drift_state === 2 ? "bad" : x.drift_state === 0 ? "good" : "");
    if (x.candidate_held) item("candidate", "held");
    if (x.psi !== null) item("PSI", fmt(x.psi, 2));
    d.append(kv);
    if (x.confusion.length) d.append(confusion(x.confusion));
    return d;
  }));
  const events = $("#events");
  events.replaceChildren(...m.events.map((e) =>
    el("li", { "data-what": e.what, "data-model": e.model, "data-detector": e.detector || "" }, `${time(e.at_ms)} ${e.model}: ${e.what} (${e.detail})`)));
}

function confusion(cells) {
  const labels = [...new Set(cells.flatMap((c) => [c[0], c[1]]))].sort();
  const t = el("table", { class: "confusion" });
  const head = el("tr"); head.append(el("th", {}, "label \\ predicted"), ...labels.map((l) => el("th", {}, l)));
  t.append(head);
  for (const truth of labels) {
    const tr = el("tr"); tr.append(el("th", {}, truth));
    for (const p of labels) {
      const c = cells.find((x) => x[0] === truth && x[1] === p);
      tr.append(el("td", { class: truth === p ? "good" : "" }, c ? String(c[2]) : "0"));
    }
    t.append(tr);
  }
  return t;
}

// ---- pipeline ----
function onPipeline(p) {
  const box = $("#pipeline");
  const kv = el("div", { class: "kv" });
  const item = (k, v, cls) => { const s = el("span", {}, `${k} `); s.append(el("b", cls ? { class: cls } : {}, v)); kv.append(s); };
  item("records/s", fmt(p.records_per_second, 0));
  item("predictions/s", fmt(p.predictions_per_second, 1));
  // A histogram's quantile is known to its bucket: the bucket's upper bound.
  item("p99 consume→durable", p.consume_to_durable_p99_seconds === null ? "–" : `≤ ${p.consume_to_durable_p99_seconds} s`);
  item("live series", String(p.live_series));
  item("partitions", String(p.partitions));
  item("ready", p.ready ? "no" : "yes", p.ready ? "bad" : "good");
  const parts = [kv];
  if (p.ready) parts.push(el("div", { class: "bad" }, p.ready));
  if (p.alive) parts.push(el("div", { class: "bad" }, p.alive));
  const lag = el("table", { id: "lag" });
  lag.append((() => { const tr = el("tr"); tr.append(el("th", {}, "topic"), el("th", {}, "partition"), el("th", {}, "lag")); return tr; })());
  for (const l of p.lag) {
    const tr = el("tr"); tr.append(el("td", {}, l.topic), el("td", {}, l.partition), el("td", { class: "num" }, String(l.lag))); lag.append(tr);
  }
  parts.push(el("h3", {}, "Consumer lag"), lag, el("h3", {}, "Dead letters"));
  const reasons = Object.entries(p.dead_letters);
  parts.push(el("div", {}, reasons.length ? reasons.map(([r, n]) => `${r}: ${n}`).join(" · ") : "none"));
  const latest = el("ul", { id: "dead-latest" });
  for (const d of p.dead_latest || []) latest.append(el("li", {}, `${time(d.at_ms)} ${d.reason} ${d.source}: ${d.detail}`));
  parts.push(latest);
  box.replaceChildren(...parts);
}

// ---- the event stream ----
function connect() {
  if (view.source) view.source.close();
  const q = view.key ? `?series=${encodeURIComponent(view.key)}` : "";
  const src = new EventSource(`/view/events${q}`);
  view.source = src;
  const on = (name, f) => src.addEventListener(name, (e) => f(JSON.parse(e.data)));
  on("summary", onSummary);
  on("rows", onRows);
  on("series", onSeries);
  on("explained", (x) => { draw(x); });
  on("models", onModels);
  on("pipeline", onPipeline);
  src.onopen = () => { $("#conn").className = "conn up"; $("#conn").textContent = "live"; };
  // The browser reconnects by itself (after a restart, or when the server dropped a page
  // that fell behind); the page refetches what it shows once it is back.
  src.onerror = () => { $("#conn").className = "conn down"; $("#conn").textContent = "reconnecting"; refetchSoon(); };
}

$("#search").addEventListener("input", (e) => { view.query = e.target.value; view.offset = 0; refetchSoon(); });
$("#prev").addEventListener("click", () => { view.offset = Math.max(0, view.offset - PAGE); loadPage(); });
$("#next").addEventListener("click", () => { view.offset += PAGE; loadPage(); });
$("#streams tbody").addEventListener("click", (e) => {
  const tr = e.target.closest("tr");
  if (tr && tr.dataset.key) select(tr.dataset.key);
});

if (location.hash.length > 1) view.key = decodeURIComponent(location.hash.slice(1));
if (view.key) select(view.key); else connect();
loadPage();
