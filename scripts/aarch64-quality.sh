#!/usr/bin/env bash
# Retrieval quality on real text, aarch64 against x86_64 (issue 31): the devsets
# test (tests/devsets.rs) built for both, run on the same subset of the SQuAD and
# CMRC dev sets (the first ROBOTMEM_AARCH64_MEMORIES memories of each, a fixed
# sample of the questions they answer), natively on x86_64 and under qemu-user
# for aarch64 with the aarch64 ONNX Runtime; then the two runs' results are
# compared question by question (docs/ARM64.md, "Quality"):
#   - bm25_only: the same memories in the same order for every question
#     (BM25 is integer counts and the same f64 arithmetic: nothing may move);
#   - hybrid: the same memories in the same order, except where two hits trade
#     places (or one at the cut trades with one just outside) while their fused
#     scores are within TOL_SCORE of each other on both machines: ONNX Runtime's
#     aarch64 kernels give slightly different floats, measured here as well
#     (memory and query vectors, int8 codes of the vector index, cosines);
#   - the floats themselves: every cosine of a hit found on both machines within
#     TOL_COS, else the tolerance above no longer holds;
#   - what learning did (memories stored, duplicates merged, vectors) the same.
# Prints the comparison (identical / traded near-ties / differences), the float
# differences, and R@1/R@5/R@10/MRR@10 of both runs side by side; exits 1 on a
# real difference.
#
# Usage: scripts/aarch64-quality.sh   (from anywhere; on a 2-core machine 117 s,
#        72 s of it the emulated run, mostly its learning; 282 s / 239 s while
#        other work loaded the machine)
# Environment:
#   ROBOTMEM_AARCH64_MEMORIES  memories learned per set (default 800)
#   ROBOTMEM_AARCH64_QUERIES   questions recalled per set (default 200)
#   ROBOTMEM_AARCH64_VECTORS   query vectors compared per set (default 50; every
#                              learned memory's vector is compared)
#   ROBOTMEM_AARCH64_SETS      default squad,cmrc
#   ROBOTMEM_AARCH64_CPU       the CPU qemu emulates: cortex-a76 (default; Raspberry
#                              Pi 5, RK3588: NEON with the dot-product instructions),
#                              cortex-a72 (Raspberry Pi 4: NEON without them),
#                              neoverse-n1 or max (SVE, int8 matrix instructions);
#                              ONNX Runtime picks its int8 kernels by the features
#   ROBOTMEM_AARCH64_RESULTS   keep both runs' results files and logs in this directory
#   ROBOTMEM_REQUIRE_AARCH64=1 a missing piece (cross toolchain, aarch64 ONNX
#                              Runtime, model, dev sets) fails instead of SKIPPED
# Needs: scripts/lib/aarch64.sh's environment (Debian packages), the model and
# the x86_64 ONNX Runtime (scripts/fetch-model.sh), the aarch64 ONNX Runtime in
# .cache/models/onnxruntime-aarch64/, ../shared/data, python3.
#
# Two things of qemu-user 7.2 are worked around for this script's processes
# (benches/arm/qemu-prefix.sh): a hang from two glibc versions, and a SIGSEGV in
# ONNX Runtime's CPU detection.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/lib/common.sh aarch64-quality
source scripts/lib/aarch64.sh

# The tolerances (docs/ARM64.md says where they come from).
TOL_COS=0.005   # |cosine(x86) - cosine(aarch64)| of the same question and memory
TOL_SCORE=0.01  # fused scores (best hit = 1.0) of two hits that may trade places

memories=${ROBOTMEM_AARCH64_MEMORIES:-800}
queries=${ROBOTMEM_AARCH64_QUERIES:-200}
nvectors=${ROBOTMEM_AARCH64_VECTORS:-50}
sets=${ROBOTMEM_AARCH64_SETS:-squad,cmrc}
cpu=${ROBOTMEM_AARCH64_CPU:-cortex-a76}
models=$repo/.cache/models
model=use-multilingual-v3-int8
ort_x86=$models/onnxruntime/libonnxruntime.so
ort_arm=$models/onnxruntime-aarch64/libonnxruntime.so

