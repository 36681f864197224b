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
# staticcheck at the version tools/staticcheck pins (built once, cached).
hack/staticcheck.sh ./...
# Packages that carry stand-ins for other systems (files tagged !linux) keep
# building there.
portable=$(grep -rl --include='*.go' '^//go:build !linux' . | xargs -n1 dirname | sort -u)
GOOS=darwin go build $portable
# Build first what the tests would otherwise build while timing-sensitive
# root tests run beside them (bench/chaos runs first and judges failover
# against protocol bounds): every test binary, and as root the OpenShift
# peers (CoreDNS with the mdns plugin, mdns-publisher) from source, cached
# in ~/.cache/vipstack-peers. A failure here is reported by the run below
# (or, for the peers, by the tests that need them).
go test -count=1 -run '^$' ./... >/dev/null 2>&1 || true
if [ "$(id -u)" = 0 ]; then
	go run ./hack/openshift-peers >/dev/null || echo "test.sh: the OpenShift peers did not build; the tests that need them will say why" >&2
	# The real-node tier (internal/nodelab) builds static binaries for its
	# images: the pause and echo programs and, through hack/image, vipstack.
	CGO_ENABLED=0 go build -trimpath -o /dev/null ./cmd/vipstack ./internal/nodelab/pause ./internal/nodelab/echo >/dev/null 2>&1 || true
fi
# hack/image's TestImage cross-compiles vipstack for linux/arm64: compile
# its packages now, not beside the timing-sensitive tests.
CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -trimpath -o /dev/null ./cmd/vipstack >/dev/null 2>&1 || true
go test -count=1 -timeout 20m "$@" ./...
