#!/usr/bin/env bash
# The ROS 2 packages built and tested for real on a machine without a ROS 2
# installation, from the ROS 2 Jazzy binary wheels on PyPI plus the vendored
# rclcpp sources (../shared/vendor/ros2-jazzy):
#   1. a venv of Debian's /usr/bin/python3 (3.11, the wheels are cp311) with the
#      wheels of ros2/requirements-jazzy.txt (every one pinned with its hash);
#      the defects of the wheels' exported CMake files are fixed in that venv;
#      kept in a cache directory keyed by the requirements file (warm runs reuse it);
#      then rclcpp, rclcpp_components, launch and launch_ros built from the vendored
#      archive against that venv (scripts/lib/rclcpp-stack.sh; sha256-checked,
#      cached under ~/.cache keyed by the archive and the venv);
#   2. a colcon workspace outside the repository (src/robotmem -> the repo,
#      src/ros2 -> ros2/), colcon build of robotmem, robotmem_msgs (rosidl: C, C++,
#      Python + typesupports) and robotmem_ros (robotmem_ros_logic, and with rclcpp
#      the component node, robotmem_node and the example client);
#   3. colcon test: the generated C++ message types (test_robotmem_msgs), the node
#      logic against a real robotmem::Db (test_robotmem_ros_logic) and, with rclcpp,
#      the real node over DDS on 127.0.0.1 (test_robotmem_node:
#      ros2/robotmem_ros/test/integration);
#   4. an rclpy smoke test: one process serves robotmem_msgs/srv/Learn, another
#      calls it, over Fast DDS restricted to 127.0.0.1 (own domain id,
#      ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, an XML profile whose only transport
#      is UDPv4 on 127.0.0.1);
#   5. says loudly what was skipped (no archive and no rclcpp: the node and client).
# Last line: "ros2: N passed, N failed, N skipped".
#
# On a ROS 2 host (ROS_DISTRO set) nothing is installed and the archive is
# ignored: the sourced environment's colcon, ament, rosidl and rclcpp are used.
#
# Usage: scripts/ros2-interfaces.sh            (from anywhere)
#        scripts/ros2-interfaces.sh --bench [N]  build, then instead of the tests the
#             Recall round trip benchmark (robotmem_recall_bench) on N SQuAD dev
#             sentences (default 10000), BM25 and hybrid (the default model)
# Env:   ROBOTMEM_ROS2_VENV        venv directory (default: ~/.cache/robotmem/ros2-jazzy-<hash>)
#        ROBOTMEM_CARGO_TARGET_DIR cargo target dir (default: <repo>/target)
#        ROBOTMEM_ROS2_KEEP=1      keep the workspace (kept anyway on failure)
#        ROBOTMEM_ROS2_SMOKE=0     skip the rclpy smoke test
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
start=$SECONDS
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}
step() { printf '\n=== %s\n' "$*"; }
fail() { echo "ros2-interfaces: $*" >&2; exit 1; }

source scripts/bootstrap.sh # cmake, a C and a C++ compiler, cargo on PATH

passed=0 failed=0 skipped=0
venv_s=0
cargo_target=${ROBOTMEM_CARGO_TARGET_DIR:-$root/target}
cmake_args=(-DCMAKE_BUILD_TYPE=Release --no-warn-unused-cli "-DROBOTMEM_CARGO_TARGET_DIR=$cargo_target"
            -DROBOTMEM_BUILD_TESTS=OFF -DROBOTMEM_BUILD_EXAMPLES=OFF -DROBOTMEM_REQUIRE_ROSIDL=ON)

if [ -n "${ROS_DISTRO:-}" ]; then
  step "ROS 2 ${ROS_DISTRO} environment: using its colcon, ament and rosidl"
  command -v colcon >/dev/null || fail "ROS_DISTRO=${ROS_DISTRO} but no colcon on PATH"
  py=$(command -v python3)
