package haproxycfg

import (
	"strings"
	"testing"
)

// TestAbns: `bind abns@NAME` and `server NAME abns@NAME` read as abstract
// UNIX sockets in mode http sections; where vipstack cannot run them (mode
// tcp, health checks, stats listens) or the name is no name, the error
// says so. haproxy 2.6 -c refuses the 108-byte name too and accepts the
// others (an empty name as the socket of that name; two binds of one name
// fail only when it starts).
func TestAbns(t *testing.T) {
	const head = "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n"
	cfg, err := Parse("h.cfg", []byte(head+"listen front\n  bind 127.0.0.1:8080\n  server inner abns@inner\nfrontend inner\n  bind abns@inner\n  default_backend app\nbackend app\n  server a 198.18.0.1:80\n"))
	if err != nil {
		t.Fatal(err)
	}
	var bound, served []string
	for _, f := range cfg.Frontends {
		for _, b := range f.Binds {
			bound = append(bound, f.Name+":"+b.Abstract)
		}
	}
	for _, b := range cfg.Backends {
		for _, s := range b.Servers {
			served = append(served, b.Name+"/"+s.Name+":"+s.Abstract)
		}
	}
	if got, want := strings.Join(bound, " "), "front: inner:inner"; got != want {
		t.Errorf("binds %q, want %q", got, want)
	}
	if got, want := strings.Join(served, " "), "front/inner:inner app/a:"; got != want {
		t.Errorf("servers %q, want %q", got, want)
	}
	long := strings.Repeat("n", 108)
	for _, tc := range []struct{ name, conf, want string }{
		{"empty name", "frontend f\n  bind abns@\n  default_backend b\nbackend b\n  server s 198.18.0.1:80\n",
			`h.cfg:7: bind address "abns@" names no socket (accepted: abns@NAME, NAME 1..107 bytes)`},
		{"long name", "frontend f\n  bind abns@" + long + "\n  default_backend b\nbackend b\n  server s 198.18.0.1:80\n",
			"the name is 108 bytes (accepted: 1..107 bytes, no NUL)"},
		{"mode tcp bind", "frontend f\n  mode tcp\n  bind abns@x\n  default_backend b\nbackend b\n  mode tcp\n  server s 198.18.0.1:80\n",
			"frontend f, bind abns@x: abns@ in a mode tcp frontend is not supported by vipstack: its TCP relay accepts on IP addresses (accepted: abns@ binds in mode http frontends)"},
		{"mode tcp frontend before a mode http backend", "frontend f\n  mode tcp\n  bind abns@x\n  default_backend b\nbackend b\n  server s 198.18.0.1:80\n",
			"frontend f, bind abns@x: abns@ in a mode tcp frontend is not supported by vipstack"},
		{"mode tcp server", "frontend f\n  mode tcp\n  bind 127.0.0.1:8080\n  default_backend b\nbackend b\n  mode tcp\n  server s abns@x\n",
			"backend b, server s: abns@ in a mode tcp backend is not supported by vipstack: its TCP relay connects to IP addresses (accepted: abns@ servers of mode http backends)"},
		{"check", "frontend f\n  bind 127.0.0.1:8080\n  default_backend b\nbackend b\n  server s abns@x check\n",
			"backend b, server s: check on an abns@ server is not supported by vipstack: its health checks connect over TCP (accepted: an abns@ server without check)"},
		{"bound twice", "frontend f\n  bind abns@x\n  default_backend b\nfrontend g\n  bind abns@x\n  default_backend b\nbackend b\n  server s 198.18.0.1:80\n",
			"abns@x is also bound by frontend f (accepted: each abstract socket once)"},
		{"stats listen", "listen st\n  bind abns@x\n  stats enable\n  stats uri /\n",
			"abns@ on a monitor or stats listener is not supported by vipstack (accepted: abns@ binds in mode http frontends)"},
	} {
		_, err := Parse("h.cfg", []byte(head+tc.conf))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