skip() {
  if [ "${ROBOTMEM_REQUIRE_AARCH64:-}" = 1 ]; then fail "$* (and ROBOTMEM_REQUIRE_AARCH64=1)"; fi
  printf '\n!!!!!!!!\nSKIPPED: aarch64 quality check: %s\n!!!!!!!!\n' "$*" | tee /dev/stderr
  exit 0
}

step "aarch64 cross environment"
aarch64_setup || skip "$aarch64_why"
# aarch64_setup exports RUSTC for Debian's cargo; the x86_64 build uses the
# machine's own toolchain.
host_cargo() { env -u RUSTC cargo "$@"; }
command -v python3 >/dev/null || skip "no python3 for the comparison"
[ -f "$models/$model/model.onnx" ] || skip "no $models/$model (run scripts/fetch-model.sh)"
[ -f "$ort_x86" ] || skip "no $ort_x86 (run scripts/fetch-model.sh)"
[ -f "$ort_arm" ] || skip "no $ort_arm (the aarch64 ONNX Runtime, pinned in scripts/fetch-model.sh)"
file -L "$ort_arm" 2>/dev/null | grep -q 'ARM aarch64' || skip "$ort_arm is not an aarch64 library"
IFS=, read -ra set_list <<<"$sets"
for s in "${set_list[@]}"; do
  case $s in
    squad) f=squad-dev-sentences.jsonl.gz ;;
    cmrc) f=cmrc2018-dev-sentences.jsonl.gz ;;
    *) fail "ROBOTMEM_AARCH64_SETS: $s (squad or cmrc)" ;;
  esac
  [ -f "${ROBOTMEM_DEVSETS:-$repo/../shared/data}/$f" ] || skip "no dev set $f (../shared/data or \$ROBOTMEM_DEVSETS)"
done

# The qemu prefix: one glibc and an aarch64 /proc/cpuinfo (benches/arm/qemu-prefix.sh).
source benches/arm/qemu-prefix.sh
qemu_prefix "$work/qemu-prefix" "$cpu" || fail "ROBOTMEM_AARCH64_CPU: $qemu_prefix_why"
echo "qemu: $($AARCH64_QEMU --version | head -1), -cpu $cpu, glibc from $qemu_prefix_libc"

# The model directories each run sees: the same model files, each machine's runtime.
for arch in x86_64 aarch64; do
  mkdir -p "$work/models-$arch"
  ln -s "$models/$model" "$work/models-$arch/$model"
done
ln -s "$(dirname "$ort_x86")" "$work/models-x86_64/onnxruntime"
ln -s "$(dirname "$ort_arm")" "$work/models-aarch64/onnxruntime"

step "build the devsets test: x86_64 (release) and aarch64 (release, cross)"
host_cargo test --release --locked --test devsets --no-run
"$AARCH64_CARGO" test --release --locked --target "$AARCH64_TRIPLE" --target-dir "$AARCH64_TARGET_DIR" \
  --test devsets --no-run

# run ARCH CARGO-TEST-COMMAND...: the devsets test on the subset, results into $work/ARCH.
run() {
  local arch=$1 t0=$SECONDS
  shift
  mkdir -p "$work/$arch"
  echo "$arch: $sets, the first $memories memories, $queries questions each"
  if ! ROBOTMEM_TEST_MODELS=$work/models-$arch ROBOTMEM_REQUIRE_MODEL=1 ROBOTMEM_REQUIRE_DEVSETS=1 \
    ROBOTMEM_DEVSETS_SETS=$sets ROBOTMEM_DEVSETS_MEMORIES=$memories ROBOTMEM_DEVSETS_QUERIES=$queries \
    ROBOTMEM_DEVSETS_VECTORS=$nvectors ROBOTMEM_DEVSETS_RESULTS=$work/$arch \
    "$@" --test devsets -- --nocapture >"$work/$arch.log" 2>&1; then
    tail -40 "$work/$arch.log" >&2
    fail "the $arch devsets run failed (log: $work/$arch.log)"
  fi
  grep -E '^(squad|cmrc) *(bm25_only|hybrid) |memories learned|test result' "$work/$arch.log"
  echo "$arch: $((SECONDS - t0)) s"
}

