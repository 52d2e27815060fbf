#!/usr/bin/env python3
"""Leave-one-set-out selection of the hybrid fusion settings (docs/QUALITY.md).

usage: scripts/loso-fusion.py DUMP.jsonl [DUMP.jsonl ...] [--jobs J] [--family F]
                              [--show w=0.7,floor=0.1,ceil=0.7]

Each DUMP is one development set (written by the quality tests with
ROBOTMEM_FUSION_DUMP=DIR, tests/devsets/tune.rs: per query the top 40 memories
by BM25 share and the top 40 by cosine, each with both signals, its CJK share and
whether it is gold). For every set S in turn, the setting is chosen on the other
sets only, then scored on S against BM25 alone: the left-out figure is an
estimate of what the choice does on text it was not chosen on. The last block
chooses on all sets: that is the setting to ship, and the left-out table is its
evidence.

Choice on a group of sets: among the settings under which no set is worse than
BM25 beyond the tolerance (the lower end of the paired bootstrap 95 % CI of the
MRR@10 difference at or above -0.005; 200 resamples while choosing) and no query
kind of 40 or more queries is worse beyond noise (its CI's upper end below 0),
the one with the largest mean MRR@10 gain over the query groups (each kind of a
set with kinds, else the set; each group weighs the same, whatever its size);
when none qualifies, the one whose worst set loses least among those whose kinds
hold. Kinds named by --require-gain must moreover be better than BM25 beyond
noise (the lower end of their CI above 0): the tests require that of the robot
set's paraphrases and cross-lingual queries.

Fusion family (src/search/fusion.rs): candidates = BM25 top 40 and the cosine
top 40 above the floor; for memory m and query q
  semantic(m) = clamp((cos - floor) / (ceil - floor), 0, 1)
  w_m         = w * xl   when m and q are in different scripts (one has a CJK
                            share of 0.5 or more, the other no CJK character;
                            a code-switched text is in neither's other script),
                            else w
  semantic(m) = clamp((cos - mu_x) / (zmax * sd_x), 0, 1) for a memory in the other
                script (family "z"): its cosine standardised among the other-script
                memories of the query's cosine top 40 (mean mu_x, deviation sd_x;
                at least 3 of them, else the plain mapping)
  score       = w_m * lexical + (1 - w_m) * semantic; lexical alone without a vector.
Ties: higher memory id first. Standard library only.
"""
import argparse
import itertools
import json
import multiprocessing
import random
import sys
from collections import defaultdict

DEPTH = 40
TOLERANCE = -0.005
# Smallest query kind of a set that is a group of its own.
MIN_GROUP = 40


