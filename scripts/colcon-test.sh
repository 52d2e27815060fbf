#!/usr/bin/env bash
# robotmem as a colcon package, end to end, from a fresh clone or not:
#   1. installs what is missing (Debian's colcon, colcon-ros, ament_cmake, gtest),
#      unless a ROS 2 environment is already sourced (ROS_DISTRO set);
#   2. makes a colcon workspace outside the repository: src/robotmem -> the repo
#      (the library, package.xml build_type cmake), src/ros2 -> ros2/ (the ROS
#      packages: robotmem_consumer, an ament_cmake package);
#   3. colcon build (robotmem, then robotmem_consumer which find_package(robotmem)
#      from install/robotmem), colcon test, colcon test-result (any failure fails);
#   4. runs the installed example through install/setup.bash, as `ros2 run` would;
#   5. says loudly whether the rclcpp packages could be built here.
# The crate's release build is shared with target/ (as scripts/cmake-test.sh does),
# so after `cargo build --release` or cmake-test.sh this takes seconds.
#
# Usage: scripts/colcon-test.sh   (from anywhere)
# Env:   ROBOTMEM_CARGO_TARGET_DIR  cargo target dir (default: <repo>/target)
#        ROBOTMEM_COLCON_KEEP=1     keep the workspace (it is kept anyway on failure)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$SECONDS
# Shared libraries must be found through RPATH or the setup scripts; a sourced
# ROS 2 environment keeps its own library path.
[ -n "${ROS_DISTRO:-}" ] || unset LD_LIBRARY_PATH
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}
step() { printf '\n=== %s\n' "$*"; }
fail() { echo "colcon-test: $*" >&2; exit 1; }

source scripts/bootstrap.sh # cmake, a C and a C++ compiler, cargo on PATH

# --- 1. colcon and ament ------------------------------------------------------
# Debian 12 packages. python3-colcon-common-extensions does not exist in Debian:
# these are its parts that this script uses (colcon-ros reads package.xml,
# colcon-output has console_cohesion, colcon-library-path the LD_LIBRARY_PATH hook).
debs=(colcon python3-colcon-core python3-colcon-ros python3-colcon-cmake python3-colcon-bash
      python3-colcon-output python3-colcon-test-result python3-colcon-package-information
      python3-colcon-package-selection python3-colcon-library-path ament-cmake ament-cmake-googletest)
if [ -n "${ROS_DISTRO:-}" ]; then
  step "ROS 2 ${ROS_DISTRO} environment: using its colcon and ament"
  command -v colcon >/dev/null || fail "ROS_DISTRO=${ROS_DISTRO} but no colcon on PATH (apt install python3-colcon-common-extensions)"
else
  apt_install_missing "${debs[@]}" || fail "install colcon and ament_cmake yourself, or source a ROS 2 setup.bash"
  # Debian's ament runs on Debian's Python (/usr/bin/python3 has ament_package);
  # another python3 earlier on PATH (pyenv, a venv) would be picked by CMake.
  export PATH="/usr/bin:$PATH"
fi

# --- 2. workspace -------------------------------------------------------------
version=$(sed -n 's/^version *= *"\([0-9]*\.[0-9]*\.[0-9]*\)".*/\1/p' Cargo.toml | head -n 1)
xml_version=$(sed -n 's|.*<version>\(.*\)</version>.*|\1|p' package.xml | head -n 1)
[ "$xml_version" = "$version" ] || fail "package.xml version $xml_version differs from Cargo.toml version $version"

source scripts/lib/colcon-ws.sh
colcon_workspace colcon-test ROBOTMEM_COLCON_KEEP
cd "$ws"

step "colcon list (workspace $ws)"
colcon list | tee "$ws/list.txt"
for p in robotmem robotmem_consumer robotmem_msgs robotmem_ros; do
  [ "$(awk -v p="$p" '$1 == p' "$ws/list.txt" | wc -l)" -eq 1 ] || fail "package $p not discovered exactly once"
done

