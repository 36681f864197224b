package haproxycfg

import (
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestMySQLCheckOption: option mysql-check's forms, and the last check
// option winning over it or losing to it.
func TestMySQLCheckOption(t *testing.T) {
	const srv = "  server m0 127.0.0.1:47012 check\n"
	get := func(c *lbconfig.Config) any { return []any{c.Backends[0].MySQLCheck, c.Backends[0].SSLHelloCheck} }
	runAccept(t, []acceptCase{
		{name: "no user", conf: func(t *testing.T) string { return edit(t, srv, "  option mysql-check\n"+srv) },
			get: get, want: []any{&lbconfig.MySQLCheck{}, false}},
		{name: "user, pre-41", conf: func(t *testing.T) string { return edit(t, srv, "  option mysql-check user haproxy pre-41\n"+srv) },
			get: get, want: []any{&lbconfig.MySQLCheck{User: "haproxy", Pre41: true}, false}},
		{name: "then ssl-hello-chk", conf: func(t *testing.T) string {
			return edit(t, srv, "  option mysql-check user haproxy\n  option ssl-hello-chk\n"+srv)
		}, get: get, want: []any{(*lbconfig.MySQLCheck)(nil), true}},
	})
}
