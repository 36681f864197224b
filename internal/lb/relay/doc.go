// Package relay is the operating system side of the load balancer's
// relay: the raw system calls its event loops make (epoll, accept4,
// connect, recv, send, splice(2)) without Go's poller, the moving of a
// connection's bytes one direction at a time (Dir: through a 16 KiB copy
// buffer, then splice(2) through a pipe once bulk is seen; Pools of both),
// the non-blocking connect (DialStart), the listening sockets' options
// (SO_REUSEPORT, IPV6_V6ONLY), their duplicates for the loops (AcceptFD)
// and the file descriptor limit. It knows nothing of frontends or servers:
// internal/lb's event loops (loop_linux.go) use it.
// docs/design/lb.md has the design.
package relay
