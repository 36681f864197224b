#!/usr/bin/env bash
# Prints the share of internal/engine's test lines that need root: the
# lines of the test files that call testnet.RequireRoot or build a namespace
# topology (import internal/testnet). docs/design/engine.md records its
# output.
#
#   hack/engine-rootshare.sh [-v]     -v lists each file
set -euo pipefail
cd "$(dirname "$0")/../internal/engine"
total=0 root=0
for f in $(find . -name '*_test.go' | sort); do
	n=$(wc -l <"$f")
	total=$((total + n))
	if grep -qE 'testnet\.RequireRoot|internal/testnet"' "$f"; then
		root=$((root + n))
		[ "${1:-}" = -v ] && echo "root    $n $f"
	else
		[ "${1:-}" = -v ] && echo "no-root $n $f"
	fi
done
echo "engine test lines: $total; needing root: $root ($(awk -v r="$root" -v t="$total" 'BEGIN { printf "%.1f", 100 * r / t }')%)"
