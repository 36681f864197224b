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
//	show info [json|typed], show version, show backend
//	show stat [json|typed] [up] [no-maint] [<iid> <type> <sid>]
//	show servers state [<backend>]
//	show sess [<id>|all]                                   (operator)
//	get weight <backend>/<server>
//	set server <backend>/<server> state ready|drain|maint   (admin)
//	set server <backend>/<server> weight <w>[%]             (admin)
//	set weight <backend>/<server> <w>[%]                    (admin)
//	shutdown sessions server <backend>/<server>             (admin)
//	disable server <backend>/<server>, enable server ...    (admin)
//
// To take a master out: `set server masters/m1 state drain` (or maint),
// then `shutdown sessions server masters/m1` closes the connections it
// still has, both sockets of each; the clients read the end of the
// connection and reconnect to the others. haproxy counts these as
// connections that ended (measured: scur, bin, bout, ttime move; no error
// or abort counter does), and so does vipstack. The server stays in its
// state; the command takes it out of no selection.
//
// A weight is 0 to 256, or a percentage of the configured weight (any
// percentage from 0, the result capped at 256; 50% of 3 is 1), parsed and
// refused with haproxy 2.6's texts. It applies from the next connection in
// roundrobin, leastconn and source; weight 0 takes the server out of new
// selections (the backend's act and weight in show stat drop, and a
// backend whose servers are all at 0 is DOWN, as in haproxy), and its
// established connections go on. A backend balanced by source takes
// only 0 and the configured weight (haproxy's rule for its static
// algorithms: "only accepts weights '0%' and '100%'"). `get weight`
// answers "<current> (initial <configured>)", and show servers state's
// srv_uweight and srv_iweight are those two. A reload keeps a runtime
// weight, as it keeps a server's state, while the server keeps its
// backend, name and address and the file's weight for it is unchanged;
// when the file's weight changed, the file wins (haproxy forgets every
// runtime weight on reload).
//
// show info writes haproxy 2.6's fields that vipstack can fill
// truthfully, with haproxy's names, order, positions, tags and types
// (measured), as "Name: value" lines (what haproxy_exporter parses), as
// typed lines (show info typed) or as JSON (show info json). Name is
// "vipstack", Nbthread Go's GOMAXPROCS, CurrConns and CumConns the
// frontends' current and total sessions (haproxy counts its CLI
// connections in them too), node the host name. The TLS, compression,
// rate-limit, peer, resolver, debug and log-receiver fields are 0 because
// vipstack has none of those; haproxy's memory pools, socket limits,
// request and rate counters, pipes, tasks, jobs, listeners, byte totals,
// Release_date, Build info and Tainted are left out: they have no true
// value here.
//
// show sess lists the connections the balancer relays (or is connecting
// to a server), a line each, as haproxy 2.6 does with the fields vipstack
// has a true value for, in haproxy's order and spelling (measured):
//
//	<id>: proto=tcpv4 src=198.18.0.50:40000 fe=main be=masters srv=m1 age=1h2m
//
// Its fields:
//
//   - id names the connection while it lasts: the address of its state
//     in memory, as haproxy's is the address of its stream; `show sess
//     <id>` takes it in hex with 0x or in decimal (the argument is read
//     as C's strtoul, as haproxy reads it);
//   - proto: tcpv4 or tcpv6, the client's family;
//   - src: the client's address and port;
//   - fe, be, srv: the frontend, its backend (<NONE> without one), and
//     the server connected or being connected to (<none> before one is
//     picked);
//   - age: since the accept, in haproxy's two-unit form (2s, 1m5s,
//     23h59m, 1d5s), on the balancer's clock (the accept time is the
//     accepting loop's clock reading for its batch of events, or the
//     connection log's own reading where a frontend keeps one).
//
// haproxy's ts, epoch, calls, rate, cpu, lat, rq[], rp[], scf[], scb[],
// exp, rc and c_exp describe its scheduler, buffers and stream flags, and
// have no counterpart in vipstack's relay: left out. haproxy lists its
// own CLI connection too (proto=unix_stream fe=GLOBAL); vipstack lists
// neither that nor the monitor's and stats page's clients, nor clients
// waiting in a frontend's queue. `show sess all` (or -1), and `show sess
// <id>` for one, write each connection in detail, haproxy's block cut to
// the lines vipstack fills: the header (the accept date when known,
// proto, source), `frontend=<name> (id=<iid> mode=tcp) addr=<the address
// the client connected to>` (haproxy's `listener=? (id=N)` left out),
// `backend=<name> (id=<iid> mode=tcp) addr=<the balancer's address toward
// the server>`, `server=<name> (id=<sid>) addr=<its address>`, then a
// line of vipstack's own, `state=EST` (relaying) or `CON` (connecting)
// and the age. An id that names no connection gets haproxy's "Session
// not found."; an argument that reads as 0 ("xyz") gets the list, as in
// haproxy. Like haproxy, show sess needs level operator (user gets
// "Permission denied").
//
// Their answers are haproxy 2.6's, measured against it: the same lines,
// column sets and error texts ("No such server.", "Permission denied").
// Every other haproxy command gets "Unknown command" and the list of
// these. That includes `show schema json`: haproxy's answer is a fixed
// JSON Schema of the shape of its show info and show stat JSON (measured:
// 2784 bytes, draft-04, the item objects and the tag vocabularies, no
// field list), not something vipstack may copy, and no tool the seeds or
// OpenShift run asks for it; a schema of vipstack's own, generated from
// its field tables and checked against both balancers' JSON, is left for
// when a client needs it. The socket's `level` (user, operator, admin; haproxy's default
// is user) bounds what a connection may do, and `operator` and `user`
// lower it for the rest of the connection, as in haproxy.
package lbcli
