#!/usr/bin/env python3
"""The Python side of the side-by-side benchmark (scripts/peer-bench.sh).

  peer_bench.py replay OPS.jsonl --db FILE [--phase all|learn|recall] [--ranked FILE]
      Sends the operation file of `cargo bench --bench peer -- --emit` to the Python
      original, robotmem 0.1.3 from PyPI (robotmem.sdk.RobotMemory, embed_backend
      "none": BM25 only), one timed call at a time, and prints the same summary as
      the Rust replayer (benches/peer/replay.rs), last one JSON line starting with
      {"bench":"peer-replay". Runs in the venv of scripts/peer-requirements.txt.
  peer_bench.py table RESULTS.jsonl [--ops OPS.jsonl --ranked RUST PY]
      The side-by-side table: medians over rounds, ratio Python / robotmem, and the
      overlap of the two systems' results (round 1). Standard library only.
  peer_bench.py compact RESULTS.jsonl... [--labels 10k 100k ...]
      One short table over several runs' results (peer-bench.sh --save), side by side.

Field mapping (our request -> RobotMemory): insight -> learn(insight), context (a JSON
string) -> learn(context=<the same string>); query -> recall(query), n -> n,
context_filter / spatial_sort (JSON strings) -> the dicts recall(context_filter=,
spatial_sort=) takes, parsed before the clock starts; min_confidence 0.3 on both
sides (both defaults). Nothing of the requests has no equivalent.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

# Modules the embeddings-off path must never import: the model download
# (fastembed / huggingface_hub) and the MCP server stack.
FORBIDDEN = ("fastembed", "onnxruntime", "huggingface_hub", "mcp", "httpx", "numpy", "requests")


def status_kb(field: str) -> int:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def summary(ns: list[int]) -> dict:
    """Nearest-rank percentiles in ms, as benches/workload/stats.rs computes them."""
    if not ns:
        return {"n": 0, "mean_ms": 0.0, "p50_ms": 0.0, "p95_ms": 0.0, "p99_ms": 0.0, "max_ms": 0.0}
    s = sorted(ns)

    def pct(p: float) -> float:
        rank = -(-p * len(s) // 100)  # ceil
        return s[min(max(int(rank), 1), len(s)) - 1] / 1e6

    r = lambda x: round(x, 4)  # noqa: E731
    return {"n": len(s), "mean_ms": r(sum(s) / len(s) / 1e6), "p50_ms": r(pct(50)), "p95_ms": r(pct(95)),
            "p99_ms": r(pct(99)), "max_ms": r(s[-1] / 1e6)}


def db_bytes(path: str) -> int:
    return sum(os.path.getsize(path + s) for s in ("", "-wal", "-shm") if os.path.exists(path + s))


def header_journal(path: str) -> str:
    try:
        with open(path, "rb") as f:
            h = f.read(20)
    except OSError:
        return "unknown"
    return {2: "wal", 1: "rollback (delete/truncate/persist)"}.get(h[18] if len(h) == 20 else 0, "unknown")


def load_ops(path: str):
    meta, learns, recalls = {}, [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            v = json.loads(line)
            if v.get("type") == "meta":
                meta = v
            elif v.get("op") == "learn":
                learns.append(v)
            elif v.get("op") == "recall":
                recalls.append(v)
            else:
                raise SystemExit(f"{path}: unknown line {line[:80]!r}")
    return meta, learns, recalls


class Kind:
    def __init__(self):
        self.lat, self.hits, self.empty, self.short = [], 0, 0, 0
        self.gold_n, self.gold_hits, self.unmapped = 0, 0, 0

    def json(self) -> dict:
        j = summary(self.lat)
        busy = sum(self.lat) / 1e9
        n = max(len(self.lat), 1)
        j.update(per_s=round(len(self.lat) / busy) if busy > 0 else 0.0, avg_hits=round(self.hits / n, 3),
                 empty=self.empty, short=self.short, unmapped=self.unmapped)
        if self.gold_n:
            j.update(gold_n=self.gold_n, gold_hits=self.gold_hits, hit_rate=round(self.gold_hits / self.gold_n, 4))
        return j


def replay(a) -> dict:
    # Guards: nothing may reach a model hub (embeddings are off; these make sure).
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
    os.environ.setdefault("ROBOTMEM_HOME", os.path.join(os.path.dirname(os.path.abspath(a.db)), "robotmem-home"))
    import sqlite3

    import robotmem
    from robotmem.sdk import RobotMemory

    if a.phase != "recall" and os.path.exists(a.db):
        raise SystemExit(f"{a.db} exists: a learn phase needs a fresh database file")
    if a.phase == "recall" and not os.path.exists(a.db):
        raise SystemExit(f"{a.db} does not exist: --phase recall needs a learned database")
    meta, learns, recalls = load_ops(a.ops)
    ordinal: dict[str, int] = {}
    for i, op in enumerate(learns):
        ordinal.setdefault(op["text"], i)
    # Parsed before any clock starts, as the Rust side parses its file first.
    for q in recalls:
        q["_filter"] = json.loads(q["filter"]) if q.get("filter") else None
        q["_spatial"] = json.loads(q["spatial"]) if q.get("spatial") else None

    rss_start = status_kb("VmRSS")
    t = time.perf_counter_ns()
    mem = RobotMemory(db_path=a.db, embed_backend="none")
    open_ms = (time.perf_counter_ns() - t) / 1e6
    conn = mem._db.conn
    sync = {0: "off", 1: "normal", 2: "full", 3: "extra"}.get(conn.execute("PRAGMA synchronous").fetchone()[0], "?")
    pragma_journal = conn.execute("PRAGMA journal_mode").fetchone()[0]
    rss_open = status_kb("VmRSS")
    corpus = meta.get("corpus", "?")
    print(f"[robotmem-py {corpus}] {len(learns)} learns, {len(recalls)} recalls -> {a.db}", file=sys.stderr)

    learn = None
    if a.phase != "recall":
        lat, dups, errors = [], {}, {}
        started = time.perf_counter()
        step = max(len(learns) // 20, 1)
        for i, op in enumerate(learns):
            text, ctx = op["text"], op.get("context") or ""
            t = time.perf_counter_ns()
            try:
                out = mem.learn(text, context=ctx)
            except Exception as e:  # the SDK raises on a failed write; counted, not fatal
                out = {"status": "error:" + type(e).__name__}
            lat.append(time.perf_counter_ns() - t)
            st = out.get("status")
            if st == "duplicate":
                dups[out.get("method", "?")] = dups.get(out.get("method", "?"), 0) + 1
            elif st != "created":
                errors[st] = errors.get(st, 0) + 1
            if (i + 1) % step == 0:
                print(f"\r  learn {i + 1}/{len(learns)} ({time.perf_counter() - started:.0f} s)", end="", file=sys.stderr)
        print(file=sys.stderr)
        wall = time.perf_counter() - started
        learn = summary(lat)
        busy = sum(lat) / 1e9
        learn.update(wall_s=round(wall, 3), per_s=round(len(lat) / max(busy, 1e-9)),
                     stored=len(lat) - sum(dups.values()) - sum(errors.values()),
                     duplicates={"exact": dups.pop("exact", 0), "jaccard": dups.pop("jaccard", 0), **dups},
                     errors=errors)
    hwm_learn = status_kb("VmHWM")

    recall, by_filter = None, None
    if a.phase != "learn":
        kinds: dict[str, Kind] = {}
        allk, en, zh, filters = Kind(), [], [], {}
        ranked = open(a.ranked, "w", encoding="utf-8") if a.ranked else None
        first_ms = 0.0
        for i, q in enumerate(recalls):
            t = time.perf_counter_ns()
            hits = mem.recall(q["query"], n=q.get("n", 5), context_filter=q["_filter"], spatial_sort=q["_spatial"])
            dt = time.perf_counter_ns() - t
            if i == 0:
                first_ms = dt / 1e6
            if q.get("warmup"):
                continue
            ords = [ordinal.get(h.get("content")) for h in hits]
            if ranked:
                ranked.write(json.dumps({"i": i, "ranked": ords}) + "\n")
            for k in (kinds.setdefault(q.get("kind", "plain"), Kind()), allk):
                k.lat.append(dt)
                k.hits += len(hits)
                k.empty += not hits
                k.short += len(hits) < q.get("n", 5)
                k.unmapped += sum(o is None for o in ords)
                if q.get("gold") is not None:
                    k.gold_n += 1
                    gold = set(q["gold"])
                    k.gold_hits += any(o is not None and learns[o]["key"] in gold for o in ords)
            (zh if q.get("zh") else en).append(dt)
            if q.get("filter"):
                f = filters.setdefault(q["filter"], [0, 0, 0])
                f[0] += 1
                f[1] += len(hits)
                f[2] += not hits
        if ranked:
            ranked.close()
        recall = {k: v.json() for k, v in kinds.items()}
        recall.update(all=allk.json(), english=summary(en), chinese=summary(zh), first_ms=round(first_ms, 3))
        by_filter = {f: {"n": n, "avg_hits": round(h / max(n, 1), 3), "empty": e} for f, (n, h, e) in filters.items()}

    mem.close()
    imported = sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN)
    out = {
        "bench": "peer-replay", "system": "robotmem-py", "version": robotmem.__version__, "corpus": corpus,
        "memories": len(learns), "phase": a.phase, "embeddings": False,
        "sqlite": {"journal_mode": header_journal(a.db), "pragma_journal_mode": pragma_journal,
                   "synchronous": sync, "version": sqlite3.sqlite_version},
        "python": sys.version.split()[0], "open_ms": round(open_ms, 3), "learn": learn, "recall": recall,
        "by_filter": by_filter, "rss_start_kb": rss_start, "rss_after_open_kb": rss_open,
        "hwm_after_learn_kb": hwm_learn, "peak_rss_kb": status_kb("VmHWM"), "db_bytes": db_bytes(a.db),
        "cpu_s": round(sum(os.times()[:2]), 2),
        "forbidden_imported": imported, "jieba_loaded": "jieba" in sys.modules,
    }
    print_report(out)
    print(json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":")))
    if imported:
        raise SystemExit(f"peer_bench: the embeddings-off path imported {imported}")
    return out


def row(label: str, j: dict) -> str:
    return (f"  {label:<22} {j['n']:>6} {j['p50_ms']:>9.3f} {j['p95_ms']:>9.3f} {j['p99_ms']:>9.3f} "
            f"{j['mean_ms']:>9.3f} {j['max_ms']:>9.3f}   {j.get('per_s', 0):>7.0f}/s")


def print_report(out: dict) -> None:
    print()
    print(f"robotmem {out['version']} (Python {out['python']}) replay of {out['corpus']} ({out['memories']} learns), "
          f"embeddings off, sqlite {json.dumps(out['sqlite'])}")
    print(f"  {'':<22} {'n':>6} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'mean ms':>9} {'max ms':>9}")
    if out["learn"]:
        print(row("learn", out["learn"]))
        l = out["learn"]  # noqa: E741
        print(f"  learn wall {l['wall_s']} s, stored {l['stored']}, duplicates {l['duplicates']}, errors {l['errors']}")
    for k, v in (out["recall"] or {}).items():
        if isinstance(v, dict) and "avg_hits" in v:
            gold = f", gold in top n {v['hit_rate']}" if "hit_rate" in v else ""
            print(f"{row('recall ' + k, v)}   avg hits {v['avg_hits']}, empty {v['empty']}, short {v['short']}{gold}")
    print(f"  peak RSS (VmHWM) {out['peak_rss_kb'] / 1024:.1f} MiB, after open {out['rss_after_open_kb'] / 1024:.1f} MiB; "
          f"database {out['db_bytes'] / 1048576:.1f} MiB; modules of the embedding/MCP stack imported: "
          f"{out['forbidden_imported'] or 'none'}")


# ---------------------------------------------------------------- the table

SYSTEMS = ("robotmem", "robotmem-py")


def merged_runs(path: str) -> dict:
    """{system: [record per round]}; a learn-only and a recall-only record of the
    same round and system (the peer's database built once) are merged."""
    by = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            rec = json.loads(line)
            r = rec["result"]
            key = (r["system"], rec["round"])
            cur = by.setdefault(key, {"round": rec["round"], "load1": [], "learn": None, "recall": None,
                                      "peak_rss_kb": 0, "db_bytes": 0, "reused": rec.get("reused", False)})
            cur["load1"] += [rec.get("load1_before"), rec.get("load1_after")]
            cur["others"] = max(cur.get("others", 0.0), rec.get("others_cores") or 0.0)
            for k in ("learn", "recall", "by_filter"):
                if r.get(k):
                    cur[k] = r[k]
            cur["peak_rss_kb"] = max(cur["peak_rss_kb"], r["peak_rss_kb"])
            # Growth above the replayer's own start (interpreter, modules, the parsed operation file).
            cur["rss_growth_kb"] = max(cur.get("rss_growth_kb", 0), r["peak_rss_kb"] - r["rss_start_kb"])
            if r.get("learn"):
                cur["db_bytes"] = r["db_bytes"]
                cur["stored"] = r["learn"]["stored"]
            elif not cur["db_bytes"]:
                cur["db_bytes"] = r["db_bytes"]
            cur.setdefault("sqlite", r["sqlite"])
            cur["reused"] = cur["reused"] or rec.get("reused", False)
    out = {s: [] for s in SYSTEMS}
    for (s, _), v in sorted(by.items(), key=lambda x: x[0][1]):
        if not v["learn"]:  # a recall-only process on a copy: its memory is not that of a whole run
            v["peak_rss_kb"] = v["rss_growth_kb"] = None
        out.setdefault(s, []).append(v)
    return out


def med(runs: list, get):
    vals = []
    for r in runs:
        try:
            v = get(r)
        except (KeyError, TypeError):
            v = None
        if v is not None:
            vals.append(v)
    return (statistics.median(vals), len(vals)) if vals else (None, 0)


def fmt(v, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "ms":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    if unit in ("/s", "n"):
        return f"{v:,.0f}"
    if unit == "MiB":
        return f"{v:.1f}"
    return f"{v:.3f}" if isinstance(v, float) else str(v)


def overlap(ops_path: str, rust: str, py: str) -> dict:
    _, _, recalls = load_ops(ops_path)

    def read(p):
        with open(p, encoding="utf-8") as f:
            return {x["i"]: x["ranked"] for x in map(json.loads, f)}
    a, b = read(rust), read(py)
    per = {}
    for i, ra in a.items():
        rb = b.get(i)
        if rb is None:
            continue
        kind = recalls[i].get("kind", "plain")
        sa, sb = {x for x in ra if x is not None}, {x for x in rb if x is not None}
        d = per.setdefault(kind, [0, 0.0, 0, 0])
        d[0] += 1
        d[1] += len(sa & sb) / max(len(sa), len(sb), 1)
        d[2] += bool(ra and rb and ra[0] == rb[0])
        d[3] += bool(sa) != bool(sb)
    return {k: {"recalls": n, "overlap": round(o / n, 3), "same_top1": round(t / n, 3), "one_side_empty": e}
            for k, (n, o, t, e) in per.items()}


def table(a) -> None:
    runs = merged_runs(a.results)
    rs, ps = runs.get("robotmem", []), runs.get("robotmem-py", [])
    kinds = []
    for r in rs + ps:
        for k, v in (r.get("recall") or {}).items():
            if isinstance(v, dict) and "avg_hits" in v and k not in kinds and k != "all":
                kinds.append(k)
    metrics = [("learn p50", "ms", lambda r: r["learn"]["p50_ms"]),
               ("learn p95", "ms", lambda r: r["learn"]["p95_ms"]),
               ("learn p99", "ms", lambda r: r["learn"]["p99_ms"]),
               ("learn throughput", "/s", lambda r: r["learn"]["n"] / r["learn"]["wall_s"]),
               ("learn wall", "s", lambda r: r["learn"]["wall_s"]),
               ("stored", "n", lambda r: r["stored"])]
    for k in kinds:
        metrics += [(f"recall {k} p50", "ms", lambda r, k=k: r["recall"][k]["p50_ms"]),
                    (f"recall {k} p95", "ms", lambda r, k=k: r["recall"][k]["p95_ms"]),
                    (f"recall {k} p99", "ms", lambda r, k=k: r["recall"][k]["p99_ms"]),
                    (f"recall {k} throughput", "/s", lambda r, k=k: r["recall"][k]["per_s"]),
                    (f"recall {k} avg hits", "", lambda r, k=k: r["recall"][k]["avg_hits"]),
                    (f"recall {k} fewer than n", "n", lambda r, k=k: r["recall"][k]["short"])]
        metrics.append((f"recall {k} gold in top n", "", lambda r, k=k: r["recall"][k].get("hit_rate")))
    metrics += [("peak RSS", "MiB", lambda r: r["peak_rss_kb"] / 1024),
                ("peak RSS above the replayer's start", "MiB", lambda r: r["rss_growth_kb"] / 1024),
                ("database file", "MiB", lambda r: r["db_bytes"] / 1048576)]
    print(f"| metric (median over rounds) | robotmem | Python 0.1.3 | Python / robotmem |")
    print("|---|---:|---:|---:|")
    out = {}
    for name, unit, get in metrics:
        (x, nx), (y, ny) = med(rs, get), med(ps, get)
        if x is None and y is None:
            continue
        ratio = y / x if x and y is not None else None
        note = f" ({ny} of {len(ps)} rounds)" if ps and 0 < ny < len(ps) else ""
        label = f"{name} ({unit})" if unit else name
        print(f"| {label} | {fmt(x, unit)} | {fmt(y, unit)}{note} | {'-' if ratio is None else f'{ratio:.2f}'} |")
        out[name] = {"robotmem": x, "python": y, "ratio": ratio, "python_rounds": ny}
    print()
    dups = {s: [(r["learn"] or {}).get("duplicates") for r in rr if r.get("learn")] for s, rr in runs.items()}
    errs = [(r["learn"] or {}).get("errors") for r in ps if r.get("learn")]
    print(f"duplicates reported (per round): robotmem {dups.get('robotmem')}; Python {dups.get('robotmem-py')}"
          f"; Python learn errors {errs}")
    for s, rr in runs.items():
        if rr:
            print(f"sqlite of {s}: {rr[0]['sqlite']}; load average (1 min) before/after each run: "
                  f"{[x for r in rr for x in r['load1']]}; cores other processes kept busy, per round: "
                  f"{[r.get('others') for r in rr]}")
    filt = {}
    for s, rr in runs.items():
        for r in rr[:1]:
            for f, v in (r.get("by_filter") or {}).items():
                filt.setdefault(f, {})[s] = v
    if filt:
        print()
        print("| context_filter (round 1) | recalls | robotmem avg hits / empty | Python avg hits / empty |")
        print("|---|---:|---:|---:|")
        for f, v in filt.items():
            cell = lambda s: f"{v[s]['avg_hits']} / {v[s]['empty']}" if s in v else "-"  # noqa: E731
            n = next(iter(v.values()))["n"]
            print(f"| `{f}` | {n} | {cell('robotmem')} | {cell('robotmem-py')} |")
    if a.ranked and a.ops:
        ov = overlap(a.ops, *a.ranked)
        out["overlap"] = ov
        print()
        print("overlap of the two systems' results (round 1): |A∩B| / max(|A|,|B|) of the hit sets, same first hit, "
              "recalls where exactly one side is empty")
        for k, v in ov.items():
            print(f"  {k:<10} {v}")
    print()
    rnd = lambda v: round(v, 4) if isinstance(v, float) else v  # noqa: E731
    out = {k: ({kk: rnd(vv) for kk, vv in v.items()} if isinstance(v, dict) else v) for k, v in out.items()}
    print(json.dumps({"bench": "peer-table", "rounds": {s: len(r) for s, r in runs.items()}, "metrics": out}))


def compact(a) -> None:
    """One short table over several result files (e.g. 10k and 100k), as in docs/BENCHMARKS-peer.md."""
    runs = [merged_runs(p) for p in a.results]
    kinds = [k for k in ("plain", "filter", "spatial", "question")
             if any(k in (r.get("recall") or {}) for rr in runs for r in rr.get("robotmem", []))]
    m = [("learn p50 (ms)", lambda r: r["learn"]["p50_ms"]), ("learn p95 (ms)", lambda r: r["learn"]["p95_ms"]),
         ("learn p99 (ms)", lambda r: r["learn"]["p99_ms"]), ("learn, whole phase (s)", lambda r: r["learn"]["wall_s"]),
         ("stored", lambda r: r["stored"])]
    for k in kinds:
        m += [(f"recall {k} p50 (ms)", lambda r, k=k: r["recall"][k]["p50_ms"]),
              (f"recall {k} p95 (ms)", lambda r, k=k: r["recall"][k]["p95_ms"])]
        if k == "question":
            m += [("gold sentence in top 10", lambda r, k=k: r["recall"][k]["hit_rate"]),
                  ("avg hits (n = 10)", lambda r, k=k: r["recall"][k]["avg_hits"])]
        else:
            m += [(f"recall {k}: avg hits (n = 5)", lambda r, k=k: r["recall"][k]["avg_hits"]),
                  (f"recall {k}: fewer than 5 hits", lambda r, k=k: r["recall"][k]["short"])]
    m += [("peak RSS (MiB)", lambda r: r["peak_rss_kb"] / 1024),
          ("peak RSS above the replayer's start (MiB)", lambda r: r["rss_growth_kb"] / 1024),
          ("database file (MiB)", lambda r: r["db_bytes"] / 1048576)]
    labels = a.labels or [str(i + 1) for i in range(len(runs))]
    print("| metric |" + "".join(f" robotmem {x} | Python {x} | ratio |" for x in labels))
    print("|---|" + "---:|---:|---:|" * len(runs))
    for name, get in m:
        row = f"| {name} |"
        for rr in runs:
            (x, _), (y, ny) = med(rr["robotmem"], get), med(rr["robotmem-py"], get)
            n = len(rr["robotmem-py"])
            unit = "MiB" if "MiB" in name else ("n" if name == "stored" or "fewer" in name else "ms")
            note = f" ({ny} round{'s' * (ny > 1)})" if 0 < ny < n else ""
            share = name.startswith(("gold", "avg")) or "avg hits" in name
            ratio = "-" if share or unit == "n" or x in (None, 0) or y is None else f"{y / x:.1f}"
            cell = (lambda v: "-" if v is None else f"{v:.3f}") if share else (lambda v: fmt(v, unit))
            row += f" {cell(x)} | {cell(y)}{note} | {ratio} |"
        print(row)
    for label, rr in zip(labels, runs):
        for s, v in rr.items():
            print(f"{label} {s}: cores kept busy by other processes, per round {[r.get('others') for r in v]}; "
                  f"duplicates {[(r.get('learn') or {}).get('duplicates') for r in v if r.get('learn')]}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay")
    r.add_argument("ops")
    r.add_argument("--db", required=True)
    r.add_argument("--phase", choices=("all", "learn", "recall"), default="all")
    r.add_argument("--ranked")
    t = sub.add_parser("table")
    t.add_argument("results")
    t.add_argument("--ops")
    t.add_argument("--ranked", nargs=2, metavar=("RUST", "PY"))
    c = sub.add_parser("compact")
    c.add_argument("results", nargs="+")
    c.add_argument("--labels", nargs="+")
    a = p.parse_args()
    {"replay": replay, "table": table, "compact": compact}[a.cmd](a)


if __name__ == "__main__":
    main()
