// Package relay is the operating system side of the load balancer's
// relay: the raw system calls its event loops make (epoll, accept4,
// connect, recv, send, splice(2)) without Go's poller, the pool of splice
// pipes, the listening sockets' options (SO_REUSEPORT, IPV6_V6ONLY) and
// the file descriptor limit. It knows nothing of frontends or servers:
// internal/lb's event loops (loop_linux.go) use it.
// docs/design/lb.md has the design.
package relay
