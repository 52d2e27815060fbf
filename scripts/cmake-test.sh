#!/usr/bin/env bash
# End-to-end check of the CMake side of robotmem, from a fresh clone or not:
#   1. configure + build the top-level project into build/ (cargo output shared
#      with `cargo test` through target/), run ctest;
#   2. cmake --install into a temporary prefix, then move the prefix (the package
#      must be relocatable) and check the layout and the SONAME symlink chain;
#   3. build and run tests/consumer (find_package: C shared + static, C++ through
#      robotmem::cpp) and the same C and C++ files through pkg-config, all with
#      LD_LIBRARY_PATH unset: the shared consumers find librobotmem through their RPATH;
#   4. configure with no usable C++ compiler: the C-only build still works.
# Usage: scripts/cmake-test.sh   (from anywhere; needs cmake, cargo, a C and a C++ compiler)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
source scripts/lib/common.sh cmake-test

version=$(sed -n 's/^version *= *"\([0-9]*\.[0-9]*\.[0-9]*\)".*/\1/p' Cargo.toml | head -n 1)
IFS=. read -r major minor _ <<<"$version"
if [ "$major" -eq 0 ]; then soname=librobotmem.so.0.$minor; else soname=librobotmem.so.$major; fi

step "configure + build robotmem $version into build/"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DROBOTMEM_CARGO_TARGET_DIR="$root/target" \
  -DROBOTMEM_BUILD_EXAMPLES=ON -DROBOTMEM_BUILD_TESTS=ON
cmake --build build

step "ctest"
(cd build && ctest --output-on-failure --parallel "$jobs") | tee "$work/ctest.log"
summary=$(grep -E 'tests passed' "$work/ctest.log")

step "install"
cmake --install build --prefix "$work/staging"
mv "$work/staging" "$work/prefix" # relocated: nothing may point into staging/
prefix=$work/prefix
libdir=$(dirname "$(find "$prefix" -name librobotmem.a)")
for f in include/robotmem.h include/robotmem/robotmem.hpp; do [ -f "$prefix/$f" ] || fail "missing $f"; done
for f in bindings/cpp/include/robotmem/*.hpp; do
  cmp -s "$f" "$prefix/include/robotmem/$(basename "$f")" || fail "installed $(basename "$f") differs from $f"
done
for f in robotmemConfig.cmake robotmemConfigVersion.cmake robotmemTargets.cmake; do
  [ -f "$libdir/cmake/robotmem/$f" ] || fail "missing $libdir/cmake/robotmem/$f"
done
[ -f "$libdir/pkgconfig/robotmem.pc" ] || fail "missing robotmem.pc"
[ "$(readlink "$libdir/librobotmem.so")" = "$soname" ] || fail "librobotmem.so does not point to $soname"
[ "$(readlink "$libdir/$soname")" = "librobotmem.so.$version" ] || fail "$soname does not point to librobotmem.so.$version"
[ -f "$libdir/librobotmem.so.$version" ] && [ ! -L "$libdir/librobotmem.so.$version" ] ||
  fail "librobotmem.so.$version is not a regular file"
readelf -d "$libdir/librobotmem.so.$version" | grep -q "SONAME.*\[$soname\]" || fail "SONAME is not $soname"
if grep -rq "$work/staging" "$libdir/cmake" "$libdir/pkgconfig"; then fail "install files hold absolute paths"; fi
echo "librobotmem.so -> $soname -> librobotmem.so.$version (SONAME $soname)"
# The fleet client (feature `fleet`: PostgreSQL over OpenSSL) is the command's, never the C library's.
if readelf -d "$libdir/librobotmem.so.$version" | grep -Eq "NEEDED.*(libssl|libcrypto|libpq)"; then
  fail "librobotmem.so links a TLS or PostgreSQL library"
fi
if nm -C "$libdir/librobotmem.a" 2>/dev/null | grep -Eq " [TtDd] .*(tokio_postgres|postgres_protocol|native_tls)::"; then
  fail "librobotmem.a holds the PostgreSQL client"
fi
echo "no PostgreSQL client and no TLS library in librobotmem (.so NEEDED, .a symbols)"

step "consumer project (find_package) against the installed package"
cmake -S tests/consumer -B "$work/consumer" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release
cmake --build "$work/consumer"
"$work/consumer/consumer_shared"
"$work/consumer/consumer_static"
readelf -d "$work/consumer/consumer_shared" | grep -q "NEEDED.*\[$soname\]" ||
  fail "consumer_shared does not need $soname"
if readelf -d "$work/consumer/consumer_static" | grep -q "NEEDED.*librobotmem"; then
  fail "consumer_static depends on the shared library"
fi
echo "consumer_shared NEEDED $soname; consumer_static has no librobotmem dependency"
"$work/consumer/consumer_cpp"
readelf -d "$work/consumer/consumer_cpp" | grep -q "NEEDED.*\[$soname\]" || fail "consumer_cpp does not need $soname"

step "pkg-config"
export PKG_CONFIG_PATH="$libdir/pkgconfig"
[ "$(pkg-config --modversion robotmem)" = "$version" ] || fail "pkg-config version is not $version"
cc="${CC:-cc}"
# shellcheck disable=SC2046 # word splitting of the flags is intended
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic -DCONSUMER_VARIANT='"pkg-config shared"' \
  tests/consumer/consumer.c $(pkg-config --cflags --libs robotmem) \
  -Wl,-rpath,"$(pkg-config --variable=libdir robotmem)" -o "$work/pc_shared"
"$work/pc_shared"
# Static: librobotmem.a plus the Libs.private system libraries.
# shellcheck disable=SC2046
"$cc" -std=c99 -Wall -Wextra -Werror -pedantic -DCONSUMER_VARIANT='"pkg-config static"' \
  tests/consumer/consumer.c $(pkg-config --cflags robotmem) \
  $(pkg-config --static --libs robotmem | sed 's/-lrobotmem\b/-l:librobotmem.a/') -o "$work/pc_static"
"$work/pc_static"
# C++ wrapper (header-only): the same flags.
cxx="${CXX:-c++}"
# shellcheck disable=SC2046
"$cxx" -std=c++17 -Wall -Wextra -Werror -pedantic -DCONSUMER_VARIANT='"pkg-config C++"' \
  tests/consumer/consumer.cpp $(pkg-config --cflags --libs robotmem) \
  -Wl,-rpath,"$(pkg-config --variable=libdir robotmem)" -o "$work/pc_cpp"
"$work/pc_cpp"

step "C-only configure (no usable C++ compiler)"
CXX=/bin/false cmake -S . -B "$work/no-cxx" -DROBOTMEM_CARGO_TARGET_DIR="$root/target" >"$work/no-cxx.log" ||
  { cat "$work/no-cxx.log"; fail "configure without a C++ compiler failed"; }
grep -q '^ROBOTMEM_BUILD_CPP_TESTS:BOOL=OFF$' "$work/no-cxx/CMakeCache.txt" ||
  fail "ROBOTMEM_BUILD_CPP_TESTS is not OFF without a C++ compiler"
echo "configured without a C++ compiler: ROBOTMEM_BUILD_CPP_TESTS=OFF"

step "done in $((SECONDS - start)) s"
echo "ctest: $summary"
