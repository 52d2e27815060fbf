#!/usr/bin/env python3
"""Compares what examples/quickstart printed on two machines (scripts/aarch64-test.sh:
x86_64 natively, aarch64 under qemu), line by line.

usage: compare_quickstart.py --mode bm25|hybrid REFERENCE OTHER

What may differ: the database path, the session id (random), timestamps, the
query time, the vector index kernel's name (avx512-vnni / avx2 / neon-dotprod / neon / portable). Everything else is
compared:
  - text outside numbers: exactly;
  - each recall: the same memories; in bm25 mode in the same order with the same
    printed scores (BM25 is double-precision arithmetic on the same integers, no
    machine-specific kernels); in hybrid mode with scores within HYBRID_TOL (the
    two ONNX Runtime builds quantise activations with different int8 kernels,
    so vectors differ in the last digits) and in the same order except between
    hits whose scores are within HYBRID_TOL of each other on both machines;
  - the JSON of a recall: same keys and strings, numbers within the mode's
    tolerance (bm25: 1e-9 relative; hybrid: HYBRID_TOL).
Exit status 0 when they agree; 1 with every difference listed otherwise.
"""
import argparse
import json
import math
import re
import sys

HYBRID_TOL = 0.03
HIT = re.compile(r"^  #(\d+)  score (-?[0-9.]+)  (.*)$")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
VOLATILE_KEYS = {"created_at", "updated_at", "last_accessed", "session_id", "query_ms"}


def normalise(line):
    """The line with what legitimately differs between runs masked."""
    line = UUID.sub("<uuid>", line)
    line = re.sub(r"^(robotmem \S+), database .*$", r"\1, database <path>", line)
    line = re.sub(r"^(\d+ active memories in ).*$", r"\1<path>", line)
    line = re.sub(r"^(embeddings: .*) \([\w-]+ kernel\)$", r"\1 (<kernel> kernel)", line)
    return line


def parse(path):
    """[(kind, payload)]: ('recall', (title, [(id, score, rest)])), ('json', obj), ('line', text)."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        if re.match(r"^.*: \d+ hit\(s\), mode \w+$", line):
            hits = []
            i += 1
            while i < len(lines) and HIT.match(lines[i]):
                m = HIT.match(lines[i])
                hits.append((int(m.group(1)), float(m.group(2)), m.group(3)))
                i += 1
            out.append(("recall", (line, hits)))
            continue
        if line.startswith("{"):
            out.append(("json", json.loads(line)))
        else:
            out.append(("line", normalise(line)))
        i += 1
    return out


def close(a, b, mode):
    if mode == "bm25":
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return abs(a - b) <= HYBRID_TOL


def compare_json(a, b, mode, where, problems):
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            problems.append(f"{where}: keys differ: {sorted(set(a) ^ set(b))}")
        for k in sorted(set(a) & set(b)):
            if k not in VOLATILE_KEYS:
                compare_json(a[k], b[k], mode, f"{where}.{k}", problems)
    elif isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            problems.append(f"{where}: {len(a)} items against {len(b)}")
        for n, (x, y) in enumerate(zip(a, b)):
            compare_json(x, y, mode, f"{where}[{n}]", problems)
    elif isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or isinstance(a, str):
        if a != b:
            problems.append(f"{where}: {a!r} against {b!r}")
    elif isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if not close(float(a), float(b), mode):
            problems.append(f"{where}: {a} against {b}")
    else:
        problems.append(f"{where}: {a!r} against {b!r}")


def compare_recall(ra, rb, mode, problems):
    title, hits_a = ra
    title_b, hits_b = rb
    if title != title_b:
        problems.append(f"recall header: {title!r} against {title_b!r}")
        return
    ids_a = [h[0] for h in hits_a]
    ids_b = [h[0] for h in hits_b]
    if sorted(ids_a) != sorted(ids_b):
        problems.append(f"{title}: hits {ids_a} against {ids_b}")
        return
    by_id_a = {h[0]: h for h in hits_a}
    by_id_b = {h[0]: h for h in hits_b}
    for mid in ids_a:
        _, sa, rest_a = by_id_a[mid]
        _, sb, rest_b = by_id_b[mid]
        if rest_a != rest_b:
            problems.append(f"{title}: #{mid} printed {rest_a!r} against {rest_b!r}")
        if mode == "bm25" and sa != sb:
            problems.append(f"{title}: #{mid} score {sa:.2f} against {sb:.2f}")
        if mode == "hybrid" and abs(sa - sb) > HYBRID_TOL:
            problems.append(f"{title}: #{mid} score {sa:.2f} against {sb:.2f} (tolerance {HYBRID_TOL})")
    if mode == "bm25":
        if ids_a != ids_b:
            problems.append(f"{title}: order {ids_a} against {ids_b}")
        return
    # Hybrid: a pair may swap only if it is a near tie on both machines.
    pos_b = {mid: n for n, mid in enumerate(ids_b)}
    for i, x in enumerate(ids_a):
        for y in ids_a[i + 1 :]:
            if pos_b[x] > pos_b[y]:
                tie_a = abs(by_id_a[x][1] - by_id_a[y][1]) <= HYBRID_TOL
                tie_b = abs(by_id_b[x][1] - by_id_b[y][1]) <= HYBRID_TOL
                if not (tie_a and tie_b):
                    problems.append(f"{title}: #{x} and #{y} swapped (order {ids_a} against {ids_b})")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mode", choices=["bm25", "hybrid"], required=True)
    ap.add_argument("reference")
    ap.add_argument("other")
    args = ap.parse_args()
    a, b = parse(args.reference), parse(args.other)
    problems = []
    if len(a) != len(b):
        problems.append(f"{len(a)} output blocks against {len(b)}")
    recalls = 0
    for (kind_a, pa), (kind_b, pb) in zip(a, b):
        if kind_a != kind_b:
            problems.append(f"{kind_a} {pa!r} against {kind_b} {pb!r}")
        elif kind_a == "recall":
            recalls += 1
            compare_recall(pa, pb, args.mode, problems)
        elif kind_a == "json":
            compare_json(pa, pb, args.mode, "json", problems)
        elif pa != pb:
            problems.append(f"line {pa!r} against {pb!r}")
    want_mode = "hybrid" if args.mode == "hybrid" else "bm25_only"
    modes = [p[0].rsplit("mode ", 1)[1] for k, p in a if k == "recall"]
    if want_mode not in modes:
        problems.append(f"no recall in mode {want_mode} (modes {modes}): was the model loaded as intended?")
    kernels = [re.sub(r"^.*\(([\w-]+) kernel\)$", r"\1", line) for path in (args.reference, args.other)
               for line in open(path, encoding="utf-8").read().splitlines() if line.endswith(" kernel)")]
    if problems:
        print(f"quickstart {args.mode}: {args.reference} and {args.other} differ:")
        for p in problems:
            print("  " + p)
        return 1
    extra = f"; vector kernels {' / '.join(kernels)}" if kernels else ""
    print(f"quickstart {args.mode}: the same output ({len(a)} blocks, {recalls} recalls, modes "
          f"{', '.join(sorted(set(modes)))}{extra})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
