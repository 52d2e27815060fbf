// robotmem web console. Every text from the database goes into the page through
// textContent or an attribute value, never as HTML; charts are SVG built here.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const view = document.getElementById("view");

// ---- token (only when the console was started with --token) -----------------
(function takeToken() {
  const q = new URLSearchParams(location.search);
  if (q.has("token")) {
    sessionStorage.setItem("robotmem-token", q.get("token"));
    history.replaceState(null, "", location.pathname + location.hash);
  }
})();

async function api(path, options = {}) {
  const headers = { Accept: "application/json" };
  const token = sessionStorage.getItem("robotmem-token");
  if (token) headers.Authorization = "Bearer " + token;
  if (options.body !== undefined) {
    headers["Content-Type"] = "application/json";
    headers["X-Robotmem-Csrf"] = "1";
  }
  const r = await fetch(path, { method: options.method || "GET", headers, body: options.body === undefined ? undefined : JSON.stringify(options.body) });
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  if (r.status === 401) {
    const t = window.prompt("This console needs its access token:");
    if (t) { sessionStorage.setItem("robotmem-token", t); return api(path, options); }
  }
  if (!r.ok) throw new Error((data && data.error && data.error.message) || ("HTTP " + r.status));
  return data;
}

// ---- DOM helpers: text only ------------------------------------------------------
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "on") for (const [ev, f] of Object.entries(v)) e.addEventListener(ev, f);
    else if (v !== undefined && v !== null && v !== false) e.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}
function svg(tag, attrs, ...children) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) if (c) e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}
function show(...nodes) { view.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined)); }
function fail(e) {
  const box = document.getElementById("error");
  box.textContent = String(e && e.message ? e.message : e);
  box.hidden = false;
  setTimeout(() => { box.hidden = true; }, 6000);
}
const fmt = (x, d = 2) => (typeof x === "number" ? x.toFixed(d) : "");
const go = (hash) => { location.hash = hash; };

