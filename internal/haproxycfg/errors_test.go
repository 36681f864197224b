package haproxycfg

import (
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// base is a valid haproxy.cfg that haproxy 2.6 accepts without warning.
const base = "defaults\n" + // 1
	"  mode tcp\n" + // 2
	"  timeout connect 5s\n" + // 3
	"  timeout client 30s\n" + // 4
	"  timeout server 30s\n" + // 5
	"frontend main\n" + // 6
	"  bind 127.0.0.1:47011\n" + // 7
	"  default_backend masters\n" + // 8
	"backend masters\n" + // 9
	"  server m0 127.0.0.1:47012 check\n" // 10

// srv10 is base's server line, line 10.
const srv10 = "  server m0 127.0.0.1:47012 check\n"

// edit returns base with old (which must occur once) replaced by new.
func edit(t *testing.T, old, new string) string {
	t.Helper()
	if strings.Count(base, old) != 1 {
		t.Fatalf("edit: %q occurs %d times in base", old, strings.Count(base, old))
	}
	return strings.Replace(base, old, new, 1)
}

// What haproxy -c says about a case's input.
const (
	haproxyRejects = "rejects"
	haproxyAccepts = "accepts" // vipstack is stricter, on purpose
)

func TestParseErrors(t *testing.T) {
	const (
		fe  = "  bind 127.0.0.1:47011\n"
		srv = "  server m0 127.0.0.1:47012 check\n"
	)
	tests := []struct {
		name    string
		conf    func(t *testing.T) string
		want    string
		haproxy string // haproxyRejects, haproxyAccepts, or "" when not asked
	}{
		// External checks (extcheck.go), in haproxy's words.
		{
			name: "option external-check without global's",
			conf: func(t *testing.T) string {
				return edit(t, "  server m0 127.0.0.1:47012 check\n", "  option external-check\n  external-check command /bin/true\n  server m0 127.0.0.1:47012 check\n")
			},
			want:    `h.cfg:10: Proxy 'masters' : 'option external-check' unable to find required 'global.external-check'. (accepted: external-check in global)`,
			haproxy: haproxyRejects,
		},
		{
			name: "option external-check without a command",
			conf: func(t *testing.T) string {
				return "global\n  external-check\n" + edit(t, "  server m0 127.0.0.1:47012 check\n", "  option external-check\n  server m0 127.0.0.1:47012 check\n")
			},
			want:    `h.cfg:12: Proxy 'masters' : 'option external-check' unable to find required 'external-check command'. (accepted: external-check command PROGRAM)`,
			haproxy: haproxyRejects,
		},
		{
			name: "external-check command without a '/' or a path",
			conf: func(t *testing.T) string {
				return "global\n  external-check\n" + edit(t, "  server m0 127.0.0.1:47012 check\n", "  option external-check\n  external-check command true\n  server m0 127.0.0.1:47012 check\n")
			},
			want:    `h.cfg:12: Proxy 'masters': 'external-check command' does not have a leading '/' and 'external-check path' is not set. (accepted: an absolute command, or external-check path DIRS)`,
			haproxy: haproxyRejects,
		},
		{
			name: "external-check with another word",
			conf: func(t *testing.T) string {
				return "global\n  external-check\n" + edit(t, "  server m0 127.0.0.1:47012 check\n", "  external-check user nobody\n  server m0 127.0.0.1:47012 check\n")
			},
			want:    `h.cfg:12: 'external-check' only supports 'command' and 'path'. but got 'user'. (accepted: external-check command PROGRAM, external-check path DIRS)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "global external-check with an argument",
			conf:    func(t *testing.T) string { return "global\n  external-check preserve-env\n" + base },
			want:    `h.cfg:2: 'external-check' cannot handle unexpected argument 'preserve-env'. (accepted: external-check alone)`,
			haproxy: haproxyRejects,
		},
		// The bad inputs.
		{
			name: "ignore-persist without a condition",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "backend web\n  ignore-persist\n  server w1 127.0.0.1:47014\n"
			},
			want:    "h.cfg:12: ignore-persist needs a condition (accepted: if|unless CONDITION)",
			haproxy: haproxyRejects,
		},
		{
			name:    "balance uri in defaults",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  balance uri\n") },
			want:    `h.cfg:3: balance "uri" in defaults is not supported by vipstack (accepted in defaults: roundrobin, static-rr, leastconn, first, source, random)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "tcp-request content rule",
			conf: func(t *testing.T) string {
				return edit(t, fe, fe+"  tcp-request content accept if { req_ssl_hello_type 1 }\n")
			},
			want:    `h.cfg:8: acl criterion "req_ssl_hello_type" is not supported by vipstack (accepted: always_false, always_true, base[_beg|_end|_reg|_sub], dst, dst_port, hdr(NAME)[_beg|_dom|_end|_reg|_sub], method, path[_beg|_dir|_end|_reg|_sub], req.hdr(NAME), src, src_port, ssl_fc, ssl_fc_sni, url[_beg|_end|_reg|_sub], var(txn.NAME) -m METHOD)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "tcp-request inspect-delay without a delay",
			conf:    func(t *testing.T) string { return edit(t, fe, fe+"  tcp-request inspect-delay\n") },
			want:    `h.cfg:8: 'tcp-request inspect-delay' expects a positive delay in milliseconds, in frontend 'main' (accepted: tcp-request inspect-delay TIME; tcp-request connection accept, reject, set-src EXPR, set-dst EXPR, silent-drop; tcp-request content accept, reject; each rule maybe with if|unless CONDITION over always_false, always_true, dst, dst_port, src, src_port)`,
			haproxy: haproxyRejects,
		},
		{
			name: "stats socket parameter",
			conf: func(t *testing.T) string {
				return "global\n  stats socket /run/h.sock mode 600 accept-netscaler-cip 1\n" + base
			},
			want:    `h.cfg:2: stats socket: parameter "accept-netscaler-cip" is not supported by vipstack (accepted: expose-fd listeners, gid, group, level, mode, uid, user)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "stats socket level",
			conf:    func(t *testing.T) string { return "global\n  stats socket /run/h.sock level root\n" + base },
			want:    `h.cfg:2: stats socket: level "root" (accepted: user, operator, admin)`,
			haproxy: haproxyRejects,
		},
		{
			name: "stats socket mode",
			conf: func(t *testing.T) string { return "global\n  stats socket /run/h.sock mode rw\n" + base },
			want: `h.cfg:2: stats socket: mode "rw" is not octal permission bits such as 600`,
		},
		{
			name:    "stats socket family",
			conf:    func(t *testing.T) string { return "global\n  stats socket abns@lb\n" + base },
			want:    `h.cfg:2: stats socket: address "abns@lb": the abns@ family is not supported by vipstack (accepted: a file path, unix@PATH, ipv4@IP:PORT, ipv6@[IP]:PORT)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "stats socket value missing",
			conf:    func(t *testing.T) string { return "global\n  stats socket /run/h.sock level\n" + base },
			want:    `h.cfg:2: stats socket: parameter "level" needs a value (accepted: expose-fd listeners, gid, group, level, mode, uid, user)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "unsupported keyword",
			conf:    func(t *testing.T) string { return edit(t, fe, fe+"  use_backend masters if { src 127.0.0.1 }\n") },
			want:    `h.cfg:8: use_backend in frontend main (mode tcp) is not supported by vipstack: its use_backend, redirect, cookie, monitor-uri, stats and other HTTP keywords work in mode http only (accepted: mode http in frontend main)`,
			haproxy: haproxyAccepts,
		},
		// A monitor or stats section under a log format: haproxy writes
		// request lines (CR, PR, cR, SC, LR; measured) that vipstack
		// does not, so it refuses when they would be sent.
		{
			name:    "log-format variable",
			conf:    func(t *testing.T) string { return edit(t, fe, fe+"  log-format \"%ci %lc\"\n") },
			want:    `h.cfg:8: log-format "%ci %lc": variable %lc is not supported by vipstack (accepted: ` + strings.Join(lbconfig.LogVariables, " ") + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "log-format sample",
			conf:    func(t *testing.T) string { return edit(t, fe, fe+"  log-format \"%[src]\"\n") },
			want:    `h.cfg:8: log-format "%[src]": sample expressions (%[...]) are not supported by vipstack (accepted variables: ` + strings.Join(lbconfig.LogVariables, " ") + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "log-format unquoted",
			conf:    func(t *testing.T) string { return edit(t, fe, fe+"  log-format %ci %cp\n") },
			want:    `h.cfg:8: log-format takes 1 value(s) (a format, quoted when it has spaces), got 2: "%ci %cp"`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bad address",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "127.0.0.300:47011") },
			want:    `h.cfg:7: bind address "127.0.0.300:47011": "127.0.0.300" is not an IP address (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT; vipstack resolves no host name but localhost)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bad port",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "127.0.0.1:65536") },
			want:    `h.cfg:7: bind address "127.0.0.1:65536" has an invalid port "65536" (accepted: 1..65535)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-check expect string with two words",
			conf: func(t *testing.T) string {
				return edit(t, srv10, "  option httpchk GET /\n  http-check expect string a b\n"+srv10)
			},
			want:    `h.cfg:11: http-check expect string takes one pattern, got "a b" (accepted: one word; write a space as '\ ' or quote the pattern)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-check expect string without a pattern",
			conf: func(t *testing.T) string {
				return edit(t, srv10, "  option httpchk GET /\n  http-check expect string\n"+srv10)
			},
			want:    `h.cfg:11: http-check expect string takes one pattern, got "" (accepted: one word; write a space as '\ ' or quote the pattern)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-check expect rstring that does not compile",
			conf: func(t *testing.T) string {
				return edit(t, srv10, "  option httpchk GET /\n  http-check expect rstring (\n"+srv10)
			},
			want:    `h.cfg:11: http-check expect rstring "(": error parsing regexp: missing closing ): ` + "`(`" + ` (accepted: a regular expression Go's regexp package takes)`,
			haproxy: haproxyRejects,
		},
		// http-request return: haproxy's errors, with what is accepted.
		{
			name: "http-request return with a body and no content-type",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "frontend web\n  bind 127.0.0.1:47013\n  http-request return string ok\n  default_backend masters\n"
			},
			want:    `h.cfg:13: http-request return: a content type must be defined when non-empty payload is configured. (accepted: ` + httpReturnAccepted + `)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-request return 204 with a body",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "frontend web\n  bind 127.0.0.1:47013\n  http-request return status 204 content-type text/plain string x\n  default_backend masters\n"
			},
			want:    `h.cfg:13: http-request return: No body expected for 204 responses. (accepted: ` + httpReturnAccepted + `)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-request return with status 199",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "frontend web\n  bind 127.0.0.1:47013\n  http-request return status 199\n  default_backend masters\n"
			},
			want:    `h.cfg:13: http-request return: Unexpected status code '199'. (accepted: ` + httpReturnAccepted + `)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-request return with an errorfile",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode http\n") + "frontend web\n  bind 127.0.0.1:47013\n  http-request return status 503 errorfile /dev/null\n  default_backend masters\n"
			},
			want: `h.cfg:13: http-request return: errorfile is not supported by vipstack (accepted: ` + httpReturnAccepted + `)`,
		},
		{
			name:    "option pgsql-check without a user",
			conf:    func(t *testing.T) string { return edit(t, srv10, "  option pgsql-check\n"+srv10) },
			want:    `h.cfg:10: 'option pgsql-check' expects 'user <username>' as argument. (accepted: option pgsql-check user NAME)`,
			haproxy: haproxyRejects,
		},
		// Directives haproxy 2.6 dropped: its reason (removed.go).
		{
			name:    "nbproc, which haproxy 2.5 dropped",
			conf:    func(t *testing.T) string { return "global\n  nbproc 2\n" + base },
			want:    `h.cfg:2: keyword "nbproc" in global: nbproc is not supported any more since HAProxy 2.5. Threads will automatically be used on multi-processor machines if available. (haproxy 2.6 refuses it too)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "contimeout, which haproxy 2.1 dropped",
			conf:    func(t *testing.T) string { return edit(t, "  timeout connect 5s\n", "  contimeout 5s\n") },
			want:    `h.cfg:3: keyword "contimeout" in defaults: the 'contimeout' directive is not supported anymore since HAProxy 2.1. Use 'timeout connect'. (haproxy 2.6 refuses it too)`,
			haproxy: haproxyRejects,
		},
		{
			name: "monitor-net, which haproxy dropped",
			conf: func(t *testing.T) string {
				return edit(t, "  default_backend masters\n", "  monitor-net 10.0.0.0/8\n  default_backend masters\n")
			},
			want:    `h.cfg:8: keyword "monitor-net" in frontend main: 'monitor-net' doesn't exist anymore. Please use 'http-request return status 200 if { src 10.0.0.0/8 }' instead. (haproxy 2.6 refuses it too)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bad timeout unit",
			conf:    func(t *testing.T) string { return edit(t, "timeout client 30s", "timeout client 10x") },
			want:    `h.cfg:4: timeout client "10x" has an unknown unit "x" (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "timeout and its kind quoted into one word",
			conf:    func(t *testing.T) string { return edit(t, "timeout client 30s", `timeout" client"`) },
			want:    `h.cfg:4: timeout takes a name and a time (accepted timeouts: ` + timeoutNames + `)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "unknown balance",
			conf:    func(t *testing.T) string { return edit(t, srv, "  balance foo\n"+srv) },
			want:    `h.cfg:10: backend masters: balance "foo" is not supported by vipstack (accepted: roundrobin, static-rr, leastconn, first, source, random)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "balance haproxy knows",
			conf:    func(t *testing.T) string { return edit(t, srv, "  balance rdp-cookie\n"+srv) },
			want:    `h.cfg:10: backend masters: balance "rdp-cookie" is not supported by vipstack (accepted: roundrobin, static-rr, leastconn, first, source, random)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "balance random with 3 draws",
			conf:    func(t *testing.T) string { return edit(t, srv, "  balance random(3)\n"+srv) },
			want:    `h.cfg:10: balance random(3): vipstack draws 2 servers (accepted: random, random(2))`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "missing backend",
			conf:    func(t *testing.T) string { return edit(t, "default_backend masters", "default_backend nope") },
			want:    `h.cfg:8: frontend main: default_backend "nope" is not a backend (accepted: masters)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "duplicate backend",
			conf:    func(t *testing.T) string { return base + "backend masters\n  server m1 127.0.0.1:47013\n" },
			want:    `h.cfg:11: backend masters has the same name as backend masters at line 9 (accepted: unique names; only a frontend and a backend may share one)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "duplicate server",
			conf:    func(t *testing.T) string { return base + "  server m0 127.0.0.1:47013\n" },
			want:    `h.cfg:11: server m0 is already defined in backend masters at h.cfg:10 (accepted: unique server names)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "weight 300",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check weight 300") },
			want:    `h.cfg:10: backend masters, server m0: weight 300 is out of range (accepted: 1..256)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "server without address",
			conf:    func(t *testing.T) string { return edit(t, srv, "  server m0\n") },
			want:    `h.cfg:10: server needs a name and an address (accepted: server NAME ADDRESS:PORT [` + serverParams + `])`,
			haproxy: haproxyRejects,
		},

		// Lines and words.
		{
			name:    "unmatched quote",
			conf:    func(t *testing.T) string { return edit(t, "default_backend masters", `default_backend "masters`) },
			want:    `h.cfg:8: default_backend: unmatched quote " at position 19 (accepted: a closing ", or \" for the character itself)`,
			haproxy: haproxyRejects,
		},
		{
			// The monitor-uri line is rejected, not missing: no second
			// error saying the section is neither a monitor nor stats.
			name: "unmatched quote in a monitor's only line",
			conf: func(t *testing.T) string {
				return base + "listen health_check_http_url\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri \"/haproxy_ready\n"
			},
			want:    `h.cfg:14: monitor-uri: unmatched quote " at position 15 (accepted: a closing ", or \" for the character itself)`,
			haproxy: haproxyRejects,
		},
		{
			name: "unmatched quote in a first word",
			conf: func(t *testing.T) string { return edit(t, "default_backend masters", `"default_backend masters`) },
			want: `h.cfg:8: unmatched quote " at position 3 (accepted: a closing ", or \" for the character itself)`,
		},
		{
			name:    "bad hex escape",
			conf:    func(t *testing.T) string { return edit(t, "default_backend masters", `default_backend master\xZs`) },
			want:    `h.cfg:8: default_backend: invalid or incomplete \x escape at position 25 (accepted: \xHH with two hex digits)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "variable name starting with a digit",
			conf:    func(t *testing.T) string { return edit(t, "default_backend masters", `default_backend "$1BACKEND"`) },
			want:    `h.cfg:8: default_backend: forbidden first char in environment variable name at position 21 (accepted: ` + varForms + `)`,
			haproxy: haproxyRejects,
		},
		{
			name: "variable brace not closed",
			conf: func(t *testing.T) string {
				return edit(t, "default_backend masters", `default_backend "${BACKEND:-masters}"`)
			},
			want:    `h.cfg:8: default_backend: unmatched brace in environment variable name at position 21 (accepted: ` + varForms + `)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "NUL byte",
			conf:    func(t *testing.T) string { return edit(t, "default_backend masters", "default_backend mas\x00ters") },
			want:    `h.cfg:8: stray NUL character at position 22`,
			haproxy: haproxyRejects,
		},
		{
			name: "empty keyword",
			conf: func(t *testing.T) string { return edit(t, "  mode tcp\n", "  \"\" tcp\n") },
			want: `h.cfg:2: empty keyword (a quoted empty string or an empty variable starts the line; haproxy skips such a line)`,
		},
		{
			name: "conditional block",
			conf: func(t *testing.T) string { return ".if defined(X)\n.endif\n" + base },
			want: "h.cfg:1: conditional blocks and directives (.if) are not supported by vipstack\n" +
				"h.cfg:2: conditional blocks and directives (.endif) are not supported by vipstack",
			haproxy: haproxyAccepts,
		},

		// Sections.
		{
			name:    "keyword outside a section",
			conf:    func(t *testing.T) string { return "maxconn 10\n" + base },
			want:    `h.cfg:1: keyword "maxconn" outside of any section (sections: global, defaults, frontend, backend, listen, resolvers, peers)`,
			haproxy: haproxyRejects,
		},
		{
			name: "unsupported section and its lines",
			conf: func(t *testing.T) string { return base + "userlist admins\n  user admin insecure-password x\n" },
			want: `h.cfg:11: section "userlist" is not supported by vipstack (supported: global, defaults, frontend, backend, listen, resolvers, peers)`,
		},
		{
			name:    "frontend without name",
			conf:    func(t *testing.T) string { return edit(t, "frontend main\n", "frontend\n") },
			want:    `h.cfg:6: frontend takes 1 value(s) (its name), got 0`,
			haproxy: haproxyRejects,
		},
		{
			name: "named defaults reference",
			conf: func(t *testing.T) string { return edit(t, "frontend main\n", "frontend main from d\n") },
			want: "h.cfg:6: frontend takes 1 value(s) (its name), got 3: \"main from d\"\n" +
				"h.cfg:6: frontend ... from (named defaults) is not supported by vipstack",
		},
		{
			name:    "invalid name",
			conf:    func(t *testing.T) string { return strings.ReplaceAll(base, "masters", "mas/ters") },
			want:    `h.cfg:9: backend mas/ters: character '/' is not permitted in backend name "mas/ters" (accepted: letters, digits, '-', '_', '.', ':')`,
			haproxy: haproxyRejects,
		},
		{
			name:    "control character in a name",
			conf:    func(t *testing.T) string { return edit(t, "frontend main\n", "frontend ma\\nin\n") },
			want:    `h.cfg:6: frontend ma\nin: character '\n' is not permitted in frontend name "ma\nin" (accepted: letters, digits, '-', '_', '.', ':')`,
			haproxy: haproxyRejects,
		},
		{
			name:    "listen with the name of a frontend",
			conf:    func(t *testing.T) string { return base + "listen main\n  bind :47013\n  mode http\n  stats enable\n" },
			want:    `h.cfg:11: listen main has the same name as frontend main at line 6 (accepted: unique names; only a frontend and a backend may share one)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "second defaults",
			conf:    func(t *testing.T) string { return "defaults\n  retries 2\n" + base },
			want:    `h.cfg:3: a second defaults section is not supported by vipstack (the first is at line 1; merge them)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "defaults after a proxy",
			conf:    func(t *testing.T) string { return base + "defaults\n  retries 2\n" },
			want:    `h.cfg:11: defaults after a frontend, backend or listen section is not supported by vipstack (move it before them)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "unsupported global keyword",
			conf:    func(t *testing.T) string { return "global\n  tune.h2.max-concurrent-streams 50\n" + base },
			want:    `h.cfg:2: keyword "tune.h2.max-concurrent-streams" in global is not supported by vipstack (supported: ` + globalKeywords + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "chroot relative",
			conf:    func(t *testing.T) string { return "global\n  chroot var/empty\n" + base },
			want:    `h.cfg:2: chroot "var/empty" is not an absolute path (accepted: a directory such as /var/lib/haproxy)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "pidfile twice",
			conf:    func(t *testing.T) string { return "global\n  pidfile /run/a.pid\n  pidfile /run/b.pid\n" + base },
			want:    `h.cfg:3: pidfile is already set in global at line 2 (accepted: once per section)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "uid not a number",
			conf:    func(t *testing.T) string { return "global\n  uid haproxy\n" + base },
			want:    `h.cfg:2: uid "haproxy" is not a number (accepted: a numeric id; user and group take names)`,
			haproxy: haproxyAccepts, // with a warning, as uid 0
		},
		{
			name:    "nbthread 0",
			conf:    func(t *testing.T) string { return "global\n  nbthread 0\n" + base },
			want:    `h.cfg:2: nbthread 0 is out of range (accepted: 1 or more)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "stats timeout with a bad unit",
			conf:    func(t *testing.T) string { return "global\n  stats timeout 30x\n" + base },
			want:    `h.cfg:2: stats timeout "30x" has an unknown unit "x" (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)`,
			haproxy: haproxyRejects,
		},
		{
			name: "ssl-default-server-ciphers with an OpenSSL expression",
			conf: func(t *testing.T) string {
				return "global\n  ssl-default-server-ciphers ECDHE+AESGCM\n" + edit(t, " check\n", " check check-ssl verify none\n")
			},
			want:    `h.cfg:2: ssl-default-server-ciphers: cipher "ECDHE+AESGCM" is not one Go's TLS implements (accepted: OpenSSL names of the suites it does: ` + lbconfig.CipherNames() + `)`,
			haproxy: haproxyAccepts,
		},

		// Forwarding listen sections.
		{
			name: "listen forwards and monitors",
			conf: func(t *testing.T) string {
				return base + "listen both\n  bind 127.0.0.1:47013\n  mode http\n  monitor-uri /ready\n  server s0 127.0.0.1:47014\n"
			},
			want:    `h.cfg:11: listen both both forwards (line 15) and serves a monitor or stats page: vipstack serves them from separate listen sections`,
			haproxy: haproxyAccepts,
		},
		// Health check rules.
		{
			name: "tcp-check rule vipstack lacks",
			conf: func(t *testing.T) string {
				return edit(t, "  server m0", "  option tcp-check\n  tcp-check expect rstring ^OK\n  server m0")
			},
			want:    `h.cfg:11: tcp-check "expect rstring ^OK" is not supported by vipstack (accepted: tcp-check connect [port PORT], tcp-check send STRING, tcp-check expect string STRING)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "tcp-check connect port out of range",
			conf: func(t *testing.T) string {
				return edit(t, "  server m0", "  option tcp-check\n  tcp-check connect port 70000\n  server m0")
			},
			want:    `h.cfg:11: tcp-check connect port 70000 is out of range (accepted: 1..65535)`,
			haproxy: haproxyRejects,
		},
		{
			name: "http-check expect status not a code",
			conf: func(t *testing.T) string {
				return edit(t, "  server m0", "  option httpchk\n  http-check expect status ok\n  server m0")
			},
			want: `h.cfg:11: http-check expect status "ok" is not a code or range of codes 100..599 (accepted: 200, 200-399, 200,301)`,
		},
		{
			name: "default-server parameter vipstack lacks",
			conf: func(t *testing.T) string {
				return edit(t, "  server m0", "  default-server inter 3s agent-inter 60s\n  server m0")
			},
			want:    `h.cfg:10: backend masters, default-server: parameter "agent-inter" is not supported by vipstack (supported: ` + serverParams + `)`,
			haproxy: haproxyAccepts,
		},

		// defaults.
		{
			name: "errorfile missing",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  errorfile 503 /nonexistent/vshp.http\n")
			},
			want:    `h.cfg:3: errorfile: cannot open "/nonexistent/vshp.http": no such file or directory`,
			haproxy: haproxyRejects,
		},
		{
			name: "errorfile code",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  errorfile 999 /etc/hostname\n")
			},
			want:    `h.cfg:3: errorfile: status code "999" is not one haproxy takes (accepted: 200, 400, 401, 403, 404, 405, 407, 408, 410, 413, 425, 429, 500, 501, 502, 503, 504)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "unsupported option",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  option nolinger\n") },
			want:    `h.cfg:3: keyword "option nolinger" in defaults is not supported by vipstack (supported: ` + defaultsKeywords + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "no option",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  no option redispatch\n") },
			want:    `h.cfg:3: keyword "no option redispatch" in defaults is not supported by vipstack (supported: ` + defaultsKeywords + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "unsupported timeout",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  timeout tarpit 2s\n") },
			want:    `h.cfg:3: keyword "timeout tarpit" in defaults is not supported by vipstack (supported timeouts: ` + timeoutNames + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "fractional timeout",
			conf:    func(t *testing.T) string { return edit(t, "timeout client 30s", "timeout client 1.5s") },
			want:    `h.cfg:4: timeout client "1.5s" has an unexpected character '.' (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "timeout overflow",
			conf:    func(t *testing.T) string { return edit(t, "timeout client 30s", "timeout client 25d") },
			want:    `h.cfg:4: timeout client "25d" is too large (maximum: 2147483647 milliseconds, about 24.8 days)`,
			haproxy: haproxyRejects,
		},
		{
			// The values are quoted: a unit written apart from its
			// number shows as the second value.
			name:    "timeout with a space before its unit",
			conf:    func(t *testing.T) string { return edit(t, "timeout connect 5s", "timeout connect 5 sec") },
			want:    `h.cfg:3: timeout connect takes 1 value(s) (a time such as 10s), got 2: "5 sec"`,
			haproxy: haproxyRejects,
		},
		{
			name:    "keyword that takes no value",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  option redispatch 1\n") },
			want:    `h.cfg:3: option redispatch takes no value, got 1: "1"`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "timeout without value",
			conf:    func(t *testing.T) string { return edit(t, "timeout client 30s", "timeout client") },
			want:    `h.cfg:4: timeout client takes 1 value(s) (a time such as 10s), got 0`,
			haproxy: haproxyRejects,
		},
		{
			name: "setting given twice",
			conf: func(t *testing.T) string {
				return edit(t, "  timeout server 30s\n", "  timeout server 30s\n  retries 2\n  retries 4\n")
			},
			want:    `h.cfg:7: retries is already set in defaults at line 6 (accepted: once per section)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "retries 0",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  retries 0\n") },
			want:    `h.cfg:3: retries 0 is not supported by vipstack (accepted: 1 or more, default 3): vipstack retries a failed connect on another server`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "negative retries",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  retries -1\n") },
			want:    `h.cfg:3: retries -1 is out of range (accepted: 1 or more)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "maxconn not a number",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  maxconn lots\n") },
			want:    `h.cfg:3: maxconn "lots" is not an integer (accepted: 0..2147483647; 0 means the global maxconn)`,
			haproxy: haproxyAccepts,
		},
		{
			// An integer, but past 32 bits: out of range, not "not an
			// integer".
			name:    "maxconn too large",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  maxconn 99999999999\n") },
			want:    `h.cfg:3: maxconn 99999999999 is out of range (accepted: 0..2147483647; 0 means the global maxconn)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "retries too large",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  retries 99999999999\n") },
			want:    `h.cfg:3: retries 99999999999 is out of range (accepted: 1 or more; at most 2147483647)`,
			haproxy: haproxyAccepts,
		},
		{
			// haproxy takes the low 32 bits: fall 1.
			name:    "fall too large",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check fall 4294967297") },
			want:    `h.cfg:10: backend masters, server m0: fall 4294967297 is out of range (accepted: 1 or more; at most 2147483647)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "weight far too large",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check weight 99999999999") },
			want:    `h.cfg:10: backend masters, server m0: weight 99999999999 is out of range (accepted: 1..256)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "unknown log facility",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log bogus\n") },
			want:    `h.cfg:3: log /dev/log: unknown facility "bogus" (accepted: kern, user, mail, daemon, auth, syslog, lpr, news, uucp, cron, auth2, ftp, ntp, audit, alert, cron2, local0, local1, local2, local3, local4, local5, local6, local7)`,
			haproxy: haproxyRejects,
		},
		{
			name: "log format option",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log stdout format short local0\n")
			},
			want:    `h.cfg:3: log stdout: format "short" is not supported by vipstack (accepted: raw, rfc3164)`,
			haproxy: haproxyAccepts,
		},
		// log len: haproxy 2.6.12 says "invalid log length '79', must be
		// between 80 and 65535" (measured, also for 65536, abc and -5;
		// a len without value reads the facility as the length).
		{
			name: "log len below 80",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log len 79 local0\n")
			},
			want:    `h.cfg:3: log /dev/log: len "79" is not a length from 80 to 65535 bytes (haproxy's bounds)`,
			haproxy: haproxyRejects,
		},
		{
			name: "log len above 65535",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log len 65536 local0\n")
			},
			want:    `h.cfg:3: log /dev/log: len "65536" is not a length from 80 to 65535 bytes (haproxy's bounds)`,
			haproxy: haproxyRejects,
		},
		{
			name: "log len not a number",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log len abc local0\n")
			},
			want:    `h.cfg:3: log /dev/log: len "abc" is not a length from 80 to 65535 bytes (haproxy's bounds)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "log len without value",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log len\n") },
			want:    `h.cfg:3: log /dev/log: len needs a value (accepted: 80..65535)`,
			haproxy: haproxyRejects,
		},
		{
			// haproxy reads the leading digits, 100.
			name: "log len with trailing letters",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log len 100abc local0\n")
			},
			want:    `h.cfg:3: log /dev/log: len "100abc" is not a length from 80 to 65535 bytes (haproxy's bounds)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "log len after format",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log format raw len 100 local0\n")
			},
			want:    `h.cfg:3: log /dev/log: len comes before format and only once (accepted: log TARGET [len LENGTH] [format raw|rfc3164] FACILITY ...; haproxy reads this len as a facility)`,
			haproxy: haproxyRejects,
		},
		{
			name: "log sample option",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log sample 1:2 local0\n")
			},
			want:    `h.cfg:3: log /dev/log: option "sample" is not supported by vipstack (accepted: len LENGTH, format raw, format rfc3164)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "log relative path",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log haproxy.sock local0\n") },
			want:    `h.cfg:3: log : invalid address: 'haproxy.sock' in 'haproxy.sock' (the name does not resolve here; accepted: a host name this system resolves at start, an IP address, an absolute path, stdout or stderr)`,
			haproxy: haproxyRejects,
		},
		{
			name: "log bad port",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log 127.0.0.1:99999 local0\n")
			},
			want:    `h.cfg:3: log target "127.0.0.1:99999": port "99999" is out of range (accepted: 1..65535) (accepted: an absolute path to a Unix datagram socket (or unix@PATH), IP[:PORT] or [IPv6][:PORT] (UDP, port 514 by default; udp@, udp4@, udp6@, ipv4@, ipv6@ prefixes), stdout, stderr)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "log port 0",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log 127.0.0.1:0 local0\n") },
			want:    `h.cfg:3: log target "127.0.0.1:0": port "0" is out of range (accepted: 1..65535) (accepted: an absolute path to a Unix datagram socket (or unix@PATH), IP[:PORT] or [IPv6][:PORT] (UDP, port 514 by default; udp@, udp4@, udp6@, ipv4@, ipv6@ prefixes), stdout, stderr)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "log tcp family",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log tcp@127.0.0.1:1514 local0\n")
			},
			want:    `h.cfg:3: log target "tcp@127.0.0.1:1514": the tcp@ family is not supported by vipstack (accepted: an absolute path to a Unix datagram socket (or unix@PATH), IP[:PORT] or [IPv6][:PORT] (UDP, port 514 by default; udp@, udp4@, udp6@, ipv4@, ipv6@ prefixes), stdout, stderr)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "log IPv6 without brackets",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log ::1:1514 local0\n") },
			want:    `h.cfg:3: log target "::1:1514": IPv6 address "::1:1514" needs brackets, [IPv6]:PORT (accepted: an absolute path to a Unix datagram socket (or unix@PATH), IP[:PORT] or [IPv6][:PORT] (UDP, port 514 by default; udp@, udp4@, udp6@, ipv4@, ipv6@ prefixes), stdout, stderr)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "log unknown level",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log local0 loud\n") },
			want:    `h.cfg:3: log /dev/log: unknown level "loud" (accepted: emerg, alert, crit, err, warning, notice, info, debug)`,
			haproxy: haproxyRejects,
		},
		{
			name: "log too many values",
			conf: func(t *testing.T) string {
				return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log local0 info info info\n")
			},
			want:    `h.cfg:3: log /dev/log takes FACILITY [LEVEL [MINLEVEL]] after the target, got 4 values: "local0 info info info"`,
			haproxy: haproxyRejects,
		},
		{
			name:    "log without facility",
			conf:    func(t *testing.T) string { return edit(t, "  mode tcp\n", "  mode tcp\n  log /dev/log\n") },
			want:    `h.cfg:3: log /dev/log takes FACILITY [LEVEL [MINLEVEL]] after the target, got 0 values: ""`,
			haproxy: haproxyRejects,
		},
		{
			name:    "log global in global",
			conf:    func(t *testing.T) string { return "global\n  log global\n" + base },
			want:    `h.cfg:2: log global in global refers to itself (accepted in global: log TARGET [format raw|rfc3164] FACILITY [LEVEL [MINLEVEL]])`,
			haproxy: haproxyRejects,
		},
		// frontend and bind.
		{
			name:    "frontend without default_backend",
			conf:    func(t *testing.T) string { return edit(t, "  default_backend masters\n", "") },
			want:    `h.cfg:6: frontend main: has no default_backend (accepted: the name of a backend: masters)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "frontend without bind",
			conf:    func(t *testing.T) string { return edit(t, fe, "") },
			want:    `h.cfg:6: frontend main: has no bind (accepted: at least one bind ADDRESS:PORT)`,
			haproxy: haproxyRejects, // "will not start (no listener)"
		},
		{
			name:    "bind port 0",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", ":0") },
			want:    `h.cfg:7: bind address ":0" has an invalid port "0" (accepted: 1..65535)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bind without port",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "127.0.0.1") },
			want:    `h.cfg:7: bind address "127.0.0.1" has no port (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bind port range",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "127.0.0.1:47013-47011") },
			want:    `h.cfg:7: bind address "127.0.0.1:47013-47011": port range "47013-47011" is not LOW-HIGH within 1..65535`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bind UNIX socket",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "unix@/run/h.sock") },
			want:    `h.cfg:7: bind address "unix@/run/h.sock": address prefixes such as ipv4@, unix@ and fd@ are not supported by vipstack (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "bind zone",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47011", "fe80::1%lo:47011") },
			want:    `h.cfg:7: bind address "fe80::1%lo:47011": IPv6 zones are not supported (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`,
			haproxy: haproxyRejects,
		},
		{
			name: "unsupported bind parameter",
			conf: func(t *testing.T) string {
				return edit(t, "127.0.0.1:47011", "127.0.0.1:47011 accept-netscaler-cip 1234")
			},
			want:    `h.cfg:7: bind parameter "accept-netscaler-cip" is not supported by vipstack (supported: v4v6, v6only, name, defer-accept, tfo, interface, transparent, backlog, ssl, crt, crt-list, alpn, ciphers, ciphersuites, ssl-min-ver, ssl-max-ver, no-sslv3, no-tlsv1x, force-tlsv1x, no-tls-tickets)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "address bound twice",
			conf: func(t *testing.T) string {
				return base + "listen stats\n  bind 127.0.0.1:47011\n  mode http\n  stats enable\n"
			},
			want:    `h.cfg:12: listen stats, bind 127.0.0.1:47011: 127.0.0.1:47011 is also bound by frontend main (accepted: each address once)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "mode http in frontend",
			conf:    func(t *testing.T) string { return edit(t, fe, fe+"  mode http\n") },
			want:    `h.cfg:9: frontend main: http frontend 'main' tries to use incompatible tcp backend 'masters' as its default backend (see 'mode').`,
			haproxy: haproxyRejects, // the backend is in TCP mode
		},

		// backend and server.
		{
			name:    "option httpchk with too many values",
			conf:    func(t *testing.T) string { return edit(t, srv, "  option httpchk GET /readyz HTTP/1.1 x\n"+srv) },
			want:    `h.cfg:10: option httpchk takes 0 to 3 values ([[METHOD] URI [VERSION]]), got 4: "GET /readyz HTTP/1.1 x"`,
			haproxy: haproxyRejects,
		},
		{
			name:    "weight 0",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check weight 0") },
			want:    `h.cfg:10: backend masters, server m0: weight 0 is not supported by vipstack (accepted: 1..256): haproxy's weight 0 takes a server out of load balancing, which vipstack does not do`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "weight not a number",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check weight x") },
			want:    `h.cfg:10: backend masters, server m0: weight "x" is not an integer (accepted: 1..256)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "server host name",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47012", "master-0.invalid:6443") },
			want:    `h.cfg:10: backend masters, server m0: address "master-0.invalid:6443": "master-0.invalid" is not an IP address (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT; vipstack resolves no host name but localhost)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "server port offset",
			conf:    func(t *testing.T) string { return edit(t, "127.0.0.1:47012 check", "127.0.0.1:+1") },
			want:    `h.cfg:10: backend masters, server m0: address "127.0.0.1:+1": port offsets are not supported by vipstack (accepted: a port 1..65535)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "unsupported server parameter",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check check-send-proxy") },
			want:    `h.cfg:10: backend masters, server m0: parameter "check-send-proxy" is not supported by vipstack (supported: ` + serverParams + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "server parameter without value",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check inter") },
			want:    `h.cfg:10: backend masters, server m0: parameter inter needs a value (a time such as 2s)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "server parameter twice",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check rise 2 rise 3") },
			want:    `h.cfg:10: backend masters, server m0: parameter rise is given twice`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "bad verify",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check verify maybe") },
			want:    `h.cfg:10: backend masters, server m0: verify "maybe" is not a verify method (accepted: none, required)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "inter 0",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check inter 0") },
			want:    `h.cfg:10: backend masters, server m0: inter 0 is out of range (accepted: 1ms or more)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "fall 0",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check fall 0") },
			want:    `h.cfg:10: backend masters, server m0: fall 0 is out of range (accepted: 1 or more)`,
			haproxy: haproxyRejects,
		},
		{
			// maxconn is a server parameter haproxy knows and vipstack
			// does not; its value is not a second, bogus parameter.
			name:    "unsupported server parameter with a value",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 agent-port 10 check") },
			want:    `h.cfg:10: backend masters, server m0: parameter "agent-port" is not supported by vipstack (supported: ` + serverParams + `)`,
			haproxy: haproxyAccepts,
		},
		{
			// fall took rise as its value; 3 is not reported as a
			// parameter of its own.
			name:    "server parameter missing its value",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check fall rise 3") },
			want:    `h.cfg:10: backend masters, server m0: fall "rise" is not an integer (accepted: 1 or more)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "server parameter twice with bad values",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check rise x rise y") },
			want:    `h.cfg:10: backend masters, server m0: rise "x" is not an integer (accepted: 1 or more)`,
			haproxy: haproxyRejects,
		},
		{
			name: "one error per server line",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  server m0 127.0.0.1:47012 check-send-proxy weight x\n  server m1 127.0.0.1:47013 weight x check-send-proxy\n")
			},
			want: `h.cfg:10: backend masters, server m0: parameter "check-send-proxy" is not supported by vipstack (supported: ` + serverParams + `)` + "\n" +
				`h.cfg:11: backend masters, server m1: weight "x" is not an integer (accepted: 1..256)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "negative weight",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check weight -1") },
			want:    `h.cfg:10: backend masters, server m0: weight -1 is out of range (accepted: 1..256)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "negative rise",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check rise -2") },
			want:    `h.cfg:10: backend masters, server m0: rise -2 is out of range (accepted: 1 or more)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "bad inter unit",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check inter 1y") },
			want:    `h.cfg:10: backend masters, server m0: inter "1y" has an unknown unit "y" (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "inter too large",
			conf:    func(t *testing.T) string { return edit(t, "47012 check", "47012 check inter 30d") },
			want:    `h.cfg:10: backend masters, server m0: inter "30d" is too large (maximum: 2147483647 milliseconds, about 24.8 days)`,
			haproxy: haproxyRejects,
		},
		{
			name:    "invalid server name",
			conf:    func(t *testing.T) string { return edit(t, "server m0", "server m/0") },
			want:    `h.cfg:10: backend masters: character '/' is not permitted in server name "m/0" (accepted: letters, digits, '-', '_', '.', ':')`,
			haproxy: haproxyRejects,
		},

		// listen.
		{
			name:    "listen that is neither monitor nor stats",
			conf:    func(t *testing.T) string { return base + "listen web\n  bind :47013\n  mode http\n" },
			want:    `h.cfg:11: listen web is neither a monitor (monitor-uri) nor a stats page (stats enable, stats uri, ...) nor forwards (server lines): vipstack supports no other listen section`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "monitor in TCP mode",
			conf:    func(t *testing.T) string { return base + "listen ready\n  bind :47013\n  monitor-uri /ready\n" },
			want:    `h.cfg:11: listen ready needs mode http for its monitor-uri (haproxy ignores monitor-uri in TCP mode)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "stats in explicit TCP mode",
			conf:    func(t *testing.T) string { return base + "listen st\n  bind :47013\n  mode tcp\n  stats enable\n" },
			want:    `h.cfg:13: listen st needs mode http for its stats (haproxy ignores stats in TCP mode)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "stats auth without colon",
			conf:    func(t *testing.T) string { return base + "listen st\n  bind :47013\n  mode http\n  stats auth admin\n" },
			want:    `h.cfg:14: stats auth "admin" has no ':' (accepted: USER:PASSWORD)`,
			haproxy: haproxyAccepts,
		},
		{
			name:    "stats uri without value",
			conf:    func(t *testing.T) string { return base + "listen st\n  bind :47013\n  mode http\n  stats uri\n" },
			want:    `h.cfg:14: stats uri takes 1 value(s) (a URI prefix), got 0`,
			haproxy: haproxyRejects,
		},
		{
			name: "monitor-uri not a path",
			conf: func(t *testing.T) string {
				return base + "listen ready\n  bind :47013\n  mode http\n  monitor-uri ready\n"
			},
			want:    `h.cfg:14: listen ready: monitor-uri "ready" does not start with / (accepted: a path such as /healthz)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "unsupported stats keyword",
			conf: func(t *testing.T) string {
				return base + "listen st\n  bind :47013\n  mode http\n  stats bind-process 1\n"
			},
			want:    `h.cfg:14: keyword "stats bind-process" in listen st is not supported by vipstack (supported: ` + withHTTP(listenKeywords, httpFrontendKeywords+", "+httpBackendKeywords) + `)`,
			haproxy: haproxyRejects,
		},
		{
			name: "stats admin without a condition",
			conf: func(t *testing.T) string {
				return base + "listen st\n  bind :47013\n  mode http\n  stats admin\n"
			},
			want:    `h.cfg:14: 'stats admin' requires either 'if' or 'unless' followed by a condition (accepted: if TRUE, if LOCALHOST, unless FALSE)`,
			haproxy: haproxyRejects,
		},
		{
			name: "stats admin with an ACL vipstack lacks",
			conf: func(t *testing.T) string {
				return base + "listen st\n  bind :47013\n  mode http\n  stats admin if { src 10.0.0.0/8 }\n"
			},
			want:    `h.cfg:14: stats admin "if { src 10.0.0.0/8 }": vipstack takes no other condition (accepted: if TRUE, if LOCALHOST, unless FALSE)`,
			haproxy: haproxyAccepts,
		},

		// Many errors.
		{
			name: "errors beyond 20 are counted",
			conf: func(t *testing.T) string { return base + strings.Repeat("  xyzzy 1\n", 25) },
			want: strings.TrimSuffix(strings.Repeat(`h.cfg:N: keyword "xyzzy" in backend masters is not supported by vipstack (supported: `+withHTTP(backendKeywords, httpBackendKeywords)+`)`+"\n", 20), "\n") +
				"\n... and 5 more errors",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := tt.conf(t)
			cfg, err := Parse("h.cfg", []byte(conf))
			if cfg != nil || err == nil {
				t.Fatalf("Parse accepted:\n%s", conf)
			}
			got := err.Error()
			if strings.Contains(tt.want, "h.cfg:N:") {
				got = lineNumbers.ReplaceAllString(got, "h.cfg:N:")
			}
			if got != tt.want {
				t.Errorf("Parse error:\n got %s\nwant %s", got, tt.want)
			}
			var e *Error
			if !errors.As(err, &e) || e.File != "h.cfg" || e.Line == 0 {
				t.Errorf("error %v: want an *Error with file h.cfg and a line, got %#v", err, e)
			}
			if tt.haproxy == "" {
				return
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if ok != (tt.haproxy == haproxyAccepts) {
				t.Errorf("haproxy -c: valid=%v, want %s; output:\n%s", ok, tt.haproxy, out)
			}
		})
	}
}

var lineNumbers = regexp.MustCompile(`h\.cfg:\d+:`)

// TestParseFileErrors checks errors about the whole file, which name the
// file but no line.
func TestParseFileErrors(t *testing.T) {
	tests := []struct {
		name, conf, want string
	}{
		{name: "empty", conf: "", want: "h.cfg: no frontend, monitor or stats section: nothing to listen on (accepted: at least one frontend, or a stats socket in global)"},
		{name: "backend only", conf: "backend b\n  server s 127.0.0.1:1\n", want: "h.cfg: no frontend, monitor or stats section: nothing to listen on (accepted: at least one frontend, or a stats socket in global)"},
		{name: "too large", conf: strings.Repeat("#", MaxFileSize+1), want: "h.cfg: file is larger than 1048576 bytes (1 MiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(tt.conf))
			var e *Error
			if !errors.As(err, &e) || e.Line != 0 || err.Error() != tt.want {
				t.Errorf("Parse error %v (%#v), want %q with line 0", err, e, tt.want)
			}
		})
	}
}
