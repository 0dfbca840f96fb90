#!/usr/bin/env bash
# Debian chromium for the browser tests (Playwright drives it; no browser download). Idempotent.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  echo "browser: $(chromium --version 2>/dev/null | head -1) (already installed)"
  exit 0
fi
echo "browser: installing Debian chromium"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
echo "browser: $(chromium --version 2>/dev/null | head -1)"