// ---- charts ---------------------------------------------------------------------
function bars(pairs, id) {
  const w = 360, rowH = 18, h = Math.max(rowH, pairs.length * rowH);
  const max = Math.max(1, ...pairs.map((p) => p[1]));
  const g = svg("svg", { width: "100%", viewBox: `0 0 ${w} ${h}`, role: "img", id });
  pairs.forEach(([label, n], i) => {
    const y = i * rowH;
    g.appendChild(svg("text", { x: 0, y: y + 13 }, label));
    g.appendChild(svg("rect", { class: "bar", x: 130, y: y + 3, height: 12, width: Math.max(1, (n / max) * (w - 180)) }));
    g.appendChild(svg("text", { x: 134 + (n / max) * (w - 180), y: y + 13 }, String(n)));
  });
  return g;
}
// Success and failure counts per name as stacked bars ({name, success, failure}).
function outcomeBars(rows, id) {
  const w = 600, rowH = 22, h = Math.max(rowH, rows.length * rowH), x0 = 130, span = w - x0 - 80;
  const max = Math.max(1, ...rows.map((r) => r.success + r.failure));
  const g = svg("svg", { width: "100%", viewBox: `0 0 ${w} ${h}`, role: "img", id });
  rows.forEach((r, i) => {
    const y = i * rowH, sw = (r.success / max) * span, fw = (r.failure / max) * span;
    g.append(svg("text", { x: x0 - 6, y: y + 14, "text-anchor": "end" }, r.name.length > 18 ? r.name.slice(0, 17) + "…" : r.name),
      svg("rect", { class: "bar ok", x: x0, y: y + 4, height: 12, width: sw }, svg("title", {}, `${r.name}: ${r.success} succeeded`)),
      svg("rect", { class: "bar fail", x: x0 + sw, y: y + 4, height: 12, width: fw }, svg("title", {}, `${r.name}: ${r.failure} failed`)),
      svg("text", { x: x0 + sw + fw + 5, y: y + 14 }, `${r.failure} ✗ / ${r.success + r.failure}`));
  });
  return g;
}
// Round ticks covering [lo, hi]: {values, step, lo, hi} (lo/hi widened to ticks).
function ticks(lo, hi, n = 5, integer = false) {
  if (!(hi > lo)) { lo = lo - (Math.abs(lo) || 1) / 2; hi = lo + (Math.abs(lo) || 1); }
  const raw = (hi - lo) / n, mag = 10 ** Math.floor(Math.log10(raw));
  let step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((x) => x >= raw);
  if (integer) step = Math.max(1, Math.round(step));
  const a = Math.floor(lo / step + 1e-9) * step, b = Math.ceil(hi / step - 1e-9) * step, values = [];
  for (let v = a; v <= b + step / 2; v += step) values.push(+v.toPrecision(12));
  return { values, step, lo: a, hi: b };
}
const tickText = (v, step) => (step >= 1 ? String(Math.round(v)) : v.toFixed(Math.min(6, Math.ceil(-Math.log10(step) - 1e-9))));
const day = (d) => new Date(d * 864e5).toISOString().slice(0, 10);
// An SVG chart frame: y grid and ticks, x ticks ([value, label]), axis titles; scales back.
function frame(o) {
  const { W, H, M } = o, g = svg("svg", { width: "100%", viewBox: `0 0 ${W} ${H}`, role: "img", class: o.cls, id: o.id, preserveAspectRatio: "xMinYMin meet" });
  const sx = (v) => M.l + (o.x[1] === o.x[0] ? 0.5 : (v - o.x[0]) / (o.x[1] - o.x[0])) * (W - M.l - M.r);
  const sy = (v) => H - M.b - ((v - o.y.lo) / (o.y.hi - o.y.lo)) * (H - M.t - M.b);
  const ya = svg("g", { class: "axis y-axis" }), xa = svg("g", { class: "axis x-axis" });
  for (const v of o.y.values) {
    ya.append(svg("line", { class: "grid", x1: M.l, x2: W - M.r, y1: sy(v), y2: sy(v) }),
      svg("text", { x: M.l - 6, y: sy(v) + 4, "text-anchor": "end" }, tickText(v, o.y.step)));
  }
  ya.append(svg("line", { class: "axis-line", x1: M.l, x2: M.l, y1: M.t, y2: H - M.b }),
    svg("text", { class: "axis-title", x: M.l, y: M.t - 8 }, o.ylabel));
  xa.append(svg("line", { class: "axis-line", x1: M.l, x2: W - M.r, y1: H - M.b, y2: H - M.b }));
  for (const [v, label] of o.xticks) {
    xa.append(svg("line", { class: "axis-line", x1: sx(v), x2: sx(v), y1: H - M.b, y2: H - M.b + 4 }),
      svg("text", { x: sx(v), y: H - M.b + 16, "text-anchor": "middle" }, label));
  }
  xa.append(svg("text", { class: "axis-title", x: W - M.r, y: H - 4, "text-anchor": "end" }, o.xlabel));
  g.append(ya, xa);
  return { g, sx, sy };
}
// Memories learned over the whole range: {end_day, bin_days, counts (oldest first, null unknown), exact}.
function learnedChart(l, id) {
  const n = l.counts.length, w = l.bin_days, first = l.end_day - n * w + 1;
  const known = l.counts.filter((c) => c !== null);
  const y = ticks(0, Math.max(1, ...known), 4, true);
  const xt = ticks(0, n, Math.min(6, Math.max(1, n)), true).values.filter((i) => i < n).map((i) => [first + i * w, day(first + i * w)]);
  const f = frame({ W: 1200, H: 210, M: { l: 48, r: 16, t: 22, b: 36 }, id, x: [first, l.end_day + 1], y, xticks: xt,
    ylabel: w === 1 ? "memories per day" : `memories per ${w} days`, xlabel: n ? `${day(first)} – ${day(l.end_day)} (UTC)` : "no memories" });
  f.g.setAttribute("data-first-day", n ? day(first) : ""); f.g.setAttribute("data-last-day", day(l.end_day));
  l.counts.forEach((c, i) => {
    if (c === null) return;
    const x0 = f.sx(first + i * w), x1 = f.sx(first + (i + 1) * w);
    f.g.append(svg("rect", { class: "bar", x: x0 + 0.5, y: f.sy(c), width: Math.max(1, x1 - x0 - 1), height: f.sy(0) - f.sy(c) },
      svg("title", {}, `${day(first + i * w)}${w > 1 ? " – " + day(first + (i + 1) * w - 1) : ""}: ${c}`)));
  });
  return f.g;
}
// Numeric series found in perception data: {name: [numbers]}, [numbers], or [[x, y, z], ...].
function seriesOf(data) {
  const out = [];
  const isNums = (a) => Array.isArray(a) && a.length > 1 && a.every((x) => typeof x === "number" && isFinite(x));
  const add = (name, a) => {
    if (isNums(a)) out.push([name, a]);
    else if (Array.isArray(a) && a.length > 1 && a.every((r) => isNums(r) && r.length === a[0].length && r.length <= 12)) {
      for (let k = 0; k < a[0].length; k++) out.push([`${name}[${k}]`, a.map((r) => r[k])]);
    }
  };
  if (Array.isArray(data)) add("data", data);
  else if (data && typeof data === "object") for (const [k, v] of Object.entries(data)) {
    add(k, v);
    if (v && typeof v === "object" && !Array.isArray(v)) for (const [k2, v2] of Object.entries(v)) add(`${k}.${k2}`, v2);
  }
  return out.slice(0, 13);
}
const TIME_KEYS = ["t", "time", "timestamp", "stamp", "times", "timestamps"];
// A series' unit from metadata `units`: one string for all, or {series: unit} (torque[0] finds torque).
function unitOf(meta, name) {
  const u = meta && meta.units;
  if (typeof u === "string") return u;
  if (!u || typeof u !== "object") return "";
  for (const k of [name, name.replace(/\[\d+\]$/, ""), name.split(".").pop()]) if (typeof u[k] === "string") return u[k];
  return "";
}
// One small multiple per series, sharing the x-axis (the time series when there is one).
function plot(data, metaText) {
  let meta = null;
  try { meta = JSON.parse(metaText || "null"); } catch (_) { meta = null; }
  const series = seriesOf(data), ti = series.findIndex(([n]) => TIME_KEYS.includes(n.split(".").pop().toLowerCase()));
  const time = ti >= 0 ? series.splice(ti, 1)[0] : null;
  const colors = ["#2f6fdd", "#c0392b", "#1e8449", "#8e44ad", "#d68910", "#117a65"];
  const tUnit = time && typeof meta?.units === "object" ? unitOf(meta, time[0]) : "";
  const xlabel = time ? `${time[0]}${tUnit ? ` (${tUnit})` : ""}` : "sample";
  return el("div", { class: "plots" }, series.slice(0, 12).map(([name, ys], si) => {
    const xs = time && time[1].length === ys.length ? time[1] : ys.map((_, i) => i);
    const timed = xs === time?.[1], xlab = timed ? xlabel : "sample";
    const at = (x) => (timed ? `${time[0]} = ${+x.toPrecision(6)}${tUnit ? " " + tUnit : ""}` : `sample ${x}`);
    const xt = ticks(Math.min(...xs), Math.max(...xs), 8), y = ticks(Math.min(...ys), Math.max(...ys), 3);
    const unit = unitOf(meta, name);
    const f = frame({ W: 1000, H: 150, M: { l: 64, r: 16, t: 22, b: 34 }, cls: "perception-plot", x: [xt.lo, xt.hi], y,
      xticks: xt.values.map((v) => [v, tickText(v, xt.step)]), ylabel: `${name}${unit ? ` (${unit})` : ""}`, xlabel: xlab });
    f.g.setAttribute("data-series", name);
    const c = colors[si % colors.length], pts = ys.map((v, i) => `${f.sx(xs[i]).toFixed(1)},${f.sy(v).toFixed(1)}`).join(" ");
    f.g.append(svg("polyline", { class: "series", points: pts, stroke: c }));
    const step = Math.ceil(ys.length / 250);
    for (let i = 0; i < ys.length; i += step) {
      f.g.append(svg("circle", { class: "pt", cx: f.sx(xs[i]), cy: f.sy(ys[i]), r: 4, stroke: c },
        svg("title", {}, `${at(xs[i])}, ${name} = ${+ys[i].toPrecision(6)}${unit ? " " + unit : ""}`)));
    }
    return f.g;
  }));
}

