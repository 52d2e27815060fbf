#!/usr/bin/env bash
# robotmem for 64-bit ARM boards (aarch64-unknown-linux-gnu), built on this
# x86_64 machine and run under user-mode qemu (tests/cross/qemu-aarch64.sh):
#   1. cross build with CMake and cmake/toolchains/aarch64-linux-gnu.cmake
#      (cargo --target aarch64-unknown-linux-gnu, release; Debian's cargo and rustc);
#   2. ctest under qemu: the C and C++ tests against the shared and the static
#      library, the embedding ones with the aarch64 ONNX Runtime and the models
#      (scripts/fetch-model.sh --ort-arch aarch64; required, not skipped);
#   3. cmake --install into a temporary prefix, moved; tests/consumer built
#      against it with the toolchain (find_package: C shared + static, C++) and
#      through pkg-config, all run under qemu;
#   4. what librobotmem.so needs at run time (NEEDED, glibc symbol versions): no
#      libstdc++, no TLS or PostgreSQL library;
#   5. examples/quickstart for aarch64 against the x86_64 one: BM25 only (same
#      hits, order and scores) and with the default model (hybrid: same hits,
#      scores within 0.03, order kept except between such near ties);
#   6. the library's Rust tests that depend on the target, for aarch64 under qemu
#      (emulating a Cortex-A76): tests/vector_kernels.rs (the index's NEON kernels
#      and sqlite-vec's NEON build against the portable ones), tests/vector_index.rs
#      and tests/embedding.rs with the aarch64 ONNX Runtime. Integration tests, so
#      they link the release library step 1 built: the unit tests (the engine's
#      target-independent logic, run natively by scripts/test.sh) are not compiled
#      for aarch64 (that compile alone took 2 of this stage's minutes);
#   7. the vector kernel tests again on an emulated Cortex-A53, which lacks the
#      dot-product extension: the run-time choice must fall back to plain NEON.
# Each step's time is listed at the end. Without the cross tools (Debian's
# packages, see scripts/lib/aarch64.sh) it prints SKIPPED and exits 0.
#
# Usage: scripts/aarch64-test.sh   (from anywhere)
# Environment:
#   AARCH64_TARGET_DIR  cargo's target directory for aarch64 (default target/aarch64),
#                       shared by the CMake build and the Rust tests (one release
#                       build of the dependencies)
#   AARCH64_BUILD_DIR   the CMake build directory (default build-aarch64: in the checkout, not under
#                       target/, which a clean clone shares with other clones: a CMake cache is
#                       bound to its source directory)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source scripts/lib/common.sh aarch64-test
# shellcheck source-path=SCRIPTDIR source=lib/aarch64.sh
source scripts/lib/aarch64.sh