else
  # The Jazzy wheels are CPython 3.11 on x86_64: elsewhere this part is skipped,
  # loudly, and the suite goes on (the library and its other tests do not need it).
  pyver=$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)
  if [ "$(uname -m)" != x86_64 ] || [ "$pyver" != 3.11 ]; then
    echo "################################################################################"
    echo "SKIPPED: ROS 2 interfaces — the Jazzy PyPI wheels are cp311 x86_64 only; this is"
    echo "         $(uname -m) with /usr/bin/python3 $pyver (source a ROS 2 setup.bash to use it)"
    echo "################################################################################"
    echo "ros2: 0 passed, 0 failed, 1 skipped"
    exit 0
  fi
  # Nothing from a sourced environment leaks into the venv's ROS prefix.
  unset LD_LIBRARY_PATH PYTHONPATH
  # --- 1. Debian: colcon, Python headers, venv ---------------------------------
  debs=(colcon python3-colcon-core python3-colcon-ros python3-colcon-cmake python3-colcon-bash
        python3-colcon-output python3-colcon-test-result python3-colcon-package-information
        python3-colcon-package-selection python3-colcon-library-path python3-venv python3-dev libgtest-dev)
  apt_install_missing "${debs[@]}" || fail "cannot install ${debs[*]}"

  # --- 1b. the Jazzy wheels ------------------------------------------------------
  req=$root/ros2/requirements-jazzy.txt
  # The venv holds the pinned wheels and this script's fixes to them: both are in
  # the key, so a cached venv made by other fixes is never reused.
  key=$(cat "$req" "$0" | sha256sum | cut -c1-12)
  venv=${ROBOTMEM_ROS2_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/robotmem/ros2-jazzy-$key}
  if [ "$(cat "$venv/.robotmem-ready" 2>/dev/null)" != "$key" ]; then
    step "ROS 2 Jazzy wheels into $venv (pinned, --require-hashes)"
    t0=$SECONDS
    rm -rf "$venv"
    mkdir -p "$(dirname "$venv")"
    /usr/bin/python3 -m venv "$venv"
    # Every package is in the file with its hash: --no-deps pulls in nothing else.
    "$venv/bin/pip" install -q --disable-pip-version-check --no-input --no-deps --require-hashes \
      -r "$req" 2>&1 | { grep -v -e DEPRECATION -e '^ *$' || true; }
    [ "${PIPESTATUS[0]}" -eq 0 ] || fail "pip install of $req into $venv failed"
    "$venv/bin/python" -c 'import ament_package, rosidl_adapter, em, lark, numpy, catkin_pkg' ||
      fail "venv $venv is incomplete"
    "$venv/bin/pip" check >/dev/null || { "$venv/bin/pip" check; fail "inconsistent venv $venv"; }

    # The wheels' exported CMake files name paths of the machine that built them.
    # Fixed in this venv only:
    numpy_inc=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
    pyinc=$(/usr/bin/python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    [ -f "$pyinc/Python.h" ] || fail "$pyinc/Python.h missing (python3-dev)"
    # - rosidl_generator_py exports: the build machine's Python and numpy include dirs;
    while IFS= read -r f; do
      sed -i -e "s|/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/[^;\"]*include|$numpy_inc|g" \
             -e "s|/opt/python/cp311-cp311/include/python3.11|$pyinc|g" "$f"
    done < <(grep -l '/opt/python/cp311-cp311' "$venv"/share/*/cmake/*.cmake)
    # - fastrtps links /usr/lib64/libtinyxml2.so and OpenSSL, which the library carries itself;
    sed -i 's|^\(  INTERFACE_LINK_LIBRARIES \)"fastcdr;foonathan_memory;.*"$|\1"fastcdr;foonathan_memory;-lpthread;dl;rt"|' \
      "$venv/share/fastrtps/cmake/fastrtps-shared-targets.cmake"
    # - tracetools exports lttng-ust, which is not there (the .so carries its own).
    sed -i -e 's|"lttng-ust;dl"|"dl"|' -e 's|"lttng-ust;dl;|"dl;|' \
      "$venv/share/tracetools/cmake/ament_cmake_export_libraries-extras.cmake" \
      "$venv/share/tracetools/cmake/tracetools_exportExport.cmake"
    if grep -q -e /opt/python/cp311 "$venv"/share/*/cmake/*.cmake || grep -q -e lttng-ust -e libtinyxml2 \
         "$venv/share/fastrtps/cmake/fastrtps-shared-targets.cmake" "$venv"/share/tracetools/cmake/*.cmake; then
      fail "the CMake export fixes did not apply (wheel versions changed?)"
    fi
    # The venv as an underlay prefix: colcon's install/setup.bash sources it first.
    ld=$venv/lib
    for d in "$venv"/lib/python3.11/site-packages/ros_*.libs; do ld=$ld:$d; done
    cat >"$venv/local_setup.sh" <<EOS
# ROS 2 Jazzy wheels venv as a ROS prefix (written by scripts/ros2-interfaces.sh)
export AMENT_PREFIX_PATH="$venv\${AMENT_PREFIX_PATH:+:\$AMENT_PREFIX_PATH}"
export CMAKE_PREFIX_PATH="$venv\${CMAKE_PREFIX_PATH:+:\$CMAKE_PREFIX_PATH}"
export LD_LIBRARY_PATH="$ld\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export PATH="$venv/bin:\$PATH"
export _ROS_WHEELS_BOOTSTRAP_COMPLETE=1
export RMW_IMPLEMENTATION=rmw_fastrtps_cpp
EOS
    cp "$venv/local_setup.sh" "$venv/local_setup.bash"
    echo "$key" >"$venv/.robotmem-ready"
    # Venvs of earlier keys (other requirements or fixes) in the default place are stale.
    if [ -z "${ROBOTMEM_ROS2_VENV:-}" ]; then
      find "$(dirname "$venv")" -mindepth 1 -maxdepth 1 -name 'ros2-jazzy-*' ! -path "$venv" -exec rm -rf {} +
    fi
    venv_s=$((SECONDS - t0))
  else
    step "ROS 2 Jazzy wheels: $venv (cached)"
  fi

  # The venv is the ROS prefix: ament, rosidl and the message packages are in its
  # share/, lib/ and include/. Its python first (ament_package, rosidl, empy);
  # Debian's colcon (/usr/bin/colcon) next.
  # local_setup.sh also puts the wheels' library dirs on LD_LIBRARY_PATH (their
  # RPATHs, $ORIGIN/../../../ros_<pkg>.libs, don't resolve from lib/) and sets
  # _ROS_WHEELS_BOOTSTRAP_COMPLETE (else the wheels' .pth re-execs python).
  py=$venv/bin/python3
  export VIRTUAL_ENV=$venv
  unset AMENT_PREFIX_PATH CMAKE_PREFIX_PATH
  # shellcheck disable=SC1091
  source "$venv/local_setup.sh"
  export PATH="$venv/bin:/usr/bin:$PATH"
  cmake_args+=("-DPython3_EXECUTABLE=$py")

  # --- 1c. rclcpp, rclcpp_components, launch, launch_ros from the vendored sources
  source scripts/lib/rclcpp-stack.sh
  rclcpp_stack "$venv" "$key" || fail "building the rclcpp stack failed"
  echo "rclcpp stack: $rclcpp_stack_state"
  # librcl needs the rosidl Python generator libraries' Py* symbols (see the stack).
  cmake_args+=("-DCMAKE_EXE_LINKER_FLAGS=-Wl,--no-as-needed -lpython3.11")
fi

# --- 2. workspace and build ---------------------------------------------------------
source scripts/lib/colcon-ws.sh
on_exit() { if [ -n "${server_pid:-}" ]; then kill "$server_pid" 2>/dev/null || true; fi; }
colcon_workspace ros2-interfaces ROBOTMEM_ROS2_KEEP
cd "$ws"
pkgs=(robotmem robotmem_msgs robotmem_ros)

step "colcon build ${pkgs[*]} (workspace $ws)"
t0=$SECONDS
colcon build --event-handlers console_cohesion+ --packages-select "${pkgs[@]}" --cmake-args "${cmake_args[@]}"
build_s=$((SECONDS - t0))
for f in robotmem_msgs/include/robotmem_msgs/robotmem_msgs/srv/learn.hpp \
         robotmem_msgs/include/robotmem_msgs/robotmem_msgs/msg/perception_data.h \
         robotmem_msgs/lib/librobotmem_msgs__rosidl_typesupport_cpp.so \
         robotmem_msgs/lib/librobotmem_msgs__rosidl_typesupport_fastrtps_cpp.so \
         robotmem_ros/lib/librobotmem_ros_logic.so; do
  [ -e "install/$f" ] || fail "install/$f missing"
done
rclcpp_line=$(grep -h -e 'rclcpp not found' -e 'robotmem_ros: building the rclcpp' log/latest_build/robotmem_ros/stdout_stderr.log | head -n 1 || true)

# --- bench mode: the Recall service round trip next to the direct C call -----------
if [ "${1:-}" = --bench ]; then
  bench=install/robotmem_ros/lib/robotmem_ros/robotmem_recall_bench
  [ -x "$bench" ] || fail "no $bench (rclcpp missing: ${rclcpp_line:-?})"
  bash "$root/scripts/fetch-model.sh" >/dev/null 2>&1 || fail "scripts/fetch-model.sh failed"
  model=$root/.cache/models/use-multilingual-v3-int8
  export ROBOTMEM_ORT_LIBRARY=$root/.cache/models/onnxruntime/libonnxruntime.so
  /usr/bin/python3 - "$root/../shared/data/squad-dev-sentences.jsonl.gz" "$ws" <<'PY'
import gzip, json, sys
mem, qs = [], []
with gzip.open(sys.argv[1], "rt", encoding="utf-8") as f:
    for line in f:
        r = json.loads(line)
        if r["type"] == "memory":
            mem.append(r["text"])
        elif r["type"] == "query":
            qs.append(r["question"])
assert mem and qs, "no memories or queries in " + sys.argv[1]
for name, rows in (("memories.txt", mem), ("queries.txt", qs)):
    with open(sys.argv[2] + "/" + name, "w", encoding="utf-8") as out:
        out.write("\n".join(t.replace("\n", " ") for t in rows) + "\n")
PY
  export ROS_DOMAIN_ID=$((100 + $$ % 100)) ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST ROS_LOG_DIR=$ws/ros-log
  export FASTRTPS_DEFAULT_PROFILES_FILE=$root/ros2/robotmem_msgs/test/fastdds-loopback.xml
  export FASTDDS_DEFAULT_PROFILES_FILE=$FASTRTPS_DEFAULT_PROFILES_FILE
  step "robotmem_recall_bench: ${2:-10000} memories, $(nproc) cores, $(uname -m), domain $ROS_DOMAIN_ID on 127.0.0.1"
  (
    set +u
    # shellcheck disable=SC1091
    source install/setup.bash
    "$bench" --memories "$ws/memories.txt" --queries "$ws/queries.txt" --db "$ws/bench.db" \
      --count "${2:-10000}" --model-dir "$model"
  ) || fail "robotmem_recall_bench failed"
  exit 0
fi

# --- 3. colcon test ----------------------------------------------------------------
step "colcon test robotmem_msgs robotmem_ros"
t0=$SECONDS
colcon test --event-handlers console_cohesion+ --packages-select robotmem_msgs robotmem_ros \
  --return-code-on-test-failure || true # counted below from the result files
test_s=$((SECONDS - t0))
colcon test-result --all --verbose >"$ws/test-result.txt" || true
cat "$ws/test-result.txt"
results=(robotmem_msgs/test_results/robotmem_msgs/test_robotmem_msgs.gtest.xml
         robotmem_ros/test_results/robotmem_ros/test_robotmem_ros_logic.gtest.xml)
if grep -q 'building the rclcpp' <<<"$rclcpp_line"; then
  results+=(robotmem_ros/test_results/robotmem_ros/test_robotmem_node.xunit.xml)
fi
for f in "${results[@]}"; do
  [ -f "build/$f" ] || fail "no test result build/$f"
done
read -r t e s < <(awk '
  /^build\/.*: [0-9]+ tests?, / && $1 !~ /\/Testing\// { t += $2; e += $4 + $6; s += $8 }
  END { print t + 0, e + 0, s + 0 }' "$ws/test-result.txt")
passed=$((passed + t - e - s)) failed=$((failed + e)) skipped=$((skipped + s))

# --- 4. rclpy over loopback -----------------------------------------------------------
smoke="not run"
if [ "${ROBOTMEM_ROS2_SMOKE:-1}" = 1 ]; then
  step "rclpy smoke test: Learn served and called over Fast DDS on 127.0.0.1 only"
  t0=$SECONDS
  export ROS_DOMAIN_ID=$((100 + $$ % 100))
  export ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST
  export ROS_LOG_DIR=$ws/ros-log
  export FASTRTPS_DEFAULT_PROFILES_FILE=$root/ros2/robotmem_msgs/test/fastdds-loopback.xml
  export FASTDDS_DEFAULT_PROFILES_FILE=$FASTRTPS_DEFAULT_PROFILES_FILE
  (
    set +u # colcon's setup scripts read unset variables
    # shellcheck disable=SC1091
    source "$ws/install/setup.bash"
    "$py" "$root/ros2/robotmem_msgs/test/rclpy_smoke.py" serve "$ws/smoke-ready" &
    echo $! >"$ws/server.pid"
    wait
  ) &
  server_pid=$!
  if (
    set +u
    # shellcheck disable=SC1091
    source "$ws/install/setup.bash"
    timeout 60 "$py" "$root/ros2/robotmem_msgs/test/rclpy_smoke.py" call "$ws/smoke-ready"
  ); then
    smoke="passed"; passed=$((passed + 1))
  else
    smoke="FAILED"; failed=$((failed + 1))
  fi
  if [ -f "$ws/server.pid" ]; then kill "$(cat "$ws/server.pid")" 2>/dev/null || true; fi
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
  echo "rclpy smoke test $smoke in $((SECONDS - t0)) s (domain $ROS_DOMAIN_ID)"
else
  echo "SKIPPED: rclpy smoke test (ROBOTMEM_ROS2_SMOKE=0)"
  skipped=$((skipped + 1))
fi

# --- 5. summary --------------------------------------------------------------------
step "done in $((SECONDS - start)) s (venv ${venv_s} s, colcon build ${build_s} s, colcon test ${test_s} s)"
echo "generated: robotmem_msgs C, C++, Python + typesupports (fastrtps, introspection)"
if grep -q 'rclcpp not found' <<<"$rclcpp_line"; then
  # (counted once above: the skipped robotmem_node_rclcpp test result)
  echo "################################################################################"
  echo "SKIPPED: robotmem_ros rclcpp component node, example client and their tests —"
  echo "         no rclcpp: ${rclcpp_stack_state:-not found in the ROS 2 environment}"
  echo "         (see ros2/README.md for a ROS 2 Humble/Jazzy host)"
  echo "################################################################################"
else
  echo "rclcpp: ${rclcpp_line:-?} (stack: ${rclcpp_stack_state:-from the ROS 2 environment})"
fi
echo "ros2: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] || exit 1
