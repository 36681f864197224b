package haproxycfg

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// httpSeed is a mode http configuration with most of what vipstack reads
// in HTTP mode.
const httpSeed = `defaults
  mode http
  option httplog
  option forwardfor except 127.0.0.0/8
  option http-server-close
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend www
  bind 127.0.0.1:47011
  acl api path_beg -i /api /v2
  acl api hdr(host) -m str api.example
  acl static path_end .css .js
  acl local src 10.0.0.0/8 192.0.2.1
  http-request set-header X-Proto http
  http-request add-header X-Client %[src]
  http-request del-header X-Secret
  http-request deny deny_status 429 if { path_sub /slow } !local
  http-request redirect scheme https code 301 unless { ssl_fc }
  redirect prefix /new drop-query if { path_beg /old }
  use_backend apis if api || { method POST }
  use_backend statics if static local
  default_backend apps
  stats enable
  stats uri /st
backend apis
  balance uri
  option httpchk GET /health
  http-check expect status 200
  server a1 127.0.0.1:47012 check
backend statics
  balance hdr(Host)
  server s1 127.0.0.1:47013
backend apps
  cookie SRV insert indirect nocache httponly
  server p1 127.0.0.1:47014 cookie p1
  server p2 127.0.0.1:47015 cookie p2
listen legacy
  bind 127.0.0.1:47016
  option forwardfor header X-Real-IP
  server l1 127.0.0.1:47017
`