# step NAME: common.sh's header, and the step's time for the list at the end.
step_names=() step_starts=()
timed_step() {
  step_names+=("$1") step_starts+=("$SECONDS")
  step "$1"
}
step_times() {
  local i n=${#step_names[@]} end
  ((n)) || return 0
  echo
  echo "=== aarch64: time per step (s; whole run $((SECONDS - start)) s)"
  for ((i = 0; i < n; i++)); do
    end=$([ $((i + 1)) -lt "$n" ] && echo "${step_starts[$((i + 1))]}" || echo "$SECONDS")
    printf '%6d  %s\n' "$((end - step_starts[i]))" "${step_names[i]}"
  done
}
# Also listed when a step fails; common.sh's cleanup then keeps $work.
trap 'rc=$?; step_times; (exit $rc); cleanup' EXIT

timed_step "aarch64 tools (Debian: cargo-web, rustc-web, libstd-rust-web-dev:arm64, gcc/g++-aarch64-linux-gnu, qemu-user-static)"
if ! aarch64_setup; then
  echo "SKIPPED: aarch64 cross build and emulated tests: $aarch64_why"
  echo "SKIPPED: aarch64 cross build and emulated tests: $aarch64_why" >&2
  exit 0
fi
build=${AARCH64_BUILD_DIR:-$root/build-aarch64}
toolchain=$root/cmake/toolchains/aarch64-linux-gnu.cmake
run=$AARCH64_RUN
models=$root/.cache/models
echo "cargo $($AARCH64_CARGO --version | cut -d' ' -f2), rustc $($RUSTC --version | cut -d' ' -f2)," \
  "$(aarch64-linux-gnu-gcc --version | head -n 1), $($AARCH64_QEMU --version | head -n 1)"
echo "cargo target dir $AARCH64_TARGET_DIR, CMake build dir $build"

version=$(sed -n 's/^version *= *"\([0-9]*\.[0-9]*\.[0-9]*\)".*/\1/p' Cargo.toml | head -n 1)
IFS=. read -r major minor _ <<<"$version"
if [ "$major" -eq 0 ]; then soname=librobotmem.so.0.$minor; else soname=librobotmem.so.$major; fi

# is_aarch64 FILE: an ELF for AArch64.
is_aarch64() { readelf -h "$1" 2>/dev/null | grep -q 'Machine:.*AArch64'; }

timed_step "models and ONNX Runtime (scripts/fetch-model.sh; the aarch64 runtime with --ort-arch aarch64, PyPI, pinned)"
bash scripts/fetch-model.sh >"$work/fetch-model.log" 2>&1 || { tail -n 30 "$work/fetch-model.log"; fail "scripts/fetch-model.sh failed"; }
bash scripts/fetch-model.sh --ort-arch aarch64 >"$work/fetch-ort.log" 2>&1 ||
  { cat "$work/fetch-ort.log"; fail "scripts/fetch-model.sh --ort-arch aarch64 failed"; }
ort=$models/onnxruntime-aarch64/libonnxruntime.so
is_aarch64 "$(readlink -f "$ort")" || fail "$ort is not an aarch64 library"
grep -h '^onnxruntime' "$work/fetch-ort.log"

timed_step "cross build: CMake + $(basename "$toolchain") (cargo build --release --target $AARCH64_TRIPLE)"
cmake -S . -B "$build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
  -DROBOTMEM_CARGO="$AARCH64_CARGO" -DROBOTMEM_RUSTC="$RUSTC" -DROBOTMEM_CARGO_TARGET_DIR="$AARCH64_TARGET_DIR" \
  -DROBOTMEM_BUILD_EXAMPLES=ON -DROBOTMEM_BUILD_TESTS=ON >"$work/configure.log" ||
  { cat "$work/configure.log"; fail "CMake configure with $toolchain failed"; }
grep -E 'robotmem: cargo builds for' "$work/configure.log"
cmake --build "$build"
lib=$build/lib/librobotmem.so.$version
is_aarch64 "$lib" || fail "$lib is not an aarch64 library"
is_aarch64 "$build/examples/quickstart" || fail "examples/quickstart was not built for aarch64"

timed_step "ctest under qemu (C and C++ tests, shared and static library, models required)"
(cd "$build" && ROBOTMEM_REQUIRE_MODEL=1 ctest --output-on-failure --parallel "$jobs") | tee "$work/ctest.log"
ctest_summary=$(grep -E 'tests passed' "$work/ctest.log")
if grep -Eq '\(Not Run\)|\*\*\*Skipped|Disabled' "$work/ctest.log"; then
  fail "ctest skipped tests under qemu: $(grep -E 'Not Run|Skipped|Disabled' "$work/ctest.log" | tr '\n' ' ')"
fi

timed_step "install into a temporary prefix (moved afterwards), consumer project and pkg-config under qemu"
cmake --install "$build" --prefix "$work/staging" >/dev/null
mv "$work/staging" "$work/prefix"
prefix=$work/prefix
libdir=$(dirname "$(find "$prefix" -name librobotmem.a)")
for f in include/robotmem.h include/robotmem/robotmem.hpp; do [ -f "$prefix/$f" ] || fail "missing $f in the prefix"; done
[ -f "$libdir/cmake/robotmem/robotmemConfig.cmake" ] || fail "missing robotmemConfig.cmake in the prefix"
[ -f "$libdir/pkgconfig/robotmem.pc" ] || fail "missing robotmem.pc in the prefix"
[ "$(readlink "$libdir/librobotmem.so")" = "$soname" ] || fail "librobotmem.so does not point to $soname"
[ "$(readlink "$libdir/$soname")" = "librobotmem.so.$version" ] || fail "$soname does not point to librobotmem.so.$version"
readelf -d "$libdir/librobotmem.so.$version" | grep -q "SONAME.*\[$soname\]" || fail "SONAME is not $soname"
is_aarch64 "$libdir/librobotmem.so.$version" || fail "the installed librobotmem.so is not aarch64"
if grep -rq "$work/staging" "$libdir/cmake" "$libdir/pkgconfig"; then fail "install files hold absolute paths"; fi

cmake -S tests/consumer -B "$work/consumer" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release >"$work/consumer-configure.log" ||
  { cat "$work/consumer-configure.log"; fail "tests/consumer does not configure against the aarch64 prefix"; }
grep -E 'robotmem [0-9.]+ from' "$work/consumer-configure.log"
cmake --build "$work/consumer" >/dev/null
for exe in consumer_shared consumer_static consumer_cpp; do
  is_aarch64 "$work/consumer/$exe" || fail "$exe is not an aarch64 program"
  "$run" "$work/consumer/$exe"
done
readelf -d "$work/consumer/consumer_shared" | grep -q "NEEDED.*\[$soname\]" || fail "consumer_shared does not need $soname"
if readelf -d "$work/consumer/consumer_static" | grep -q "NEEDED.*librobotmem"; then
  fail "consumer_static depends on the shared library"
fi

# pkg-config of the prefix alone (PKG_CONFIG_LIBDIR: none of the host's .pc files).
pc() { PKG_CONFIG_LIBDIR="$libdir/pkgconfig" PKG_CONFIG_PATH="" pkg-config "$@"; }
[ "$(pc --modversion robotmem)" = "$version" ] || fail "pkg-config version is not $version"
strict=(-Wall -Wextra -Werror -pedantic)
# shellcheck disable=SC2046 # word splitting of the flags is intended
aarch64-linux-gnu-gcc -std=c99 "${strict[@]}" -DCONSUMER_VARIANT='"pkg-config shared"' \
  tests/consumer/consumer.c $(pc --cflags --libs robotmem) -Wl,-rpath,"$(pc --variable=libdir robotmem)" \
  -o "$work/pc_shared"
# shellcheck disable=SC2046
aarch64-linux-gnu-gcc -std=c99 "${strict[@]}" -DCONSUMER_VARIANT='"pkg-config static"' \
  tests/consumer/consumer.c $(pc --cflags robotmem) \
  $(pc --static --libs robotmem | sed 's/-lrobotmem\b/-l:librobotmem.a/') -o "$work/pc_static"
# shellcheck disable=SC2046
aarch64-linux-gnu-g++ -std=c++17 "${strict[@]}" -DCONSUMER_VARIANT='"pkg-config C++"' \
  tests/consumer/consumer.cpp $(pc --cflags --libs robotmem) -Wl,-rpath,"$(pc --variable=libdir robotmem)" \
  -o "$work/pc_cpp"
for exe in pc_shared pc_static pc_cpp; do "$run" "$work/$exe"; done

timed_step "what librobotmem.so needs at run time"
needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
echo "NEEDED: $needed"
for n in $needed; do
  case $n in
    libc.so.6 | libm.so.6 | libgcc_s.so.1 | ld-linux-aarch64.so.1 | libpthread.so.0 | libdl.so.2 | librt.so.1) ;;
    libstdc++* | libssl* | libcrypto* | libpq*) fail "librobotmem.so (aarch64) needs $n" ;;
    *) fail "librobotmem.so (aarch64) needs $n, not in the expected list (glibc, libgcc_s)" ;;
  esac