// What a memory's (or session's) context says: robot, task, success (true/false/undefined).
function outcome(context) {
  let c = context;
  if (typeof c === "string") { try { c = JSON.parse(c); } catch (_) { c = null; } }
  if (!c || typeof c !== "object") return {};
  const name = (v, k) => (typeof v === "string" ? v : v && typeof v === "object" && typeof v[k] === "string" ? v[k] : undefined);
  const t = c.task && typeof c.task === "object" ? c.task : {};
  return { robot: name(c.robot, "id"), task: name(c.task, "name"), success: typeof t.success === "boolean" ? t.success : undefined };
}
const outcomeCell = (o) => (o.success === undefined ? el("td", { class: "outcome muted" }, "–")
  : el("td", { class: "outcome" }, el("span", { class: o.success ? "pill ok" : "pill bad" }, o.success ? "✓ success" : "✗ failure")));
const when = (s) => (s || "").replace("T", " ").slice(0, 16);

// ---- views ------------------------------------------------------------------------
function memoryRow(m, extra, asOf) {
  const o = outcome(m.context);
  const to = asOf ? `#/memory/${m.id}?as_of=${encodeURIComponent(asOf)}` : `#/memory/${m.id}`;
  return el("tr", { class: "row" + (o.success === false ? " failed" : ""), "data-id": m.id, on: { click: () => go(to) } },
    el("td", { class: "id" }, "#" + m.id),
    el("td", { class: "content" }, m.content),
    outcomeCell(o), el("td", { class: "robot" }, o.robot || ""), el("td", { class: "task" }, o.task || ""),
    el("td", { class: "kind" }, el("span", { class: "pill" }, m.type), el("span", { class: "pill" }, m.category), m.status !== "active" ? el("span", { class: "pill bad" }, m.status) : null),
    el("td", { class: "num" }, fmt(m.confidence)),
    el("td", { class: "muted" }, m.collection),
    el("td", { class: "muted nowrap" }, when(m.created_at)),
    extra || null);
}
function memoryTable(list, extraHead, extra, asOf) {
  return el("table", { class: "memories" },
    el("thead", {}, el("tr", {}, ["id", "memory", "outcome", "robot", "task", "kind", "conf.", "collection", "learned"].map((h) => el("th", {}, h)), extraHead ? el("th", {}, extraHead) : null)),
    el("tbody", {}, list.map((m, i) => memoryRow(m, extra ? extra(m, i) : null, asOf))));
}
// The banner of a page that shows the memory as it was at a past time.
function asOfBanner(t, now) {
  return t ? el("p", { class: "as-of", id: "as-of-banner" }, `As of ${t.replace("T", " ").replace("Z", "")} UTC: the memory as this robot had it then (what it had learned and believed). `,
    el("a", { href: now }, "show now")) : null;
}