# --- 3. build and test --------------------------------------------------------
cargo_target=${ROBOTMEM_CARGO_TARGET_DIR:-$root/target}
step "colcon build (cargo target dir $cargo_target)"
t0=$SECONDS
# --cmake-args go to every package: --no-warn-unused-cli keeps the robotmem-only
# options from warning in the others. The library's C tests and examples run
# under scripts/cmake-test.sh, not here.
colcon build --event-handlers console_cohesion+ --cmake-args \
  -DCMAKE_BUILD_TYPE=Release --no-warn-unused-cli \
  "-DROBOTMEM_CARGO_TARGET_DIR=$cargo_target" \
  -DROBOTMEM_BUILD_TESTS=OFF -DROBOTMEM_BUILD_EXAMPLES=OFF
build_s=$((SECONDS - t0))

# The consumer must have found the package colcon just installed, nothing else.
grep -q -- "-- robotmem $version from $ws/install/robotmem/" "$ws/log/latest_build/robotmem_consumer/stdout.log" ||
  fail "robotmem_consumer did not find robotmem $version in $ws/install/robotmem"
for f in robotmem/lib/cmake/robotmem/robotmemConfig.cmake robotmem/include/robotmem.h \
         robotmem/include/robotmem/robotmem.hpp robotmem/lib/librobotmem.so robotmem/lib/pkgconfig/robotmem.pc \
         robotmem_consumer/lib/robotmem_consumer/robotmem_episode; do
  [ -e "$ws/install/$f" ] || fail "install/$f missing"
done
echo "robotmem_consumer found robotmem $version in install/robotmem"

step "colcon test"
t0=$SECONDS
colcon test --event-handlers console_cohesion+ --return-code-on-test-failure
test_s=$((SECONDS - t0))
colcon test-result --all --verbose | tee "$ws/test-result.txt" # exits 1 on any error or failure
for f in test_robotmem_consumer.gtest.xml robotmem_episode.xml; do
  [ -f "$ws/build/robotmem_consumer/test_results/robotmem_consumer/$f" ] || fail "no test result $f"
done
# Test cases from the JUnit files (ctest's Testing/*/Test.xml counts the same runs again).
read -r tests failed skipped < <(awk '
  /^build\/.*: [0-9]+ tests?, / && $1 !~ /\/Testing\// {
    t += $2; e += $4; f += $6; s += $8 }
  END { print t + 0, e + f, s + 0 }' "$ws/test-result.txt")
[ "$tests" -gt 0 ] || fail "colcon test ran no test"
[ "$failed" -eq 0 ] || fail "$failed test cases failed"

# --- 4. the installed program, through the workspace's setup script -----------
step "installed robotmem_episode through install/setup.bash (as ros2 run finds it)"
(
  set +u # colcon's setup scripts read unset variables
  # shellcheck disable=SC1091
  source "$ws/install/setup.bash"
  "$ws/install/robotmem_consumer/lib/robotmem_consumer/robotmem_episode" "$ws/installed.db"
)

# --- 5. rclcpp ----------------------------------------------------------------
mkdir "$ws/rclcpp-probe"
cat >"$ws/rclcpp-probe/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(rclcpp_probe LANGUAGES C CXX)
find_package(rclcpp QUIET)
if(rclcpp_FOUND)
  message(STATUS "RCLCPP_FOUND ${rclcpp_VERSION} ${rclcpp_DIR}")
endif()
EOF
rclcpp=""
if probe=$(cmake -S "$ws/rclcpp-probe" -B "$ws/rclcpp-probe/build" 2>&1); then
  rclcpp=$(sed -n 's/^-- RCLCPP_FOUND //p' <<<"$probe")
fi

step "done in $((SECONDS - start)) s (colcon build ${build_s} s, colcon test ${test_s} s)"
echo "colcon packages: $(awk '{print $1}' "$ws/list.txt" | paste -sd ' ')"
if [ -n "$rclcpp" ]; then
  echo "rclcpp found: $rclcpp (robotmem_ros builds its component node)"
else
  echo "################################################################################"
  echo "SKIPPED here: rclcpp nodes — Debian's ament has no rclcpp (find_package(rclcpp) fails;"
  echo "         robotmem_ros skips its component node and example client in this workspace)."
  echo "         scripts/ros2-interfaces.sh builds them against rclcpp from ../shared/vendor and the"
  echo "         Jazzy PyPI wheels and runs the real node; see ros2/README.md"
  echo "################################################################################"
fi
echo "colcon: $tests passed, $failed failed, $skipped skipped"
