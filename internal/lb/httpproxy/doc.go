// Package httpproxy is vipstack's HTTP reverse proxy: the frontends and
// backends of a haproxy.cfg in `mode http` (RFC 9110, RFC 9112; HTTP/2
// with prior knowledge, RFC 9113). It evaluates the sections' ACLs,
// applies their http-request and redirect rules, picks a backend by
// use_backend / default_backend and a server by the backend's balance
// or its persistence cookie, and forwards the request over a pool of
// kept-alive connections per server, as haproxy 2.6 does.
//
// The client side is net/http's server; the server side net/http's
// Transport, one per server, under httputil.ReverseProxy (which relays
// an Upgrade, such as WebSocket, as bytes after the 101). See
// docs/design/httpproxy.md.
package httpproxy
