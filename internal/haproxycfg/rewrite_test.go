package haproxycfg

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestParseRewriteRules reads the replace- rules and http-response rules
// into the model, with the warnings haproxy gives for conditions that
// never match in a response; haproxy -c accepts the file with the same
// warnings.
func TestParseRewriteRules(t *testing.T) {
	const conf = `defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend f
  bind 127.0.0.1:47011
  acl p path_beg /x
  http-request replace-path /foo/(.*) /\1 if { path_beg /foo/ }
  http-request replace-uri ^http://(.*) https://\1
  http-request replace-header User-Agent curl foo
  http-request replace-value X-Forwarded-For ^192\.168\.(.*)$ 172.16.\1
  http-response set-header X-A %[src]
  http-response replace-value Cache-Control ^public$ private
  http-response set-status 404 if p
  default_backend b
backend b
  http-response del-header Server if { hdr(x) y }
  http-response add-header X-B b unless { method POST }
  server s 127.0.0.1:47012
`
	cfg, err := Parse("h.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	ok, out := haproxyCheck(t, []byte(conf))
	if !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	never := &lbconfig.ACLTest{Fetch: "always_false", Match: "bool"}
	opts := cmp.Options{cmpopts.IgnoreFields(lbconfig.ACLTest{}, "Regexps", "Nets", "Methods", "Keyword"), cmpopts.IgnoreFields(lbconfig.HTTPRule{}, "At", "Re"), cmpopts.EquateEmpty()}
	fe, be := cfg.Frontends[0].HTTP, cfg.Backends[0].HTTP
	wantReq := []lbconfig.HTTPRule{
		{Action: "replace-path", Match: "/foo/(.*)", Value: `/\1`, Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: &lbconfig.ACLTest{Fetch: "path", Match: "beg", Values: []string{"/foo/"}}}}}}},
		{Action: "replace-uri", Match: "^http://(.*)", Value: `https://\1`},
		{Action: "replace-header", Name: "User-Agent", Match: "curl", Value: "foo"},
		{Action: "replace-value", Name: "X-Forwarded-For", Match: `^192\.168\.(.*)$`, Value: `172.16.\1`},
	}
	if diff := cmp.Diff(wantReq, fe.Rules, opts); diff != "" {
		t.Errorf("http-request rules (-want +got):\n%s", diff)
	}
	wantFeResp := []lbconfig.HTTPRule{
		{Action: "set-header", Name: "X-A", Value: "%[src]"},
		{Action: "replace-value", Name: "Cache-Control", Match: "^public$", Value: "private"},
		{Action: "set-status", Status: 404, Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: never}}}}},
	}
	if diff := cmp.Diff(wantFeResp, fe.ResponseRules, opts); diff != "" {
		t.Errorf("frontend http-response rules (-want +got):\n%s", diff)
	}
	wantBeResp := []lbconfig.HTTPRule{
		{Action: "del-header", Name: "Server", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Anon: never}}}}},
		{Action: "add-header", Name: "X-B", Value: "b", Cond: &lbconfig.Cond{Unless: true, Or: [][]lbconfig.CondTerm{{{Anon: &lbconfig.ACLTest{Fetch: "method", Match: "meth", Values: []string{"POST"}}}}}}},
	}
	if diff := cmp.Diff(wantBeResp, be.ResponseRules, opts); diff != "" {
		t.Errorf("backend http-response rules (-want +got):\n%s", diff)
	}
	wantWarn := []string{
		"h.cfg:15: acl 'p' will never match because it only involves keywords that are incompatible with 'frontend http-response header rule'",
		"h.cfg:18: anonymous acl will never match because it uses keyword 'hdr' which is incompatible with 'backend http-response header rule'",
	}
	if diff := cmp.Diff(wantWarn, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for _, w := range wantWarn {
		_, text, _ := strings.Cut(w, ": ")
		if !strings.Contains(out, text) {
			t.Errorf("haproxy -c does not warn %q:\n%s", text, out)
		}
	}
}

