#!/usr/bin/env bash
# AddressSanitizer + UndefinedBehaviorSanitizer run of the C and C++ tests (issue 6,
# "memory safety of the C side"):
#   1. configure + build a separate tree (default build-asan/) with
#      -DROBOTMEM_SANITIZE=address,undefined: every C/C++ example and test executable
#      (shared and static variants) is instrumented; the Rust library is not (cargo
#      builds it as usual), so this checks the callers' side of the ABI;
#   2. prove the instrumentation is in every executable that ctest runs: ASan check
#      calls (__asan_report_*) and UBSan handlers (__ubsan_handle_*) in its symbol
#      table, and the ASan/UBSan runtimes linked (NEEDED or built in); and that
#      librobotmem itself carries none;
#   3. canaries built with the same flags (heap overflow, leak, signed overflow)
#      must each be reported and fail under the options below: a report cannot pass;
#   4. ctest with ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1 and
#      UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1, reports also written to
#      log files (catches forked children too): any failed test or any report fails.
# The valgrind tests are not registered in this tree (valgrind and ASan do not mix);
# scripts/cmake-test.sh runs them in build/.
# Usage: scripts/sanitize-test.sh [build-dir]   (from anywhere; needs cmake, cargo,
#        gcc/g++ with libasan8 + libubsan1, or clang; binutils)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
build=$(realpath -m "${1:-$root/build-asan}")
sanitize=address,undefined
source scripts/lib/common.sh sanitize-test
for tool in cmake nm readelf objdump; do command -v "$tool" >/dev/null || fail "$tool not found"; done

step "configure + build with -fsanitize=$sanitize into $build"
# RelWithDebInfo: -O2 like the release tests, plus -g for readable reports.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DROBOTMEM_SANITIZE="$sanitize" \
  -DROBOTMEM_CARGO_TARGET_DIR="$root/target" -DROBOTMEM_BUILD_EXAMPLES=ON -DROBOTMEM_BUILD_TESTS=ON
cmake --build "$build"

step "proof of instrumentation"
# Every executable a test runs, taken from ctest's own test commands.
mapfile -t exes < <(cd "$build" && ctest -N -V | sed -n 's/^.*Test command: //p' | tr -d '"' |
  tr ' ' '\n' | grep "^$build/" | sort -u | while read -r f; do [ -f "$f" ] && [ -x "$f" ] && echo "$f"; done)
[ "${#exes[@]}" -ge 12 ] || fail "expected at least 12 test executables (8 C, 3 C++, 1 example), found ${#exes[@]}"
if (cd "$build" && ctest -N | grep -q '\.valgrind'); then fail "valgrind tests are registered in a sanitizer build"; fi
printf '%-22s %12s %13s  %s\n' executable "ASan checks" "UBSan checks" "runtimes (NEEDED or built in)"
for exe in "${exes[@]}"; do
  syms=$(nm "$exe" 2>/dev/null) || fail "nm $exe failed (stripped?)"
  needed=$(readelf -d "$exe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  # Call sites the compiler inserts into instrumented code only: ASan load/store
  # checks and UBSan handlers.
  calls=$(objdump -d --no-show-raw-insn "$exe" | grep -E 'call.*<__(asan_report_(load|store)|ubsan_handle_)' || true)
  asan=$(grep -c '<__asan_report_' <<<"$calls" || true)
  ubsan=$(grep -c '<__ubsan_handle_' <<<"$calls" || true)
  [ "$asan" -gt 0 ] || fail "$exe: no __asan_report_* calls: not ASan-instrumented"
  [ "$ubsan" -gt 0 ] || fail "$exe: no __ubsan_handle_* calls: not UBSan-instrumented"
  grep -q ' __asan_init$' <<<"$syms" || fail "$exe: no __asan_init (ASan module constructor)"
  runtimes=""
  for rt in asan ubsan; do
    if grep -q "lib$rt\.so" <<<"$needed"; then runtimes+="$(grep -o "lib$rt\.so[.0-9]*" <<<"$needed") "
    elif grep -q " [TtWw] __${rt}_" <<<"$syms"; then runtimes+="$rt(static) " # clang's default
    else fail "$exe: the $rt runtime is neither NEEDED nor linked in"; fi
  done
  case $(basename "$exe") in
    *_static) if grep -q librobotmem <<<"$needed"; then fail "$exe: static variant NEEDs librobotmem"; fi
              grep -q ' T rm_close$' <<<"$syms" || fail "$exe: librobotmem.a is not linked in"
              runtimes+="(librobotmem.a linked in)" ;;
    *) runtimes+="$(grep -o 'librobotmem\.so[.0-9]*' <<<"$needed" || true)" ;;
  esac
  printf '%-22s %12s %13s  %s\n' "$(basename "$exe")" "$asan" "$ubsan" "$runtimes"
