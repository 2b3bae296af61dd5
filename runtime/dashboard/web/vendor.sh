#!/usr/bin/env bash
# Vendors the dashboard's front-end library into DEST (the build tree) with the ordinary npm client, at
# configure time: uPlot (MIT), its minified script and stylesheet, checked against a pinned SHA-256. The page
# and the HTML report embed them, so neither needs a network. Idempotent; non-zero with a message on failure.
set -euo pipefail
dest=${1:?usage: vendor.sh DEST}
pkg=uplot@1.6.32
sha256=4b8a8191e425658e3ea8c8c1314b0fc679c861ee3a1af2b20c7b16ba50b5133d
[ -f "$dest/.complete-$pkg" ] && exit 0
command -v npm >/dev/null || { echo "npm is not installed (scripts/install_deps installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
file=$(cd "$tmp" && npm pack --loglevel=error --fetch-retries=1 "$pkg" 2>"$tmp/npm.log" | tail -n 1) ||
  { echo "npm pack $pkg failed (no network, or the npm registry unreachable?): $(head -n 3 "$tmp/npm.log")" >&2; exit 1; }
got=$(sha256sum "$tmp/$file" | cut -d' ' -f1)
[ "$got" = "$sha256" ] || { echo "$pkg: the tarball's SHA-256 is $got, not the pinned $sha256" >&2; exit 1; }
tar -xzf "$tmp/$file" -C "$tmp" package/dist/uPlot.iife.min.js package/dist/uPlot.min.css package/LICENSE
mkdir -p "$dest"
cp "$tmp/package/dist/uPlot.iife.min.js" "$tmp/package/dist/uPlot.min.css" "$dest/"
cp "$tmp/package/LICENSE" "$dest/uPlot.LICENSE"
touch "$dest/.complete-$pkg"
