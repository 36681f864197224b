// Package lbcli serves the load balancer's runtime API on the addresses of
// haproxy's `stats socket` lines: the text protocol haproxy 2.6 speaks on
// its "stats socket" (a Unix socket, or TCP with an ipv4@/ipv6@ address),
// so that the commands operators and monitoring tools send to haproxy's
// socket work against `vipstack lb` too:
//
//	echo "show stat" | socat stdio /var/lib/haproxy/run/haproxy.sock
//	echo "set server masters/master-0 state maint" | socat stdio ...
//
// A connection is non-interactive by default: the client sends a line of
// commands separated by ';', each answer ends with an empty line, and the
// server closes the connection once it has answered every line it has
// received. `prompt` makes it interactive ("> " before each line) until
// `quit` or the idle timeout.
//
// The commands served are the subset that reads the state of the
// balancer and takes a server in and out of service:
//
//	help, prompt, quit, operator, user, show cli level
//	show info, show version, show backend
//	show stat [json|typed] [up] [no-maint] [<iid> <type> <sid>]
//	show servers state [<backend>]
//	get weight <backend>/<server>
//	set server <backend>/<server> state ready|drain|maint   (admin)
//	disable server <backend>/<server>, enable server ...    (admin)
//
// Their answers are haproxy 2.6's, measured against it: the same lines,
// column sets and error texts ("No such server.", "Permission denied").
// Every other haproxy command gets "Unknown command" and the list of
// these. The socket's `level` (user, operator, admin; haproxy's default
// is user) bounds what a connection may do, and `operator` and `user`
// lower it for the rest of the connection, as in haproxy.
package lbcli
