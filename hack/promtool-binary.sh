#!/usr/bin/env bash
# Builds promtool from the tools/promtool module (github.com/prometheus/
# prometheus at the version its go.mod pins) into a cache directory keyed by
# the hash of tools/promtool/go.sum, and prints the binary's path. The alert
# rule tests (internal/alerts) run it.
#
#   hack/promtool-binary.sh          build unless cached; print the path
#   hack/promtool-binary.sh --path   print the path only; never build
#
# The cache lives in ${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/promtool/<hash>/.
# A cold build takes a few minutes on 2 cores; a cached run well under a
# second. Concurrent runs serialise on a lock and build once.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin
. "$(dirname "$0")/lib/toolcache.sh"
toolcache_start promtool "$@"

version=$(go list -m -f '{{.Version}}' github.com/prometheus/prometheus) # v0.316.0
echo "promtool-binary: building promtool $version into $dir" >&2
# remove_all_sd: no service discovery plugins (the rule tests need none),
# so the cloud SDKs they pull in are not compiled.
go build -buildvcs=false -trimpath -tags remove_all_sd -ldflags "-s -w -X github.com/prometheus/common/version.Version=$version" \
	-o "$tmp/promtool" github.com/prometheus/prometheus/cmd/promtool
toolcache_done
