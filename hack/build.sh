#!/usr/bin/env bash
# Builds the vipstack binary for this machine with its version (git describe)
# written in, as the image has it: a static binary (no cgo) for bare hosts and
# systemd units.
#
#   hack/build.sh [OUT]     default OUT: _output/vipstack
#
# GOOS and GOARCH in the environment cross-compile, as for the image.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/_output/vipstack}
cd "$root"
ver=$(go run ./hack/image -print-version)
CGO_ENABLED=0 go build -trimpath -buildvcs=false \
	-ldflags "-s -w -X github.com/vipstack/vipstack/internal/version.version=$ver" \
	-o "$out" ./cmd/vipstack
echo "$out: vipstack $ver"
