// Package logging sends the load balancer's log messages as haproxy 2.6
// sends them: syslog datagrams in its RFC 3164 format (or raw lines) to
// the `log` targets of the configuration (Sink, Dest), queued off the
// relay's path (Queue); haproxy's lines for connections (ConnLog, its
// log-format and tcplog, "Connect from"), health checks, server state
// changes and stops. It needs only the model's targets (lbconfig) and
// the lines' fields; it imports no other lb package but lb/stats.
// docs/design/lb.md has the design.
package logging
