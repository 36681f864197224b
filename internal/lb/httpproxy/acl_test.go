package httpproxy

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// frontendOf parses a mode http frontend with the given lines.
func frontendOf(t testing.TB, lines string) (*lbconfig.HTTPFrontend, error) {
	conf := "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\nfrontend f\n  bind 127.0.0.1:1\n" +
		lines + "  default_backend b\nbackend b\n  server s 127.0.0.1:2\nbackend yes\n  server s 127.0.0.1:3\n"
	cfg, err := haproxycfg.Parse("h.cfg", []byte(conf))
	if err != nil {
		return nil, err
	}
	return cfg.Frontends[0].HTTP, nil
}

func newRequest(method, target string, header ...string) *request {
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(header); i += 2 {
		if strings.EqualFold(header[i], "host") {
			r.Host = header[i+1]
			continue
		}
		r.Header.Add(header[i], header[i+1])
	}
	return &request{r: r, src: netip.MustParseAddrPort("192.0.2.10:40000"), dst: netip.MustParseAddrPort("198.18.0.1:80")}
}

// overTLS marks rq as come over an ssl bind, with the SNI sni.
func overTLS(rq *request, sni string) *request {
	rq.r.TLS = &tls.ConnectionState{ServerName: sni, HandshakeComplete: true}
	rq.tls = true
	return rq
}