// TestParseRewriteErrors: bad replace- and http-response rules are
// refused with the line, the value and what is accepted.
func TestParseRewriteErrors(t *testing.T) {
	const head = "defaults\n  mode http\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\nfrontend f\n  bind 127.0.0.1:47011\n  default_backend b\n"
	const tail = "backend b\n  server s 127.0.0.1:47012\n"
	tests := []struct {
		name, lines, want string
		haproxy           string
	}{
		{
			name: "replace-path without a replacement", lines: "  http-request replace-path /x\n",
			want:    `h.cfg:9: http-request replace-path takes a regex and a replacement, got "/x"`,
			haproxy: haproxyRejects,
		},
		{
			name: "replace-header without a name", lines: "  http-request replace-header a b\n",
			want:    `h.cfg:9: http-request replace-header takes a header name, a regex and a replacement, got "a b"`,
			haproxy: haproxyRejects,
		},
		{
			name: "replace-value bad regex", lines: "  http-request replace-value X ^(a b\n",
			want:    "h.cfg:9: http-request replace-value: regex \"^(a\": error parsing regexp: missing closing ): `^(a` (accepted: an RE2 regular expression)",
			haproxy: haproxyRejects,
		},
		{
			name: "replace-uri unknown sample", lines: "  http-request replace-uri (.*) %[rand]\\1\n",
			want:    `h.cfg:9: http-request replace-uri: %[rand] is not supported by vipstack (accepted: literal text and ` + lbconfig.HTTPValueVars + `, each with converters ` + lbconfig.Converters + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "unsupported response action", lines: "  http-response set-log-level silent\n",
			want:    `h.cfg:9: http-response set-log-level is not supported by vipstack (accepted: ` + lbconfig.HTTPResponseActions + `)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "set-status out of range", lines: "  http-response set-status 99\n",
			want:    `h.cfg:9: http-response set-status: expects an integer status code between 100 and 999, got "99"`,
			haproxy: haproxyRejects,
		},
		{
			name: "set-status reason", lines: "  http-response set-status 503 reason Busy\n",
			want:    `h.cfg:9: http-response set-status: reason "Busy" is not supported by vipstack, whose server writes the status's standard reason phrase (accepted: http-response set-status CODE)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "compression algo unknown", lines: "  compression algo br\n",
			want:    `h.cfg:9: 'compression' : 'br' is not a supported algorithm. (accepted by vipstack: gzip, deflate, raw-deflate)`,
			haproxy: haproxyRejects,
		},
		{
			name: "compression type empty", lines: "  compression type\n",
			want:    `h.cfg:9: 'compression' expects <type>. (accepted: MIME type prefixes such as text/html)`,
			haproxy: haproxyRejects,
		},
		{
			name: "compression other", lines: "  compression level 9\n",
			want:    `h.cfg:9: 'compression' expects 'algo', 'type' or 'offload', got "level"`,
			haproxy: haproxyRejects,
		},
		{
			name: "capture without len", lines: "  capture request header Host 10\n",
			want:    `h.cfg:9: capture takes capture request header NAME len N, capture response header NAME len N or capture cookie NAME len N, got "request header Host 10"`,
			haproxy: haproxyRejects,
		},
		{
			name: "capture len not a number", lines: "  capture response header X len ten\n",
			want:    `h.cfg:9: capture X: len "ten" is not a positive length (accepted: a number of bytes, such as 64)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "two capture cookie", lines: "  capture cookie A len 5\n  capture cookie B len 5\n",
			want:    `h.cfg:10: 'capture cookie' : only one capture cookie is allowed per frontend (accepted: one capture cookie line)`,
			haproxy: haproxyAccepts,
		},
		{
			name: "option httplog other", lines: "  option httplog json\n",
			want:    `h.cfg:9: option httplog: "json" is not a log format option (accepted: option httplog, option httplog clf)`,
			haproxy: haproxyRejects,
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
			ok, out := haproxyCheck(t, []byte(conf))
			if ok != (tt.haproxy == haproxyAccepts) {
				t.Errorf("haproxy -c: valid=%v, want %s; output:\n%s", ok, tt.haproxy, out)
			}
		})
	}
}

// TestParseCompression: defaults' compression lines are inherited, the
// section's own added after them; offload in defaults is ignored with
// haproxy's warning.
func TestParseCompression(t *testing.T) {
	const conf = `defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
  compression algo deflate
  compression type text/plain
  compression offload
frontend f
  bind 127.0.0.1:47011
  default_backend b
backend b
  compression algo gzip raw-deflate
  compression type application/json
  compression offload
  server s 127.0.0.1:47012
`
	cfg, err := Parse("h.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	ok, out := haproxyCheck(t, []byte(conf))
	if !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	got := []*lbconfig.Compression{cfg.Frontends[0].HTTP.Compression, cfg.Backends[0].HTTP.Compression}
	want := []*lbconfig.Compression{
		{Algos: []string{"deflate"}, Types: []string{"text/plain"}},
		{Algos: []string{"deflate", "gzip", "raw-deflate"}, Types: []string{"text/plain", "application/json"}, Offload: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("compression (-want +got):\n%s", diff)
	}
	wantWarn := []string{"h.cfg:8: 'compression' : 'offload' ignored in 'defaults' section."}
	if diff := cmp.Diff(wantWarn, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for _, w := range wantWarn {
		if _, text, _ := strings.Cut(w, ": "); !strings.Contains(out, text) {
			t.Errorf("haproxy -c does not warn %q:\n%s", text, out)
		}
	}
}

// TestParseCaptureAndCLF reads capture lines and option httplog clf (in
// defaults and in a frontend) into the model; a cookie capture longer
// than 63 bytes is cut with haproxy's warning.
func TestParseCaptureAndCLF(t *testing.T) {
	const conf = `defaults
  mode http
  log 127.0.0.1:514 local0
  option httplog clf
  timeout connect 5s
  timeout client 5s
  timeout server 5s
frontend f
  bind 127.0.0.1:47011
  capture request header Host len 10
  capture response header Content-Type len 20
  capture request header User-Agent len 64
  capture cookie SESS len 100
  default_backend b
frontend g
  bind 127.0.0.1:47013
  option httplog
  default_backend b
backend b
  capture request header Host len 5
  server s 127.0.0.1:47012
`
	cfg, err := Parse("h.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	ok, out := haproxyCheck(t, []byte(conf))
	if !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	f, g := cfg.Frontends[0].HTTP, cfg.Frontends[1].HTTP
	wantCaps := []lbconfig.Capture{{Name: "Host", Len: 10}, {Response: true, Name: "Content-Type", Len: 20}, {Name: "User-Agent", Len: 64}}
	if diff := cmp.Diff(wantCaps, f.Captures); diff != "" {
		t.Errorf("captures (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(&lbconfig.Capture{Name: "SESS", Len: 63}, f.CaptureCookie); diff != "" {
		t.Errorf("capture cookie (-want +got):\n%s", diff)
	}
	if f.LogFormat != lbconfig.HTTPLogCLFFormat || g.LogFormat != lbconfig.HTTPLogFormat {
		t.Errorf("log formats %q, %q; want clf's, then httplog's", f.LogFormat, g.LogFormat)
	}
	wantWarn := []string{
		"h.cfg:13: truncating capture length to 63 bytes for frontend 'f'.",
		"h.cfg:20: 'capture' ignored because backend 'b' has no frontend capability.",
	}
	if diff := cmp.Diff(wantWarn, cfg.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	for _, w := range wantWarn {
		if _, text, _ := strings.Cut(w, ": "); !strings.Contains(out, text) {
			t.Errorf("haproxy -c does not warn %q:\n%s", text, out)
		}
	}
}

// TestParseDefaultsOriginalToAndHealthLogs: defaults' option originalto
// goes to every HTTP section (a TCP one warns as haproxy does) and
// option log-health-checks to every backend.
func TestParseDefaultsOriginalToAndHealthLogs(t *testing.T) {
	const conf = `defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
  option originalto except 127.0.0.0/8
  option log-health-checks
frontend f
  bind 127.0.0.1:47011
  default_backend b
backend b
  option originalto header X-Dst
  server s 127.0.0.1:47012 check
listen t
  mode tcp
  bind 127.0.0.1:47013
  server s 127.0.0.1:47014
`
	cfg, err := Parse("h.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	ok, out := haproxyCheck(t, []byte(conf))
	if !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	got := []*lbconfig.OriginalTo{cfg.Frontends[0].HTTP.OriginalTo, cfg.Backends[0].HTTP.OriginalTo}
	want := []*lbconfig.OriginalTo{
		{Header: "X-Original-To", Except: netip.MustParsePrefix("127.0.0.0/8")},
		{Header: "X-Dst"},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("originalto (-want +got):\n%s", diff)
	}
	for _, b := range cfg.Backends {
		if !b.LogHealthChecks {
			t.Errorf("backend %s: LogHealthChecks false, want true from defaults", b.Name)
		}
	}
	wantWarn := "h.cfg:6: 'option originalto' ignored for proxy 't' as it requires HTTP mode."
	if !slices.Contains(cfg.Warnings, wantWarn) {
		t.Errorf("warnings %q lack %q", cfg.Warnings, wantWarn)
	}
	if _, text, _ := strings.Cut(wantWarn, ": "); !strings.Contains(out, text) {
		t.Errorf("haproxy -c does not warn %q:\n%s", text, out)
	}
}

// TestParseDefaultsHTTPLogFormat: defaults (mode tcp) may hold a
// log-format with HTTP variables for the mode http sections that use
// it; a mode tcp section that inherits it is haproxy's error.
func TestParseDefaultsHTTPLogFormat(t *testing.T) {
	const head = "global\n  log 127.0.0.1 local0\ndefaults\n  log global\n  log-format \"%ci [%tr] %hr %{+Q}r\"\n  timeout connect 5s\n  timeout client 5s\n  timeout server 5s\n"
	httpOnly := head + "frontend f\n  mode http\n  bind 127.0.0.1:47011\n  default_backend b\nbackend b\n  mode http\n  server s 127.0.0.1:47012\n"
	cfg, err := Parse("h.cfg", []byte(httpOnly))
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Frontends[0].HTTP.LogFormat; got != "%ci [%tr] %hr %{+Q}r" {
		t.Errorf("frontend's format %q, want defaults'", got)
	}
	if ok, out := haproxyCheck(t, []byte(httpOnly)); !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	tcp := head + "frontend f\n  bind 127.0.0.1:47011\n  default_backend b\nbackend b\n  server s 127.0.0.1:47012\n"
	_, err = Parse("h.cfg", []byte(tcp))
	want := "h.cfg:5: failed to parse log-format : format variable 'tr' is reserved for HTTP mode. (accepted in a mode tcp section: " + strings.Join(lbconfig.LogVariables, " ") + ")"
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
	if ok, out := haproxyCheck(t, []byte(tcp)); ok || !strings.Contains(out, "format variable 'tr' is reserved for HTTP mode.") {
		t.Errorf("haproxy -c: valid=%v, want its error:\n%s", ok, out)
	}
}

// TestParseListenCompression: a listen section's own compression and
// originalto lines hold for its backend half too (haproxy has one proxy
// there), over defaults'.
func TestParseListenCompression(t *testing.T) {
	const conf = `defaults
  mode http
  timeout connect 5s
  timeout client 5s
  timeout server 5s
  compression algo deflate
  option originalto
listen l
  bind 127.0.0.1:47011
  compression algo gzip
  compression type text/plain
  option originalto header X-Dst
  server s 127.0.0.1:47012
`
	cfg, err := Parse("h.cfg", []byte(conf))
	if err != nil {
		t.Fatal(err)
	}
	if ok, out := haproxyCheck(t, []byte(conf)); !ok {
		t.Errorf("haproxy -c rejects it:\n%s", out)
	}
	want := &lbconfig.Compression{Algos: []string{"deflate", "gzip"}, Types: []string{"text/plain"}}
	for _, h := range []*lbconfig.HTTPProxy{&cfg.Frontends[0].HTTP.HTTPProxy, &cfg.Backends[0].HTTP.HTTPProxy} {
		if diff := cmp.Diff(want, h.Compression); diff != "" {
			t.Errorf("compression (-want +got):\n%s", diff)
		}
		if h.OriginalTo == nil || h.OriginalTo.Header != "X-Dst" {
			t.Errorf("originalto %+v, want header X-Dst", h.OriginalTo)
		}
	}
}
