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
function show(...nodes) { view.replaceChildren(...nodes.flat()); }
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
function columns(values, labels, id) {
  const w = 360, h = 120, n = Math.max(1, values.length), bw = (w - 10) / n;
  const max = Math.max(1, ...values);
  const g = svg("svg", { width: "100%", viewBox: `0 0 ${w} ${h + 16}`, role: "img", id });
  values.forEach((v, i) => {
    const bh = (v / max) * h;
    g.appendChild(svg("rect", { class: "bar", x: 5 + i * bw + 1, y: h - bh, width: Math.max(1, bw - 2), height: bh }, svg("title", {}, `${labels[i]}: ${v}`)));
  });
  if (labels.length) {
    g.appendChild(svg("text", { x: 5, y: h + 13 }, labels[0]));
    g.appendChild(svg("text", { x: w - 5, y: h + 13, "text-anchor": "end" }, labels[labels.length - 1]));
  }
  return g;
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
  return out.slice(0, 12);
}
function plot(series) {
  const w = 560, h = 200, colors = ["#2f6fdd", "#c0392b", "#1e8449", "#8e44ad", "#d68910", "#117a65"];
  const all = series.flatMap((s) => s[1]);
  const lo = Math.min(...all), hi = Math.max(...all), span = hi - lo || 1;
  const g = svg("svg", { width: "100%", viewBox: `0 0 ${w} ${h + 20}`, role: "img", class: "perception-plot" });
  series.forEach(([, ys], si) => {
    const pts = ys.map((y, i) => `${(i / (ys.length - 1)) * (w - 40) + 35},${h - ((y - lo) / span) * (h - 10) - 5}`).join(" ");
    g.appendChild(svg("polyline", { class: "series", points: pts, stroke: colors[si % colors.length] }));
  });
  g.appendChild(svg("text", { x: 0, y: 10 }, fmt(hi, 3)));
  g.appendChild(svg("text", { x: 0, y: h }, fmt(lo, 3)));
  // Swatches as SVG fills: the Content-Security-Policy allows no inline style.
  const swatch = (c) => svg("svg", { width: 10, height: 10 }, svg("rect", { width: 10, height: 10, fill: c }));
  const legend = el("div", { class: "legend" }, series.map(([name, ys], si) => el("span", {}, swatch(colors[si % colors.length]), ` ${name} (${ys.length})`)));
  return el("div", {}, g, legend);
}

// ---- views ------------------------------------------------------------------------
function memoryRow(m, extra) {
  return el("tr", { class: "row", "data-id": m.id, on: { click: () => go(`#/memory/${m.id}`) } },
    el("td", {}, "#" + m.id),
    el("td", { class: "content" }, m.content),
    el("td", {}, el("span", { class: "pill" }, m.type), el("span", { class: "pill" }, m.category), m.status !== "active" ? el("span", { class: "pill bad" }, m.status) : null),
    el("td", {}, fmt(m.confidence)),
    el("td", { class: "muted" }, m.collection),
    el("td", { class: "muted" }, (m.created_at || "").replace("T", " ").slice(0, 19)),
    extra || null);
}
function memoryTable(list, extraHead, extra) {
  return el("table", { class: "memories" },
    el("thead", {}, el("tr", {}, ["id", "memory", "kind", "confidence", "collection", "learned"].map((h) => el("th", {}, h)), extraHead ? el("th", {}, extraHead) : null)),
    el("tbody", {}, list.map((m, i) => memoryRow(m, extra ? extra(m, i) : null))));
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
      el("div", { class: "panel" }, el("h3", {}, "Learned per day"), columns(s.per_day.map((d) => d.count), s.per_day.map((d) => d.day), "chart-days")),
      el("div", { class: "panel" }, el("h3", {}, "Confidence (active)"), columns(s.confidence_histogram, ["0", "", "", "", "", "", "", "", "", "1"], "chart-confidence"))),
    el("div", { class: "grid2" },
      el("div", { class: "panel" }, el("h3", {}, "Collections"),
        el("table", { id: "collections" }, el("tbody", {}, s.collections.map((c) => el("tr", {}, el("td", {}, c.collection), el("td", {}, `${c.active} active`), el("td", { class: "muted" }, `${c.total} total`)))))),
      el("div", { class: "panel", id: "recent-failures" }, el("h3", {}, "Recent failures"),
        failures.memories.length ? memoryTable(failures.memories) : el("p", { class: "muted" }, "none"))));
}

