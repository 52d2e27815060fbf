#!/usr/bin/env bash
# Runs an aarch64 Linux program on this (x86_64) machine under user-mode qemu,
# with the target's libraries: ctest's CMAKE_CROSSCOMPILING_EMULATOR in
# cmake/toolchains/aarch64-linux-gnu.cmake and cargo's runner in
# scripts/lib/aarch64.sh.
#
# usage: tests/cross/qemu-aarch64.sh [--sysroot DIR] PROGRAM [ARGS...]
#   DIR  the target's root: Debian's cross libraries /usr/aarch64-linux-gnu (default)
#        or a board's root file system
#
# Two things plain `qemu-aarch64-static -L DIR` gets wrong here, both handled:
#  - /usr/aarch64-linux-gnu has no ld.so.cache, so the guest's loader reads the
#    host's, which on a Debian host with arm64 multiarch packages (libc6:arm64
#    comes with libstd-rust-web-dev:arm64) names /lib/aarch64-linux-gnu/libc.so.6,
#    another glibc build than the cross loader; that pair spins forever in
#    pthread_create. The guest gets LD_LIBRARY_PATH=DIR/lib (after the caller's).
#  - qemu 7.2 (Debian 12) passes the host's x86 /proc/cpuinfo through to aarch64
#    programs; ONNX Runtime's cpuinfo library dereferences NULL parsing it. The
#    guest sees an aarch64 /proc/cpuinfo instead (one Cortex-A76 entry per CPU of
#    this machine), through a root directory of symbolic links to DIR plus that
#    file, kept under ~/.cache/robotmem. cpuinfo takes the cores' identity from
#    it and the instruction-set features from the auxiliary vector, i.e. from the
#    CPU qemu emulates.
#  - That CPU is a Cortex-A76 (Armv8.2 with dot product: Raspberry Pi 5, RK3588's
#    big cores), unless $QEMU_CPU names another. qemu's default, "max", has SME,
#    and ONNX Runtime 1.31 then runs its SME (KleidiAI) int8 kernels, which under
#    qemu 7.2 give wrong embeddings (every text nearly the same vector; OK with
#    max,sme=off) and take minutes: no robot board has SME yet.
set -euo pipefail

sysroot=/usr/aarch64-linux-gnu
if [ "${1:-}" = --sysroot ]; then
  [ $# -ge 2 ] || { echo "qemu-aarch64.sh: --sysroot needs a directory" >&2; exit 2; }
  sysroot=$2
  shift 2
fi
[ $# -ge 1 ] || { echo "usage: qemu-aarch64.sh [--sysroot DIR] PROGRAM [ARGS...]" >&2; exit 2; }
[ -d "$sysroot/lib" ] || { echo "qemu-aarch64.sh: no $sysroot/lib (apt-get install libc6-arm64-cross, or give --sysroot)" >&2; exit 127; }
qemu=$(command -v qemu-aarch64-static || command -v qemu-aarch64) ||
  { echo "qemu-aarch64.sh: neither qemu-aarch64-static nor qemu-aarch64 (apt-get install qemu-user-static)" >&2; exit 127; }

ncpu=$(getconf _NPROCESSORS_CONF)
key=$(printf 'v2 %s %s\n' "$sysroot" "$ncpu" | sha256sum | cut -c1-16)
base=${XDG_CACHE_HOME:-$HOME/.cache}/robotmem
root=$base/qemu-aarch64-root-$key
if [ ! -f "$root/proc/cpuinfo" ]; then
  mkdir -p "$base"
  tmp=$(mktemp -d "$root.XXXXXX")
  for entry in "$sysroot"/*; do
    [ "$(basename "$entry")" = proc ] || ln -s "$entry" "$tmp/$(basename "$entry")"
  done
  mkdir "$tmp/proc"
  for ((i = 0; i < ncpu; i++)); do
    printf 'processor\t: %d\nBogoMIPS\t: 108.00\n' "$i"
    printf 'Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\n'
    printf 'CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n\n'
  done >"$tmp/proc/cpuinfo"
  chmod 755 "$tmp"
  # Another process may have made it meanwhile: then that one is used.
  mv -T "$tmp" "$root" 2>/dev/null || rm -rf "$tmp"
fi

guest_env=()
if [ ! -e "$sysroot/etc/ld.so.cache" ]; then
  guest_env=(-E "LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$sysroot/lib")
fi
export QEMU_CPU=${QEMU_CPU:-cortex-a76}
exec "$qemu" -L "$root" "${guest_env[@]}" "$@"
