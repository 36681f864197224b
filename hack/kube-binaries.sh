#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kube-scheduler, kubelet,
# kube-proxy and etcd from the tools/kube module (k8s.io/kubernetes and
# go.etcd.io/etcd/server/v3 at the versions its go.mod pins) into a cache
# directory keyed by the hash of tools/kube/go.sum, and prints that directory.
# internal/kubetest runs etcd and kube-apiserver as a throwaway control plane;
# internal/nodelab adds the rest for its real-node tier.
#
#   hack/kube-binaries.sh          build unless cached; print the directory
#   hack/kube-binaries.sh --dir    print the directory only; never build
#
# The cache lives in ${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/kube/<hash>/.
# A cold build takes about 20 minutes on 2 cores and leaves about 3 GB in
# the Go build cache; a cached run takes well under a second. Concurrent runs
# (parallel test packages) serialise on a lock and build once.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin

root=$(cd "$(dirname "$0")/.." && pwd)
mod="$root/tools/kube"
key=$(cat "$mod/go.sum" | sha256sum | cut -c1-16)
base="${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/kube"
dir="$base/$key"

case "${1:-}" in
--dir)
	echo "$dir"
	exit 0
	;;
"") ;;
*)
	echo "usage: $0 [--dir]" >&2
	exit 2
	;;
esac

# Every binary the directory must hold; internal/kubetest and internal/nodelab
# check the same names.
bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd)
cached() {
	local b
	for b in "${bins[@]}"; do
		[ -x "$dir/$b" ] || return 1
	done
}

if cached; then
	echo "$dir"
	exit 0
fi

mkdir -p "$base"
exec 9>"$base/.lock"
flock 9
if cached; then # another run built it while we waited
	echo "$dir"
	exit 0
fi

cd "$mod"
version=$(go list -m -f '{{.Version}}' k8s.io/kubernetes) # v1.36.3
if [[ ! $version =~ ^v([0-9]+)\.([0-9]+)\. ]]; then
	echo "kube-binaries: k8s.io/kubernetes version $version in $mod/go.mod is not vMAJOR.MINOR.PATCH" >&2
	exit 1
fi
major=${BASH_REMATCH[1]}
minor=${BASH_REMATCH[2]}
# Without these the server reports v0.0.0 and clients refuse to trust it.
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	ldflags+=" -X $pkg.gitVersion=$version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
done

tmp=$(mktemp -d "$base/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "kube-binaries: building ${bins[*]} ($version) into $dir (about 20 minutes cold)" >&2
start=$SECONDS
export CGO_ENABLED=0
# One go build for the Kubernetes commands shares their common packages.
go build -buildvcs=false -trimpath -ldflags "$ldflags" -o "$tmp/" \
	k8s.io/kubernetes/cmd/kube-apiserver \
	k8s.io/kubernetes/cmd/kube-controller-manager \
	k8s.io/kubernetes/cmd/kube-scheduler \
	k8s.io/kubernetes/cmd/kubelet \
	k8s.io/kubernetes/cmd/kube-proxy
go build -buildvcs=false -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
echo "kube-binaries: built in $((SECONDS - start))s" >&2
rm -rf "$dir"
chmod 755 "$tmp"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir"