async function dashboard() {
  const [s, failures] = await Promise.all([api("/api/stats"), api("/api/recent-failures")]);
  const card = (id, n, label) => el("div", { class: "card" }, el("div", { class: "num", id }, String(n)), el("div", { class: "label" }, label));
  const pairs = (o) => Object.entries(o).sort((a, b) => b[1] - a[1]);
  const zero = s.recalls ? (100 * s.zero_hit_recalls / s.recalls).toFixed(1) + " %" : "–";
  show(
    el("h2", {}, "Dashboard"),
    el("div", { class: "cards" },
      card("total-memories", s.memories, "memories"), card("active-memories", s.active, "active"),
      card("forgotten-memories", s.forgotten, "forgotten"), card("superseded-memories", s.superseded, "superseded"),
      card("total-sessions", s.sessions, "sessions"), card("zero-hit", zero, "recalls that found nothing"),
      card("db-size", (s.db_bytes / 1048576).toFixed(1) + " MiB", "database file")),
    el("div", { class: "grid2" },
      el("div", { class: "panel" }, el("h3", {}, "Categories (active)"), bars(pairs(s.by_category), "chart-categories")),
      el("div", { class: "panel" }, el("h3", {}, "Types (active)"), bars(pairs(s.by_type).concat(pairs(s.by_perception).map(([k, n]) => ["perception: " + k, n])), "chart-types")),
      el("div", { class: "panel" }, el("h3", {}, "Collections"),
        el("table", { id: "collections" }, el("tbody", {}, s.collections.map((c) => el("tr", {}, el("td", {}, c.collection), el("td", {}, `${c.active} active`), el("td", { class: "muted" }, `${c.total} total`))))))),
    el("div", { class: "panel wide" }, el("h3", {}, `Learned over time${s.learned.bin_days > 1 ? ` (bins of ${s.learned.bin_days} days)` : ""}`), learnedChart(s.learned, "chart-days"),
      s.learned.exact ? null : el("p", { class: "muted" }, "Older bins not counted: a window holds more than 10,000 memories.")),
    el("div", { class: "grid2" },
      el("div", { class: "panel" }, el("h3", {}, "Outcomes per task (task.success in context)"), outcomeRows(s.outcomes.by_task, "chart-outcomes-task")),
      el("div", { class: "panel" }, el("h3", {}, "Outcomes per robot"), outcomeRows(s.outcomes.by_robot, "chart-outcomes-robot"))),
    el("p", { class: "muted" }, `Outcomes from the newest ${s.outcomes.memories_read} memories; green succeeded, red failed.`),
    el("div", { class: "panel wide", id: "recent-failures" }, el("h3", {}, "Recent failures"),
      failures.memories.length ? memoryTable(failures.memories) : el("p", { class: "muted" }, "none")),
    purgePanel());
}

// Hard-deletes what was forgotten, superseded or expired at least that many days ago, and gives the space back.
function purgePanel() {
  const days = el("input", { id: "purge-days", type: "number", min: "0", step: "any", value: "30", size: 6 });
  const done = el("p", { id: "purge-result", class: "muted" });
  return el("div", { class: "panel wide" }, el("h3", {}, "Purge"),
    el("label", {}, "remove forgotten, superseded and expired memories older than (days; they are out of recall already)", days),
    el("button", { id: "purge-button", class: "danger", on: { click: async () => {
      const d = Number(days.value);
      if (!days.value.trim() || !(d >= 0)) return fail("give the age in days (0 or more)");
      try {
        const r = await api("/api/purge", { method: "POST", body: { older_than_seconds: d * 86400 } });
        done.textContent = `purged ${r.purged} ${r.purged === 1 ? "memory" : "memories"}; ${(r.reclaimed_bytes / 1048576).toFixed(1)} MiB given back`;
      } catch (e) { fail(e); } } } }, "Purge"), done);
}
function outcomeRows(rows, id) {
  return rows.length ? outcomeBars(rows, id) : el("p", { class: "muted", id }, "no memory says task.success");
}

