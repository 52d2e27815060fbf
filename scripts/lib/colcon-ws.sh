# shellcheck shell=bash
# Shared by scripts/colcon-test.sh and scripts/ros2-interfaces.sh:
#   colcon_workspace NAME KEEP_VAR
# makes a temporary colcon workspace in $ws whose src/ links the repository
# ($root: the library package) and $root/ros2 (the ROS packages). colcon's
# crawler stops descending at a directory holding a package manifest and never
# visits a real path twice, so src/robotmem yields the library only and the ROS
# packages come from src/ros2, each once. On exit the script's own `on_exit`
# (if defined) runs first; the workspace is removed on success unless
# ${KEEP_VAR}=1, and kept and named on failure.
# $root is the repository, set by the sourcing script.
# shellcheck disable=SC2154
colcon_workspace() {
  _ws_name=$1
  _ws_keep=$2
  ws=$(mktemp -d "${TMPDIR:-/tmp}/robotmem-$_ws_name.XXXXXX")
  trap _colcon_workspace_exit EXIT
  mkdir "$ws/src"
  ln -s "$root" "$ws/src/robotmem"
  ln -s "$root/ros2" "$ws/src/ros2"
}

_colcon_workspace_exit() {
  local rc=$?
  if declare -F on_exit >/dev/null; then on_exit; fi
  if [ "$rc" -eq 0 ] && [ "${!_ws_keep:-0}" != 1 ]; then
    rm -rf "$ws"
  else
    echo "$_ws_name: workspace kept in $ws (build/, install/, log/)" >&2
  fi
  if [ "$rc" -ne 0 ]; then echo "$_ws_name: FAILED (exit $rc)" >&2; fi
}
