#!/usr/bin/env bash
# Side-by-side workload benchmark: robotmem (Rust, this repository) and the Python
# original (robotmem 0.1.3 from PyPI, embeddings off) on the same operations, in
# one run, alternating. See docs/BENCHMARKS-peer.md.
#
#   scripts/peer-bench.sh [--corpus robot|squad|cmrc] [--memories N] [--recalls N]
#                         [--warmup N] [--rounds N] [--durability normal|full]
#                         [--peer-learn-once] [--no-unshare] [--wait-idle S]
#                         [--save DIR] [--keep]
#
#  1. The Python original goes into a venv under ~/.cache/robotmem/peer-<hash of
#     scripts/peer-requirements.txt> (pinned, --require-hashes, PyPI only).
#  2. `cargo bench --bench peer -- --emit` writes ONE operation file (learns, then
#     recalls) from the generators of the workload bench (benches/workload/corpus.rs,
#     or ../shared/data for squad / cmrc).
#  3. Each round replays it against a fresh database file of each system, robotmem
#     first in odd rounds and the Python original first in even ones, every replay
#     in a process of its own, in a network namespace without network (`unshare -rn`,
#     where the kernel allows it; --no-unshare to skip).
#  4. scripts/peer_bench.py table: medians over rounds, ratio Python / robotmem,
#     the overlap of both systems' results, recall@n of the gold sentence (squad, cmrc).
#
# Before each replay the script waits (at most --wait-idle S seconds, default 600)
# until other processes use less than 0.3 cores, and it records how many cores other
# processes kept busy during each replay (/proc/stat less the replay's own CPU time).
# --peer-learn-once: the Python original learns once (round 1, timed) into a database
# that every round's recall phase then gets a fresh copy of (for 100k, where its
# learn phase takes long); robotmem learns in every round. The table says so.
# Database files go to $CARGO_TARGET_DIR/tmp (default target/tmp), not /tmp, and are
# removed at the end (--keep keeps them; a failed run keeps them too).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

corpus=robot memories=10000 recalls="" warmup=20 rounds=3 durability=normal
learn_once=0 use_unshare=1 save="" keep=0 wait_idle_s=600
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    --corpus) corpus=$2; shift 2 ;;
    --memories) memories=$2; shift 2 ;;
    --recalls) recalls=$2; shift 2 ;;
    --warmup) warmup=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --durability) durability=$2; shift 2 ;;
    --peer-learn-once) learn_once=1; shift ;;
    --no-unshare) use_unshare=0; shift ;;
    --save) save=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --wait-idle) wait_idle_s=$2; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "peer-bench: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
case $corpus in robot|squad|cmrc) ;; *) echo "peer-bench: --corpus robot|squad|cmrc" >&2; exit 2 ;; esac
case $durability in normal|full) ;; *) echo "peer-bench: --durability normal|full" >&2; exit 2 ;; esac

source scripts/bootstrap.sh
# The work directory (operation file, databases, logs) on the build disk, not /tmp.
target=${CARGO_TARGET_DIR:-$repo/target}
mkdir -p "$target/tmp"
export TMPDIR="$target/tmp"
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source scripts/lib/common.sh peer-bench
if [ "$keep" = 1 ]; then trap 'echo "kept $work"' EXIT; fi
fstype=$(findmnt -n -o FSTYPE -T "$work" 2>/dev/null || stat -f -c %T "$work")
[ "$fstype" != tmpfs ] || fail "$work is on tmpfs: set CARGO_TARGET_DIR to a disk"
export ROBOTMEM_DEVSETS="$repo/../shared/data"
if [ "$corpus" != robot ] && [ ! -d "$ROBOTMEM_DEVSETS" ]; then
  fail "no $ROBOTMEM_DEVSETS (the shared folder beside the repository)"
fi