function filterForm(q, onSubmit) {
  const input = (name, label, attrs) => el("label", {}, label, el("input", { name, value: q.get(name) || "", ...attrs }));
  const select = (name, label, opts) => el("label", {}, label, el("select", { name }, opts.map((o) => el("option", { value: o, selected: (q.get(name) || opts[0]) === o }, o || "any"))));
  const f = el("form", { class: "filters", id: "filters" },
    input("collection", "collection", { size: 10 }), select("type", "type", ["", "fact", "perception"]),
    input("category", "category", { size: 10 }), select("status", "status", ["active", "superseded", "forgotten", "all"]),
    input("min_confidence", "min confidence", { size: 4 }), input("days", "last days", { size: 4 }),
    input("session", "session", { size: 12 }),
    input("as_of", "as of (UTC time)", { size: 22, placeholder: "2026-11-20T14:03:00Z", id: "list-as-of" }), el("button", { type: "submit" }, "Filter"));
  f.addEventListener("submit", (e) => { e.preventDefault(); onSubmit(new URLSearchParams([...new FormData(f)].filter(([, v]) => v !== ""))); });
  return f;
}
function pager(page, pages, total, to, exact = true, noun = "memories") {
  const more = exact ? "" : "+";
  return el("div", { class: "pager" },
    el("button", { id: "prev-page", disabled: page <= 1, on: { click: () => to(page - 1) } }, "‹ previous"),
    el("span", { id: "page-info" }, `page ${page} of ${pages}${more} · ${total}${more} ${noun}`),
    el("button", { id: "next-page", disabled: page >= pages && exact, on: { click: () => to(page + 1) } }, "next ›"));
}

async function memories(q) {
  const page = Number(q.get("page") || 1);
  const p = await api("/api/memories?" + q.toString());
  const pages = Math.max(1, Math.ceil(p.total / p.per_page));
  const to = (n) => { q.set("page", String(n)); go("#/memories?" + q.toString()); };
  const now = new URLSearchParams(q); now.delete("as_of");
  show(el("h2", {}, "Memories"), asOfBanner(p.as_of, "#/memories?" + now.toString()), filterForm(q, (nq) => go("#/memories?" + nq.toString())),
    memoryTable(p.memories, null, null, p.as_of), pager(page, pages, p.total, to, p.total_exact));
}

async function search(q) {
  // A person reads this page: repeats of one event are grouped unless asked
  // otherwise (the API's own default is off, as in the library).
  const group = q.get("group_similar") !== "false";
  if (q.get("q") && !q.has("group_similar")) q.set("group_similar", "true");
  const cols = (await api("/api/collections")).collections.map((c) => c.collection);
  const chosen = q.get("collection") || "";
  if (chosen && !cols.includes(chosen)) cols.push(chosen);
  const form = el("form", { class: "filters", id: "search-form" },
    el("label", {}, "query", el("input", { id: "search-input", name: "q", value: q.get("q") || "", size: 40, autofocus: true })),
    el("label", {}, "collection", el("select", { id: "search-collection", name: "collection" },
      el("option", { value: "", selected: !chosen }, "(default)"), cols.map((c) => el("option", { value: c, selected: c === chosen }, c)))),
    el("label", {}, "session", el("input", { id: "search-session", name: "session", value: q.get("session") || "", size: 14, placeholder: "session id" })),
    el("label", {}, "n", el("input", { name: "n", value: q.get("n") || "", placeholder: "5", size: 3 })),
    el("label", {}, "context filter (JSON)", el("input", { name: "filter", value: q.get("filter") || "", size: 24, placeholder: '{"task.success": true}' })),
    el("label", {}, "spatial sort (JSON)", el("input", { name: "spatial", value: q.get("spatial") || "", size: 24 })),
    el("label", {}, "as of (UTC time)", el("input", { id: "search-as-of", name: "as_of", value: q.get("as_of") || "", size: 22, placeholder: "2026-11-20T14:03:00Z" })),
    el("label", {}, "repeats", el("select", { id: "search-group", name: "group_similar" },
      el("option", { value: "true", selected: group }, "group"), el("option", { value: "false", selected: !group }, "show each"))),
    el("button", { id: "search-button", type: "submit" }, "Search"));
  form.addEventListener("submit", (e) => { e.preventDefault(); go("#/search?" + new URLSearchParams([...new FormData(form)].filter(([, v]) => v !== "")).toString()); });
  if (!q.get("q")) return show(el("h2", {}, "Search"), form);
  const r = await api("/api/search?" + q.toString());
  const why = (m) => el("td", { class: "muted" },
    `score ${fmt(m._rrf_score, 3)}`, m._lexical !== undefined ? ` · bm25 ${fmt(m._lexical)}` : "", m._cosine !== undefined ? ` · cos ${fmt(m._cosine)}` : "",
    m._distance !== undefined ? ` · dist ${m._distance === null ? "–" : fmt(m._distance, 3)}` : "", m._matched === false ? " · filter only" : "",
    m._similar ? el("div", { class: "similar" }, `+ ${m._similar.length} similar: `,
      m._similar.slice(0, 12).flatMap((id) => [el("a", { href: `#/memory/${id}`, on: { click: (e) => e.stopPropagation() } }, `#${id}`), " "]), m._similar.length > 12 ? "…" : "") : null);
  const now = new URLSearchParams(q); now.delete("as_of");
  show(el("h2", {}, "Search"), asOfBanner(r.as_of, "#/search?" + now.toString()), form,
    el("p", { class: "summary" }, el("strong", { id: "search-count" }, count(r)),
      el("span", { id: "search-mode", class: "muted" }, `${grouped(r) ? ` · the rows stand for ${grouped(r)} memories (repeats grouped)` : ""} · mode ${r.mode} · query vector ${r.query_vector} · ${fmt(r.query_ms)} ms`)),
    (r.warnings || []).map((w) => el("p", { class: "warning search-warning" }, w)),
    memoryTable(r.memories, "why", why, r.as_of));
}

