// Package manifest prints the Kubernetes objects that run a vipstack
// command on a cluster. Today that is an IP failover pool
// (`vipstack manifest ipfailover`): the Deployment (and its
// ServiceAccount) that `oc adm ipfailover` creates for OpenShift's
// ipfailover image, running `vipstack ipfailover` with the same
// OPENSHIFT_HA_* environment, validated by the pool's own parser
// (ipfailover.Parse) so the generator and the daemon accept the same values.
package manifest
