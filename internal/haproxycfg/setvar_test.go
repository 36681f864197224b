package haproxycfg

import (
	"strings"
	"testing"
)

// TestParseSetVar reads set-var and var() lines in a mode http frontend;
// haproxy -c agrees on each, unless the case says vipstack is stricter.
func TestParseSetVar(t *testing.T) {
	const head = "defaults\n  mode http\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n" +
		"frontend fe\n  bind 127.0.0.1:47011\n  default_backend be\n"
	const tail = "backend be\n  server s 127.0.0.1:47012\n"
	tests := []struct {
		name    string
		lines   string
		wantErr string // "" accepts
		haproxy string // haproxyAccepts when vipstack is stricter
	}{
		{name: "vyos's", lines: "  acl a var(txn.txnhost) -m str -i app.example\n  http-request set-var(txn.txnhost) hdr(host)\n  use_backend be if a\n"},
		{name: "req scope, found, str()", lines: "  acl a var(req.x) -m found\n  http-request set-var(req.x) str(on) if { path_beg /x }\n  http-request set-header X %[var(req.x)]\n"},
		{name: "dotted name", lines: "  http-request set-var(txn.a.b) src\n"},
		{name: "var without -m", lines: "  acl a var(txn.a) foo\n",
			wantErr: `h.cfg:9: acl var(txn.a): matching method must be specified first (using '-m') when using a sample fetch of this type ('var') (accepted: -m beg, dom, end, found, reg, str, sub)`},
		{name: "no scope", lines: "  http-request set-var(a) hdr(host)\n",
			wantErr: `h.cfg:9: http-request set-var(a): invalid variable name 'a'. A variable name must be start by its scope. The scope can be 'proc', 'sess', 'txn', 'req', 'res' or 'check' (accepted by vipstack: txn.NAME or req.NAME)`},
		{name: "no expression", lines: "  http-request set-var(txn.a)\n",
			wantErr: `h.cfg:9: http-request set-var(txn.a): missing fetch method (accepted: ` + "base, dst, dst_port, hdr(NAME), method, path, req.hdr(NAME), src, src_port, ssl_fc_sni, str(TEXT), url, var(SCOPE.NAME)" + `)`},
		{name: "session scope", lines: "  http-request set-var(sess.a) src\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:9: http-request set-var(sess.a): variable sess.a: scope sess is not supported by vipstack, whose variables live for one request (accepted: txn.NAME or req.NAME)`},
		{name: "converter", lines: "  http-request set-var(txn.a) hdr(host),lower\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:9: http-request set-var(txn.a): set-var expression "hdr(host),lower": converter 'lower' is not supported by vipstack (accepted: regsub(REGEX,SUBST[,FLAGS]))`},
		{name: "regsub", lines: "  http-request set-var(txn.a) hdr(host),regsub(:[0-9]+$,)\n"},
		{name: "bad character", lines: "  http-request set-var(txn.a-b) src\n",
			wantErr: `h.cfg:9: http-request set-var(txn.a-b): variable txn.a-b: invalid name (accepted: letters, digits, '.' and '_' after the scope)`},
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
