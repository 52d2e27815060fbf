# Sourced by scripts/bootstrap.sh. A clean clone (CI) has no target/ directory,
# so every run would compile all crates again (debug, release, the aarch64 cross
# build, the SQLCipher/OpenSSL build): about a third of a cold run. Here a clone
# without target/ gets target/ as a link to a cargo target directory kept under
# ~/.cache/robotmem, keyed by the toolchain (rustc -vV, cargo -V) and the
# registry packages of Cargo.lock. Cargo itself decides what is fresh inside
# it (fingerprints of sources, features, flags), and its hashes for the
# workspace's own crates do not depend on where the clone is, so a clone in
# another directory reuses the compiled dependencies and rebuilds only the
# project's own crates. A checkout that already has target/, or a set
# CARGO_TARGET_DIR, is left alone; ROBOTMEM_TARGET_CACHE=0 turns this off.
#
# Bounds: the directories of other keys are removed but for the most recent
# one, and a directory that grew past ROBOTMEM_TARGET_CACHE_MAX_GB (60) is
# emptied first (cargo then builds everything once).
robotmem_target_cache() {
  local root=$1 cache key dir max_gb size_gb
  [ "${ROBOTMEM_TARGET_CACHE:-1}" != 0 ] || return 0
  [ -z "${CARGO_TARGET_DIR:-}" ] || return 0
  [ ! -e "$root/target" ] && [ ! -L "$root/target" ] || return 0
  command -v rustc >/dev/null 2>&1 || return 0
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/robotmem
  key=$({
    rustc -vV
    cargo -V
    # Registry packages only: a version bump of the workspace keeps the key.
    awk 'BEGIN { RS = "" } /source = "registry/' "$root/Cargo.lock"
  } | sha256sum | cut -c1-16)
  dir=$cache/cargo-target-$key
  max_gb=${ROBOTMEM_TARGET_CACHE_MAX_GB:-60}
  if [ -d "$dir" ]; then
    size_gb=$(du -sx --block-size=1G "$dir" 2>/dev/null | cut -f1)
    if [ "${size_gb:-0}" -gt "$max_gb" ]; then
      echo "target cache: $dir holds ${size_gb} GB (more than $max_gb): emptied, cargo builds everything once"
      rm -rf "$dir"
    fi
  fi
  mkdir -p "$dir"
  touch "$dir"
  # Other keys: keep the most recently used one (a run of an older commit may
  # still be going), remove the rest.
  local old
  # shellcheck disable=SC2012  # names are ours: cargo-target-<hex>
  for old in $(ls -1dt "$cache"/cargo-target-* 2>/dev/null | grep -vxF "$dir" | tail -n +2 || true); do
    echo "target cache: removing $old (another toolchain or Cargo.lock)"
    rm -rf "$old"
  done
  ln -s "$dir" "$root/target"
  echo "target cache: target -> $dir (ROBOTMEM_TARGET_CACHE=0 to build in the clone)"
}
