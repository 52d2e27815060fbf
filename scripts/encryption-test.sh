#!/usr/bin/env bash
# Encryption at rest (docs/ENCRYPTION.md): the library built with the cargo
# feature `encryption` (SQLCipher, OpenSSL's libcrypto compiled from the crates.io
# sources: no system OpenSSL), then
#   1. the Rust tests of it (tests/encryption.rs: RM_KEY with the file untouched,
#      key files, rekey with readers on other threads, export/import between plain
#      and encrypted files) and the CLI's (--key-file, rekey);
#   2. the CMake build with -DROBOTMEM_ENCRYPTION=ON and its C tests
#      (test_encryption, test_api) against the shared and the static library, and
#      the C++ wrapper's (cpp.test_encryption);
# Without the feature (every other stage) the same tests check that a key is
# refused clearly (RM_INVALID_ARGUMENT, nothing created).
# The default build is not changed by the option. Cargo
# shares target/ with the other stages: only the crates whose features differ
# (libsqlite3-sys, rusqlite, openssl-sys, robotmem) are built again.
# Usage: scripts/encryption-test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib/common.sh encryption-test

step "Rust: cargo test --release --features encryption (library, CLI)"
cargo test --release --locked --features encryption --test encryption --test history_files
cargo test --release --locked -p robotmem-cli --features encryption --test encryption

step "CMake -DROBOTMEM_ENCRYPTION=ON: C tests against the shared and the static library, the C++ test"
cmake -S . -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DROBOTMEM_CARGO_TARGET_DIR="$root/target" \
  -DROBOTMEM_ENCRYPTION=ON -DROBOTMEM_BUILD_EXAMPLES=OFF >"$work/configure.log"
cmake --build "$work/build" --target test_encryption_shared test_encryption_static test_api_shared test_api_static \
  test_encryption
(cd "$work/build" && ctest --output-on-failure -R '^(test_(encryption|api)\.(shared|static)|cpp\.test_encryption)$') |
  tee "$work/ctest.log"
grep -q "100% tests passed" "$work/ctest.log" || fail "C tests failed"
grep -q "test_encryption: ok" "$work/build/Testing/Temporary/LastTest.log" ||
  fail "test_encryption did not run its encrypted part (rm_encryption_available() false?)"
echo "encryption-test: passed"
