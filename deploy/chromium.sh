#!/usr/bin/env bash
# Debian's Chromium for the browser e2e test (tests/e2e/web): headless, driven by Playwright,
# which cannot download browsers of its own here. Installs on first use; prints the binary.
set -euo pipefail
cd "$(dirname "$0")/.."
source deploy/lib/apt.sh
if ! command -v chromium >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt_get update -q
  apt_get install -y -q --no-install-recommends chromium fonts-liberation
fi
command -v chromium