step "x86_64 run (native)"
run x86_64 host_cargo test --release --locked
step "aarch64 run (qemu-user, -cpu $cpu; the runner is $CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER)"
run aarch64 "$AARCH64_CARGO" test --release --locked --target "$AARCH64_TRIPLE" --target-dir "$AARCH64_TARGET_DIR"

if [ -n "${ROBOTMEM_AARCH64_RESULTS:-}" ]; then
  mkdir -p "$ROBOTMEM_AARCH64_RESULTS"
  cp -r "$work/x86_64" "$work/aarch64" "$work/x86_64.log" "$work/aarch64.log" "$ROBOTMEM_AARCH64_RESULTS/"
  echo "results kept in $ROBOTMEM_AARCH64_RESULTS"
fi

step "comparison x86_64 vs aarch64 (TOL_COS $TOL_COS, TOL_SCORE $TOL_SCORE)"
python3 - "$work" "$sets" "$TOL_COS" "$TOL_SCORE" <<'PY'
import json, math, re, sys

work, sets, tol_cos, tol_score = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3]), float(sys.argv[4])
A, B = "x86_64", "aarch64"
bad = []


def lines(arch, name):
    with open(f"{work}/{arch}/{name}", encoding="utf-8") as f:
        return [json.loads(l) for l in f if l.strip()]


def code(v):
    """The vector index's int8 code (src/search/vector/quant.rs: encode)."""
    m = max(abs(x) for x in v)
    s = m / 127.0 if m > 0 else 0.0
    return [max(-127, min(127, round(x / s))) if s else 0 for x in v], s


def vectors(name):
    a = {(r["kind"], r["id"]): r["v"] for r in lines(A, f"{name}-vectors.jsonl")}
    b = {(r["kind"], r["id"]): r["v"] for r in lines(B, f"{name}-vectors.jsonl")}
    if a.keys() != b.keys():
        bad.append(f"{name}: vectors of different texts ({len(a.keys() ^ b.keys())} not on both)")
    for kind in ("memory", "query"):
        keys = sorted(k for k in a.keys() & b.keys() if k[0] == kind)
        if not keys:
            continue
        cos_min, comp_max, l2_max, flips, comps, dec_max, same = 1.0, 0.0, 0.0, 0, 0, 0.0, 0
        for k in keys:
            x, y = a[k], b[k]
            same += x == y
            d = [p - q for p, q in zip(x, y)]
            cos_min = min(cos_min, sum(p * q for p, q in zip(x, y)))  # unit vectors
            comp_max = max(comp_max, max(abs(e) for e in d))
            l2_max = max(l2_max, math.sqrt(sum(e * e for e in d)))
            if kind == "memory":
                (cx, sx), (cy, sy) = code(x), code(y)
                flips += sum(p != q for p, q in zip(cx, cy))
                comps += len(cx)
                dec_max = max(dec_max, math.sqrt(sum((p * sx - q * sy) ** 2 for p, q in zip(cx, cy))))
        msg = (f"  {name:5} {kind:6} vectors: {len(keys):5} ({same} bit for bit the same)  min cosine(x86_64, aarch64) "
               f"{cos_min:.7f}  max |component diff| {comp_max:.2e}  max L2 diff {l2_max:.2e}")
        if kind == "memory":
            msg += f"\n  {name:5} memory int8 codes: {flips} of {comps} components differ ({flips / max(comps, 1):.2e}), max L2 diff of the decoded codes {dec_max:.2e}"
        print(msg)


