#!/usr/bin/env bash
# The web console in a real browser: Debian's chromium + chromium-driver
# (headless), driven by Selenium from PyPI (scripts/browser-requirements.txt,
# pinned with hashes, in a venv under ~/.cache/robotmem keyed by that file).
# tests/browser/console_test.py fills a database with the robotmem command, serves
# it with `robotmem web` on 127.0.0.1, and checks the dashboard numbers, search,
# a memory's detail and perception plot, forget with a reason, a session
# timeline, and that memories holding markup render as text. Screenshots (PNG)
# go to $ROBOTMEM_BROWSER_OUT (default target/browser-test).
#
# A part that cannot run (no chromium for this machine) prints SKIPPED and why.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/bootstrap.sh
# shellcheck source-path=SCRIPTDIR source=lib/common.sh
source scripts/lib/common.sh browser-test

step "Debian chromium + chromium-driver"
if ! apt_install_missing chromium chromium-driver python3-venv; then
  echo "SKIPPED browser test: chromium / chromium-driver could not be installed from Debian" | tee /dev/stderr
  exit 0
fi
chrome=$(command -v chromium || true)
driver=$(command -v chromedriver || true)
if [ -z "$chrome" ] || [ -z "$driver" ]; then
  echo "SKIPPED browser test: chromium or chromedriver missing after installation" | tee /dev/stderr
  exit 0
fi

pinned_venv scripts/browser-requirements.txt selenium selenium

step "robotmem command"
cargo build --locked -q -p robotmem-cli
out=${ROBOTMEM_BROWSER_OUT:-$PWD/target/browser-test}
rm -rf "$out" && mkdir -p "$out"

step "console in headless chromium"
ROBOTMEM_BIN="$PWD/target/debug/robotmem" CHROMIUM="$chrome" CHROMEDRIVER="$driver" WORK="$work" OUT="$out" \
  "$venv/bin/python" tests/browser/console_test.py
echo "browser test: passed; screenshots in $out"
