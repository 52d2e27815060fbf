#!/usr/bin/env bash
# The workload benchmark of this checkout and of an earlier release, side by side
# in one run on the same machine: both benches are built (the earlier one from a
# git worktree of its commit, cached under ~/.cache/robotmem/baseline-<commit>),
# then run alternately with the same arguments (baseline, current, baseline,
# current, ...), and every latency row both print is shown next to each other
# (p50 / p95 of each run), followed by the memory and open lines of each run.
#
# Usage: scripts/bench-side-by-side.sh [--baseline COMMIT] [--pairs N] -- BENCH ARGS...
#   --baseline COMMIT  default e09db4c (0.3.0: the last commit before 0.4.0)
#   --pairs N          alternations (default 2)
# Examples (issue 29's table):
#   scripts/bench-side-by-side.sh -- --embedding --phases hybrid --large 100000 --large-build copy \
#       --model-dir .cache/models/use-multilingual-v3-int8 --ort-library $PWD/.cache/models/onnxruntime/libonnxruntime.so
#   (0.3.0's bench looks for ONNX Runtime under its own tree unless --ort-library names it)
#   scripts/bench-side-by-side.sh -- --durability normal --memories 1000000 --warmup 0 --recalls 800
# Each run makes its own database (a file of one version cannot be opened by the
# other), in a temporary directory removed at the end; the logs are kept in
# target/side-by-side/. This is a measurement, not a test: nothing is asserted.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
baseline=e09db4c pairs=2
while (($#)); do
  case $1 in
    --baseline) baseline=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--baseline COMMIT] [--pairs N] -- BENCH ARGS..." >&2; exit 2 ;;
  esac
done
commit=$(git rev-parse --verify "$baseline^{commit}") || { echo "no commit $baseline in this clone" >&2; exit 1; }
short=${commit:0:9}

# bench_binary DIR: builds the workload bench in DIR and prints the binary's path.
bench_binary() {
  (cd "$1" && cargo bench --locked --bench workload --no-run --message-format=json 2>/dev/null) |
    python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "workload" and m.get("executable"):
        print(m["executable"])'
}

cache=${XDG_CACHE_HOME:-$HOME/.cache}/robotmem/baseline-$short
if [ ! -d "$cache/.git" ] && [ ! -f "$cache/.git" ]; then
  echo "== worktree of $short in $cache"
  mkdir -p "$(dirname "$cache")"
  git worktree add --detach "$cache" "$commit" >/dev/null
fi
echo "== building the workload bench of $short and of this checkout (release)"
old=$(bench_binary "$cache" | tail -n 1)
new=$(bench_binary "$root" | tail -n 1)
[ -x "$old" ] && [ -x "$new" ] || { echo "could not build the benches ($old, $new)" >&2; exit 1; }

logs=$root/target/side-by-side/$(date +%Y%m%d-%H%M%S)
mkdir -p "$logs"
work=$(mktemp -d "${TMPDIR:-/tmp}/robotmem-side-by-side.XXXXXX")
trap 'rm -rf "$work"' EXIT
now_rev=$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src Cargo.toml Cargo.lock || echo "+changes")
for ((i = 1; i <= pairs; i++)); do
  for side in old new; do
    bin=${!side}
    dir=$work/$side-$i
    mkdir -p "$dir"
    echo "== run $i, $([ $side = old ] && echo "$short (baseline)" || echo "$now_rev (this checkout)"): $*"
    # Both run from this checkout, so relative paths in the arguments (a model
    # directory under .cache/) mean the same for both.
    "$bin" --bench --dir "$dir" "$@" >"$logs/$side-$i.log" 2>&1 ||
      { echo "the $side bench failed; see $logs/$side-$i.log" >&2; exit 1; }
    rm -rf "$dir"
  done
done

python3 - "$logs" "$pairs" "$short" "$now_rev" <<'PY'
import re, sys, pathlib
logs, pairs, old_name, new_name = pathlib.Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
row = re.compile(r"^\s+(\S.*?)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)(\s.*)?$")
def rows(path):
    out, other = {}, []
    for line in path.read_text(errors="replace").splitlines():
        m = row.match(line)
        if m:
            out.setdefault(m.group(1).strip(), (float(m.group(3)), float(m.group(4))))
        elif re.search(r"RSS|open|MiB|recall@", line) and not line.startswith("{"):
            other.append(line.strip())
    return out, other
runs = {s: [rows(logs / f"{s}-{i}.log") for i in range(1, pairs + 1)] for s in ("old", "new")}
labels = [l for l in runs["new"][0][0] if any(l in r[0] for r in runs["old"])]
fmt = lambda rs, l: "; ".join(f"{r[0][l][0]:.3f} / {r[0][l][1]:.3f}" for r in rs if l in r[0])
print(f"\n| p50 / p95 ms per run | {old_name} (baseline) | {new_name} (this checkout) |\n|---|---|---|")
for l in labels:
    print(f"| {l} | {fmt(runs['old'], l)} | {fmt(runs['new'], l)} |")
only_new = [l for l in runs["new"][0][0] if l not in labels]
if only_new:
    print(f"\nRows only this checkout prints: {', '.join(only_new)}")
for s, name in (("old", old_name), ("new", new_name)):
    print(f"\nMemory and open lines, {name}:")
    for i, r in enumerate(runs[s], 1):
        for line in r[1]:
            print(f"  run {i}: {line}")
print(f"\nlogs: {logs}")
PY
