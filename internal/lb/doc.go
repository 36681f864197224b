// Package lb is vipstack's layer 4 (TCP) load balancer, the engine behind
// `vipstack lb`: configured from the lbconfig model that haproxycfg reads
// out of a haproxy.cfg, it accepts TCP connections (RFC 9293) on each
// frontend bind, picks an UP server of the frontend's backend and relays
// bytes both ways with epoll and splice(2), as haproxy 2.6 does in
// `mode tcp`. It also serves haproxy's monitor URI and stats page and
// sends haproxy's log lines. Its figures and their renderers are in
// internal/lb/stats. docs/design/lb.md has the design: the packages, the
// data path, the lock order and what was measured against haproxy.
package lb
