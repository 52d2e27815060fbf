#!/usr/bin/env python3
"""Offline tuning of hybrid fusion (src/search/fusion.rs) on development dumps.

usage: scripts/tune-fusion.py DUMP.jsonl [DUMP.jsonl ...] [--grid] [--w W --floor F --ceil C]

Each DUMP is written by the quality tests with ROBOTMEM_FUSION_DUMP=DIR
(tests/devsets/tune.rs): per query the top 40 memories by BM25 share and the
top 40 by cosine, each with both signals and whether it is gold. This script
re-ranks them exactly as `search::hybrid` does for n = 10 —
candidates = BM25 top 40 ∪ (cosine top 40 above the floor), score =
w·lexical + (1−w)·clamp((cos−floor)/(ceil−floor), 0, 1) (lexical alone for a
memory without a vector), ties: higher memory id first — and prints R@1/5/10
and MRR@10 per dump and query kind, against BM25 alone (the BM25 order), with
the paired bootstrap 95 % CI of the differences (1000 resamples, fixed seed).
--grid scans settings (--floors, --ceils; weights 0.4-0.9) and picks the one with
the largest sum of per-dump MRR changes among those that lose at most 0.002 MRR
on every dump of 1000 queries or more and are not worse beyond noise on any
smaller dump or query kind of at least 40 queries.
Standard library only.
"""
import argparse
import json
import multiprocessing
import random
import sys
from collections import defaultdict

DEPTH = 40
# Smallest query group (dump, or kind within a dump) whose loss counts as a loss.
MIN_GROUP = 40


def load(path):
    """Per query (kind, candidates), keeping only the rows fusion at n = 10 can see."""
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            rows = [r for r in d["c"] if (r[3] is not None and r[3] < DEPTH) or (r[4] is not None and r[4] < DEPTH)]
            out.append((d["kind"], rows))
    return out


def first_gold(ranked):
    for i, row in enumerate(ranked[:10]):
        if row[5]:
            return i
    return None


def bm25_rank(cands):
    lex = sorted((r for r in cands if r[3] is not None and r[3] < DEPTH), key=lambda r: r[3])
    return first_gold(lex)


def fused_rank(cands, w, floor, ceil):
    pool = []
    for r in cands:
        mid, lex, cos, lr, cr, _ = r
        in_lex = lr is not None and lr < DEPTH
        in_cos = cr is not None and cr < DEPTH and cos is not None and cos > floor
        if not (in_lex or in_cos):
            continue
        lexv = lex or 0.0
        if cos is None:
            s = lexv
        else:
            s = w * lexv + (1 - w) * min(1.0, max(0.0, (cos - floor) / (ceil - floor)))
        pool.append((s, mid, r))
    pool.sort(key=lambda t: (-t[0], -t[1]))
    return first_gold([t[2] for t in pool])


def metrics(firsts):
    n = max(1, len(firsts))
    r = lambda k: sum(1 for f in firsts if f is not None and f < k) / n
    mrr = sum(1 / (f + 1) for f in firsts if f is not None) / n
    return r(1), r(5), r(10), mrr


def per_query(firsts, metric):
    if metric == "R@10":
        return [1.0 if f is not None else 0.0 for f in firsts]
    return [1 / (f + 1) if f is not None else 0.0 for f in firsts]


def paired_ci(a, b, seed=0xDE5E75000011, resamples=1000):
    d = [x - y for x, y in zip(a, b)]
    if not d:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    means = sorted(sum(d[rng.randrange(len(d))] for _ in d) / len(d) for _ in range(resamples))
    return sum(d) / len(d), means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def evaluate(sets, w, floor, ceil, report=True):
    """(worst, sum) of the MRR@10 changes: the worst over every dump and every query
    kind of at least MIN_GROUP queries (for fewer than 1000 queries the upper end of
    the CI: worse beyond noise), the sum over dumps (a multi-kind dump counts as a
    whole)."""
    worst, total = None, 0.0
    for name, queries in sets:
        groups = defaultdict(list)
        for kind, cands in queries:
            groups[kind].append(cands)
            if len(set(k for k, _ in queries)) > 1:
                groups["(all)"].append(cands)
        for kind, qs in sorted(groups.items()):
            b = [bm25_rank(c) for c in qs]
            h = [fused_rank(c, w, floor, ceil) for c in qs]
            mb, mh = metrics(b), metrics(h)
            d = mh[3] - mb[3]
            if kind in ("(all)",) or len(groups) == 1:
                total += d
            if len(qs) >= MIN_GROUP:
                # A small group loses when it is worse beyond noise (the upper end
                # of the paired bootstrap CI below 0), a large one when it loses
                # more than 0.002 MRR.
                if len(qs) < 1000:
                    d = max(d, paired_ci(per_query(h, "MRR"), per_query(b, "MRR"), resamples=200)[2])
                worst = d if worst is None else min(worst, d)
            if report:
                d10 = paired_ci(per_query(h, "R@10"), per_query(b, "R@10"))
                dm = paired_ci(per_query(h, "MRR"), per_query(b, "MRR"))
                print(f"{name:28} {kind:12} {len(qs):6}  bm25 R@1 {mb[0]:.4f} R@5 {mb[1]:.4f} R@10 {mb[2]:.4f} MRR {mb[3]:.4f}"
                      f" | hybrid {mh[0]:.4f} {mh[1]:.4f} {mh[2]:.4f} {mh[3]:.4f}"
                      f" | dR@10 {d10[0]:+.4f} [{d10[1]:+.4f},{d10[2]:+.4f}] dMRR {dm[0]:+.4f} [{dm[1]:+.4f},{dm[2]:+.4f}]")
    return worst, total


SETS = []


def grid_point(g):
    return evaluate(SETS, *g, report=False)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dumps", nargs="+")
    ap.add_argument("--w", type=float, default=0.5)
    ap.add_argument("--floor", type=float, default=0.3)
    ap.add_argument("--ceil", type=float, default=0.8)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--floors", default="0.1,0.2,0.3,0.4", help="cosine floors the grid tries")
    ap.add_argument("--ceils", default="0.6,0.8,1.0", help="cosine ceilings the grid tries")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    sets = [(p.rsplit("/", 1)[-1], load(p)) for p in a.dumps]
    if a.grid:
        floors = [float(x) for x in a.floors.split(",")]
        ceils = [float(x) for x in a.ceils.split(",")]
        grid = [(w, f, c) for w in [0.4, 0.5, 0.6, 0.7, 0.8, 0.9] for f in floors for c in ceils if c > f]
        global SETS
        SETS = sets
        with multiprocessing.Pool(a.jobs) as pool:
            worst = pool.map(grid_point, grid)
        # Best total gain among the settings no dump loses more than 0.002 MRR with.
        ok = [(t, wst, *g) for (wst, t), g in zip(worst, grid) if wst >= -0.002]
        results = sorted(ok or [(t, wst, *g) for (wst, t), g in zip(worst, grid)], reverse=True)
        for total, wst, w, floor, ceil in results[:12]:
            print(f"sum of dMRR {total:+.4f}  worst {wst:+.4f}  w={w} floor={floor} ceil={ceil}")
        _, _, a.w, a.floor, a.ceil = results[0]
        print()
    print(f"w={a.w} floor={a.floor} ceil={a.ceil}")
    evaluate(sets, a.w, a.floor, a.ceil)


if __name__ == "__main__":
    sys.exit(main())
