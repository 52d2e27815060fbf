# shellcheck shell=bash
# Cross-build environment for aarch64-unknown-linux-gnu (sourced by the scripts
# that build or run robotmem for 64-bit ARM). Debian 12 has what it needs:
# rustc-web / cargo-web (1.96, with libstd-rust-web-dev:arm64 as the target's
# std; rustup cannot add targets on machines without its download host), the
# aarch64 GNU toolchain, and qemu-user-static to run the results here.
#
# aarch64_setup: installs the missing Debian packages (adds the arm64 foreign
# architecture first) and exports the variables below; returns 1 with the reason
# in $aarch64_why when that cannot be done (no apt, no network to Debian, ...).
#   AARCH64_TRIPLE   aarch64-unknown-linux-gnu
#   AARCH64_CARGO    /usr/bin/cargo   (Debian's, with RUSTC=/usr/bin/rustc)
#   AARCH64_TARGET_DIR  target/aarch64 unless set (its own: another rustc than the host build)
#   AARCH64_QEMU     qemu-aarch64-static, with QEMU_LD_PREFIX=/usr/aarch64-linux-gnu and
#                    QEMU_SET_ENV=LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib (the guest's
#                    environment): that prefix has no ld.so.cache, so the guest's loader
#                    reads the host's, which names the arm64 multiarch glibc
#                    (/lib/aarch64-linux-gnu, libc6:arm64 comes with libstd-rust-web-dev:arm64),
#                    another build than the cross loader it runs with; that pair hangs
#                    in pthread_create. LD_LIBRARY_PATH puts the cross libraries first.
#   AARCH64_RUN      tests/cross/qemu-aarch64.sh: the same, an aarch64 /proc/cpuinfo for
#                    the guest (ONNX Runtime crashes on the host's x86 one under qemu 7.2)
#                    and a Cortex-A76 as the CPU (qemu's default "max" has SME, on which
#                    ONNX Runtime's int8 kernels give wrong vectors under qemu 7.2); use it
#                    for anything that loads ONNX Runtime. Cargo's runner.
#   CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_{LINKER,RUNNER}, CC_/CXX_/AR_ for the target
AARCH64_TRIPLE=aarch64-unknown-linux-gnu
AARCH64_PACKAGES=(rustc-web cargo-web libstd-rust-web-dev:arm64 gcc-aarch64-linux-gnu
  g++-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user-static)

# shellcheck disable=SC2034 # aarch64_why is for the caller
aarch64_setup() {
  aarch64_why=""
  local root sudo="" missing=() p
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  for p in "${AARCH64_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if ((${#missing[@]})); then
    if ! command -v apt-get >/dev/null; then
      aarch64_why="no apt-get to install ${missing[*]}"
      return 1
    fi
    echo "aarch64: installing ${missing[*]} from Debian"
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
      $sudo dpkg --add-architecture arm64 || { aarch64_why="dpkg --add-architecture arm64 failed"; return 1; }
    fi
    if ! { $sudo apt-get update -qq &&
      DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
      aarch64_why="apt-get could not install ${missing[*]} (Debian's arm64 packages unreachable?)"
      return 1
    fi
  fi
  for p in /usr/bin/cargo /usr/bin/rustc /usr/bin/aarch64-linux-gnu-gcc /usr/bin/qemu-aarch64-static; do
    [ -x "$p" ] || { aarch64_why="$p is missing after installing ${AARCH64_PACKAGES[*]}"; return 1; }
  done
  [ -d /usr/lib/rustlib/$AARCH64_TRIPLE ] || { aarch64_why="no Rust std for $AARCH64_TRIPLE under /usr/lib/rustlib"; return 1; }
  export AARCH64_CARGO=/usr/bin/cargo RUSTC=/usr/bin/rustc
  export AARCH64_TARGET_DIR="${AARCH64_TARGET_DIR:-$root/target/aarch64}"
  export AARCH64_QEMU=/usr/bin/qemu-aarch64-static QEMU_LD_PREFIX=/usr/aarch64-linux-gnu
  export QEMU_SET_ENV=LD_LIBRARY_PATH=/usr/aarch64-linux-gnu/lib
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc
  export AARCH64_RUN=$root/tests/cross/qemu-aarch64.sh
  export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_RUNNER=$AARCH64_RUN
  export CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc CXX_aarch64_unknown_linux_gnu=aarch64-linux-gnu-g++
  export AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
}