def load(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            rows = [r for r in d["c"] if (r[3] is not None and r[3] < DEPTH) or (r[4] is not None and r[4] < DEPTH)]
            qcjk = d.get("qcjk", 0.0)
            cross = [other_script(qcjk, r[6] if len(r) > 6 else 0.0) for r in rows]
            out.append((d["kind"], list(zip(rows, cross)), cross_stats(rows, cross)))
    return out


def other_script(query_cjk, memory_cjk):
    """As src/search/fusion.rs: one text mostly Chinese, the other without CJK."""
    return (query_cjk >= 0.5 and memory_cjk == 0.0) or (query_cjk == 0.0 and memory_cjk >= 0.5)


def cross_stats(rows, cross):
    """Mean and standard deviation of the cosines of the other-script memories among
    the query's cosine top DEPTH (None with fewer than 3 of them)."""
    v = [r[2] for r, x in zip(rows, cross) if x and r[4] is not None and r[4] < DEPTH and r[2] is not None]
    if len(v) < 3:
        return None
    mu = sum(v) / len(v)
    sd = (sum((c - mu) ** 2 for c in v) / len(v)) ** 0.5
    return mu, max(sd, 1e-6)


def first_gold(ranked):
    for i, row in enumerate(ranked[:10]):
        if row[5]:
            return i
    return None


def bm25_rank(cands):
    lex = sorted((r for r, _ in cands if r[3] is not None and r[3] < DEPTH), key=lambda r: r[3])
    return first_gold(lex)


def fused_rank(query, s):
    _, cands, xstats = query
    w, floor, ceil, xl = s["w"], s["floor"], s["ceil"], s.get("xl", 1.0)
    zmax = s.get("zmax")
    pool = []
    for r, cross in cands:
        mid, lex, cos, lr, cr = r[0], r[1], r[2], r[3], r[4]
        in_lex = lr is not None and lr < DEPTH
        in_cos = cr is not None and cr < DEPTH and cos is not None and cos > floor
        if not (in_lex or in_cos):
            continue
        lexv = lex or 0.0
        if cos is None:
            sc = lexv
        else:
            wm = w * xl if cross else w
            if cross and zmax and xstats:
                sem = (cos - xstats[0]) / (zmax * xstats[1])
            else:
                sem = (cos - floor) / (ceil - floor)
            sc = wm * lexv + (1 - wm) * min(1.0, max(0.0, sem))
        pool.append((sc, mid, r))
    pool.sort(key=lambda t: (-t[0], -t[1]))
    return first_gold([t[2] for t in pool])


def rr(firsts):
    return [1 / (f + 1) if f is not None else 0.0 for f in firsts]


def hits(firsts, k):
    return [1.0 if f is not None and f < k else 0.0 for f in firsts]


def mean(v):
    return sum(v) / max(1, len(v))


def paired_ci(a, b, seed=0xDE5E75000011, resamples=1000):
    d = [x - y for x, y in zip(a, b)]
    if not d:
        return 0.0, 0.0, 0.0
    rng = random.Random(seed)
    n = len(d)
    means = sorted(sum(d[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return sum(d) / n, means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


SETS = {}
BASE = {}
GROUPS = {}
# Query kinds that must gain beyond noise (--require-gain).
REQUIRE_GAIN = set()


def run_setting(s):
    """Per set: the per-query reciprocal ranks of the fused order."""
    return {name: rr([fused_rank(q, s) for q in qs]) for name, qs in SETS.items()}


def family(name, a):
    floors = [float(x) for x in a.floors.split(",")]
    ceils = [float(x) for x in a.ceils.split(",")]
    ws = [float(x) for x in a.weights.split(",")]
    xls = [1.0] if name in ("fixed", "z") else [float(x) for x in a.xls.split(",")]
    zmaxes = [float(x) for x in a.zmaxes.split(",")] if name == "z" else [None]
    out = []
    for w, f, c, xl, z in itertools.product(ws, floors, ceils, xls, zmaxes):
        if c > f:
            s = {"w": w, "floor": f, "ceil": c, "xl": xl}
            if z:
                s["zmax"] = z
            out.append(s)
    return out


def groups(name):
    """The query groups of a set: the whole set, and each kind of at least
    MIN_GROUP queries when it has several kinds (as indexes into its queries)."""
    qs = SETS[name]
    out = {name: list(range(len(qs)))}
    kinds = defaultdict(list)
    for i, q in enumerate(qs):
        kinds[q[0]].append(i)
    if len(kinds) > 1:
        for kind, idx in sorted(kinds.items()):
            if len(idx) >= MIN_GROUP:
                out[f"{name}: {kind}"] = idx
    return out


def choose(names, grid, results):
    """The setting chosen on the sets `names` (see the module doc): (index, mean
    gain over the groups, worst lower CI end over the sets)."""
    scored = []
    for i in range(len(grid)):
        gains = []
        for n in names:
            for _, idx in GROUPS[n][1:] or GROUPS[n][:1]:
                gains.append(mean([results[i][n][j] for j in idx]) - mean([BASE[n][j] for j in idx]))
        scored.append((mean(gains), i))
    scored.sort(reverse=True)
    fallback = None
    for gain, i in scored[:80]:
        lows = [paired_ci(results[i][n], BASE[n], resamples=200)[1] for n in names]
        kinds_ok = all(
            paired_ci([results[i][n][j] for j in idx], [BASE[n][j] for j in idx], resamples=200)[2] >= 0
            for n in names
            for _, idx in GROUPS[n][1:]
        )
        gains_ok = all(
            paired_ci([results[i][n][j] for j in idx], [BASE[n][j] for j in idx], resamples=200)[1] > 0
            for n in names
            for g, idx in GROUPS[n][1:]
            if g.split(": ", 1)[1] in REQUIRE_GAIN
        )
        kinds_ok = kinds_ok and gains_ok
        if min(lows) >= TOLERANCE and kinds_ok:
            return i, gain, min(lows), True
        if fallback is None or (kinds_ok, min(lows)) > fallback[4:]:
            fallback = (i, gain, min(lows), False, kinds_ok, min(lows))
    return fallback[:4]


def describe(s):
    return ", ".join(f"{k}={v}" for k, v in s.items())


def row(name, firsts_h, qs):
    b = [bm25_rank(q[1]) for q in qs]
    d10 = paired_ci(hits(firsts_h, 10), hits(b, 10))
    dm = paired_ci(rr(firsts_h), rr(b))
    return (f"| {name} | {len(qs)} | {mean(hits(b, 10)):.4f} / {mean(rr(b)):.4f} | "
            f"{mean(hits(firsts_h, 5)):.4f} / {mean(hits(firsts_h, 10)):.4f} / {mean(rr(firsts_h)):.4f} | "
            f"{d10[0]:+.4f} [{d10[1]:+.4f}, {d10[2]:+.4f}] | {dm[0]:+.4f} [{dm[1]:+.4f}, {dm[2]:+.4f}] |"), dm[1]


def report(name, s, per_kind=True):
    qs = SETS[name]
    lines = []
    firsts = [fused_rank(q, s) for q in qs]
    text, low = row(name, firsts, qs)
    lines.append(text)
    kinds = defaultdict(list)
    for q, f in zip(qs, firsts):
        kinds[q[0]].append((q, f))
    if per_kind and len(kinds) > 1:
        for kind, pairs in sorted(kinds.items()):
            t, _ = row(f"{name}: {kind}", [f for _, f in pairs], [q for q, _ in pairs])
            lines.append(t)
    return lines, low


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dumps", nargs="+")
    ap.add_argument("--family", default="fixed,lang,z")
    ap.add_argument("--weights", default="0.3,0.4,0.5,0.6,0.7,0.8,0.9")
    ap.add_argument("--floors", default="0.0,0.1,0.2,0.3,0.4")
    ap.add_argument("--ceils", default="0.6,0.7,0.8,1.0")
    ap.add_argument("--xls", default="0.0,0.5,1.0")
    ap.add_argument("--zmaxes", default="2,3,4")
    ap.add_argument("--require-gain", default="",
                    help="query kinds that must be better than BM25 beyond noise, e.g. paraphrase-en,crosslingual-zh")
    ap.add_argument("--show", help="only report this setting, e.g. w=0.7,floor=0.1,ceil=0.7")
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    REQUIRE_GAIN.update(k for k in a.require_gain.split(",") if k)
    for p in a.dumps:
        name = p.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        SETS[name] = load(p)
    for name, qs in SETS.items():
        BASE[name] = rr([bm25_rank(q[1]) for q in qs])
        GROUPS[name] = list(groups(name).items())
    header = ("| set | queries | bm25 R@10 / MRR@10 | hybrid R@5 / R@10 / MRR@10 | Δ R@10 [95 % CI] | Δ MRR@10 [95 % CI] |\n"
              "|---|---|---|---|---|---|")
    if a.show:
        s = {k: float(v) for k, v in (kv.split("=") for kv in a.show.split(","))}
        print(describe(s))
        print(header)
        for name in SETS:
            print("\n".join(report(name, s)[0]))
        return 0
    names = list(SETS)
    for fam in a.family.split(","):
        grid = family(fam, a)
        with multiprocessing.Pool(a.jobs) as pool:
            results = pool.map(run_setting, grid, chunksize=4)
        print(f"\n## family {fam}: {len(grid)} settings\n")
        print("Left out (each row: the setting chosen on the other sets, scored on this one):\n")
        print(header)
        passed = 0
        for left in names:
            i, gain, low, met = choose([n for n in names if n != left], grid, results)
            lines, lo = report(left, grid[i])
            how = "chosen" if met else "no setting met every constraint; least bad"
            lines[0] = lines[0].replace(f"| {left} |", f"| {left} ({how}: {describe(grid[i])}) |", 1)
            print("\n".join(lines))
            passed += lo >= TOLERANCE
        print(f"\n{passed} of {len(names)} left-out sets with the MRR CI's lower end at or above {TOLERANCE}")
        i, gain, low, met = choose(names, grid, results)
        how = "chosen on all sets" if met else "on all sets no setting met every constraint; least bad"
        print(f"\n{how}: {describe(grid[i])} (mean dMRR {gain:+.4f}, worst CI low {low:+.4f})\n")
        print(header)
        for name in names:
            print("\n".join(report(name, grid[i], per_kind=False)[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
