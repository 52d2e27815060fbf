#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for building and testing robotmem.
# Everything comes from Debian's packages; Rust comes from the machine's toolchain.
set -euo pipefail

# Installs the Debian packages among "$@" that are not installed yet (one apt run).
apt_install_missing() {
    local missing=() p sudo=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
    done
    ((${#missing[@]})) || return 0
    command -v apt-get >/dev/null || { echo "bootstrap: no apt-get to install ${missing[*]}" >&2; return 1; }
    echo "bootstrap: installing ${missing[*]} from Debian"
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

pkgs=()
for tool in cmake:cmake pkg-config:pkg-config cc:gcc c++:g++ make:make valgrind:valgrind strace:strace; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || pkgs+=("${tool#*:}")
done
# The robotmem command's fleet client (cargo feature `fleet`) uses the system's OpenSSL.
dpkg-query -W -f='${Status}' libssl-dev 2>/dev/null | grep -q 'install ok installed' || pkgs+=(libssl-dev)
# The encryption stage builds OpenSSL's libcrypto from the openssl-src crate: its
# Configure needs the full perl (Debian's perl-base lacks modules it uses) and make.
dpkg-query -W -f='${Status}' perl 2>/dev/null | grep -q 'install ok installed' || pkgs+=(perl)
# scripts/fetch-model.sh needs Python 3 with pip and venv (Debian splits them out).
command -v python3 >/dev/null 2>&1 || pkgs+=(python3)
python3 -m pip --version >/dev/null 2>&1 || pkgs+=(python3-pip)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || pkgs+=(python3-venv)
if ((${#pkgs[@]})); then
    apt_install_missing "${pkgs[@]}"
fi

if ! command -v cargo >/dev/null 2>&1; then
    [ -x "$HOME/.cargo/bin/cargo" ] && export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "bootstrap: cargo not found. Install a stable Rust toolchain (1.92 or newer) with rustup." >&2
    exit 1
fi

# A clean clone builds in a cargo target directory cached under ~/.cache (scripts/lib/target-cache.sh).
source "$(dirname "${BASH_SOURCE[0]}")/lib/target-cache.sh"
robotmem_target_cache "$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
