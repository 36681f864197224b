// Package v1alpha1 holds the vipstack.io/v1alpha1 API: VIPGroup (the nodes
// that hold a set of Services' virtual addresses with VRRP, RFC 5798, and
// the VRIDs the controller gave them) and IPPool (the addresses Services
// may get). The CustomResourceDefinitions are in the Helm chart
// (charts/vipstack/templates/crds.yaml, rendered into deploy/crds.yaml); their
// schemas and CEL rules check what a single object can get wrong, and
// Validate checks the rest (address syntax the schema cannot express),
// which the controller reports as conditions and Events.
//
// DeepCopy methods are written by hand (deepcopy.go): the types are small
// and code generators are not part of the build.
package v1alpha1
