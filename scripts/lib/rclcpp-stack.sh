# shellcheck shell=bash
# Sourced by scripts/ros2-interfaces.sh on a machine without a ROS 2 installation:
#   rclcpp_stack VENV VENV_KEY
# builds rclcpp, rclcpp_components, class_loader, libstatistics_collector,
# statistics_msgs, composition_interfaces, launch and launch_ros from the
# unmodified Jazzy sources in ../shared/vendor/ros2-jazzy (no registry offers
# them) against the Jazzy wheel venv, and sources the result. The install tree
# is cached in ~/.cache/robotmem/rclcpp-jazzy-<key>, the key made of the
# archive's sha256, the venv's key and this file (its fix-ups): a warm run only
# sources it. Sets rclcpp_stack_state to one of
#   "built in N s" | "cached" | "SKIPPED: <why>"
# and returns 0 in each case; 1 only when a build was tried and failed.
# Env: ROBOTMEM_ROS2_VENDOR  the folder holding rclcpp-jazzy-src.tar.gz
#                            (default: <repo>/../shared/vendor/ros2-jazzy)
# shellcheck disable=SC2154  # $root: the repository, set by the sourcing script

# The archive described by ../shared/vendor/ros2-jazzy/README.md (pinned commits).
RCLCPP_ARCHIVE_SHA256=f9735a2dfd1369a6e564ae1edc788094679805c7bcf338f78a717e942a091bf4

rclcpp_stack() {
  local venv=$1 venv_key=$2
  local vendor=${ROBOTMEM_ROS2_VENDOR:-$root/../shared/vendor/ros2-jazzy}
  local archive=$vendor/rclcpp-jazzy-src.tar.gz
  if [ ! -f "$archive" ]; then
    rclcpp_stack_state="SKIPPED: no $archive (the rclcpp sources no registry offers)"
    return 0
  fi
  local sum
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  if [ "$sum" != "$RCLCPP_ARCHIVE_SHA256" ]; then
    echo "rclcpp-stack: $archive has sha256 $sum, expected $RCLCPP_ARCHIVE_SHA256" >&2
    return 1
  fi
  local self=${BASH_SOURCE[0]}
  local key
  key=$( { echo "$sum $venv_key"; cat "$self"; } | sha256sum | cut -c1-12)
  local dir=${XDG_CACHE_HOME:-$HOME/.cache}/robotmem/rclcpp-jazzy-$key
  if [ "$(cat "$dir/.robotmem-ready" 2>/dev/null)" = "$key" ]; then
    rclcpp_stack_state=cached
  else
    echo "=== rclcpp stack from $archive into $dir (-j$CMAKE_BUILD_PARALLEL_LEVEL)"
    local t0=$SECONDS
    # class_loader uses Debian's console_bridge (console_bridge_vendor would clone from the internet).
    apt_install_missing libconsole-bridge-dev libpython3.11-dev || return 1
    rm -rf "$dir"
    mkdir -p "$dir"
    local src
    src=$(mktemp -d "${TMPDIR:-/tmp}/robotmem-rclcpp-src.XXXXXX")
    tar -xzf "$archive" -C "$src"
    sed -i '/find_package(console_bridge_vendor/d' "$src/class_loader/CMakeLists.txt"
    grep -q console_bridge_vendor "$src/class_loader/CMakeLists.txt" && {
      echo "rclcpp-stack: the class_loader fix-up did not apply" >&2; return 1; }
    # Debian's colcon has the sequential executor only: packages one after the
    # other, each compiled with CMAKE_BUILD_PARALLEL_LEVEL jobs (= cores).
    # Executables (component_container*) link librcl, which needs the rosidl
    # Python generator libraries' Py* symbols: link libpython without as-needed.
    if ! (cd "$src" && colcon build --base-paths "$src" --build-base "$src/build" --install-base "$dir/install" \
          --merge-install --event-handlers console_cohesion- console_direct- \
          --cmake-args -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF --no-warn-unused-cli \
            "-DPython3_EXECUTABLE=$venv/bin/python3" \
            "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed -lpython3.11" >"$src/build.log" 2>&1); then
      tail -n 60 "$src/build.log" >&2
      echo "rclcpp-stack: colcon build failed; log and sources kept in $src" >&2
      rm -rf "$dir"
      return 1
    fi
    rm -rf "$src"
    echo "$key" >"$dir/.robotmem-ready"
    # Stacks of other keys in the default place are stale.
    find "$(dirname "$dir")" -mindepth 1 -maxdepth 1 -name 'rclcpp-jazzy-*' ! -path "$dir" -exec rm -rf {} +
    rclcpp_stack_state="built in $((SECONDS - t0)) s"
  fi
  set +u # colcon's setup scripts read unset variables
  # shellcheck disable=SC1091
  source "$dir/install/local_setup.bash"
  set -u
  rclcpp_stack_prefix=$dir/install
}
