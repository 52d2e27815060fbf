#!/usr/bin/env bash
# Builds the library and the C example with CMake, then runs the example.
# Usage: scripts/example.sh [database-path]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DROBOTMEM_CARGO_TARGET_DIR="$PWD/target" >/dev/null
cmake --build build --target quickstart -j 2
db="${1:-$(mktemp -d)/robot-memory.db}"
./build/examples/quickstart "$db"
