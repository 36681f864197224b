// Package servingcert provides the certificate of vipstack's HTTPS
// endpoints (the authenticated metrics endpoint): a certificate and key
// from files, reloaded when they change (a mounted Secret), or, without
// files, a self-signed one made at start, as kube-rbac-proxy does.
package servingcert
