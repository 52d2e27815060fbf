# CMake toolchain file for 64-bit ARM Linux (aarch64, glibc): robotmem and the
# projects that use it, built on an x86_64 machine for a robot's computer.
#
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
#   cmake --build build-aarch64 && ctest --test-dir build-aarch64   # ctest under qemu
#
# Debian / Ubuntu: apt-get install gcc-aarch64-linux-gnu g++-aarch64-linux-gnu
# libc6-dev-arm64-cross qemu-user-static, plus a Rust toolchain with the target
# (rustup target add aarch64-unknown-linux-gnu, or Debian 12's rustc-web,
# cargo-web and libstd-rust-web-dev:arm64 with -DROBOTMEM_CARGO=/usr/bin/cargo
# -DROBOTMEM_RUSTC=/usr/bin/rustc). robotmem's CMakeLists.txt passes
# --target aarch64-unknown-linux-gnu to cargo and these compilers to it as the
# linker and the C compiler of the crates that build C code.
#
# Settable before this file is read (-D on the first configure):
#   ROBOTMEM_CROSS_PREFIX  prefix of the GNU tools (default aarch64-linux-gnu-)
#   CMAKE_SYSROOT          a board's root file system (copied or mounted); without
#                          it the cross compiler's own target libraries are used
#                          (Debian: /usr/aarch64-linux-gnu)
#   CMAKE_CROSSCOMPILING_EMULATOR  how to run target programs here; by default
#                          tests/cross/qemu-aarch64.sh in robotmem's tree, else
#                          qemu-aarch64-static (or qemu-aarch64) with -L at the
#                          target libraries, when installed (see below)
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)

if(NOT DEFINED ROBOTMEM_CROSS_PREFIX)
  set(ROBOTMEM_CROSS_PREFIX aarch64-linux-gnu-)
endif()
# try_compile projects read this file again: pass the prefix on to them.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ROBOTMEM_CROSS_PREFIX)
set(CMAKE_C_COMPILER ${ROBOTMEM_CROSS_PREFIX}gcc)
set(CMAKE_CXX_COMPILER ${ROBOTMEM_CROSS_PREFIX}g++)

# Where the target's libraries, headers and packages live. Debian's cross
# packages install them under /usr/<triplet>, which the cross compiler searches
# by itself; a sysroot replaces that.
if(CMAKE_SYSROOT)
  set(_rm_target_root "${CMAKE_SYSROOT}")
else()
  set(_rm_target_root "/usr/aarch64-linux-gnu")
endif()
list(APPEND CMAKE_FIND_ROOT_PATH "${_rm_target_root}")
# Programs run on this machine: found on the host. Libraries and headers: only
# the target's. Packages (find_package): the target root first, then the host
# paths too, so a package installed into a prefix given by CMAKE_PREFIX_PATH
# (an aarch64 robotmem installed with cmake --install --prefix, Debian's
# multiarch /usr/lib/aarch64-linux-gnu/cmake) is found without re-rooting.
if(NOT DEFINED CMAKE_FIND_ROOT_PATH_MODE_PROGRAM)
  set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
endif()
if(NOT DEFINED CMAKE_FIND_ROOT_PATH_MODE_LIBRARY)
  set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
endif()
if(NOT DEFINED CMAKE_FIND_ROOT_PATH_MODE_INCLUDE)
  set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
endif()
if(NOT DEFINED CMAKE_FIND_ROOT_PATH_MODE_PACKAGE)
  set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
endif()

# ctest (and add_custom_command on target executables) run aarch64 programs
# through user-mode qemu, with the target's loader and libraries. Within the
# robotmem source tree that is tests/cross/qemu-aarch64.sh, which also works
# around three problems of Debian 12's qemu 7.2 setup (the host's ld.so.cache
# naming another aarch64 glibc build, the host's x86 /proc/cpuinfo, on which
# ONNX Runtime crashes, and ONNX Runtime's wrong results on the SME of qemu's
# default CPU; it emulates a Cortex-A76 instead). Elsewhere (this file copied into
# another project): qemu itself, with -L at the target root and, for Debian's
# cross root (no ld.so.cache), LD_LIBRARY_PATH at its lib/. No qemu: the tests
# build but cannot run here.
if(NOT DEFINED CMAKE_CROSSCOMPILING_EMULATOR)
  find_program(ROBOTMEM_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64 NO_CMAKE_FIND_ROOT_PATH)
  get_filename_component(_rm_qemu_wrapper "${CMAKE_CURRENT_LIST_DIR}/../../tests/cross/qemu-aarch64.sh" ABSOLUTE)
  if(ROBOTMEM_QEMU_AARCH64 AND EXISTS "${_rm_qemu_wrapper}")
    set(CMAKE_CROSSCOMPILING_EMULATOR "${_rm_qemu_wrapper};--sysroot;${_rm_target_root}")
  elseif(ROBOTMEM_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${ROBOTMEM_QEMU_AARCH64};-L;${_rm_target_root}")
    if(NOT EXISTS "${_rm_target_root}/etc/ld.so.cache")
      list(APPEND CMAKE_CROSSCOMPILING_EMULATOR -E "LD_LIBRARY_PATH=${_rm_target_root}/lib")
    endif()
  endif()
endif()
