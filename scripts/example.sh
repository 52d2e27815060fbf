#!/usr/bin/env bash
# Provisions the embedding model (PyPI, pinned), builds the library and the C
# example with CMake, then runs the example with the model (hybrid recall).
# Usage: scripts/example.sh [database-path]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
ROBOTMEM_SKIP_REFERENCE=1 bash scripts/fetch-model.sh >/dev/null
# The default model: multilingual (English, Chinese and 14 more languages).
export ROBOTMEM_MODEL_DIR="$PWD/.cache/models/use-multilingual-v3-int8"
export ROBOTMEM_ORT_LIBRARY="$PWD/.cache/models/onnxruntime/libonnxruntime.so"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DROBOTMEM_CARGO_TARGET_DIR="$PWD/target" >/dev/null
cmake --build build --target quickstart -j 2
if [ $# -ge 1 ]; then
  ./build/examples/quickstart "$1"
else
  dir=$(mktemp -d "${TMPDIR:-/tmp}/robotmem-example.XXXXXX")
  trap 'rm -rf "$dir"' EXIT
  ./build/examples/quickstart "$dir/robot-memory.db"
fi
