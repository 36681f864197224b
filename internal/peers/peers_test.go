package peers

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// TestConfRender checks that the text both implementations read gives
// back the model Conf describes.
func TestConfRender(t *testing.T) {
	tests := []struct {
		name string
		conf Conf
	}{
		{name: "multicast v3", conf: Conf{Version: 3, Interval: 100 * time.Millisecond, VRID: 51, Priority: 150,
			VIP: netip.MustParsePrefix("198.18.0.100/32")}},
		{name: "unicast v2 with everything", conf: Conf{Version: 2, Interval: time.Second, VRID: 7, Priority: 90,
			Interface: "veth1", VIP: netip.MustParsePrefix("198.18.0.100/24"), Auth: "secret",
			Source: netip.MustParseAddr("198.18.0.11"), Peers: []netip.Addr{netip.MustParseAddr("198.18.0.12")},
			NoPreempt: true, Script: "/bin/sh -c 'test -e /tmp/x'", Weight: -20, Notify: "/bin/notify arg",
			Instance: "VI_9", NoSecondGARP: true}},
		{name: "IPv6 start master", conf: Conf{Version: 3, Interval: 50 * time.Millisecond, VRID: 3, Priority: 255,
			VIP: netip.MustParsePrefix("fd00::100/128"), StartMaster: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text, err := tt.conf.Render("r1")
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := keepalived.Parse("peer.conf", []byte(text), nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			want := tt.conf.Config("r1")
			if err := want.Validate(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, parsed, cmp.Comparer(func(a, b netip.Addr) bool { return a == b }),
				cmp.Comparer(func(a, b netip.Prefix) bool { return a == b }), cmpopts.IgnoreTypes(keepalived.Pos{}),
				// A VIP compares whole (VIP.Equal); its position is ignored here too.
				cmp.Comparer(keepalived.VIP.SameEntry),
				cmpopts.IgnoreFields(keepalived.Config{}, "Warnings", "Files")); diff != "" {
				t.Errorf("Render's text reads back otherwise (-conf +text):\n%s\n%s", diff, text)
			}
		})
	}
}