// "5 of 37 matches": results shown of the memories that match the query (a floor when not exact).
function count(r) {
  const of = `${r.matches_exact ? "" : "≥ "}${r.matches} ${r.matches === 1 ? "match" : "matches"}`;
  return r.matches >= r.total ? `${r.total} of ${of}` : `${r.total} ${r.total === 1 ? "result" : "results"}, ${of} (the others satisfy only the filters)`;
}
// How many memories a grouped result stands for; 0 when nothing was grouped.
function grouped(r) {
  const folded = r.memories.reduce((n, m) => n + (m._similar ? m._similar.length : 0), 0);
  return folded ? r.memories.length + folded : 0;
}

async function detail(id, q = new URLSearchParams()) {
  const asOf = q.get("as_of") || "";
  const [m, h] = await Promise.all([api(`/api/memory/${encodeURIComponent(id)}${asOf ? "?as_of=" + encodeURIComponent(asOf) : ""}`),
    api(`/api/memory/${encodeURIComponent(id)}/history`)]);
  let ctx = m.context;
  try { ctx = JSON.stringify(JSON.parse(m.context), null, 2); } catch (_) { /* free text */ }
  const parts = [
    el("h2", {}, `Memory #${m.id}`), asOfBanner(m.as_of, `#/memory/${m.id}`),
    el("div", { class: "panel" },
      el("p", { id: "detail-content", class: "content" }, m.content),
      el("p", {}, el("span", { class: "pill", id: "memory-status" }, m.status), m.expired ? el("span", { class: "pill expired", id: "memory-expired" }, "expired") : null,
        el("span", { class: "pill" }, m.type), el("span", { class: "pill" }, m.category),
        ` confidence ${fmt(m.confidence)} · collection `, m.collection, m.session_id ? el("span", {}, " · session ", el("a", { href: `#/session/${encodeURIComponent(m.session_id)}` }, m.session_id)) : null),
      el("p", { class: "muted" }, `learned ${m.created_at} · updated ${m.updated_at} · recalled ${m.access_count} times`, m.superseded_by ? ` · superseded by #${m.superseded_by}` : "",
        m.expires_at ? ` · ${m.expired ? "expired" : "expires"} ${m.expires_at}` : ""),
      el("p", { id: "detail-tags" }, (m.tags || []).map((t) => el("span", { class: "pill" }, t)))),
    el("h3", {}, "Context"), el("pre", { id: "detail-context" }, ctx),
    historyPanel(m.id, h.versions, m.as_of),
  ];
  if (m.perception_type) {
    parts.push(el("h3", {}, `Perception: ${m.perception_type}`));
    const series = seriesOf(m.perception_data);
    if (series.length) parts.push(el("div", { class: "panel wide", id: "perception-plots" }, plot(m.perception_data, m.perception_metadata)));
    else if (m.perception_data !== undefined) parts.push(el("pre", {}, JSON.stringify(m.perception_data, null, 2).slice(0, 20000)));
    if (m.perception_metadata) parts.push(el("pre", {}, m.perception_metadata));
  }
  if (m.status === "active" && !m.as_of) {
    const content = el("textarea", { id: "edit-content" }, m.content);
    const context = el("textarea", { id: "edit-context" }, ctx);
    const reason = el("input", { id: "forget-reason", placeholder: "why (e.g. miscalibrated sensor)", size: 40 });
    parts.push(el("div", { class: "grid2" },
      el("div", { class: "panel" }, el("h3", {}, "Edit"), content, el("label", {}, "context (JSON object)", context),
        el("button", { id: "save-button", on: { click: async () => {
          try {
            let c = context.value.trim(); let body = { content: content.value };
            if (c) { try { body.context = JSON.parse(c); } catch (_) { return fail("context is not valid JSON"); } }
            await api(`/api/memory/${m.id}`, { method: "PUT", body }); detail(m.id);
          } catch (e) { fail(e); } } } }, "Save")),
      el("div", { class: "panel" }, el("h3", {}, "Forget"), reason, " ",
        el("button", { id: "forget-button", class: "danger", on: { click: async () => {
          if (!reason.value.trim()) return fail("give a reason to forget this memory");
          try { await api(`/api/memory/${m.id}`, { method: "DELETE", body: { reason: reason.value } }); detail(m.id); } catch (e) { fail(e); } } } }, "Forget")),
      expiryPanel(m)));
  }
  show(parts);
}