// TestConditions evaluates `use_backend yes if COND` over requests: the
// criteria, match methods and flags, named and anonymous acls, !, || and
// implicit and, unless, predefined acls.
func TestConditions(t *testing.T) {
	tests := []struct {
		name  string
		lines string
		req   *request
		want  bool
	}{
		{"path exact", "  acl a path /x\n", newRequest("GET", "/x"), true},
		{"path exact, longer", "  acl a path /x\n", newRequest("GET", "/x/y"), false},
		{"path_beg", "  acl a path_beg /api /v2\n", newRequest("GET", "/v2/users?q=1"), true},
		{"path_beg is case-sensitive", "  acl a path_beg /api\n", newRequest("GET", "/API"), false},
		{"path_beg -i", "  acl a path_beg -i /api\n", newRequest("GET", "/API/x"), true},
		{"path_end", "  acl a path_end .js\n", newRequest("GET", "/a/b.js?v=2"), true},
		{"path_sub", "  acl a path_sub admin\n", newRequest("GET", "/x/admin/y"), true},
		{"path_reg", "  acl a path_reg ^/img/[0-9]+$\n", newRequest("GET", "/img/12"), true},
		{"path_reg no", "  acl a path_reg ^/img/[0-9]+$\n", newRequest("GET", "/img/1a"), false},
		{"path_dir", "  acl a path_dir api\n", newRequest("GET", "/v1/api/x"), true},
		{"url has the query", "  acl a url_sub q=1\n", newRequest("GET", "/p?q=1"), true},
		{"hdr(host)", "  acl a hdr(host) -i example.com\n", newRequest("GET", "/", "Host", "EXAMPLE.com"), true},
		{"hdr(host) exact", "  acl a hdr(host) example.com\n", newRequest("GET", "/", "Host", "www.example.com"), false},
		{"hdr_beg", "  acl a hdr_beg(host) -i www.\n", newRequest("GET", "/", "Host", "www.example.com"), true},
		{"hdr_end", "  acl a hdr_end(host) .example.com\n", newRequest("GET", "/", "Host", "a.example.com"), true},
		{"hdr_dom", "  acl a hdr_dom(host) example\n", newRequest("GET", "/", "Host", "a.example.com"), true},
		{"hdr_dom not a part", "  acl a hdr_dom(host) exam\n", newRequest("GET", "/", "Host", "a.example.com"), false},
		{"hdr_sub", "  acl a hdr_sub(user-agent) curl\n", newRequest("GET", "/", "User-Agent", "curl/8.0"), true},
		{"hdr splits at commas", "  acl a hdr(x-list) b\n", newRequest("GET", "/", "X-List", "a, b, c"), true},
		{"hdr -m found", "  acl a hdr(x-token) -m found\n", newRequest("GET", "/", "X-Token", ""), true},
		{"hdr -m found, absent", "  acl a hdr(x-token) -m found\n", newRequest("GET", "/"), false},
		{"hdr -m beg", "  acl a hdr(x) -m beg ab\n", newRequest("GET", "/", "X", "abc"), true},
		{"hdr -m reg -i", "  acl a hdr(x) -m reg -i ^A.C$\n", newRequest("GET", "/", "X", "abc"), true},
		{"req.hdr", "  acl a req.hdr(x) v\n", newRequest("GET", "/", "X", "v"), true},
		{"method", "  acl a method POST PUT\n", newRequest("PUT", "/"), true},
		{"method no", "  acl a method POST PUT\n", newRequest("GET", "/"), false},
		{"src network", "  acl a src 192.0.2.0/24\n", newRequest("GET", "/"), true},
		{"src address", "  acl a src 192.0.2.11\n", newRequest("GET", "/"), false},
		{"dst", "  acl a dst 198.18.0.0/15\n", newRequest("GET", "/"), true},
		{"dst other", "  acl a dst 198.18.0.2\n", newRequest("GET", "/"), false},
		{"dst_port", "  acl a dst_port 443 80\n", newRequest("GET", "/"), true},
		{"src_port range", "  acl a src_port 1024:65535\n", newRequest("GET", "/"), true},
		{"src_port below", "  acl a src_port :1023\n", newRequest("GET", "/"), false},
		{"ssl_fc without TLS", "  acl a ssl_fc\n", newRequest("GET", "/"), false},
		{"ssl_fc over TLS", "  acl a ssl_fc\n", overTLS(newRequest("GET", "/"), "a.test"), true},
		{"ssl_fc_sni", "  acl a ssl_fc_sni -i A.test\n", overTLS(newRequest("GET", "/"), "a.test"), true},
		{"ssl_fc_sni other", "  acl a ssl_fc_sni a.test\n", overTLS(newRequest("GET", "/"), "b.test"), false},
		{"ssl_fc_sni -m end", "  acl a ssl_fc_sni -m end .test\n", overTLS(newRequest("GET", "/"), "b.test"), true},
		{"ssl_fc_sni without SNI", "  acl a ssl_fc_sni -m found\n", overTLS(newRequest("GET", "/"), ""), false},
		{"ssl_fc_sni without TLS", "  acl a ssl_fc_sni -m found\n", newRequest("GET", "/"), false},
		{"negated", "  acl a ssl_fc\n  use_backend yes if !a\n", newRequest("GET", "/"), true},
		{"separate !", "  acl a ssl_fc\n  use_backend yes if ! a\n", newRequest("GET", "/"), true},
		{"acl lines of a name are ORed", "  acl a path /x\n  acl a path /y\n", newRequest("GET", "/y"), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines := tt.lines
			if !strings.Contains(lines, "use_backend") {
				lines += "  use_backend yes if a\n"
			}
			fe, err := frontendOf(t, lines)
			if err != nil {
				t.Fatal(err)
			}
			u := fe.UseBackends[0]
			if got := acls(fe.ACLs).cond(u.Cond, tt.req); got != tt.want {
				t.Errorf("%q on %s %s: %v, want %v", strings.TrimSpace(tt.lines), tt.req.r.Method, tt.req.r.URL, got, tt.want)
			}
		})
	}
}