function filterForm(q, onSubmit) {
  const input = (name, label, attrs) => el("label", {}, label, el("input", { name, value: q.get(name) || "", ...attrs }));
  const select = (name, label, opts) => el("label", {}, label, el("select", { name }, opts.map((o) => el("option", { value: o, selected: (q.get(name) || opts[0]) === o }, o || "any"))));
  const f = el("form", { class: "filters", id: "filters" },
    input("collection", "collection", { size: 10 }), select("type", "type", ["", "fact", "perception"]),
    input("category", "category", { size: 10 }), select("status", "status", ["active", "superseded", "forgotten", "all"]),
    input("min_confidence", "min confidence", { size: 4 }), input("days", "last days", { size: 4 }),
    input("session", "session", { size: 12 }), el("button", { type: "submit" }, "Filter"));
  f.addEventListener("submit", (e) => { e.preventDefault(); onSubmit(new URLSearchParams([...new FormData(f)].filter(([, v]) => v !== ""))); });
  return f;
}
function pager(page, pages, total, to, exact = true) {
  const more = exact ? "" : "+";
  return el("div", { class: "pager" },
    el("button", { id: "prev-page", disabled: page <= 1, on: { click: () => to(page - 1) } }, "‹ previous"),
    el("span", { id: "page-info" }, `page ${page} of ${pages}${more} · ${total}${more} memories`),
    el("button", { id: "next-page", disabled: page >= pages && exact, on: { click: () => to(page + 1) } }, "next ›"));
}

async function memories(q) {
  const page = Number(q.get("page") || 1);
  const p = await api("/api/memories?" + q.toString());
  const pages = Math.max(1, Math.ceil(p.total / p.per_page));
  const to = (n) => { q.set("page", String(n)); go("#/memories?" + q.toString()); };
  show(el("h2", {}, "Memories"), filterForm(q, (nq) => go("#/memories?" + nq.toString())), memoryTable(p.memories), pager(page, pages, p.total, to, p.total_exact));
}

async function search(q) {
  // A person reads this page: repeats of one event are grouped unless asked
  // otherwise (the API's own default is off, as in the library).
  const group = q.get("group_similar") !== "false";
  if (q.get("q") && !q.has("group_similar")) q.set("group_similar", "true");
  const form = el("form", { class: "filters", id: "search-form" },
    el("label", {}, "query", el("input", { id: "search-input", name: "q", value: q.get("q") || "", size: 40, autofocus: true })),
    el("label", {}, "n", el("input", { name: "n", value: q.get("n") || "", placeholder: "5", size: 3 })),
    el("label", {}, "context filter (JSON)", el("input", { name: "filter", value: q.get("filter") || "", size: 24, placeholder: '{"task.success": true}' })),
    el("label", {}, "spatial sort (JSON)", el("input", { name: "spatial", value: q.get("spatial") || "", size: 24 })),
    el("label", {}, "repeats", el("select", { id: "search-group", name: "group_similar" },
      el("option", { value: "true", selected: group }, "group"), el("option", { value: "false", selected: !group }, "show each"))),
    el("button", { id: "search-button", type: "submit" }, "Search"));
  form.addEventListener("submit", (e) => { e.preventDefault(); go("#/search?" + new URLSearchParams([...new FormData(form)].filter(([, v]) => v !== "")).toString()); });
  if (!q.get("q")) return show(el("h2", {}, "Search"), form);
  const r = await api("/api/search?" + q.toString());
  const why = (m) => el("td", { class: "muted" },
    `score ${fmt(m._rrf_score, 3)}`, m._lexical !== undefined ? ` · bm25 ${fmt(m._lexical)}` : "", m._cosine !== undefined ? ` · cos ${fmt(m._cosine)}` : "",
    m._distance !== undefined ? ` · dist ${fmt(m._distance, 3)}` : "", m._matched === false ? " · filter only" : "",
    m._similar ? el("div", { class: "similar" }, `+ ${m._similar.length} similar: `,
      m._similar.slice(0, 12).flatMap((id) => [el("a", { href: `#/memory/${id}`, on: { click: (e) => e.stopPropagation() } }, `#${id}`), " "]), m._similar.length > 12 ? "…" : "") : null);
  show(el("h2", {}, "Search"), form,
    el("p", { id: "search-mode", class: "muted" }, `${r.total} ${r.total === 1 ? "result" : "results"}${grouped(r) ? ` (${grouped(r)} memories, repeats grouped)` : ""} · mode ${r.mode} · query vector ${r.query_vector} · ${fmt(r.query_ms)} ms`),
    memoryTable(r.memories, "why", why));
}

// How many memories a grouped result stands for; 0 when nothing was grouped.
function grouped(r) {
  const folded = r.memories.reduce((n, m) => n + (m._similar ? m._similar.length : 0), 0);
  return folded ? r.memories.length + folded : 0;
}

