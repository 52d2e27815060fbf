#!/usr/bin/env bash
# Installs what a fresh Debian 12 machine lacks for building and testing robotmem.
# Everything comes from Debian's packages; Rust comes from the machine's toolchain.
set -euo pipefail

need=()
for tool in cmake pkg-config cc c++ make valgrind; do
    command -v "$tool" >/dev/null 2>&1 || need+=("$tool")
done
# scripts/fetch-model.sh needs Python 3 with pip and venv (Debian splits them out).
py_pkgs=()
command -v python3 >/dev/null 2>&1 || py_pkgs+=(python3)
python3 -m pip --version >/dev/null 2>&1 || py_pkgs+=(python3-pip)
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || py_pkgs+=(python3-venv)
if ((${#need[@]} + ${#py_pkgs[@]})); then
    pkgs=("${py_pkgs[@]}")
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
    echo "bootstrap: cargo not found. Install a stable Rust toolchain (1.92 or newer) with rustup." >&2
    exit 1
fi
