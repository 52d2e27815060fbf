#!/usr/bin/env bash
# `robotmem mcp` driven by the official MCP client SDKs over stdio:
#  - Python: the `mcp` package from PyPI (scripts/mcp-requirements.txt, pinned
#    with hashes, in a venv under ~/.cache/robotmem keyed by that file) runs
#    tests/mcp/python_client.py: the current protocol (server/discover) and the
#    initialize handshake; every tool valid and invalid, resources, a session,
#    8 concurrent recalls, 300/301-character insights.
#  - TypeScript: @modelcontextprotocol/sdk from npm (tests/mcp/ts/package-lock.json,
#    integrity hashes, `npm ci` into ~/.cache/robotmem keyed by the lock file)
#    runs tests/mcp/ts/client.mjs: initialize, learn, recall.
# A part that cannot run (no python3.11 venv, no node/npm) prints SKIPPED and why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source scripts/lib/common.sh mcp-clients-test

step "robotmem command"
cargo build --locked -q -p robotmem-cli
bin="$PWD/target/debug/robotmem"
cache=${XDG_CACHE_HOME:-$HOME/.cache}/robotmem

step "Python MCP SDK"
if [ "$(/usr/bin/python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" != "3.11" ]; then
  echo "SKIPPED python MCP client: the wheels are pinned for CPython 3.11, /usr/bin/python3 is another version" | tee /dev/stderr
else
  apt_install_missing python3-venv || fail "python3-venv could not be installed"
  pinned_venv scripts/mcp-requirements.txt mcp-py mcp.client.stdio
  mkdir -p "$work/py"
  ROBOTMEM_BIN="$bin" WORK="$work/py" ROBOTMEM_MODEL_DIR= "$venv/bin/python" tests/mcp/python_client.py
fi

step "TypeScript MCP SDK"
lock=tests/mcp/ts/package-lock.json
# A fresh Debian 12 machine has neither: Debian's nodejs and npm packages.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  apt_install_missing nodejs npm || true
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "SKIPPED typescript MCP client: node or npm could not be installed from Debian" | tee /dev/stderr
elif [ ! -f "$lock" ]; then
  echo "SKIPPED typescript MCP client: no $lock" | tee /dev/stderr
else
  tkey=$(cat tests/mcp/ts/package.json "$lock" | sha256sum | cut -c1-16)
  tdir=${ROBOTMEM_MCP_TS_DIR:-$cache/mcp-ts-$tkey}
  if [ "$(cat "$tdir/.robotmem-ready" 2>/dev/null)" != "$tkey" ]; then
    step "@modelcontextprotocol/sdk into $tdir (npm ci, lock file integrity)"
    rm -rf "$tdir" && mkdir -p "$tdir"
    cp tests/mcp/ts/package.json "$lock" "$tdir/"
    (cd "$tdir" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
    echo "$tkey" > "$tdir/.robotmem-ready"
  fi
  cp tests/mcp/ts/client.mjs "$tdir/client.mjs"
  ROBOTMEM_BIN="$bin" WORK="$work" ROBOTMEM_MODEL_DIR= node "$tdir/client.mjs"
fi
echo "MCP client tests: done"
