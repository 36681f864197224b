package lbconfig

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStatsSocketsYAML: the YAML form's statsSockets, and what Validate
// refuses in them.
func TestStatsSocketsYAML(t *testing.T) {
	const base = "frontends:\n  - {name: fe, binds: [{addr: '127.0.0.1:9445'}], backend: be}\n" +
		"backends:\n  - {name: be, servers: [{name: m0, addr: '127.0.0.1:6443'}]}\n"
	c, err := ParseYAML("lb.yaml", []byte(base+"statsSockets:\n  - {address: /run/lb.sock, mode: '660', level: admin, group: haproxy}\n  - {address: '127.0.0.1:9999'}\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []StatsSocket{
		{Network: "unix", Address: "/run/lb.sock", Mode: 0o660, Level: "admin", Group: "haproxy"},
		{Network: "tcp", Address: "127.0.0.1:9999", Level: "user"},
	}
	if diff := cmp.Diff(want, c.StatsSockets); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !c.StatsSocket {
		t.Error("StatsSocket (haproxy's proxy numbering) not set with stats sockets")
	}
	for _, tt := range []struct{ yaml, want string }{
		{"statsSockets: [{address: /run/lb.sock, mode: rw}]", `mode "rw" is not an octal number such as 600`},
		{"statsSockets: [{address: /run/lb.sock, level: root}]", `level "root" (accepted: user, operator, admin)`},
		{"statsSockets: [{address: '127.0.0.1:9999', mode: '600'}]", "mode, user and group apply to a Unix socket, not to 127.0.0.1:9999"},
		{"statsSockets: [{address: /run/a.sock}, {address: /run/a.sock}]", "/run/a.sock is already a stats socket"},
		{"statsSockets: [{address: ''}]", "no address"},
	} {
		_, err := ParseYAML("lb.yaml", []byte(base+tt.yaml+"\n"))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error %v, want one containing %q", tt.yaml, err, tt.want)
		}
	}
}
