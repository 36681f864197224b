// Package lbdaemon runs the load balancer process of `vipstack lb`: one
// internal/lb balancer with what haproxy's process does around it (the
// runtime API sockets, the pidfile, chroot, user and group), the nftables
// redirect of a VIP to its frontend (internal/redirect), reloads of the
// configuration file, and the two stops: SIGTERM's drain and SIGUSR1's
// soft stop.
package lbdaemon