done
if nm -C "$libdir/librobotmem.a" 2>/dev/null | grep -Eq " [TtDd] .*(tokio_postgres|postgres_protocol|native_tls)::"; then
  fail "librobotmem.a (aarch64) holds the PostgreSQL client"
fi
glibc=$(aarch64-linux-gnu-objdump -T "$lib" | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -n 1)
echo "newest glibc symbol version used: $glibc (the board's glibc must be at least that)"
echo "ONNX Runtime $(basename "$(readlink -f "$ort")") (loaded at run time, not NEEDED): $(readelf -d "$ort" |
  sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"

timed_step "examples/quickstart: aarch64 under qemu against x86_64 (BM25 only, then hybrid with the default model)"
# The x86_64 example from build/ (scripts/example.sh's and scripts/cmake-test.sh's
# build; up to date after the CMake stage of scripts/test.sh), with the rustup
# toolchain: RUSTC from aarch64_setup would rebuild target/ with Debian's rustc.
env -u RUSTC cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DROBOTMEM_CARGO_TARGET_DIR="$root/target" >/dev/null
env -u RUSTC cmake --build build --target quickstart >"$work/x86-build.log" 2>&1 ||
  { tail -n 30 "$work/x86-build.log"; fail "x86_64 build of examples/quickstart failed"; }
