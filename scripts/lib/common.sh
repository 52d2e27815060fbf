# Shared by the test scripts: `source scripts/lib/common.sh <name>` sets up
#   jobs          parallel build jobs, exported as CMAKE_BUILD_PARALLEL_LEVEL
#   work          a private temporary directory, removed on success, kept on failure
#   step MSG      prints a section header
#   fail MSG      prints "<name>: MSG" to stderr and exits 1
# and unsets LD_LIBRARY_PATH / LD_PRELOAD so programs find libraries by their RPATH.
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
