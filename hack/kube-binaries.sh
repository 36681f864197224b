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
#   hack/kube-binaries.sh --module tools/kube-oldest [--dir]
#                                  the same for another Kubernetes version's
#                                  module: its kube-apiserver only (the
#                                  supported-versions tests run it with
#                                  tools/kube's etcd), cached in
#                                  .../vipstack/kube-oldest/<hash>/
#
# The cache lives in ${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/kube/<hash>/.
# A cold build takes about 20 minutes on 2 cores and leaves about 3 GB in
# the Go build cache; a cached run takes well under a second. Concurrent runs
# (parallel test packages) serialise on a lock and build once.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin

root=$(cd "$(dirname "$0")/.." && pwd)
usage() {
	echo "usage: $0 [--module tools/kube-NAME] [--dir]" >&2
	exit 2
}
module=tools/kube
only_dir=false
while [ $# -gt 0 ]; do
	case "$1" in
	--dir) only_dir=true ;;
	--module)
		[ $# -ge 2 ] || usage
		module=${2%/}
		shift
		;;
	*) usage ;;
	esac
	shift
done
if [[ ! $module =~ ^tools/kube(-[a-z0-9]+)?$ ]] || [ ! -f "$root/$module/go.mod" ]; then
	echo "kube-binaries: --module $module: want a module directory tools/kube or tools/kube-NAME of this repository with a go.mod" >&2
	exit 2
fi
mod="$root/$module"
key=$(cat "$mod/go.sum" | sha256sum | cut -c1-16)
base="${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/$(basename "$module")"
dir="$base/$key"

if $only_dir; then
	echo "$dir"
	exit 0
fi

# Every binary the directory must hold; internal/kubetest and internal/nodelab
# check the same names. Another version's module holds the API server alone.
if [ "$module" = tools/kube ]; then
	bins=(kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy etcd)
else
	bins=(kube-apiserver)
fi
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
echo "kube-binaries: building ${bins[*]} ($version) into $dir (about $((${#bins[@]} > 1 ? 20 : 8)) minutes cold)" >&2
start=$SECONDS
export CGO_ENABLED=0
# One go build for the Kubernetes commands shares their common packages.
pkgs=()
for b in "${bins[@]}"; do
	[ "$b" = etcd ] || pkgs+=("k8s.io/kubernetes/cmd/$b")
done
go build -buildvcs=false -trimpath -ldflags "$ldflags" -o "$tmp/" "${pkgs[@]}"
if [[ " ${bins[*]} " == *" etcd "* ]]; then
	go build -buildvcs=false -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3
fi
echo "kube-binaries: built in $((SECONDS - start))s" >&2
rm -rf "$dir"
chmod 755 "$tmp"
mv "$tmp" "$dir"
trap - EXIT
echo "$dir"