// TestConditionLogic checks and, or, unless and anonymous acls against
// the four combinations of two acls.
func TestConditionLogic(t *testing.T) {
	reqs := map[string]*request{ // a: path /a..., b: Host b
		"--": newRequest("GET", "/z", "Host", "z"),
		"a-": newRequest("GET", "/a", "Host", "z"),
		"-b": newRequest("GET", "/z", "Host", "b"),
		"ab": newRequest("GET", "/a", "Host", "b"),
	}
	tests := []struct {
		cond string
		want []string // the combinations where it holds
	}{
		{"if a b", []string{"ab"}},
		{"if a || b", []string{"a-", "-b", "ab"}},
		{"if a or b", []string{"a-", "-b", "ab"}},
		{"if !a b", []string{"-b"}},
		{"if a !b || !a b", []string{"a-", "-b"}},
		{"unless a", []string{"--", "-b"}},
		{"unless a || b", []string{"--"}},
		{"if { path_beg /a } { hdr(host) b }", []string{"ab"}},
		{"if !{ path_beg /a }", []string{"--", "-b"}},
		{"if TRUE", []string{"--", "a-", "-b", "ab"}},
		{"if METH_GET !FALSE", []string{"--", "a-", "-b", "ab"}},
	}
	for _, tt := range tests {
		t.Run(tt.cond, func(t *testing.T) {
			fe, err := frontendOf(t, "  acl a path_beg /a\n  acl b hdr(host) b\n  use_backend yes "+tt.cond+"\n")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, k := range []string{"--", "a-", "-b", "ab"} {
				if acls(fe.ACLs).cond(fe.UseBackends[0].Cond, reqs[k]) {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("holds for (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRules applies http-request and redirect rules in order: header
// rewriting, deny, allow, the first redirect, and the Location of each
// redirect form.
func TestRules(t *testing.T) {
	tests := []struct {
		name       string
		lines      string
		req        *request
		wantHeader http.Header
		wantHost   string
		wantPath   string
		want       verdict
	}{
		{
			name:       "set, add, del",
			lines:      "  http-request set-header X-A one\n  http-request set-header X-A two\n  http-request add-header X-B %[src]:%[dst_port]\n  http-request del-header X-C\n",
			req:        newRequest("GET", "/p", "X-A", "old", "X-A", "older", "X-C", "gone", "X-D", "kept"),
			wantHeader: http.Header{"X-A": {"two"}, "X-B": {"192.0.2.10:80"}, "X-D": {"kept"}},
			wantPath:   "/p",
		},
		{
			name:       "set-header from another header, conditional",
			lines:      "  http-request set-header X-Host %[req.hdr(host)] if { path_beg /p }\n  http-request set-header X-No x if { path_beg /q }\n",
			req:        newRequest("GET", "/p", "Host", "h.example"),
			wantHeader: http.Header{"X-Host": {"h.example"}},
			wantHost:   "h.example",
			wantPath:   "/p",
		},
		{
			name:       "set-header Host and set-path",
			lines:      "  http-request set-header Host new.example\n  http-request set-path /v2%[path]\n",
			req:        newRequest("GET", "/p", "Host", "old.example"),
			wantHeader: http.Header{},
			wantHost:   "new.example",
			wantPath:   "/v2/p",
		},
		{
			name:       "deny stops the rules",
			lines:      "  http-request deny if { path /p }\n  http-request set-header X-A a\n",
			req:        newRequest("GET", "/p"),
			wantHeader: http.Header{},
			wantPath:   "/p",
			want:       verdict{status: 403},
		},
		{
			name:       "allow stops the http-request rules, not the redirects",
			lines:      "  http-request allow\n  http-request deny\n  redirect location /elsewhere\n",
			req:        newRequest("GET", "/p"),
			wantHeader: http.Header{},
			wantPath:   "/p",
			want:       verdict{status: 302, location: "/elsewhere"},
		},
		{
			name:       "use-service ends the rules after those before it",
			lines:      "  http-request set-header X-A a\n  http-request use-service prometheus-exporter if { path /metrics }\n  http-request set-header X-B b\n  http-request deny\n",
			req:        newRequest("GET", "/metrics?x=1"),
			wantHeader: http.Header{"X-A": {"a"}},
			wantPath:   "/metrics",
			want:       verdict{service: "prometheus-exporter"},
		},
		{
			name:       "use-service not selected: the next rules apply",
			lines:      "  http-request use-service prometheus-exporter if { path /metrics }\n  http-request set-header X-B b\n  redirect location /r if { path /app }\n",
			req:        newRequest("GET", "/app"),
			wantHeader: http.Header{"X-B": {"b"}},
			wantPath:   "/app",
			want:       verdict{status: 302, location: "/r"},
		},
		{
			name:       "a deny before use-service wins",
			lines:      "  http-request deny deny_status 401 unless { src 192.0.2.0/24 10.0.0.0/8 } { path /metrics }\n  http-request deny if { hdr(x-no) -m found }\n  http-request use-service prometheus-exporter\n",
			req:        newRequest("GET", "/metrics", "X-No", "1"),
			wantHeader: http.Header{"X-No": {"1"}},
			wantPath:   "/metrics",
			want:       verdict{status: 403},
		},
		{
			name:       "use-service without a condition takes every request, before redirects",
			lines:      "  http-request use-service prometheus-exporter\n  redirect location /r\n",
			req:        newRequest("POST", "/anything"),
			wantHeader: http.Header{},
			wantPath:   "/anything",
			want:       verdict{service: "prometheus-exporter"},
		},
		{
			name:       "redirect prefix keeps the query",
			lines:      "  redirect prefix https://new.example code 301\n",
			req:        newRequest("GET", "/a/b?x=1"),
			wantHeader: http.Header{},
			wantPath:   "/a/b",
			want:       verdict{status: 301, location: "https://new.example/a/b?x=1"},
		},
		{
			name:       "redirect prefix drop-query append-slash",
			lines:      "  redirect prefix /n drop-query append-slash\n",
			req:        newRequest("GET", "/a?x=1"),
			wantHeader: http.Header{},
			wantPath:   "/a",
			want:       verdict{status: 302, location: "/n/a/"},
		},
		{
			name:       "redirect scheme",
			lines:      "  http-request redirect scheme https code 308 unless { ssl_fc }\n",
			req:        newRequest("POST", "/a?x=1", "Host", "h.example:8080"),
			wantHeader: http.Header{},
			wantHost:   "h.example:8080",
			wantPath:   "/a",
			want:       verdict{status: 308, location: "https://h.example:8080/a?x=1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fe, err := frontendOf(t, tt.lines)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantHost == "" {
				tt.req.r.Host = ""
			}
			got := apply(&fe.HTTPProxy, fe.ACLs, tt.req)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(verdict{})); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantHeader, tt.req.r.Header); diff != "" {
				t.Errorf("headers (-want +got):\n%s", diff)
			}
			if tt.req.r.Host != tt.wantHost || tt.req.r.URL.Path != tt.wantPath {
				t.Errorf("host %q path %q, want %q %q", tt.req.r.Host, tt.req.r.URL.Path, tt.wantHost, tt.wantPath)
			}
		})
	}
}

// FuzzConditions parses a fuzzed acl and condition in a frontend and,
// when vipstack accepts them, evaluates them and applies the section's
// rules to a request: nothing panics, and a refusal names the file.
func FuzzConditions(f *testing.F) {
	f.Add("path_beg -i /a", "if a || { hdr(host) -m dom x } !{ ssl_fc }", "set-header X %[src]")
	f.Add("hdr_reg(x) ^a(b|c)$", "unless a METH_GET", "redirect prefix / drop-query")
	f.Add("src 10.0.0.0/8 ::1", "if ! a or TRUE", "deny deny_status 500")
	f.Add("method GET", "if {", "del-header Host")
	f.Fuzz(func(t *testing.T, acl, cond, action string) {
		if strings.ContainsAny(acl+cond+action, "\n\r#\\\"'") {
			return // one line each; the lexer has its own fuzz test
		}
		fe, err := frontendOf(t, "  acl a "+acl+"\n  use_backend yes "+cond+"\n  http-request "+action+" "+cond+"\n")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "h.cfg") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		for _, rq := range []*request{newRequest("GET", "/a/b?c", "Host", "x.example", "X", "ab"), newRequest("POST", "/", "X", "")} {
			acls(fe.ACLs).cond(fe.UseBackends[0].Cond, rq)
			apply(&fe.HTTPProxy, fe.ACLs, rq)
		}
	})
}
