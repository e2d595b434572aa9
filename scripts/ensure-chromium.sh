#!/usr/bin/env bash
# Make Debian's chromium available for the dashboard's browser test
# (tests/service/test_dashboard.py drives /usr/bin/chromium with Playwright; no browser is
# downloaded by Playwright). Installs the package only when it is missing. Idempotent; needs
# root for the install.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "ensure-chromium: installing Debian's chromium" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version >&2
