#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for building and testing robotmem.
# Everything comes from Debian's packages; Rust comes from the machine's toolchain.
set -euo pipefail

need=()
for tool in cmake pkg-config cc c++ make valgrind; do
    command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
if ((${#need[@]})); then
    pkgs=()
    for t in "${need[@]}"; do
        case "$t" in
            cc) pkgs+=(gcc) ;;
            c++) pkgs+=(g++) ;;
            *) pkgs+=("$t") ;;
        esac
    done
    echo "bootstrap: installing ${pkgs[*]} from Debian"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "bootstrap: cargo not found. Install a stable Rust toolchain (1.89 or newer) with rustup." >&2
    exit 1
fi
