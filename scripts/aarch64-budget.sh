#!/usr/bin/env bash
# Memory and file budget of robotmem on aarch64, and instruction counts x86_64 vs
# aarch64 for the same workload (issue 31; the figures of docs/ARM64.md). A
# documented command, not part of the test suite.
#
# Without ARM hardware, under qemu-user: times mean nothing, and the process's
# RSS is the emulator's (its translation cache and its own heap included). So:
#   1. the databases are built natively (benches/arm/budget.rs `build`: the
#      workload bench's synthetic robot corpus; with the model the first
#      ROBOTMEM_BUDGET_REAL memories embedded, the rest perturbed copies of their
#      vectors): the file sizes;
#   2. the file format is the same on both: a few thousand memories are learned
#      under qemu-aarch64 and natively, and their file sizes compared;
#   3. each database is opened, recalled (the workload bench's query mix) and
#      learned into (`run`) three times:
#        natively                 peak RSS (VmHWM) and heap in use of x86_64;
#        under valgrind callgrind x86_64 instructions of each phase;
#        under qemu-aarch64 with benches/arm/insn_count.c
#                                 aarch64 instructions of each phase, and the
#                                 aarch64 process's heap in use (malloc's count:
#                                 every allocation of Rust, SQLite and ONNX
#                                 Runtime, the same code as on x86_64), and the
#                                 qemu-user RSS (includes the emulator);
#   4. prints the budget (file size, x86_64 peak RSS, heap in use on both) and
#      the instructions per open / recall / learn at both sizes with their growth.
#
# Usage: scripts/aarch64-budget.sh        (10k and 100k memories: 694 s on a 2-core
#                                          machine loaded by other work, most of it
#                                          valgrind at 100k)
# Environment:
#   ROBOTMEM_BUDGET_SIZES    database sizes (default "10000 100000")
#   ROBOTMEM_BUDGET_REAL     memories embedded by the model in a database with
#                            vectors (default 10000; the others get copied vectors)
#   ROBOTMEM_BUDGET_RECALLS  recalls per run (default 40 of the workload bench's mix:
#                            the first of each kind, then 19 plain, 4 with a
#                            context_filter used for the first time, 5 with one
#                            used before, 9 with a spatial_sort)
#   ROBOTMEM_BUDGET_LEARNS   learns per run (default 11: the first, then 10)
#   ROBOTMEM_BUDGET_CHECK    memories learned under qemu for the file check
#                            (default 2000, a tenth of them with the model)
#   ROBOTMEM_AARCH64_CPU     the CPU qemu emulates (default cortex-a76;
#                            benches/arm/qemu-prefix.sh)
#   ROBOTMEM_BUDGET_RESULTS  keep the JSON lines and the logs in this directory
# Needs: scripts/lib/aarch64.sh's environment, Debian's qemu-user (the dynamic
# qemu-aarch64, which loads TCG plugins; installed here if missing), valgrind,
# gcc, python3, the model and both ONNX Runtimes (.cache/models/onnxruntime and
# onnxruntime-aarch64).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
source scripts/lib/common.sh aarch64-budget
source scripts/lib/aarch64.sh
source benches/arm/qemu-prefix.sh

read -ra sizes <<<"${ROBOTMEM_BUDGET_SIZES:-10000 100000}"
real=${ROBOTMEM_BUDGET_REAL:-10000}
recalls=${ROBOTMEM_BUDGET_RECALLS:-40}
learns=${ROBOTMEM_BUDGET_LEARNS:-11}
check=${ROBOTMEM_BUDGET_CHECK:-2000}
cpu=${ROBOTMEM_AARCH64_CPU:-cortex-a76}
out=${ROBOTMEM_BUDGET_RESULTS:-$work/results}
models=$repo/.cache/models
model_dir=$models/use-multilingual-v3-int8
ort_x86=$models/onnxruntime/libonnxruntime.so
ort_arm=$models/onnxruntime-aarch64/libonnxruntime.so

skip() {
  printf '\n!!!!!!!!\nSKIPPED: aarch64 budget: %s\n!!!!!!!!\n' "$*" | tee /dev/stderr
  exit 0
}

step "environment"
aarch64_setup || skip "$aarch64_why"
host_cargo() { env -u RUSTC cargo "$@"; }
if ! command -v qemu-aarch64 >/dev/null; then
  echo "installing Debian's qemu-user (the dynamic qemu-aarch64, for TCG plugins)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends qemu-user >/dev/null ||
    skip "could not install qemu-user"
