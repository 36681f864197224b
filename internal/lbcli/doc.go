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
//	shutdown session <id>                                  (admin)
//	shutdown sessions server <backend>/<server>             (admin)
//	disable server <backend>/<server>, enable server ...    (admin)
//
// To take a master out: `set server masters/m1 state drain` (or maint),
// then `shutdown sessions server masters/m1` closes the connections it
// still has, both sockets of each; the clients read the end of the
// connection and reconnect to the others. haproxy counts these as
// connections that ended (measured: scur, bin, bout, ttime move; no error
// or abort counter does), and so does vipstack; their tcplog lines say
// "K-", killed (measured), as vipstack's do ("KC" for a connection still
// connecting to the server: below). The server stays in its
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
// `shutdown session <id>` closes one connection that show sess lists: a
// relayed one (both its sockets: the client and the server each read the
// end of the connection, a FIN), or a runtime API connection (a
// connection that names itself gets its empty answer, and its prompt if
// interactive, before the end, as in haproxy). The id is read as show
// sess reads it. haproxy 2.6.12's answers, measured and served alike:
// "" when closed; "Session pointer expected (use 'show sess')." without
// an argument or with one that reads as 0 ("xyz", "all"); "No such
// session (use 'show sess')." for an id that names none ("0x1234",
// "-1"); level admin ("Permission denied" below). haproxy counts a
// killed connection as one that ended (measured: scur drops, bin and
// bout hold what was relayed, no error or abort counter moves; vipstack
// alike) and its tcplog line's termination state is "K-" (killed, no
// phase; measured), as vipstack writes it. A connection still connecting
// to its server is closed too: its client reads what it sent, then the
// end of the connection (bytes in count it), and its line says "KC"
// (haproxy 2.6.12, measured with a server whose SYNs are dropped: "KC",
// the client reads a FIN, bin counts its bytes). Unlike vipstack,
// haproxy answers "" at once but ends such a stream only when its
// connect attempts are spent (timeout connect times retries + 1, counted
// in econ and wretr); vipstack closes it at once, no connect error
// counted. As in haproxy, an id names a connection only while it lasts:
// a later one may get its memory, and its id (haproxy gave a freed
// stream's address to the very next stream, measured; Go's allocator may
// give a closed connection's memory to a later one once it is
// collected). A stale id that names no live connection gets "No such
// session"; it never reaches memory no connection holds.
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
// have no counterpart in vipstack's relay: left out.
//
// After the relayed connections come the runtime API's own, every one
// of every stats socket of the configuration (the one asking included),
// as haproxy lists them (measured with connections held on three Unix
// sockets and a TCP one, listed alike from each):
//
//	<id>: proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> age=0s
//
// Their fields:
//
//   - id: the address of the connection's state, as for the others;
//   - proto: unix_stream for a Unix socket, tcpv4 or tcpv6 for a TCP one;
//   - src: "unix:<n>" for a Unix socket, n being haproxy's listener id
//     of the socket, its place (from 1) among the configuration's
//     `stats socket` lines (measured: unix:1, unix:2, unix:3, and a TCP
//     socket fourth has id 4); the client's address and port for TCP;
//   - fe=GLOBAL be=<NONE> srv=<none>: haproxy's names for its CLI
//     frontend and for no backend and server;
//   - age: since the accept, on the real clock (the runtime API's).
//
// Their block: the header (accept date, proto, source), `frontend=GLOBAL
// (id=0 mode=tcp) addr=<unix:<n>, or the TCP socket's address>`,
// `backend=<NONE> (id=-1 mode=-)`, `server=<NONE> (id=-1)` (haproxy's
// lines, measured), and `state=EST age=..` (haproxy's scb state is EST).
//
// Not listed, because haproxy 2.6 does not list them either (measured):
// the monitor's and the stats page's clients while they are connected
// with no request (idle between keep-alive requests, or with a request
// head only partly sent); haproxy has a stream for them only from a
// complete request head until its answer is written, a moment for these
// two pages, and vipstack leaves them out in that moment too. Nor clients held back by a
// frontend's maxconn: haproxy leaves them in the kernel's accept queue,
// with no stream (measured: a second client of a `maxconn 1` frontend
// is not listed, and show stat's scur stays 1), where vipstack accepts
// them into its own queue; they have no server yet.
//
// `show sess all` (or -1), and `show sess
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