async function detail(id) {
  const m = await api(`/api/memory/${encodeURIComponent(id)}`);
  let ctx = m.context;
  try { ctx = JSON.stringify(JSON.parse(m.context), null, 2); } catch (_) { /* free text */ }
  const parts = [
    el("h2", {}, `Memory #${m.id}`),
    el("div", { class: "panel" },
      el("p", { id: "detail-content", class: "content" }, m.content),
      el("p", {}, el("span", { class: "pill", id: "memory-status" }, m.status), el("span", { class: "pill" }, m.type), el("span", { class: "pill" }, m.category),
        ` confidence ${fmt(m.confidence)} · collection `, m.collection, m.session_id ? el("span", {}, " · session ", el("a", { href: `#/session/${encodeURIComponent(m.session_id)}` }, m.session_id)) : null),
      el("p", { class: "muted" }, `learned ${m.created_at} · updated ${m.updated_at} · recalled ${m.access_count} times`, m.superseded_by ? ` · superseded by #${m.superseded_by}` : ""),
      el("p", { id: "detail-tags" }, (m.tags || []).map((t) => el("span", { class: "pill" }, t)))),
    el("h3", {}, "Context"), el("pre", { id: "detail-context" }, ctx),
  ];
  if (m.perception_type) {
    parts.push(el("h3", {}, `Perception: ${m.perception_type}`));
    const series = seriesOf(m.perception_data);
    if (series.length) parts.push(el("div", { class: "panel" }, plot(series)));
    else if (m.perception_data !== undefined) parts.push(el("pre", {}, JSON.stringify(m.perception_data, null, 2).slice(0, 20000)));
    if (m.perception_metadata) parts.push(el("pre", {}, m.perception_metadata));
  }
  if (m.status === "active") {
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
          try { await api(`/api/memory/${m.id}`, { method: "DELETE", body: { reason: reason.value } }); detail(m.id); } catch (e) { fail(e); } } } }, "Forget"))));
  }
  show(parts);
}

async function sessions(q) {
  const page = Number(q.get("page") || 1);
  const p = await api(`/api/sessions?page=${page}`);
  const pages = Math.max(1, Math.ceil(p.total / p.per_page));
  show(el("h2", {}, "Sessions"),
    el("table", { id: "sessions" }, el("thead", {}, el("tr", {}, ["session", "status", "collection", "memories", "outcome", "started", "ended"].map((h) => el("th", {}, h)))),
      el("tbody", {}, p.sessions.map((s) => el("tr", { class: "row", on: { click: () => go(`#/session/${encodeURIComponent(s.session_id)}`) } },
        el("td", {}, s.session_id), el("td", {}, s.status), el("td", {}, s.collection), el("td", {}, String(s.memory_count)),
        el("td", {}, s.outcome_score === null ? "–" : fmt(s.outcome_score)), el("td", { class: "muted" }, s.created_at), el("td", { class: "muted" }, s.ended_at || ""))))),
    pager(page, pages, p.total, (n) => go(`#/sessions?page=${n}`)));
}

async function timeline(id) {
  const [p, list] = await Promise.all([api(`/api/sessions/${encodeURIComponent(id)}/memories?per_page=500`), api("/api/sessions?per_page=500")]);
  const s = list.sessions.find((x) => x.session_id === id);
  show(el("h2", {}, "Session ", id),
    s ? el("p", { class: "muted", id: "session-outcome" }, `${s.status} · ${s.collection} · started ${s.created_at}`, s.ended_at ? ` · ended ${s.ended_at}` : "", s.outcome_score !== null ? ` · outcome ${fmt(s.outcome_score)}` : "") : null,
    el("div", { class: "timeline", id: "timeline" }, p.memories.map((m) => el("div", { class: "item", on: { click: () => go(`#/memory/${m.id}`) } },
      el("div", { class: "muted" }, (m.created_at || "").replace("T", " ").slice(0, 23), " · ", m.category, m.status !== "active" ? " · " + m.status : ""),
      el("div", { class: "content" }, m.content)))),
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
    else if (parts[0] === "memory" && parts[1]) await detail(decodeURIComponent(parts[1]));
    else if (parts[0] === "sessions") await sessions(q);
    else if (parts[0] === "session" && parts[1]) await timeline(decodeURIComponent(parts[1]));
    else await dashboard();
    document.body.dataset.ready = location.hash || "#/dashboard";
  } catch (e) { fail(e); }
}

window.addEventListener("hashchange", route);
route();
health();
