// Package haproxycfg reads haproxy.cfg files into vipstack's load balancer
// model (package lbconfig), so vipstack can run the haproxy 2.6
// configurations of on-prem OpenShift masters unchanged. The syntax is the
// one of the HAProxy 2.6 Configuration Manual (doc/configuration.txt),
// sections 2.1 to 2.5; HTTP health checks are HTTP/1.x requests (RFC 9112).
//
// # Syntax
//
// A statement is one line: words separated by blanks, "#" starting a
// comment anywhere outside quotes, weak "double" and strong 'single'
// quoting and backslash escapes (\<space> \# \\ \' \" \t \n \r \xHH) as
// haproxy's own line parser does. A section starts at one of the section
// keywords and runs to the next. Inside double quotes, $NAME, ${NAME},
// ${NAME-DEFAULT} and ${NAME[*]} expand environment variables and the
// pseudo-variables .FILE, .LINE and .SECTION as haproxy 2.6 does (env.go;
// Options.LookupEnv, SystemEnv); outside them a dollar sign is itself.
// Conditional blocks (.if, .endif, ...) are rejected.
//
// # Supported subset
//
//   - global: maxconn; log TARGET ... (below); log-tag TAG; stats socket ADDRESS (a file path, unix@PATH,
//     ipv4@IP:PORT, ipv6@[IP]:PORT or IP:PORT) [mode OCTAL] [level
//     user|operator|admin] [user|uid ...] [group|gid ...] [expose-fd
//     listeners], where `vipstack lb` serves the runtime API
//     (internal/lbcli); stats timeout; daemon (a warning: vipstack stays in
//     the foreground); user|uid, group|gid, pidfile and nbthread (applied
//     by `vipstack lb`, internal/lbproc); ca-base, crt-base,
//     ssl-default-bind-* and ssl-default-server-* (applied to ssl binds
//     and servers at the file's end, read only if one exists: tls.go); chroot
//     (applied by `vipstack lb`); tune.bufsize and tune.maxrewrite
//     (lbconfig.Config.HeadLimits), tune.maxaccept (no effect: tune.go);
//     node and description (for stats show-node/show-desc: global_more.go).
//     global may appear anywhere. docs/haproxy-cfg.md has the
//     whole list with each directive's effect.
//   - defaults (one section, before any proxy, optionally named): maxconn,
//     mode tcp|http, log TARGET ..., log global, no log, log-format "FORMAT", option
//     tcplog, option httplog [clf], option forwardfor, option originalto,
//     option http-buffer-request, compression, option http-server-close
//     | httpclose | http-keep-alive and errorfile (inherited by HTTP
//     proxies; haproxy's warnings and fallbacks for TCP ones),
//     option log-health-checks,
//     option dontlognull, option redispatch, retries, default-server, backlog,
//     timeout check | client | connect | server | tunnel | queue |
//     http-request | http-keep-alive.
//   - frontend NAME: bind ADDRESS:PORT[,...] [v4v6] [defer-accept] [tfo]
//     [interface NAME] [transparent] [backlog N] (bind_more.go), backlog, default_backend,
//     log ..., log global, no log, log-format "FORMAT", option tcplog,
//     mode tcp|http; in mode http also (http.go) acl, use_backend,
//     http-request set-header | add-header | del-header | set-path |
//     replace-path | replace-uri | replace-header | replace-value | deny |
//     allow | redirect | set-var(txn.NAME) (values and expressions with
//     the regsub converter, lbconfig/sample.go), http-response set-header |
//     add-header | del-header | replace-header | replace-value |
//     set-status (rewrite_test.go), redirect, option forwardfor, option
//     originalto, option http-buffer-request, compression algo | type |
//     offload, capture request | response header, capture cookie,
//     option httplog [clf],
//     option http-server-close | httpclose | http-keep-alive, errorfile,
//     stats enable | uri | auth | refresh | hide-version
//     (lbconfig.HTTPFrontend; docs/haproxy-cfg.md lists the criteria and
//     actions). id N in frontends, backends and listens numbers the
//     section on the stats page (ids.go, lbconfig.Config.ProxyNumbers).
//
// `log TARGET [len LENGTH] [format raw|rfc3164] FACILITY [LEVEL
// [MINLEVEL]]` (lbconfig.ParseLogTarget) names where syslog messages go:
// an absolute path to a Unix datagram socket (or unix@PATH), IP[:PORT] or
// [IPv6][:PORT] over UDP (port 514 by default; udp@, udp4@, udp6@, ipv4@,
// ipv6@ prefixes), stdout or stderr; a host name is resolved when the
// file is read, as haproxy does at start (loghost.go). len is the
// target's longest line, 80 to 65535 bytes as in haproxy 2.6 (measured;
// default 1024), and comes before format as haproxy reads it. Names that
// do not resolve, port 0, IPv6 without brackets, other families (tcp@, fd@, ring@), the
// sample option and a len haproxy would read from leading digits
// ("100abc") are errors that say what is accepted (haproxy accepts some
// of them). As in haproxy 2.6 (measured), defaults' lines
// apply to every frontend, backend and listen section, a section's own
// lines add to them, `no log` drops the inherited ones and `log global`
// adds global's, each of them once: a `log global` in a section whose
// defaults said it adds nothing (one datagram per message), while a line
// naming one of global's targets again adds a second (two).
// log-tag sets the syslog tag (default "haproxy", see internal/lb).
// A monitor or stats section's targets (lbconfig.Monitor.LogTargets,
// Stats.LogTargets) get haproxy's "Connect from ... (NAME/HTTP)" line per
// request. Under defaults' log format haproxy logs no monitor hit but
// writes a request line (level info) for other streams (CR, PR, cR, SC,
// LR; measured), which vipstack does not write: such a section is an
// error when one of its targets takes info lines (give it `no log`, a
// level of notice or above as OpenShift's current template does, or put
// the format in the frontends), and sends nothing otherwise. option
// httplog, option tcplog and log-format in a listen section are errors
// for the same reason.
//
// A frontend with targets sends a connection log: with a format
// (lbconfig.ConnLog: log-format, with the variables of
// lbconfig.LogVariables, or option tcplog) one line per connection when it
// ends, as haproxy formats them, option dontlognull leaving out clients
// that sent nothing; without a format haproxy's "Connect from" line at
// accept. Sample expressions (%[...]), HTTP variables and the flags other
// than +Q/-Q are errors that name them.
//   - backend NAME: balance roundrobin | static-rr | leastconn | first |
//     source | random, log ..., log
//     global, no log, option httpchk
//     [[METHOD] URI [VERSION]] (also in defaults), http-check expect
//     status CODES | [!] string TEXT | [!] rstring REGEX, http-check send
//     [meth|uri|ver|hdr|body ...], http-check connect [port N], option
//     tcp-check with tcp-check connect [port N] | send S | expect string S,
//     option ssl-hello-chk, option redis-check, option pgsql-check user
//     NAME, option log-health-checks, option
//     redispatch, mode tcp|http, default-server [params], server NAME
//     ADDRESS:PORT [weight N] [verify none|required] [check] [check-ssl]
//     [inter T] [fall N] [rise N] [cookie VALUE] [send-proxy]
//     [send-proxy-v2] [ssl] [ca-file F] [sni str(NAME)] [alpn LIST]
//     [TLS versions and ciphers] (ssl in mode http backends only); in
//     mode http also
//     balance uri | hdr(NAME), cookie NAME insert|prefix|rewrite ..., acl,
//     http-request, redirect and the stats and option lines of a frontend
//     (lbconfig.HTTPBackend).
//   - listen NAME in mode http, with bind, and either monitor-uri URI (a
//     lbconfig.Monitor) or stats enable | uri | auth USER:PASS | refresh T
//     | hide-version (a lbconfig.Stats), and maxconn N (their listener
//     stops accepting at N); option dontlognull is accepted.
//   - listen NAME with server lines (and the frontend and backend
//     keywords above): a frontend and a backend of that name, in its
//     mode.
//
// bind takes ssl with crt FILE|DIR, crt-list FILE, alpn, ciphers,
// ciphersuites, ssl-min-ver, ssl-max-ver, no-sslv3, no-tlsv1x,
// force-tlsv1x, no-tls-tickets and prefer-client-ciphers (tls.go; also
// in ssl-default-bind-options); certificate and CA files are read when
// the file is, as haproxy -c reads them.
//
// Addresses follow haproxy: the port comes after the last colon, so
// ":::9445" is every IPv6 address (and IPv4 with v4v6) on 9445, ":7443"
// and "*:7443" are every IPv4 address, "[::1]:80" is accepted, and
// "localhost:50000" becomes 127.0.0.1:50000 with Host "localhost". Load
// resolves other host names of servers with the system's resolver (the
// first address, lbconfig.Server.Host keeps the name); Parse, without a
// resolver, and binds reject them. Times take haproxy's units
// (us, ms, s, m, h, d; milliseconds without a unit, seconds for stats
// refresh), whole numbers only, rounded up and below 2^31 units; text
// after the unit ("15min") is haproxy 2.6's warning, as in haproxy.
//
// # Where vipstack is stricter than haproxy
//
// Every keyword outside the subset is an error, never ignored:
//
//	haproxy.cfg:12: keyword "unique-id-format" in frontend main is not supported by vipstack (supported: acl, bind, capture, ...)
//
// A setting given twice in a section is an error (haproxy keeps the
// last). weight 0 and retries 0 are rejected, because the model reads 0 as
// "default". Server ports must be written (haproxy would reuse the
// client's). use_backend and other HTTP keywords in mode tcp sections are
// errors (haproxy evaluates them on layer 4 fetches); acl lines there
// serve tcp-request rules, and http-request and http-response lines are
// ignored with haproxy's warning (tcprequest.go). A server with
// check-ssl verifies certificates by default, as in haproxy, against the
// server's ca-file, or without one the system's CA pool (haproxy would
// demand a ca-file); a warning says so. server ssl without ca-file or
// verify none is haproxy's error.
//
// Parse and Load collect up to 20 errors, each an *Error with file, line
// and keyword, and return them joined with a nil Config. Only a file that
// parses cleanly goes through lbconfig.Validate, whose errors (unknown
// default_backend, weight out of range, ...) are reported the same way.
package haproxycfg