// TestParseHTTP reads httpSeed: the model each HTTP keyword becomes;
// haproxy -c accepts the file.
func TestParseHTTP(t *testing.T) {
	cfg, err := Parse("h.cfg", []byte(httpSeed))
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := haproxyCheck(t, []byte(httpSeed)); !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	opts := cmp.Options{cmpopts.IgnoreFields(lbconfig.ACLTest{}, "Regexps", "Nets", "Methods", "Keyword"), cmpopts.IgnoreFields(lbconfig.HTTPRule{}, "At", "Re"), cmpopts.EquateEmpty()}
	fe := cfg.Frontends[0].HTTP
	if fe == nil {
		t.Fatal("frontend www is not mode http")
	}
	wantACLs := map[string][]lbconfig.ACLTest{
		"api": {
			{Fetch: "path", Match: "beg", Insensitive: true, Values: []string{"/api", "/v2"}},
			{Fetch: "hdr", Arg: "host", Match: "str", Values: []string{"api.example"}},
		},
		"static": {{Fetch: "path", Match: "end", Values: []string{".css", ".js"}}},
		"local":  {{Fetch: "src", Match: "ip", Values: []string{"10.0.0.0/8", "192.0.2.1"}}},
	}
	if diff := cmp.Diff(wantACLs, fe.ACLs, opts); diff != "" {
		t.Errorf("acls (-want +got):\n%s", diff)
	}
	anon := func(fetch, match string, values ...string) *lbconfig.ACLTest {
		return &lbconfig.ACLTest{Fetch: fetch, Match: match, Values: values}
	}
	wantRules := []lbconfig.HTTPRule{
		{Action: "set-header", Name: "X-Proto", Value: "http"},
		{Action: "add-header", Name: "X-Client", Value: "%[src]"},
		{Action: "del-header", Name: "X-Secret"},
		{Action: "deny", Status: 429, Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: anon("path", "sub", "/slow")}, {Neg: true, Name: "local"}}}}},
		{Action: "redirect", Kind: "scheme", To: "https", Status: 301, Cond: &lbconfig.Cond{Unless: true, Or: [][]lbconfig.CondTerm{{{Anon: anon("ssl_fc", "bool")}}}}},
	}
	if diff := cmp.Diff(wantRules, fe.Rules, opts); diff != "" {
		t.Errorf("http-request rules (-want +got):\n%s", diff)
	}
	wantRedirects := []lbconfig.HTTPRule{{Action: "redirect", Kind: "prefix", To: "/new", Status: 302, DropQuery: true,
		Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: anon("path", "beg", "/old")}}}}}}
	if diff := cmp.Diff(wantRedirects, fe.Redirects, opts); diff != "" {
		t.Errorf("redirects (-want +got):\n%s", diff)
	}
	wantUse := []lbconfig.UseBackend{
		{Backend: "apis", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "api"}}, {{Anon: &lbconfig.ACLTest{Fetch: "method", Match: "meth", Values: []string{"POST"}}}}}}},
		{Backend: "statics", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "static"}, {Name: "local"}}}}},
	}
	if diff := cmp.Diff(wantUse, fe.UseBackends, opts); diff != "" {
		t.Errorf("use_backend (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&lbconfig.ForwardFor{Header: "X-Forwarded-For", Except: netip.MustParsePrefix("127.0.0.0/8")}, fe.ForwardFor, cmpopts.EquateComparable(netip.Prefix{})); diff != "" {
		t.Errorf("forwardfor from defaults (-want +got):\n%s", diff)
	}
	if fe.Conn != "server-close" || !fe.HTTPLog || fe.LogFormat != "" || fe.Stats == nil || fe.Stats.URI != "/st" {
		t.Errorf("frontend: conn %q, httplog %v, log format %q (no log target: none), stats %+v", fe.Conn, fe.HTTPLog, fe.LogFormat, fe.Stats)
	}
	be := map[string]lbconfig.Backend{}
	for _, b := range cfg.Backends {
		be[b.Name] = b
	}
	if b := be["apis"]; b.Balance != lbconfig.URI || b.HTTP == nil || b.Check.URI != "/health" {
		t.Errorf("backend apis: balance %q, http %v, check %+v", b.Balance, b.HTTP != nil, b.Check)
	}
	if b := be["statics"]; b.Balance != lbconfig.Header || b.HTTP.HashHeader != "Host" {
		t.Errorf("backend statics: balance %q, header %q", b.Balance, b.HTTP.HashHeader)
	}
	b := be["apps"]
	if diff := cmp.Diff(&lbconfig.Cookie{Name: "SRV", Mode: "insert", Indirect: true, NoCache: true, HTTPOnly: true}, b.HTTP.Cookie); diff != "" {
		t.Errorf("cookie (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"p1": "p1", "p2": "p2"}, b.HTTP.ServerCookies); diff != "" {
		t.Errorf("server cookies (-want +got):\n%s", diff)
	}
	legacy := cfg.Frontends[1]
	if legacy.Name != "legacy" || legacy.HTTP == nil || legacy.HTTP.ForwardFor == nil || legacy.HTTP.ForwardFor.Header != "X-Real-IP" || be["legacy"].HTTP == nil {
		t.Errorf("listen legacy: %+v", legacy)
	}
}

// TestParseHTTPErrors checks the refusals of HTTP keywords vipstack does
// not carry out, and haproxy's own errors.
func TestParseHTTPErrors(t *testing.T) {
	const head = "defaults\n  mode http\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\nfrontend f\n  bind 127.0.0.1:47011\n  default_backend b\n"
	const tail = "backend b\n  server s 127.0.0.1:47012\n"
	tests := []struct {
		name, lines, want string
		haproxy           string
	}{
		{
			name: "unsupported fetch", lines: "  acl a req.ssl_sni -i x\n",
			want:    `h.cfg:9: acl criterion "req.ssl_sni" is not supported by vipstack (accepted: ` + lbconfig.HTTPFetchNames() + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "converter", lines: "  acl a hdr(host),lower -m str x\n",
			want:    `h.cfg:9: acl criterion "hdr(host),lower": converter 'lower' is not supported by vipstack (accepted: ` + lbconfig.Converters + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "acl from a file", lines: "  acl a path_beg -f /etc/paths\n",
			want: `h.cfg:9: acl flag -f is not supported by vipstack (accepted: -i, -m METHOD, --)`,
		},
		{
			name: "unsupported action", lines: "  http-request set-log-level silent if { path /metrics }\n",
			want:    `h.cfg:9: http-request set-log-level is not supported by vipstack (accepted: ` + lbconfig.HTTPActions + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "undefined acl", lines: "  use_backend b if nosuch\n",
			want:    `h.cfg:6: frontend f: acl "nosuch" is not defined in frontend f (accepted: an acl of the section, or a predefined one: TRUE, FALSE, HTTP, METH_GET, ...)`,
			haproxy: haproxyRejects,
		},
		{
			name: "bad regex", lines: "  acl a path_reg ^(x\n",
			want:    "h.cfg:9: acl path_reg: regex \"^(x\": error parsing regexp: missing closing ): `^(x` (accepted: an RE2 regular expression)",
			haproxy: haproxyRejects,
		},
		{
			name: "unclosed anonymous acl", lines: "  use_backend b if { path /x\n",
			want:    `h.cfg:9: use_backend: anonymous acl { ... } is not closed or empty`,
			haproxy: haproxyRejects,
		},
		{
			name: "redirect code", lines: "  redirect location /x code 200\n",
			want:    `h.cfg:9: redirect: code "200" is not a redirect code (accepted: 301, 302, 303, 307, 308)`,
			haproxy: haproxyRejects,
		},
		{
			name: "unknown value expression", lines: "  http-request set-header X %[rand]\n",
			want:    `h.cfg:9: http-request set-header X: %[rand] is not supported by vipstack (accepted: literal text and ` + lbconfig.HTTPValueVars + `, each with converters ` + lbconfig.Converters + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "acl in a stats listen", lines: "listen st\n  bind 127.0.0.1:47013\n  stats enable\n  acl x src 10.0.0.1\n",
			want:    `h.cfg:12: acl in listen st, a monitor or stats section, is not supported by vipstack (accepted: acl in a frontend, or in a listen section with server lines)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "cookie in a tcp backend", lines: "backend t\n  mode tcp\n  cookie SRV insert\n  server s 127.0.0.1:1\n",
			want:    `h.cfg:11: cookie in backend t (mode tcp) is not supported by vipstack: its use_backend, redirect, cookie, monitor-uri, stats and other HTTP keywords work in mode http only (accepted: mode http in backend t)`,
			haproxy: haproxyAccepts,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := head + tt.lines + tail
			_, err := Parse("h.cfg", []byte(conf))
			if err == nil {
				t.Fatalf("Parse accepted:\n%s", conf)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Parse error:\n got %s\nwant %s", got, tt.want)
			}
			if tt.haproxy == "" {
				return
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if ok != (tt.haproxy == haproxyAccepts) {
				t.Errorf("haproxy -c: valid=%v, want %s; output:\n%s", ok, tt.haproxy, out)
			}
			if !ok && !strings.Contains(out, "ALERT") {
				t.Errorf("haproxy -c output has no alert:\n%s", out)
			}
		})
	}
}
