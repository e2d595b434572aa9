#!/usr/bin/env bash
# Vendor the dashboard's two JavaScript libraries (the service runs offline: no CDN at run
# time) into src/referee/service/static/vendor/, with their licences, from the npm registry.
# Versions are pinned here; the files are committed. Re-run to update (change the pins), then
# check the printed sha256 sums into the commit message. Needs npm and tar.
set -euo pipefail

CHARTJS=4.6.1   # Chart.js, MIT
HTMX=2.0.11     # htmx, Zero-Clause BSD

repo="$(cd "$(dirname "$0")/.." && pwd)"
dest="$repo/src/referee/service/static/vendor"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cd "$work"
npm pack --silent "chart.js@$CHARTJS" "htmx.org@$HTMX" >/dev/null
mkdir chart htmx
tar -xzf "chart.js-$CHARTJS.tgz" -C chart
tar -xzf "htmx.org-$HTMX.tgz" -C htmx

mkdir -p "$dest"
install -m 0644 chart/package/dist/chart.umd.min.js "$dest/chart.umd.min.js"
install -m 0644 chart/package/LICENSE.md "$dest/chart.js.LICENSE.md"
install -m 0644 htmx/package/dist/htmx.min.js "$dest/htmx.min.js"
install -m 0644 htmx/package/LICENSE "$dest/htmx.LICENSE"
cat >"$dest/VERSIONS" <<VERSIONS
chart.js $CHARTJS (dist/chart.umd.min.js, LICENSE.md) from npm
htmx.org $HTMX (dist/htmx.min.js, LICENSE) from npm
written by scripts/vendor-ui.sh
VERSIONS

echo "vendored into $dest:"
sha256sum "chart.js-$CHARTJS.tgz" "htmx.org-$HTMX.tgz"
(cd "$dest" && sha256sum chart.umd.min.js htmx.min.js chart.js.LICENSE.md htmx.LICENSE)
