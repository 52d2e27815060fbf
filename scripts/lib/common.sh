# Shared by the test scripts: `source scripts/lib/common.sh <name>` sets up
#   jobs          parallel build jobs, exported as CMAKE_BUILD_PARALLEL_LEVEL
#   work          a private temporary directory, removed on success, kept on failure
#   step MSG      prints a section header
#   fail MSG      prints "<name>: MSG" to stderr and exits 1
# and unsets LD_LIBRARY_PATH / LD_PRELOAD so programs find libraries by their RPATH.
#
# It also turns ONNX Runtime's telemetry off for every process the scripts start:
# this is the one place that sets it. ONNX Runtime 1.31 starts a telemetry client
# when an environment is created (a session file in $TMPDIR, a device id and an
# event store under ~/.cache/Microsoft, later DNS to a collector); only this
# variable, read before that, stops it. The library sets it for itself
# (src/embed/runtime.rs); the Python steps (quantisation, model conversion,
# reference embeddings) get it from here. scripts/ort-isolation-test.sh fails if
# any of them runs with telemetry on.
export ORT_DISABLE_TELEMETRY=1
_rm_script_name=$1
start=$SECONDS
jobs=$(nproc 2>/dev/null || echo 2)
unset LD_LIBRARY_PATH LD_PRELOAD
export CMAKE_BUILD_PARALLEL_LEVEL=$jobs

work=$(mktemp -d "${TMPDIR:-/tmp}/robotmem-$_rm_script_name.XXXXXX")
cleanup() {
  local rc=$?
  if [ "$rc" -eq 0 ]; then rm -rf "$work"; else echo "FAILED (exit $rc); files kept in $work" >&2; fi
}
trap cleanup EXIT
step() { printf '\n=== %s\n' "$*"; }
fail() { echo "$_rm_script_name: $*" >&2; exit 1; }

# pinned_venv REQUIREMENTS NAME IMPORT [PIP ARGS...]: a venv of Debian's /usr/bin/python3
# holding the hash-pinned wheels of REQUIREMENTS (installed --no-deps --require-hashes,
# plus PIP ARGS), under ~/.cache/robotmem/NAME-<hash of REQUIREMENTS>, made again only
# when that file changes; checked by importing IMPORT. Sets `venv` to its directory.
pinned_venv() {
  local req=$1 name=$2 module=$3 key
  shift 3
  key=$(sha256sum "$req" | cut -c1-16)
  venv=${XDG_CACHE_HOME:-$HOME/.cache}/robotmem/$name-$key
  if [ "$(cat "$venv/.robotmem-ready" 2>/dev/null)" != "$key" ]; then
    step "$name into $venv (pinned, --require-hashes)"
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check --no-input --no-deps --require-hashes "$@" -r "$req"
    "$venv/bin/python" -c "import $module" || fail "venv $venv is incomplete"
    echo "$key" > "$venv/.robotmem-ready"
  fi
}
