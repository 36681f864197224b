// Package kubeauth guards an HTTP endpoint (the agent's metrics) with
// Kubernetes' own authentication and authorization, as kube-rbac-proxy
// and the kubelet do: the request's bearer token is checked with a
// TokenReview, and the user it names must be allowed, by a
// SubjectAccessReview, the HTTP verb on the request's path as a
// non-resource URL (get /metrics). The serving process needs to create
// both reviews (the system:auth-delegator ClusterRole).
package kubeauth
