package main

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/keepalived"
)

// TestConf reads the generated file back with vipstack's keepalived.conf
// reader: every instance on its link and VRID, every VIP once.
func TestConf(t *testing.T) {
	text, err := conf(600, 6001)
	if err != nil {
		t.Fatal(err)
	}
	c, err := keepalived.Parse("scale.conf", []byte(text), nil)
	if err != nil {
		t.Fatalf("the generated file does not read back: %v", err)
	}
	if len(c.Instances) != 600 {
		t.Fatalf("%d instances, want 600", len(c.Instances))
	}
	seen := map[string]bool{}
	vips := 0
	for _, in := range c.Instances {
		key := in.Interface + "/" + string(rune(in.VRID))
		if seen[key] {
			t.Fatalf("%s: VRID %d used twice on %s", in.Name, in.VRID, in.Interface)
		}
		seen[key] = true
		for _, v := range in.VIPs {
			if !strings.HasPrefix(v.Prefix.String(), "198.19.") {
				t.Fatalf("%s: VIP %v outside 198.19.0.0/16", in.Name, v.Prefix)
			}
		}
		vips += len(in.VIPs)
	}
	if vips != 6001 {
		t.Fatalf("%d VIPs, want 6001", vips)
	}
	if got := c.Instances[599].Interface; got != linkName(2) {
		t.Fatalf("instance 600 on %s, want %s", got, linkName(2))
	}
	for _, bad := range [][2]int{{0, 10}, {10, 9}, {10, 60001}} {
		if _, err := conf(bad[0], bad[1]); err == nil {
			t.Errorf("conf(%d, %d) = nil error, want one", bad[0], bad[1])
		}
	}
}
