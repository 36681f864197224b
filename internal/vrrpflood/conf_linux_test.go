package vrrpflood

import (
	"net/netip"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// TestConf checks that both flooded nodes' configuration reads back as
// the instances the flood expects.
func TestConf(t *testing.T) {
	self, peer := netip.MustParseAddr("198.18.0.11"), netip.MustParseAddr("198.18.0.12")
	text := Conf("n1", 150, self, peer, "0.1")
	cfg, err := keepalived.Parse("flood.conf", []byte(text), nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(cfg.Instances) != 2 {
		t.Fatalf("%d instances, want 2:\n%s", len(cfg.Instances), text)
	}
	for i, in := range cfg.Instances {
		unicast := i == 1
		if in.VRID != uint8(51+i) || in.Priority != 150 || in.Version != 3 || in.AdvertInterval != 100*time.Millisecond ||
			in.VIPs[0].Prefix.Addr() != VIPs[i] || (len(in.UnicastPeers) == 1) != unicast ||
			(unicast && (in.UnicastSrcIP != self || in.UnicastPeers[0] != peer)) {
			t.Errorf("instance %d: %+v\n%s", i, in, text)
		}
	}
}

func TestConfRejectsAdvert(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Conf with advert \"-1\" did not panic")
		}
	}()
	Conf("n1", 100, netip.MustParseAddr("198.18.0.11"), netip.MustParseAddr("198.18.0.12"), "-1")
}
