// Package lbproc does what haproxy's global process settings ask of the
// balancer's process: the pidfile, and running as another user and group
// once the listening sockets are open (`pidfile`, `user`, `group`).
package lbproc