model=$models/use-multilingual-v3-int8
quickstart() { # ARCH MODE: runs one quickstart into $work/quickstart-ARCH-MODE.txt
  local arch=$1 mode=$2 out=$work/quickstart-$1-$2.txt
  local -a cmd=("$root/build/examples/quickstart") vars=(ROBOTMEM_MODEL_DIR= ROBOTMEM_ORT_LIBRARY=)
  [ "$arch" = x86_64 ] || cmd=("$run" "$build/examples/quickstart")
  if [ "$mode" = hybrid ]; then
    vars=("ROBOTMEM_MODEL_DIR=$model" "ROBOTMEM_ORT_LIBRARY=$models/onnxruntime/libonnxruntime.so")
    [ "$arch" = x86_64 ] || vars[1]=ROBOTMEM_ORT_LIBRARY=$ort
  fi
  env "${vars[@]}" "${cmd[@]}" "$work/quickstart-$arch-$mode.db" >"$out" 2>&1 ||
    { cat "$out"; fail "quickstart ($arch, $mode) failed"; }
}
for mode in bm25 hybrid; do
  quickstart x86_64 "$mode"
  quickstart aarch64 "$mode"
  python3 tests/cross/compare_quickstart.py --mode "$mode" \
    "$work/quickstart-x86_64-$mode.txt" "$work/quickstart-aarch64-$mode.txt" ||
    fail "quickstart output on aarch64 differs from x86_64 ($mode; both kept in $work)"
done

timed_step "Rust tests for aarch64 under qemu: tests/vector_kernels.rs, tests/vector_index.rs, tests/embedding.rs"
# The models with the aarch64 runtime, laid out as tests/model/mod.rs expects.
mkdir "$work/models"
ln -s "$models/onnxruntime-aarch64" "$work/models/onnxruntime"
for f in use-multilingual-v3-int8 all-MiniLM-L6-v2-int8 reference-embeddings.json use-reference-embeddings.json; do
  [ -e "$models/$f" ] || fail "missing $models/$f (scripts/fetch-model.sh)"
  ln -s "$models/$f" "$work/models/$f"
done
CARGO_TARGET_DIR=$AARCH64_TARGET_DIR ROBOTMEM_TEST_MODELS=$work/models ROBOTMEM_REQUIRE_MODEL=1 \
  "$AARCH64_CARGO" test --release --locked --target "$AARCH64_TRIPLE" --no-fail-fast \
  --test vector_kernels --test vector_index --test embedding -- --nocapture 2>&1 | tee "$work/cargo-test.log" |
  grep -E '^test |^test result:|kernels on this CPU|sqlite-vec kernel|worst cosine'
rust_summary=$(grep -E '^test result:' "$work/cargo-test.log" |
  awk '{p += $4; f += $6; i += $8} END { printf "%d passed, %d failed, %d ignored", p, f, i }')

timed_step "vector kernels on a Cortex-A53 (no dot-product extension: i.MX 8, Raspberry Pi 3): neon, not neon-dotprod"
# The run above emulates a Cortex-A76, where the index picks neon-dotprod and the
# tests compare it and neon with the portable kernel; here the CPU lacks sdot, so
# the choice at run time must fall back to neon (and the same tests pass).
CARGO_TARGET_DIR=$AARCH64_TARGET_DIR QEMU_CPU=cortex-a53 \
  "$AARCH64_CARGO" test --release --locked --target "$AARCH64_TRIPLE" --test vector_kernels -- --nocapture \
  2>&1 | tee "$work/a53.log" | grep -E '^test result:|kernels on this CPU|sqlite-vec kernel'
grep -q 'kernels on this CPU: \["portable", "neon"\]' "$work/a53.log" ||
  fail "on a Cortex-A53 the kernels should be portable and neon: $(grep -E 'kernels on this CPU' "$work/a53.log")"
grep -q '^test result: ok' "$work/a53.log" || fail "the kernel tests failed on a Cortex-A53 (see above)"

timed_step "done"
echo "aarch64: $ctest_summary (ctest under qemu); Rust: $rust_summary; NEEDED: $needed; $glibc"
