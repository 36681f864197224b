#!/usr/bin/env bash
# Runs vipstack's whole test suite: static checks, unit tests, and (as root)
# the network-namespace tests against real keepalived. Without root the
# namespace tests skip with a message.
set -euo pipefail
cd "$(dirname "$0")"
export PATH=$PATH:/usr/local/go/bin

unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go') | grep -v '/testdata/' || true)
if [ -n "$unformatted" ]; then
	echo "gofmt: these files need formatting:" >&2
	echo "$unformatted" >&2
	exit 1
fi
go vet ./...
# Packages that carry stand-ins for other systems (files tagged !linux) keep
# building there.
portable=$(grep -rl --include='*.go' '^//go:build !linux' . | xargs -n1 dirname | sort -u)
GOOS=darwin go build $portable
go test -count=1 -timeout 20m "$@" ./...