fi
for tool in valgrind gcc python3; do command -v "$tool" >/dev/null || skip "no $tool"; done
[ -f "$model_dir/model.onnx" ] || skip "no $model_dir (run scripts/fetch-model.sh)"
[ -f "$ort_x86" ] || skip "no $ort_x86 (run scripts/fetch-model.sh)"
[ -f "$ort_arm" ] || skip "no $ort_arm (the aarch64 ONNX Runtime, pinned in scripts/fetch-model.sh)"
qemu_prefix "$work/qemu-prefix" "$cpu" || fail "ROBOTMEM_AARCH64_CPU: $qemu_prefix_why"
plugin=$work/libinsn_count.so
gcc -shared -fPIC -O2 -Wall -o "$plugin" benches/arm/insn_count.c
mkdir -p "$out" "$work/db" "$work/scratch"
echo "$(qemu-aarch64 --version | head -1), -cpu $cpu, glibc from $qemu_prefix_libc; $(valgrind --version)"
echo "host: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"

step "build benches/arm/budget.rs for x86_64 and aarch64"
exe() { sed -n 's/^ *Executable .*(\(.*\))$/\1/p' | tail -1; }
bx=$(host_cargo bench --locked --bench arm-budget --no-run 2>&1 | tee /dev/stderr | exe)
ba=$("$AARCH64_CARGO" bench --locked --target "$AARCH64_TRIPLE" --target-dir "$AARCH64_TARGET_DIR" \
  --bench arm-budget --no-run 2>&1 | tee /dev/stderr | exe)