step "Python original (robotmem 0.1.3, PyPI, pinned)"
if [ "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "3.11" ]; then
  fail "the peer's wheels are pinned for CPython 3.11; /usr/bin/python3 is another version"
fi
apt_install_missing python3-venv || fail "python3-venv could not be installed"
pinned_venv scripts/peer-requirements.txt peer robotmem.sdk --no-build-isolation
py="$venv/bin/python"

step "robotmem side (cargo bench --bench peer, release)"
bin=$(cargo bench --locked --bench peer --no-run --message-format=json 2>/dev/null |
  /usr/bin/python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "peer" and m.get("executable"):
        print(m["executable"])')
[ -x "$bin" ] || fail "no bench executable (cargo bench --bench peer --no-run)"

wrap=()
if [ "$use_unshare" = 1 ]; then
  if unshare -rn true 2>/dev/null; then wrap=(unshare -rn); else echo "unshare -rn is not allowed here: replays run with the network" >&2; fi
fi

ops="$work/ops.jsonl"
emit=("$bin" --emit "$ops" --corpus "$corpus" --memories "$memories" --warmup "$warmup")
[ -z "$recalls" ] || emit+=(--recalls "$recalls")
step "operations: ${emit[*]:1}"
"${emit[@]}"
head -1 "$ops"

load1() { cut -d' ' -f1 /proc/loadavg; }
# busy: "SECONDS BUSY_TICKS" now (all CPUs; /proc/stat, 100 ticks a second).
busy() { echo "$(date +%s.%N) $(awk '/^cpu / {print $2+$3+$4+$7+$8+$9}' /proc/stat)"; }
# others_cores "T0 B0" "T1 B1" OWN_CPU_S: the cores that other processes kept busy in between.
others_cores() {
  awk -v a="$1" -v b="$2" -v own="${3:-0}" 'BEGIN { split(a, x, " "); split(b, y, " ");
    dt = y[1] - x[1]; o = ((y[2] - x[2]) / 100 - own) / (dt > 0 ? dt : 1); printf "%.2f", (o < 0 ? 0 : o) }'
}
# Waits (at most --wait-idle seconds) until other processes use less than 0.3 cores
# over 3 s, so that a replay does not start in the middle of someone's build.
wait_idle() {
  local t0=$SECONDS b0 o
  while :; do
    b0=$(busy); sleep 3; o=$(others_cores "$b0" "$(busy)")
    awk -v o="$o" 'BEGIN { exit !(o < 0.3) }' && return 0
    if ((SECONDS - t0 >= wait_idle_s)); then echo "    (still $o cores busy elsewhere after ${wait_idle_s} s: going on)"; return 0; fi
    echo "    waiting: $o cores busy elsewhere"; sleep 20
  done
}
rmdb() { rm -f "$1" "$1-wal" "$1-shm" "$1-lock"; }
# run SYSTEM ROUND PHASE DB [REUSED]: one replay in a process of its own; its JSON
# line goes to results.jsonl with the round, the order and the load around it.
results="$work/results.jsonl"
run() {
  local sys=$1 round=$2 phase=$3 db=$4 reused=${5:-false} l0 out cmd b0 b1 own others
  out="$work/r$round-$sys-$phase"
  if [ "$sys" = robotmem ]; then
    cmd=("$bin" --replay "$ops" --db "$db" --durability "$durability" --phase "$phase")
  else
    cmd=("$py" scripts/peer_bench.py replay "$ops" --db "$db" --phase "$phase")
  fi
  if [ "$round" = 1 ] && [ "$phase" != learn ]; then cmd+=(--ranked "$work/r1-$sys.ranked"); fi
  wait_idle
  l0=$(load1)
  echo "--- round $round: $sys ($phase), load $l0"
  b0=$(busy)
  "${wrap[@]}" env TMPDIR="$work" "${cmd[@]}" >"$out.out" 2>"$out.err" || { tail -20 "$out.err" >&2; fail "$sys replay failed"; }
  b1=$(busy)
  grep -v '^{"bench"' "$out.out" | sed 's/^/    /'
  grep '^{"bench":"peer-replay"' "$out.out" | tail -1 >"$out.json"
  own=$("$py" -c 'import json,sys; print(json.load(open(sys.argv[1]))["cpu_s"])' "$out.json")
  others=$(others_cores "$b0" "$b1" "$own")
  echo "    other processes kept $others cores busy during this replay"
  "$py" -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"round": int(sys.argv[2]), "order": sys.argv[3], "reused": sys.argv[4] == "true",
                  "load1_before": float(sys.argv[5]), "load1_after": float(sys.argv[6]),
                  "others_cores": float(sys.argv[7]), "result": r}))' \
    "$out.json" "$round" "$sys" "$reused" "$l0" "$(load1)" "$others" >>"$results"
}

peer_round() { # ROUND
  local db="$work/r$1-py.db" f
  if [ "$learn_once" = 0 ]; then
    run robotmem-py "$1" all "$db"; rmdb "$db"; return
  fi
  if [ "$1" = 1 ]; then
    run robotmem-py 1 learn "$work/py-learned.db"
  fi
  for f in "" -wal -shm; do [ ! -e "$work/py-learned.db$f" ] || cp "$work/py-learned.db$f" "$db$f"; done
  run robotmem-py "$1" recall "$db" "$([ "$1" = 1 ] && echo false || echo true)"
  rmdb "$db"
}

step "replays: $rounds rounds, corpus $corpus, $memories memories, durability $durability (robotmem)"
started=$SECONDS
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then
    run robotmem "$r" all "$work/r$r-rs.db"; rmdb "$work/r$r-rs.db"; peer_round "$r"
  else
    peer_round "$r"; run robotmem "$r" all "$work/r$r-rs.db"; rmdb "$work/r$r-rs.db"
  fi
done
rmdb "$work/py-learned.db"

step "side by side"
echo "revision $(git rev-parse --short HEAD)$(git status --porcelain -- src Cargo.toml Cargo.lock | grep -q . && echo +dirty), $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(free -g | awk '/^Mem:/ {print $2}') GiB RAM; databases on $fstype ($work)"
echo "corpus $corpus, $memories memories, $rounds rounds ($( [ "$learn_once" = 1 ] && echo 'Python learned once, its recall rounds on copies' || echo 'both learn every round')), robotmem durability $durability, replays under: ${wrap[*]:-(no namespace)}"
echo "replays took $((SECONDS - started)) s; load average now: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
table=("$py" scripts/peer_bench.py table "$results" --ops "$ops" --ranked "$work/r1-robotmem.ranked" "$work/r1-robotmem-py.ranked")
"${table[@]}" | tee "$work/table.md"
if [ -n "$save" ]; then
  mkdir -p "$save"
  tag="$corpus-$memories"
  cp "$results" "$save/peer-$tag-results.jsonl"
  cp "$work/table.md" "$save/peer-$tag-table.md"
  echo "saved $save/peer-$tag-results.jsonl and -table.md"
fi
