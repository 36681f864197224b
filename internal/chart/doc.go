// Package chart renders vipstack's Helm chart (charts/vipstack) with the
// helm binary that hack/helm-binary.sh builds from the tools/helm module,
// and splits the result into the plain manifests of deploy/ (see
// hack/gendeploy). The chart is the source of truth; deploy/ is generated
// from it, and a test keeps the two in sync.
package chart
