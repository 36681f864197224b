package haproxycfg

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// acceptCase is a configuration that parses, the value it resolves to and
// its warnings; haproxy -c must accept it too, and warn in the words of
// each warning that quotes haproxy.
type acceptCase struct {
	name         string
	conf         func(t *testing.T) string
	get          func(*lbconfig.Config) any
	want         any
	wantWarnings []string
}

func runAccept(t *testing.T, tests []acceptCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := tt.conf(t)
			cfg, err := Parse("h.cfg", []byte(conf))
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, conf)
			}
			if diff := cmp.Diff(tt.want, tt.get(cfg), cmpOpts); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if !ok {
				t.Errorf("haproxy -c rejects it:\n%s", out)
			}
			for _, w := range tt.wantWarnings {
				_, msg, _ := strings.Cut(w, ": ")
				if (strings.HasPrefix(msg, "'") || strings.HasPrefix(msg, "backend '") || strings.HasPrefix(msg, "parsing ")) && !strings.Contains(out, msg) {
					t.Errorf("haproxy -c does not warn %q; output:\n%s", msg, out)
				}
			}
		})
	}
}

// TestCheckTypeLastWins: the last check option of a backend sets its
// check type, as in haproxy 2.6 (the kubeadm guide's API balancer).
func TestCheckTypeLastWins(t *testing.T) {
	const srv = "  server m0 127.0.0.1:47012 check\n"
	type kinds struct {
		Method, Expect string
		TCP            int
		SSLHello       bool
	}
	get := func(c *lbconfig.Config) any {
		b := c.Backends[0]
		return kinds{b.Check.Method, b.Check.ExpectStatus, len(b.TCPCheck), b.SSLHelloCheck}
	}
	runAccept(t, []acceptCase{
		{
			name: "httpchk and expect, then ssl-hello-chk (kubeadm guide)",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk GET /healthz\n  http-check expect status 200\n  option ssl-hello-chk\n"+srv)
			},
			get: get, want: kinds{SSLHello: true},
		},
		{
			name: "ssl-hello-chk, then httpchk",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option ssl-hello-chk\n  option httpchk GET /healthz\n  http-check expect status 200\n"+srv)
			},
			get: get, want: kinds{Method: "GET", Expect: "200"},
		},
		{
			name: "httpchk, then tcp-check",
			conf: func(t *testing.T) string { return edit(t, srv, "  option httpchk\n  option tcp-check\n"+srv) },
			get:  get, want: kinds{},
		},
		{
			name: "tcp-check rules before ssl-hello-chk are dropped silently",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option tcp-check\n  tcp-check send PING\\r\\n\n  option ssl-hello-chk\n"+srv)
			},
			get: get, want: kinds{SSLHello: true},
		},
		{
			name: "http-check rules after ssl-hello-chk are ignored with a warning",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option ssl-hello-chk\n  http-check expect status 200\n"+srv)
			},
			get: get, want: kinds{SSLHello: true},
			wantWarnings: []string{"h.cfg:11: backend 'masters' uses http-check rules without 'option httpchk', so the rules are ignored."},
		},
		{
			name: "tcp-check rules after httpchk are ignored with a warning",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  option httpchk\n  tcp-check send PING\\r\\n\n"+srv)
			},
			get: get, want: kinds{Method: "OPTIONS"},
			wantWarnings: []string{"h.cfg:11: backend 'masters' uses tcp-check rules without 'option tcp-check', so the rules are ignored."},
		},
		{
			name: "http-check expect before option httpchk",
			conf: func(t *testing.T) string {
				return edit(t, srv, "  http-check expect status 204\n  option httpchk GET /\n"+srv)
			},
			get: get, want: kinds{Method: "GET", Expect: "204"},
		},
	})
}
