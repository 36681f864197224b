#!/usr/bin/env bash
# Builds helm from the tools/helm module (helm.sh/helm/v3 at the version its
# go.mod pins) into a cache directory keyed by the hash of tools/helm/go.sum,
# and prints the binary's path. hack/gen-deploy.sh and the chart tests
# (internal/chart) run it.
#
#   hack/helm-binary.sh          build unless cached; print the path
#   hack/helm-binary.sh --path   print the path only; never build
#
# The cache lives in ${XDG_CACHE_HOME:-$HOME/.cache}/vipstack/helm/<hash>/.
# A cold build takes a few minutes on 2 cores; a cached run well under a
# second. Concurrent runs serialise on a lock and build once.
set -euo pipefail
export PATH=$PATH:/usr/local/go/bin
. "$(dirname "$0")/lib/toolcache.sh"
toolcache_start helm "$@"

version=$(go list -m -f '{{.Version}}' helm.sh/helm/v3) # v3.22.0
# helm assumes this Kubernetes version when it renders without a cluster
# (helm template, helm lint); its own Makefile sets it from client-go.
kube=$(go list -m -f '{{.Version}}' k8s.io/client-go) # v0.37.0
if [[ ! $kube =~ ^v0\.([0-9]+)\. ]]; then
	echo "helm-binary: k8s.io/client-go version $kube in $mod/go.mod is not v0.MINOR.PATCH" >&2
	exit 1
fi
kubeminor=${BASH_REMATCH[1]}
echo "helm-binary: building helm $version into $dir" >&2
# Without these helm reports v3.22 and renders for Kubernetes 1.20, which
# the chart's kubeVersion constraint refuses.
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
for pkg in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
	ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$kubeminor"
done
go build -buildvcs=false -trimpath -ldflags "$ldflags" \
	-o "$tmp/helm" helm.sh/helm/v3/cmd/helm
toolcache_done
