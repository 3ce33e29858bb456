#!/usr/bin/env bash
# Makes sure Debian's chromium is at /usr/bin/chromium for the dashboard's browser tests
# (packages/dashboard/test/browser-*.test.ts, driven by playwright-core). Installs it with apt-get
# when missing (the machine reaches Debian's packages; playwright's own browser downloads do not
# work here). Called by .ci/run and by the browser tests' globalSetup. Idempotent and quiet when
# chromium is already there.
set -euo pipefail
CHROMIUM=/usr/bin/chromium
if [ -x "$CHROMIUM" ]; then exit 0; fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-chromium: $CHROMIUM is missing and there is no apt-get to install it; install Debian's chromium package (or set OUTBOXKIT_CHROMIUM to a Chromium binary)." >&2
  exit 1
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then SUDO="sudo"; fi
echo "ensure-chromium: installing Debian's chromium (apt-get)..." >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >/dev/null
$SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
if [ ! -x "$CHROMIUM" ]; then
  echo "ensure-chromium: apt-get install chromium finished but $CHROMIUM is not there." >&2
  exit 1
fi
echo "ensure-chromium: $("$CHROMIUM" --version 2>/dev/null || echo chromium) installed." >&2