// A memory's versions, oldest first: from when to when, what made each, what it said.
// Each start time opens the memory as it was then; the version shown is marked.
// Times to the millisecond: several changes often fall in one minute.
function historyPanel(id, versions, asOf) {
  const at = (t) => t.replace("T", " ").replace("Z", "");
  const shown = (v) => (asOf ? v.valid_from <= asOf && (!v.valid_to || asOf < v.valid_to) : !v.valid_to);
  const cause = (v) => [v.cause, v.cause_writer ? `by robot ${v.cause_writer}` : ""].filter(Boolean).join(" ");
  return el("div", { class: "panel history", id: "history" },
    el("h3", {}, `History: ${versions.length} version${versions.length === 1 ? "" : "s"}`),
    el("table", { class: "versions" },
      el("thead", {}, el("tr", {}, ["from", "until", "change", "state", "category", "what it said"].map((x) => el("th", {}, x)))),
      el("tbody", {}, versions.map((v) => el("tr", { class: "version" + (shown(v) ? " shown" : "") },
        el("td", { class: "nowrap" }, el("a", { href: `#/memory/${id}?as_of=${encodeURIComponent(v.valid_from)}` }, at(v.valid_from))),
        el("td", { class: "nowrap muted" }, v.valid_to ? at(v.valid_to) : "now"),
        el("td", { class: "cause" }, el("span", { class: "pill" }, cause(v))),
        el("td", {}, el("span", { class: v.status === "active" ? "pill" : "pill bad" }, v.status),
          v.invalidated_reason ? el("div", { class: "muted" }, "why: ", v.invalidated_reason) : null,
          v.expires_at ? el("div", { class: "muted" }, `expires ${when(v.expires_at)}`) : null,
          v.superseded_by ? el("div", { class: "muted" }, "by ", el("a", { href: `#/memory/${v.superseded_by}` }, `#${v.superseded_by}`)) : null),
        el("td", { class: "muted" }, v.category),
        el("td", { class: "content" }, v.content))))));
}

// Sets when a memory expires (it then leaves recall, listings and dedup), or that it never does.
function expiryPanel(m) {
  const hours = el("input", { id: "expiry-hours", type: "number", min: "0", step: "any", placeholder: "e.g. 24", size: 8 });
  const put = async (body) => {
    try { await api(`/api/memory/${m.id}/expiry`, { method: "PUT", body }); detail(m.id); } catch (e) { fail(e); }
  };
  return el("div", { class: "panel" }, el("h3", {}, "Expiry"),
    el("p", { id: "expiry-now", class: "muted" }, m.expires_at ? `${m.expired ? "expired" : "expires"} ${m.expires_at}` : "never expires"),
    el("label", {}, "expires in (hours from now; it then leaves recall and listings)", hours),
    el("button", { id: "expiry-button", on: { click: () => {
      if (!hours.value.trim()) return fail("give the hours until this memory expires");
      return put({ ttl_seconds: Number(hours.value) * 3600 });
    } } }, "Set expiry"), " ",
    m.expires_at ? el("button", { id: "expiry-clear", on: { click: () => put({}) } }, "Never expire") : null);
}

