package lbcli

import (
	"strings"
	"testing"

	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
)

// TestServerStateAbns: `show servers state` writes an abns@ server's
// address as haproxy 2.6 does: "-" and port 0 (measured: "2 front 1 inner
// - 2 0 1 1 ...").
func TestServerStateAbns(t *testing.T) {
	l := serverStateLine(2, "front", 1, lbstats.ServerStats{Name: "inner", Addr: "abns@inner", Up: true})
	if f := strings.Fields(l); len(f) < 19 || f[4] != "-" || f[18] != "0" {
		t.Errorf("show servers state line %q: want srv_addr - and srv_port 0", l)
	}
}
