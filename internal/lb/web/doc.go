// Package web serves the load balancer's monitor and stats sections as
// haproxy 2.6 does: its own HTTP/1.x server (RFC 9112) with haproxy's
// limits, timeouts and fixed answers, HTTP/2 with prior knowledge
// (RFC 9113), the admission of at most MaxConns clients per listener, and
// the sections' counts (Count). It needs of the load balancer only a
// Core (the monitor's verdict, the figures) and a logger for the
// "Connect from" lines; it imports no other lb package but lb/stats.
// docs/design/lb.md has the design.
package web