def compare(name, mode):
    xs, ys = lines(A, f"{name}-{mode}.jsonl"), lines(B, f"{name}-{mode}.jsonl")
    if [r["query_id"] for r in xs] != [r["query_id"] for r in ys]:
        bad.append(f"{name} {mode}: not the same questions")
        return
    identical, traded, differ, widest = 0, 0, [], 0.0
    dcos, dscore = [], []
    for x, y in zip(xs, ys):
        hx, hy = x["hits"], y["hits"]
        sx, sy = {h[0]: h[1] for h in hx}, {h[0]: h[1] for h in hy}
        for h in hx:
            g = next((k for k in hy if k[0] == h[0]), None)
            if g is not None:
                dscore.append(abs(h[1] - g[1]))
                if h[3] is not None and g[3] is not None:
                    dcos.append(abs(h[3] - g[3]))
        ix, iy = [h[0] for h in hx], [h[0] for h in hy]
        if ix == iy and x["ranked"] == y["ranked"]:
            identical += 1
            continue
        why, gaps = [], [0.0]
        if mode == "bm25_only":
            why.append("BM25 order differs")
        elif len(ix) != len(iy):
            why.append(f"{len(ix)} hits vs {len(iy)}")
        else:
            # Only in one list: it must be within TOL_SCORE of that list's last hit.
            for ids, s, other, arch in ((ix, sx, sy, A), (iy, sy, sx, B)):
                for i in ids:
                    if i not in other:
                        gaps.append(s[i] - s[ids[-1]])
                        if gaps[-1] > tol_score:
                            why.append(f"{i} only on {arch}, {gaps[-1]:.4f} above its cut")
            # In both in another order: each inverted pair a near-tie on both machines.
            common = [i for i in ix if i in sy]
            ry = {i: r for r, i in enumerate(iy)}
            for p in range(len(common)):
                for q in range(p + 1, len(common)):
                    i, j = common[p], common[q]
                    if ry[i] > ry[j]:
                        gap = max(abs(sx[i] - sx[j]), abs(sy[i] - sy[j]))
                        gaps.append(gap)
                        if gap > tol_score:
                            why.append(f"{i} and {j} swapped with scores {gap:.4f} apart")
        if why:
            differ.append(f"{x['query_id']}: " + "; ".join(why[:3]))
        else:
            traded += 1
            widest = max(widest, max(gaps))
    n = len(xs)
    mc = max(dcos, default=0.0)
    print(f"  {name:5} {mode:9} {n:4} questions: {identical} identical, {traded} traded near-ties"
          + (f" (score gaps up to {widest:.2e})" if traded else "")
          + f", {len(differ)} differences; max |score diff| {max(dscore, default=0.0):.2e}"
          + (f", max |cosine diff| {mc:.2e} (mean {sum(dcos) / len(dcos):.2e}, {len(dcos)} hit pairs)" if dcos else ""))
    for d in differ[:10]:
        print(f"    DIFFERENCE {d}")
    if differ:
        bad.append(f"{name} {mode}: {len(differ)} questions differ beyond near-ties")
    if mc > tol_cos:
        bad.append(f"{name} {mode}: a cosine differs by {mc:.2e} > TOL_COS {tol_cos}")
    return identical, traded, len(differ)


def learned(name):
    a, b = lines(A, f"{name}-learned.json")[0], lines(B, f"{name}-learned.json")[0]
    keys = ("memories", "queries", "stored", "embedded", "duplicates")
    if any(a[k] != b[k] for k in keys):
        bad.append(f"{name}: learning differed: {[a[k] for k in keys]} vs {[b[k] for k in keys]}")
    print(f"  {name:5} learned: {a['memories']} memories, {a['stored']} stored, {a['embedded']} with a vector, "
          f"duplicates {a['duplicates']} on x86_64; " + ("the same on aarch64" if all(a[k] == b[k] for k in keys) else "DIFFERENT on aarch64"))


def table(arch):
    rows = {}
    with open(f"{work}/{arch}.log", encoding="utf-8") as f:
        for l in f:
            m = re.match(r"^(\w+) +(bm25_only|hybrid) +(\d+) +([\d.]+) +([\d.]+) +([\d.]+) +([\d.]+) ", l)
            if m:
                rows[(m[1], m[2])] = m.groups()[2:]
    return rows


for name in sets:
    learned(name)
    vectors(name)
    for mode in ("bm25_only", "hybrid"):
        compare(name, mode)

ta, tb = table(A), table(B)
print("\n  set    mode       questions | x86_64 R@1 R@5 R@10 MRR@10      | aarch64 R@1 R@5 R@10 MRR@10")
for k in sorted(ta):
    a, b = ta[k], tb.get(k, ("?",) * 5)
    print(f"  {k[0]:6} {k[1]:10} {a[0]:>6}    | {' '.join(a[1:])} | {' '.join(b[1:])}")
if ta.keys() != tb.keys():
    bad.append("the two runs' tables differ in rows")
if bad:
    print("\nFAILED:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("\naarch64 quality: the same results as x86_64 (within the documented float tolerance)")
PY
echo "aarch64-quality: done in $((SECONDS - start)) s"
