#!/usr/bin/env bash
# Runs every test: Rust unit and integration tests (debug build, overflow checks
# on), then the CMake side (C tests under ctest against the shared and the static
# library, the installed-package consumer, pkg-config). CI runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh

echo "== Rust tests"
cargo test --locked

echo "== CMake package, C tests, consumer"
bash scripts/cmake-test.sh