// A session's title from its context and record: robot · task — collection · time span · outcome.
function sessionTitle(s) {
  const o = outcome(s.context), who = [o.robot, o.task].filter(Boolean).join(" · ");
  const end = s.ended_at ? (s.ended_at.slice(0, 10) === s.created_at.slice(0, 10) ? when(s.ended_at).slice(11) : when(s.ended_at)) : "running";
  return `${who ? who + " — " : ""}${s.collection} · ${when(s.created_at)}${end === when(s.created_at).slice(11) ? "" : "–" + end}${s.outcome_score === null ? "" : ` · outcome ${fmt(s.outcome_score)}`}`;
}

async function sessions(q) {
  const page = Number(q.get("page") || 1);
  const p = await api(`/api/sessions?page=${page}`);
  const pages = Math.max(1, Math.ceil(p.total / p.per_page));
  show(el("h2", {}, "Sessions"),
    el("table", { id: "sessions" }, el("thead", {}, el("tr", {}, ["session", "robot", "task", "status", "memories", "outcome", "started", "ended"].map((h) => el("th", {}, h)))),
      el("tbody", {}, p.sessions.map((s) => {
        const o = outcome(s.context);
        return el("tr", { class: "row", on: { click: () => go(`#/session/${encodeURIComponent(s.session_id)}`) } },
          el("td", {}, el("div", { class: "session-title" }, sessionTitle(s)), el("div", { class: "muted mono" }, s.session_id)),
          el("td", { class: "robot" }, o.robot || ""), el("td", { class: "task" }, o.task || ""), el("td", {}, s.status), el("td", { class: "num" }, String(s.memory_count)),
          el("td", { class: "num" }, s.outcome_score === null ? "–" : fmt(s.outcome_score)), el("td", { class: "muted nowrap" }, when(s.created_at)), el("td", { class: "muted nowrap" }, when(s.ended_at)));
      }))),
    pager(page, pages, p.total, (n) => go(`#/sessions?page=${n}`), true, p.total === 1 ? "session" : "sessions"));
}

async function timeline(id) {
  const [p, list] = await Promise.all([api(`/api/sessions/${encodeURIComponent(id)}/memories?per_page=500`), api("/api/sessions?per_page=500")]);
  const s = list.sessions.find((x) => x.session_id === id);
  const fails = p.memories.filter((m) => outcome(m.context).success === false).length;
  show(el("h2", { id: "session-title" }, s ? sessionTitle(s) : "Session"),
    el("p", { class: "muted", id: "session-outcome" }, s ? `${s.status} · ${s.memory_count} memories, ${fails} failed · started ${when(s.created_at)}` : "", s && s.ended_at ? ` · ended ${when(s.ended_at)}` : "",
      s && s.outcome_score !== null ? ` · outcome ${fmt(s.outcome_score)}` : "", el("br", {}), el("span", { class: "mono" }, "session " + id)),
    el("div", { class: "timeline", id: "timeline" }, p.memories.map((m) => {
      const o = outcome(m.context);
      return el("div", { class: "item" + (o.success === false ? " fail" : o.success ? " ok" : ""), on: { click: () => go(`#/memory/${m.id}`) } },
        el("div", { class: "muted" }, when(m.created_at), " · ", m.category, o.robot ? ` · ${o.robot}` : "", o.task ? ` · ${o.task}` : "", m.status !== "active" ? " · " + m.status : "",
          o.success === undefined ? null : el("span", { class: o.success ? "pill ok" : "pill bad" }, o.success ? "✓ success" : "✗ failure")),
        el("div", { class: "content" }, m.content));
    })),
    p.total > p.memories.length ? el("p", { class: "muted" }, `first ${p.memories.length} of ${p.total}`) : null);
}

async function health() {
  try {
    const d = await api("/api/doctor");
    const h = document.getElementById("health");
    h.textContent = d.ok ? "● healthy" : "● " + d.checks.filter((c) => !c.ok).map((c) => c.name).join(", ");
    h.className = "health " + (d.ok ? "good" : "bad");
  } catch (_) { /* shown by the views */ }
}

async function route() {
  const [path, query] = (location.hash.slice(1) || "/dashboard").split("?");
  const q = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean);
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("active", a.getAttribute("href") === "#/" + (parts[0] === "memory" ? "memories" : parts[0] === "session" ? "sessions" : parts[0]));
  try {
    if (parts[0] === "memories") await memories(q);
    else if (parts[0] === "search") await search(q);
    else if (parts[0] === "memory" && parts[1]) await detail(decodeURIComponent(parts[1]), q);
    else if (parts[0] === "sessions") await sessions(q);
    else if (parts[0] === "session" && parts[1]) await timeline(decodeURIComponent(parts[1]));
    else await dashboard();
    document.body.dataset.ready = location.hash || "#/dashboard";
  } catch (e) { fail(e); }
}

window.addEventListener("hashchange", route);
route();
health();