[[ $bx = /* ]] || bx=$repo/$bx
[[ $ba = /* ]] || ba=$repo/$ba
{ [ -x "$bx" ] && [ -x "$ba" ]; } || fail "bench executables not found ($bx, $ba)"

model_x86=(--model-dir "$model_dir" --ort-library "$ort_x86")
model_arm=(--model-dir "$model_dir" --ort-library "$ort_arm")
qemu() { qemu-aarch64 "$@"; }
# record LABEL JSON-LINE: appends {"label": LABEL, ...} to $out/budget.jsonl.
record() { python3 -c 'import json,sys; d=json.loads(sys.argv[2]); d["label"]=sys.argv[1]; print(json.dumps(d))' "$1" "$2" >>"$out/budget.jsonl"; }

step "file format: the same memories learned natively and under qemu-aarch64"
for arch in x86_64 aarch64; do
  if [ $arch = x86_64 ]; then b=("$bx"); m=("${model_x86[@]}"); else b=(qemu "$ba"); m=("${model_arm[@]}"); fi
  j=$("${b[@]}" build --db "$work/scratch/check-bm25-$arch.db" --memories "$check")
  record "check bm25 $check $arch" "$j"
  j=$("${b[@]}" build --db "$work/scratch/check-model-$arch.db" --memories $((check / 10)) "${m[@]}")
  record "check model $((check / 10)) $arch" "$j"
done
rm -f "$work/scratch"/check-*

step "databases (built natively)"
for n in "${sizes[@]}"; do
  t0=$SECONDS
  record "build bm25 $n" "$("$bx" build --db "$work/db/bm25-$n.db" --memories "$n")"
  record "build model $n" "$("$bx" build --db "$work/db/model-$n.db" --memories "$n" --real "$real" "${model_x86[@]}")"
  echo "  $n memories: $((SECONDS - t0)) s"
done

# fresh NAME: a scratch copy of database NAME (each run learns into its copy).
fresh() {
  rm -f "$work/scratch"/*
  cp "$work/db/$1.db" "$work/scratch/run.db"
  echo "$work/scratch/run.db"
}

step "runs: native, callgrind (x86_64 instructions), qemu-aarch64 + insn_count (aarch64 instructions)"
run_args=(run --recalls "$recalls" --learns "$learns")
for n in "${sizes[@]}"; do
  for kind in bm25 model; do
    mx=() ma=()
    if [ $kind = model ]; then mx=("${model_x86[@]}") ma=("${model_arm[@]}"); fi
    t0=$SECONDS
    record "native $kind $n" "$("$bx" "${run_args[@]}" --db "$(fresh "$kind-$n")" "${mx[@]}")"
    cg=$work/cg-$kind-$n
    mkdir -p "$cg"
    j=$(valgrind --tool=callgrind --dump-before=robotmem_arm_mark --callgrind-out-file="$cg/out" \
      --log-file="$cg/valgrind.log" "$bx" "${run_args[@]}" --threads 1 --db "$(fresh "$kind-$n")" "${mx[@]}")
    parts=$(for f in "$cg"/out.*; do sed -n 's/^part: //p;s/^summary: //p' "$f" | paste -sd' '; done | sort -n |
      awk '{print $2}' | paste -sd,)
    record "callgrind $kind $n" "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["insn_parts"]=[int(x) for x in sys.argv[2].split(",")]; print(json.dumps(d))' "$j" "$parts")"
    rm -rf "$cg"
    j=$(qemu -plugin "$plugin" -d plugin -D "$work/insn.txt" "$ba" "${run_args[@]}" --threads 1 \
      --db "$(fresh "$kind-$n")" "${ma[@]}")
    parts=$(sed -n 's/^insn-count mark [0-9]* //p' "$work/insn.txt" | paste -sd,)
    record "qemu $kind $n" "$(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); d["insn_parts"]=[int(x) for x in sys.argv[2].split(",")]; print(json.dumps(d))' "$j" "$parts")"
    echo "  $kind $n: $((SECONDS - t0)) s"
  done
done
rm -rf "$work/scratch" "$work/db"

step "report"
python3 - "$out/budget.jsonl" <<'PY'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
by = {r["label"]: r for r in rows}
mib = lambda b: f"{b / 1048576:.1f}"
sizes = sorted({int(r["label"].split()[2]) for r in rows if r["label"].startswith("build")})

print("file format (the same memories learned by both builds):")
for k in ("bm25", "model"):
    a, b = [r for l, r in by.items() if l.startswith(f"check {k}") and l.endswith("x86_64")], \
           [r for l, r in by.items() if l.startswith(f"check {k}") and l.endswith("aarch64")]
    if a and b:
        a, b = a[0], b[0]
        same = "the same" if a["file_bytes"] == b["file_bytes"] else "DIFFERENT"
        print(f"  {k:5} {a['memories']:6} memories: x86_64 {a['file_bytes']} bytes, aarch64 {b['file_bytes']} bytes: {same}")

some = next(r for r in rows if r["label"].startswith("native"))
print(f"\nbudget per database (a process that opens it, recalls {sum(some['recalls'].values())} times and learns {some['learns']} memories):")
print("  memories model   file MiB | x86_64: peak RSS MiB  heap in use MiB | aarch64: heap in use MiB  qemu-user RSS MiB (includes the emulator)")
for n in sizes:
    for k in ("bm25", "model"):
        nat, q = by.get(f"native {k} {n}"), by.get(f"qemu {k} {n}")
        if not nat or not q:
            continue
        heap = lambda r: max(r[p]["malloc_in_use"] for p in ("after_open", "after_recalls", "after_learns"))
        print(f"  {n:8} {'yes' if k == 'model' else 'no':5} {mib(nat['file_bytes']):>9} | {mib(nat['after_close']['vm_hwm_kb'] * 1024):>19}  "
              f"{mib(heap(nat)):>15} | {mib(heap(q)):>23}  {mib(q['after_close']['vm_hwm_kb'] * 1024):>17}")

PHASES = [("open", 1, None), ("first recall of each kind", 2, "first"), ("recall, plain", 3, "plain"),
          ("recall, filter's first use", 4, "filter_new"), ("recall, context_filter", 5, "filter"),
          ("recall, spatial_sort", 6, "spatial"), ("first learn", 7, None), ("learn", 8, "learns")]


def per_op(r, phase, count):
    c = r["insn_parts"][2 * phase - 1]
    if count is None:
        return c
    n = r["learns"] - 1 if count == "learns" else r["recalls"][count]
    return c / max(n, 1)


print("\ninstructions per operation (x86_64: valgrind callgrind; aarch64: qemu-aarch64 + insn_count; embed_threads 1):")
for k in ("bm25", "model"):
    print(f"  {'BM25 only' if k == 'bm25' else 'with the model (hybrid recall, learn with an embedding)'}:")
    head = "    phase                       " + "".join(f"x86_64 {n:>7}  aarch64 {n:>7}  a/x   " for n in sizes)
    if len(sizes) == 2:
        head += "growth x86_64  growth aarch64"
    print(head)
    for name, phase, count in PHASES:
        line, growth = f"    {name:27}", []
        for n in sizes:
            x, a = by.get(f"callgrind {k} {n}"), by.get(f"qemu {k} {n}")
            if not x or not a:
                line += " " * 38
                continue
            vx, va = per_op(x, phase, count), per_op(a, phase, count)
            growth.append((vx, va))
            line += f"{vx / 1e6:11.2f}M  {va / 1e6:11.2f}M  {va / vx:4.2f}  "
        if len(growth) == 2:
            line += f"{growth[1][0] / growth[0][0]:12.2f}  {growth[1][1] / growth[0][1]:14.2f}"
        print(line)
PY
echo "results: $out/budget.jsonl"
echo "aarch64-budget: done in $((SECONDS - start)) s"
