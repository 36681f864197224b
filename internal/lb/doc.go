// Package lb is vipstack's layer 4 (TCP) load balancer: the engine behind
// `vipstack lb`, configured from the lbconfig model that haproxycfg reads
// out of a haproxy.cfg. It accepts TCP connections on each frontend bind
// (RFC 9293), picks an UP server of the frontend's backend, connects to it
// and relays bytes both ways until both sides have finished, as haproxy 2.6
// does in `mode tcp`.
//
// # Forwarding
//
// Connections are relayed by event loops, one per processor
// (loop_linux.go). Each loop has its own epoll set holding every listening
// socket (EPOLLEXCLUSIVE: a new client wakes one waiting loop) and the
// client and server sockets of the connections it relays; it accepts a
// client, starts a non-blocking connect and moves bytes both ways as the
// sockets become ready, all on its own goroutine locked to its thread,
// with raw system calls and no goroutine per connection (haproxy's design,
// per thread). A loop that relays far more connections than another posts
// a client it accepted to the least loaded one, so a burst of connections
// is spread over the processors. A
// direction copies through a 16 KiB buffer, which is cheaper than
// splice(2) for the short messages of request/response traffic; as soon
// as one read fills the buffer it switches to splice(2) through a pipe, so
// bulk payload never enters user space. A direction takes a buffer or a
// pipe from a pool only while data is in flight: an idle connection costs
// its two sockets and a few hundred bytes. Bytes are counted as they move,
// so counters are live and the idle timeout needs no per-read deadline. A
// direction that reaches end of file half-closes the other socket
// (shutdown(SHUT_WR)) while the other direction still runs; the
// connection ends when both directions have, and at once on any error.
// The relay needs Linux (epoll, splice); elsewhere New fails.
//
// # Timeouts
//
//   - `timeout connect` bounds each attempt to reach a server.
//   - `timeout queue` bounds the wait for a slot when the frontend is at
//     maxconn; unset, lb uses `timeout connect` (haproxy's rule for its
//     server queues). haproxy itself does not apply it there: at a
//     frontend's maxconn it stops accepting, and a client waits in the
//     listen backlog until a slot frees or it gives up (measured, 2.6.12:
//     maxconn 1, `timeout queue 2s`, the second client still waiting
//     after 6 s). lb's bounded wait is deliberate: a client learns within
//     `timeout queue` that it should try elsewhere.
//   - Once both sides are connected the connection is a tunnel: it is
//     closed after `timeout tunnel` without a byte moving either way.
//     Without a tunnel timeout the side expected to speak next decides,
//     as in haproxy: while the client spoke last (a request waits for its
//     answer) the connection may be silent for `timeout server`, while
//     the server spoke last for `timeout client`, and before any byte for
//     the smaller of the two. A coarse per-connection timer checks the
//     byte counters every half of the smallest timeout that may apply, so
//     an idle connection is closed up to that much after its timeout.
//   - Unset timeouts never expire, as in haproxy.
//
// # Servers
//
// Selection sees only UP servers, and a health-check verdict applies to
// the next connection at once. roundrobin is smooth weighted round robin
// (nginx's), leastconn picks the fewest current sessions per weight,
// rotating among ties, and source hashes the client address over the total
// weight of the UP servers (haproxy's default map-based hashing: the
// mapping moves when the set of UP servers changes).
//
// When a connection attempt fails, lb retries up to `retries` times, each
// time on another UP server it has not tried for this client while there
// is one (haproxy retries the same server unless `option redispatch`), and
// without the 1 s pause haproxy takes between retries. A failed connect
// does not mark the server down: only health checks do (no passive
// `observe`). So a killed backend costs no client connection even before
// the checks notice it.
//
// # Admission
//
// Each frontend admits at most maxconn connections at once. Further
// clients wait, accepted, in a queue of at most maxconn entries for a slot,
// and are closed when `timeout queue` passes first; when the queue is full
// the frontend stops accepting and new clients wait in the kernel's listen
// backlog, as with haproxy at maxconn. The global maxconn (haproxy's
// `maxconn` in global) caps accepted connections over all frontends: at
// the cap every frontend stops accepting until one ends.
//
// # Administrative state
//
// An operator sets a server's state with SetServerAdmin (the runtime API
// of internal/lbcli: `set server B/S state ready|drain|maint`). A drained
// or maintained server takes no new connection, and its established ones
// run to their end; drain keeps its health check, maint pauses it and
// counts a down, and leaving maint the server is UP at once with its check
// started again, as haproxy does. The monitor counts ready servers only.
// The state survives reloads while the server's backend, name and address
// stay (haproxy forgets it).
//
// # Reload and drain
//
// Apply swaps in a new configuration: frontends, backends and servers are
// matched by name (servers by backend, name and address, and they keep
// their counters and health state; a server renamed at the same address
// keeps them too), listeners by bind address, so
// unchanged listeners keep their sockets, new ones open before anything
// else changes (an Apply that cannot bind leaves the old configuration in
// place) and removed ones close. Listeners set SO_REUSEPORT, which would
// let another process that sets it too (haproxy does) listen on the same
// address and port and take a share of the clients; so an address and port
// the LB does not listen on yet (compared by address: a wildcard covers its
// family, a dual-stack `:::PORT v4v6` IPv4 too) is first bound without it,
// and one another process listens on fails the Apply (haproxy would share
// it). Established connections keep
// their server and run to their end. Shutdown stops accepting, lets
// connections finish until its context ends and then closes the rest;
// meanwhile the monitor answers 503 (a frontend that refuses clients is
// not ready).
//
// # Monitor and stats
//
// A Monitor answers 200 at its URI while at least one server of any
// backend is UP and has passed a check, and 503 otherwise (the issue's
// rule; haproxy's monitor-uri answers 200 whenever the process runs, over
// reloads too). After an Apply that brings new servers, a healthy LB stays
// healthy until each new server has had its first check (bounded by its
// timeout, inter), so a reload that replaces every server does not turn
// the monitor 503 for the time of a check. A Stats section serves haproxy's
// stats page at its URI behind basic auth: HTML (haproxy 2.6's tables, a
// row per frontend, server and backend with its 30 columns, classes and
// tips, filled from the same lines as the CSV: web.go; compared cell by
// cell with haproxy's page: TestStatsPageMatchesHaproxy), haproxy 2.6's `;csv`
// (its 128 columns) and `;json` (`;json`, or Accept: application/json:
// an array of lines, each an array of field objects), with a line per
// frontend, server and backend, the monitor and stats sections included,
// numbered as haproxy numbers them; hastats.go says which fields vipstack
// fills and which it leaves out. The monitor and stats sections' own
// lines count their connections, requests, intercepted requests, answers
// by class, request errors and the requests passed to their serverless
// backend as haproxy 2.6.12 does (webCount in web.go, ListenStats;
// compared with haproxy's field by field: TestListenStatsMatchHaproxy). The session rates (haproxy's freq_ctr
// over the current and previous second), the last session's age and the
// average queue, connect and total times (its swrate over the last 1024
// sessions) are haproxy's, counted with a few atomic operations per
// connection at the event loop's batch time (rates.go). A check's
// last_chk is haproxy's text, as its log lines' info
// (healthcheck.HaproxyInfo: "SSL handshake failure" for a failed
// check-ssl handshake, empty for a timed-out one,
// measured: TestCheckSSLStatsMatchHaproxy), and so are the HTML page's
// last check cell (haproxy's "L6RSP in 3ms" with the description and
// last_chk as a tip) and `vipstack status` (ServerStats.LastCheck);
// ServerStats.CheckInfo, in the node's JSON status, keeps Go's reason.
// Metrics go to the Prometheus registry given in Options.
//
// The monitor and stats listeners speak HTTP/1.x as haproxy 2.6 does
// (httpserve.go; every answer measured against haproxy 2.6.12): a request
// without Host is answered (check scripts send `printf 'GET
// /haproxy_ready HTTP/1.1\r\n\r\n' | nc`), any method reaches the
// monitor, a head that does not come within `timeout http-request` gets
// haproxy's 408, a malformed one or one past haproxy's 16 KiB buffer
// (15291 bytes as haproxy stores a head, 100 header lines) its 400, with
// haproxy's own short HTML bodies. Connections are kept alive as haproxy
// keeps them (HTTP/1.1 unless `Connection: close`, HTTP/1.0 with
// `Connection: keep-alive`), up to `timeout http-keep-alive` between
// requests, pipelined requests answered in order; a request body is
// dropped if it has arrived whole with its head, else the connection
// closes after the answer. The stats page takes GET, HEAD and POST (other
// methods get 503); a POST, its admin actions not being supported, gets
// haproxy's `303 See Other` to `<uri>;st=DENY` (haproxy's answer without
// `stats admin`); a refused login closes the connection. A client that
// opens with HTTP/2's preface (prior knowledge, as `curl
// --http2-prior-knowledge` sends it) is answered in HTTP/2 with the same
// status, fields (in haproxy's order) and body, as haproxy answers it,
// one "Connect from" line per stream, a refused login leaving the
// connection open for its next streams as haproxy's HTTP/2 does
// (httpserve_h2.go, which also says how a reload differs from haproxy's;
// `Upgrade: h2c` stays HTTP/1.1, as in haproxy); an answer a client
// does not read within 30 s is given up,
// in HTTP/1.1 with the connection, in HTTP/2 with the stream (a client
// that never opens its flow-control window cannot hold a stream, and its
// connection's slot, for longer), and its receive windows stay at the
// protocol's initial 64 KiB, as haproxy's do. Each listener
// serves at most 256 clients at once (haproxy's cap is its maxconn, 9986
// here); at the cap a new client takes the place of a waiting one (no
// request yet, a partial one, or idle between requests), the oldest of the
// address holding the most connections, which is closed without an
// answer. So a few hundred silent or slow connections cannot keep the
// check script's poll waiting for `timeout http-request` (1m in the seeds)
// and cost the node its VIP (httpserve_admit.go; haproxy, measured, serves
// a new client beside 2000 silent ones, and at its maxconn makes it wait
// for a silent one's 408).
//
// # Logging
//
// haproxy's `log` targets are honoured (syslog.go): what haproxy 2.6
// sends to a proxy's targets, vipstack sends there, as datagrams in
// haproxy's format, measured against haproxy 2.6.12
// (TestSyslogMatchesHaproxy, TestSyslogLines, TestSyslogDatagrams):
//
//	<PRI>Mmm dd hh:mm:ss haproxy[PID]: MESSAGE\n
//
// RFC 3164 with no host name (an explicit `format rfc3164` adds
// "localhost " before the tag, as haproxy 2.6.12 does), a space-padded
// day, local time and a
// newline at the end; PRI is facility*8+level. `format raw` sends the
// message and newline alone; stdout and stderr targets get the same bytes
// as lines. The tag is "haproxy" unless global's log-tag says otherwise:
// vipstack stands in for haproxy, and what reads the socket (OpenShift's
// socat sidecar, syslog rules, log shippers' haproxy parsers) looks for
// haproxy[; the PID is vipstack's. A target's LEVEL drops less severe
// messages; MINLEVEL sends more severe ones at MINLEVEL. A line is cut
// at its target's `len` (default 1024) as haproxy 2.6.12 cuts it
// (measured, TestLongLogLineMatchesHaproxy, TestLogLenMatchesHaproxy):
// header and message fill len bytes and the newline comes past them
// (1025), where the message alone holds one byte less than the largest
// len of the configuration, 1024 at least: so with `format raw` and no
// larger len anywhere, the newline is the 1024th byte. A global `log`
// line that no section uses does not count in that largest len, where
// haproxy counts it.
//
// What goes to a frontend's targets (level info): with log-format or
// option tcplog, one line per connection when it ends (connlog.go; %bi
// and %bp, the balancer's end of the server connection, cost a
// getsockname per connection only in a format that uses them, and are
// the last attempt's, also one failed or killed by the runtime API while
// connecting, as haproxy shows them; +Q quotes
// names and addresses, not numbers, dates nor %ts, and an absent
// %si/%sp/%bi/%bp is "", as in haproxy 2.6.12);
// without a format, haproxy's line at accept, which dontlognull does not
// suppress:
//
//	Connect from 127.0.0.1:56490 to 127.0.0.1:17001 (fe/TCP)
//
// Addresses are written as haproxy 2.6.12 writes them (measured,
// TestLogAddressesMatchHaproxy): IPv6 without brackets ("Connect from
// ::1:49850 to ::1:9445"), and an IPv4 client of a `bind :::PORT v4v6`
// listener IPv4-mapped, in "Connect from" lines, tcplog lines and %ci/%fi
// ("::ffff:127.0.0.1:37374"); %ci then costs a getsockname per logged
// connection, to learn the listener's family.
//
// What goes to a monitor's or stats page's targets (a `listen` section
// takes defaults' `log` lines; level info), without a log format: one
// line per request, a keep-alive connection's second request included,
// none for a connection that sends nothing, an incomplete request or one
// answered 400, whatever dontlognull says (web.go):
//
//	Connect from 127.0.0.1:37074 to 127.0.0.1:50936 (health_check_http_url/HTTP)
//
// What goes to a backend's targets: with option log-health-checks, a
// line for each check whose status or step of rise/fall changed (notice),
// "Health check for server be/s1 failed, reason: Layer4 connection
// problem, info: "Connection refused", check duration: 0ms, status: 0/2
// DOWN." (with check-ssl, a failed handshake is "reason: Layer6 invalid
// response, info: "SSL handshake failure"" whatever the cause, and a
// timed-out one "reason: Layer6 timeout" without info, as haproxy 2.6.12
// writes them: TestHealthCheckTLSLogMatchesHaproxy; an info from the
// server's answer is its first 127 bytes, a control character, '"',
// '<', '>' or a byte above 0x7e written <XX>, as haproxy writes them:
// TestSyslogLines); always, a server's change to DOWN (alert) or UP (notice),
// "Server be/s1 is DOWN, reason: ..., check duration: 0ms. 0 active and
// 0 backup servers left. 0 sessions active, 0 requeued, 0 remaining in
// queue." (without the reason part under log-health-checks, whose line
// came just before; "active" counts the servers that take connections,
// a drained one not; a drained server's change is a notice followed by
// "Server be/s1 remains in forced drain mode."), and "backend be has no
// server available!" (emerg) after the last usable one's DOWN. The
// runtime API's changes of a server's state (`set server be/s1 state
// maint|drain|ready`, `disable server`, `enable server`) send haproxy's
// lines, "Server be/s1 is going DOWN for maintenance. ..." (alert; notice
// from drain), "... was DOWN and now enters maintenance.", "... is
// UP/READY (leaving forced maintenance).", "... is UP/DRAIN (leaving
// forced maintenance)." and "... remains in forced drain mode.", "...
// enters drain state. ...", "... is UP (leaving forced drain)." (notices),
// and "no server available" when the change took the last usable server
// (adminLines in syslog.go has them all); `set weight` to 0 of the last
// usable server sends "no server available" alone, as haproxy 2.6.12
// does (measured).
//
// The soft stop (LB.SoftStop; `vipstack lb` on SIGUSR1, as haproxy)
// sends every proxy's "Proxy fe stopped (cumulated conns: FE: 3, BE:
// 0)." (warning) at its start, once the frontends stop accepting, in the
// configuration's order, as haproxy 2.6 does on SIGUSR1 (a backend's BE
// counts every client it took, one that found no server UP included, as
// its stats' stot does). When its
// deadline comes with connections open (`vipstack lb`: a SIGTERM, then
// --drain-timeout), each frontend that has some sends "Proxy fe
// hard-stopped (2 remaining conns will be closed)." (warning) before they
// are closed, as haproxy's hard-stop-after does (measured), and their
// lines say K-. Shutdown (`vipstack lb` on SIGTERM, which drains where
// haproxy's SIGTERM stops at once) sends no stop line, as haproxy's
// SIGTERM sends none (measured: no line at all, the connections' neither).
// During either, the monitor answers 503 where haproxy's soft stop closes
// its listener: a check of it fails alike.
//
// Not sent, although haproxy sends them: under a log format, the request
// lines haproxy writes (level info) for a monitor or stats section's
// streams other than monitor hits: CR (connected and closed; none with
// dontlognull), PR (garbage, 400), cR (timeout http-request, 408), SC
// (another URI, 503), LR (a stats page), measured with option tcplog
// and log-format in defaults and option httplog in the section. The
// configuration reader refuses such a section when its targets take info
// lines (internal/haproxycfg), so that none is silently missing; with
// notice targets (OpenShift's current template) haproxy sends none
// either. Also not sent: a check-ssl server that resets before it reads
// the ClientHello gets "SSL handshake failure (Connection reset by
// peer)" from haproxy (measured) and "SSL handshake failure" from
// vipstack, which sees every reset on its read; the lines of events vipstack does not have (backup servers, queues,
// agent checks), nor those haproxy sends only to global's targets (the
// soft stop's "Proxy <HTTPCLIENT> stopped (cumulated conns: FE: 0, BE:
// 0)." of its internal HTTP client, and "soft-stop running for too long,
// performing a hard-stop.": measured with a log line in global).
// vipstack's own log (Options.Logger, standard error) keeps its messages.
//
// Messages are queued off the relay's path and sent by one goroutine: at
// most 1 MiB waits; a message that does not fit, or that a target cannot
// take, is dropped and counted (vipstack_lb_access_log_dropped_total,
// haproxy's DroppedLogs). A socket target that cannot be reached (no
// reader yet; haproxy 2.6 starts anyway and prints one ALERT) does not
// stop the LB: vipstack's log says so once, its messages are dropped, and
// it is tried again a second later; it says so again when the target
// works. A reload that changes a proxy's targets applies to the next
// message; sockets that no line names any more are closed.
package lb
