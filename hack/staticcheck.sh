#!/usr/bin/env bash
# Runs staticcheck (honnef.co/go/tools at the version tools/staticcheck
# pins) over the repository; test.sh runs it. The binary is built once into
# a cache directory keyed by the hash of tools/staticcheck/go.sum.
#
#   hack/staticcheck.sh [PACKAGES]   default ./...
#
# The cache lives in ${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/staticcheck/<hash>/.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/tools/staticcheck"
key=$(sha256sum <"$mod/go.sum" | cut -c1-16)
base="${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/staticcheck"
bin="$base/$key/staticcheck"

if [ ! -x "$bin" ]; then
	mkdir -p "$base"
	exec 9>"$base/.lock"
	flock 9
	if [ ! -x "$bin" ]; then
		echo "staticcheck: building $(cd "$mod" && go list -m -f '{{.Path}} {{.Version}}' honnef.co/go/tools) into $base/$key" >&2
		tmp=$(mktemp -d "$base/.build.XXXXXX")
		trap 'rm -rf "$tmp"' EXIT
		(cd "$mod" && GOWORK=off go build -trimpath -o "$tmp/staticcheck" honnef.co/go/tools/cmd/staticcheck)
		mkdir -p "$base/$key"
		mv "$tmp/staticcheck" "$bin"
	fi
	exec 9>&-
fi
cd "$root"
if [ $# -eq 0 ]; then
	set -- ./...
fi
exec "$bin" "$@"