done
lib=$(readlink -f "$build/lib/librobotmem.so")
libsan=$(nm -D "$lib" | grep -c '__asan_\|__ubsan_' || true)
[ "$libsan" -eq 0 ] || fail "$lib references $libsan sanitizer symbols (expected an uninstrumented library)"
echo "$(basename "$lib"): 0 __asan_/__ubsan_ symbols (the Rust library is not instrumented, as intended)"

# ASan and LeakSanitizer reports go to files as well, so a report in a child process
# whose stderr is closed (test_no_exceptions' abort probes) is still seen. UBSan
# ignores log_path when ASan is loaded (gcc 12): its reports stay on stderr, and are
# found in ctest's log; -fno-sanitize-recover makes each one fail its process too.
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:halt_on_error=1:log_path=$work/san/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
mkdir -p "$work/san"
markers='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|SUMMARY: [A-Za-z]*Sanitizer'

step "canaries: each deliberate error must be reported and fail"
cc=$(sed -n 's/^CMAKE_C_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
cat >"$work/canary.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <limits.h>
int main(int argc, char **argv) {
    volatile int big = INT_MAX;
    char *p = malloc(8);
    if (argc < 2 || p == NULL) return 2;
    if (strcmp(argv[1], "overflow") == 0) ((volatile char *)p)[8] = 1; /* heap-buffer-overflow */
    if (strcmp(argv[1], "leak") == 0) { p = malloc(32); p[0] = 1; } /* first block lost */
    if (strcmp(argv[1], "ub") == 0) big = big + argc;         /* signed integer overflow */
    free(p);
    return 0;
}
EOF
"$cc" -O0 -g -fsanitize="$sanitize" -fno-sanitize-recover=all -fno-omit-frame-pointer \
  "$work/canary.c" -o "$work/canary"
for c in overflow:heap-buffer-overflow leak:detected\ memory\ leaks ub:signed\ integer\ overflow; do
  what=${c%%:*} expect=${c#*:}
  if { (exec "$work/canary" "$what" 2>"$work/canary.err"); } 2>/dev/null; then # no "Aborted" notice
    fail "canary '$what' exited 0: reports would not fail a test"
  fi
  grep -q "$expect" "$work/canary.err" "$work"/san/* 2>/dev/null || fail "canary '$what': no '$expect' report"
  grep -qE "$markers" "$work/canary.err" "$work"/san/* 2>/dev/null || fail "canary '$what': report not recognised"
  echo "canary $what: '$expect' reported, process failed"
  rm -f "$work"/san/*
done

step "ctest (ASan + UBSan)"
echo "ASAN_OPTIONS=$ASAN_OPTIONS"
echo "UBSAN_OPTIONS=$UBSAN_OPTIONS"
rc=0
(cd "$build" && ctest --output-on-failure --parallel "$jobs") | tee "$work/ctest.log" || rc=$?
reports=$(find "$work/san" -type f | sort)
if [ -n "$reports" ]; then
  for r in $reports; do printf '\n--- %s\n' "$r"; cat "$r"; done
  fail "sanitizer reports (above): $(echo "$reports" | wc -l) file(s)"
fi
# Every test's full output, passing ones included.
if grep -nE "$markers" "$build/Testing/Temporary/LastTest.log"; then
  fail "sanitizer reports in $build/Testing/Temporary/LastTest.log (above)"
fi
[ "$rc" -eq 0 ] || fail "ctest failed (exit $rc)"
summary=$(grep -E 'tests passed' "$work/ctest.log") || fail "no ctest summary"

step "done in $((SECONDS - start)) s"
echo "instrumented executables: ${#exes[@]}; sanitizer reports: 0"
echo "ctest (ASan + UBSan): $summary"
