package haproxycfg

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestParseRegsub reads the regsub converter in http-request and
// http-response values, set-path (the openculinary layout), set-var and
// acl criteria;
// haproxy -c agrees on each, unless the case says vipstack is stricter.
func TestParseRegsub(t *testing.T) {
	const head = "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n" +
		"frontend fe\n  bind 127.0.0.1:47021\n  default_backend be\n"
	const tail = "backend be\n  server s 127.0.0.1:47022\n"
	tests := []struct {
		name    string
		lines   string
		wantErr string // "" accepts
		haproxy string // haproxyAccepts when vipstack is stricter
	}{
		{name: "set-path", lines: "  http-request set-path %[path,regsub(^/api/,/)]\n"},
		{name: "flags and brackets", lines: "  http-request set-header X %[path,regsub([0-9]+,N,gi)]-%[src]\n"},
		{name: "quoted arguments", lines: `  http-request set-header X '%[path,regsub("^/(u)ser/([a-z]+)",/\2/\1)]'` + "\n"},
		{name: "chained", lines: "  http-request set-header X %[req.hdr(host),regsub(:[0-9]+$,),regsub(^www\\.,)]\n"},
		{name: "set-var", lines: "  http-request set-var(txn.p) path,regsub(^/api,)\n  http-request set-header X %[var(txn.p)]\n"},
		{name: "http-response", lines: "  http-request set-var(txn.h) req.hdr(host)\n  http-response set-header X %[var(txn.h),regsub(a,b)]\n"},
		{name: "request fetch in http-response", lines: "  http-response set-header X %[req.hdr(x),regsub(a,b)]\n",
			wantErr: `h.cfg:9: http-response set-header: sample fetch <req.hdr(x),regsub(a,b)]> may not be reliably used here because it needs 'HTTP request headers' which is not available here`},
		{name: "hdr in http-response", lines: "  http-response set-header X %[hdr(x)]\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:9: http-response set-header: %[hdr(x)]: in http-response haproxy's hdr() is the answer's header, which vipstack does not expand (accepted: ` + lbconfig.HTTPValueVars + ` but path, hdr(NAME), req.hdr(NAME))`},
		{name: "unknown flag", lines: "  http-request set-header X %[path,regsub(a,b,x)]\n",
			wantErr: `h.cfg:9: http-request set-header X: failed to parse sample expression <path,regsub(a,b,x)]> : invalid args in converter 'regsub' : invalid regex flag 'x', only 'i' and 'g' are supported`},
		{name: "no substitution", lines: "  http-request set-header X %[path,regsub(a)]\n",
			wantErr: `h.cfg:9: http-request set-header X: failed to parse sample expression <path,regsub(a)]> : invalid arg 2 in converter 'regsub' : missing arguments (got 1/2), type 'string' expected`},
		{name: "no arguments", lines: "  http-request set-path %[path,regsub]\n",
			wantErr: `h.cfg:9: http-request set-path: failed to parse sample expression <path,regsub]> : invalid arg 2 in converter 'regsub' : missing arguments (got 1/2), type 'string' expected`},
		{name: "too many arguments", lines: "  http-request set-path %[path,regsub(a,b,g,x)]\n",
			wantErr: `h.cfg:9: http-request set-path: failed to parse sample expression <path,regsub(a,b,g,x)]> : invalid arg 3 in converter 'regsub' : expected ')' before ',x)'`},
		{name: "unclosed", lines: "  http-request set-path %[path,regsub(a,b]\n",
			wantErr: `h.cfg:9: http-request set-path: failed to parse sample expression <path,regsub(a,b]> : invalid arg 2 in converter 'regsub' : expected ')'`},
		{name: "set-var", lines: "  http-request set-var(txn.a) path,regsub(a)\n",
			wantErr: `h.cfg:9: http-request set-var(txn.a): set-var expression "path,regsub(a)": invalid arg 2 in converter 'regsub' : missing arguments (got 1/2), type 'string' expected`},
		{name: "bad regex", lines: "  http-request set-path %[path,regsub(a[,b)]\n",
			wantErr: "h.cfg:9: http-request set-path: failed to parse sample expression <path,regsub(a[,b)]> : error in regex 'a[' in arg 1 of conversion keyword 'regsub' : regex 'a[' is invalid (error=error parsing regexp: missing closing ]: `[`) (accepted: an RE2 regular expression)"},
		{name: "lookbehind", lines: `  http-request set-path '%[path,regsub("(?<=a)b",c)]'` + "\n", haproxy: haproxyAccepts,
			wantErr: "h.cfg:9: http-request set-path: failed to parse sample expression <path,regsub(\"(?<=a)b\",c)]> : error in regex '(?<=a)b' in arg 1 of conversion keyword 'regsub' : regex '(?<=a)b' is invalid (error=error parsing regexp: invalid named capture: `(?<=a)b`) (accepted: an RE2 regular expression)"},
		{name: "other converter", lines: "  http-request set-header X %[path,lower]\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:9: http-request set-header X: failed to parse sample expression <path,lower]> : converter 'lower' is not supported by vipstack (accepted: regsub(REGEX,SUBST[,FLAGS]))`},
		{name: "acls", lines: "  acl a req.hdr(host),regsub(:[0-9]+$,) example.com\n  acl v var(txn.x),regsub(a,b) -m found\n  http-request deny if a v || { path,regsub(^/api,) -m beg /v1 }\n"},
		{name: "acl keyword with a converter", lines: "  acl a path_beg,regsub(a,b) /x\n  http-request deny if a\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:9: acl criterion "path_beg,regsub(a,b)": converters after path_beg are not supported by vipstack (accepted: converters after base, hdr, path, req.hdr, ssl_fc_sni, url, var)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := head + tt.lines + tail
			_, err := Parse("h.cfg", []byte(conf))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatal(err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("error %v\nwant %s", err, tt.wantErr)
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if wantOK := tt.wantErr == "" || tt.haproxy == haproxyAccepts; ok != wantOK || ok && strings.Contains(out, "WARNING") {
				t.Errorf("haproxy -c accepts: %v, want %v:\n%s", ok, wantOK, out)
			}
		})
	}
}
