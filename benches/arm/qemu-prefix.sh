# shellcheck shell=bash disable=SC2034
# Sourced by scripts/aarch64-quality.sh and scripts/aarch64-budget.sh after
# scripts/lib/aarch64.sh's aarch64_setup: `qemu_prefix DIR CPU` makes DIR a
# QEMU_LD_PREFIX for qemu-user 7.2 and exports QEMU_LD_PREFIX=DIR, QEMU_CPU=CPU,
# and qemu_prefix_libc (where its glibc comes from). It works around two things:
#   - libc: with libc6:arm64 installed (libstd-rust-web-dev:arm64 pulls it in),
#     QEMU_LD_PREFIX=/usr/aarch64-linux-gnu loads the cross package's ld.so
#     (glibc 2.36-8) with the multiarch libc.so.6 (a later 2.36 update): the first
#     pthread_create then spins forever. DIR holds one glibc.
#   - /proc/cpuinfo: qemu-user 7.2 passes the host's (x86) file through; ONNX
#     Runtime's cpuinfo finds no ARM core in it and dereferences NULL (SIGSEGV
#     when the first session is made). DIR holds an aarch64 /proc/cpuinfo for the
#     emulated CPU: qemu-user opens a guest's absolute path under the prefix when
#     it exists there.
# CPU: cortex-a72 (Raspberry Pi 4: NEON without the dot-product instructions),
# cortex-a76 (Raspberry Pi 5, RK3588: with them), neoverse-n1, or max (SVE and
# the int8 matrix instructions too, as Neoverse V1 and later). Returns 1 with the
# reason in $qemu_prefix_why for another CPU.
qemu_prefix() {
  local dir=$1 cpu=$2 i midr d
  qemu_prefix_why=""
  case $cpu in
    # CPU part, variant, revision, features (as Linux reports them for that core)
    cortex-a72) midr=(0xd08 0x0 3 "fp asimd evtstrm crc32 cpuid") ;;
    cortex-a76) midr=(0xd0b 0x4 1 "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp") ;;
    neoverse-n1) midr=(0xd0c 0x3 1 "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp ssbs") ;;
    # qemu's every feature (SVE, the int8 matrix instructions, BF16), reported as a Neoverse V1.
    max) midr=(0xd40 0x1 1 "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb paca pacg dcpodp sve2 i8mm bf16") ;;
    *)
      qemu_prefix_why="CPU $cpu: cortex-a72, cortex-a76, neoverse-n1 or max"
      return 1
      ;;
  esac
  mkdir -p "$dir/proc"
  if [ -e /lib/aarch64-linux-gnu/libc.so.6 ] && [ -e /lib/ld-linux-aarch64.so.1 ]; then
    for d in lib usr etc; do ln -sfn "/$d" "$dir/$d"; done
    qemu_prefix_libc="libc6:arm64 $(dpkg-query -W -f='${Version}' libc6:arm64 2>/dev/null || echo '?')"
  else
    ln -sfn /usr/aarch64-linux-gnu/lib "$dir/lib"
    qemu_prefix_libc="libc6-arm64-cross $(dpkg-query -W -f='${Version}' libc6-arm64-cross 2>/dev/null || echo '?')"
  fi
  for ((i = 0; i < $(nproc); i++)); do
    printf 'processor\t: %d\nBogoMIPS\t: 50.00\nFeatures\t: %s\nCPU implementer\t: 0x41\nCPU architecture: 8\n' "$i" "${midr[3]}"
    printf 'CPU variant\t: %s\nCPU part\t: %s\nCPU revision\t: %s\n\n' "${midr[1]}" "${midr[0]}" "${midr[2]}"
  done >"$dir/proc/cpuinfo"
  export QEMU_LD_PREFIX=$dir QEMU_CPU=$cpu
}
