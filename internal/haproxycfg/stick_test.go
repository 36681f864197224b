package haproxycfg

import (
	"os"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestStick: stick-table, stick rules, fullconn and peers sections as
// haproxy 2.6 reads them.
func TestStick(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	const srv = "  server m0 127.0.0.1:47012 check\n"
	runAccept(t, []acceptCase{
		{
			name: "table, rules, fullconn, local peer",
			conf: func(t *testing.T) string {
				return "peers mine\n  peer " + host + " 127.0.0.1:47090\n" + edit(t, srv,
					"  stick-table type string len 20 size 1m expire 24h store gpc0,gpc0_rate(31s) peers mine\n"+
						"  stick on src\n  stick match src table masters\n  stick store-request src\n  fullconn 2000\n"+srv)
			},
			get: func(c *lbconfig.Config) any {
				b := c.Backends[0]
				return []any{*b.StickTable, b.StickRules, b.FullConn, c.Peers}
			},
			want: []any{
				lbconfig.StickTable{Type: "string", Len: 20, Size: 1 << 20, Expire: 24 * time.Hour, Peers: "mine", Store: []string{"gpc0", "gpc0_rate(31s)"}},
				[]lbconfig.StickRule{{Match: true, Store: true, Pattern: "src"}, {Match: true, Pattern: "src", Table: "masters"}, {Store: true, Pattern: "src"}},
				2000,
				[]lbconfig.Peers{{Name: "mine", Local: host}},
			},
		},
		{
			// haproxy removes a peers section without the local peer,
			// with this warning, and its tables sync with nothing.
			name: "peers without the local peer",
			conf: func(t *testing.T) string {
				return "peers others\n  peer elsewhere 198.18.0.2:10000\n" + edit(t, srv, "  stick-table type ip size 10 peers others\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return []any{c.Peers == nil, c.Backends[0].StickTable.Peers} },
			want: []any{true, ""},
			wantWarnings: []string{
				"h.cfg:1: Removing incomplete section 'peers others' (no peer named '" + host + "').",
			},
		},
		{
			name: "localpeer names the local peer",
			conf: func(t *testing.T) string {
				return "global\n  localpeer lb1\npeers mine\n  server lb1\n" + edit(t, srv, "  stick-table type ipv6 size 10 peers mine\n"+srv)
			},
			get:  func(c *lbconfig.Config) any { return c.Peers },
			want: []lbconfig.Peers{{Name: "mine", Local: "lb1"}},
		},
	})
}

func TestStickErrors(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, conf, want string
	}{
		{
			name: "a remote peer",
			conf: "peers mine\n  peer " + host + " 127.0.0.1:47090\n  peer other 198.18.0.2:47090\n" + base,
			want: `h.cfg:3: peers mine: peer other (198.18.0.2:47090) is remote: syncing stick tables with remote peers needs haproxy's peers protocol, which vipstack does not speak (accepted: a peers section whose only peer is the local one, "` + host + `", which keeps stick tables over reloads)`,
		},
		{
			name: "a condition",
			conf: base + "  stick-table type ip size 10\n  stick on src if TRUE\n",
			want: `h.cfg:12: stick on src: "if TRUE" is not supported by vipstack: stick rules take no condition here (accepted: stick on|match|store-request src [table NAME])`,
		},
		{
			name: "another pattern",
			conf: base + "  stick-table type binary len 32 size 10\n  stick on payload_lv(43,1)\n",
			want: `h.cfg:12: stick on payload_lv(43,1): the pattern "payload_lv(43,1)" is not supported by vipstack (accepted: stick on|match|store-request src [table NAME])`,
		},
		{
			name: "store-response",
			conf: base + "  stick-table type ip size 10\n  stick store-response src\n",
			want: `h.cfg:12: stick store-response is not supported by vipstack (accepted: stick on|match|store-request src [table NAME])`,
		},
		{
			name: "no table",
			conf: base + "  stick on src\n",
			want: `h.cfg:11: backend masters: stick rule: backend "masters" has no stick-table (accepted: a stick-table in the backend, or table NAME of one that has)`,
		},
		{
			name: "an unknown data type",
			conf: base + "  stick-table type ip size 10 store gpc9\n",
			want: `h.cfg:11: stick-table: store "gpc9" is not a data type haproxy 2.6 keeps (accepted: stick-table type ip|ipv6|integer|string [len N]|binary [len N] size N[k|m|g] [expire TIME] [nopurge] [peers NAME] [store DATA,...])`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(tt.conf))
			if err == nil || err.Error() != tt.want {
				t.Errorf("Parse error:\n got %v\nwant %s", err, tt.want)
			}
		})
	}
}
