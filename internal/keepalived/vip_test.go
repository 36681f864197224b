package keepalived

import (
	"encoding/json"
	"net/netip"
	"testing"
	"unsafe"
)

// TestVIPOptions: a VIP's options are one interned value, so VIPs with the
// same address, place and options are equal with ==, as when the options
// were fields, whichever call made them; setting no option gives the
// VIP without options; the JSON form keeps the fields it had.
func TestVIPOptions(t *testing.T) {
	p := netip.MustParsePrefix("198.18.0.1/24")
	o := VIPOptions{Dev: "eth1", Label: "eth1:v", Scope: "link", Broadcast: netip.MustParseAddr("198.18.0.255"), NoDAD: true, NoPrefixRoute: true}
	a, b := MakeVIP(p, o), MakeVIP(p, VIPOptions{Dev: "eth1", Label: "eth1:v", Scope: "link", Broadcast: netip.MustParseAddr("198.18.0.255"), NoDAD: true, NoPrefixRoute: true})
	if a != b {
		t.Errorf("two VIPs with the same options differ: %+v and %+v", a.Options(), b.Options())
	}
	if got := a.Options(); got != o {
		t.Errorf("Options() = %+v, want %+v", got, o)
	}
	if a.Dev() != "eth1" {
		t.Errorf("Dev() = %q, want eth1", a.Dev())
	}
	if c := MakeVIP(p, VIPOptions{Dev: "eth2"}); c == a {
		t.Error("VIPs with other options are equal")
	}
	plain := VIP{Prefix: p}
	cleared := a
	cleared.SetOptions(VIPOptions{})
	if cleared != plain || plain.Options() != (VIPOptions{}) || plain.Dev() != "" {
		t.Errorf("a VIP whose options were cleared (%+v) differs from one without (%+v)", cleared.Options(), plain.Options())
	}

	a.SetPos(Pos{File: "k.conf", Line: 7})
	if !a.SameEntry(b) || a == b || a.SameEntry(MakeVIP(p, VIPOptions{Dev: "eth2"})) {
		t.Error("SameEntry: want the same entry written elsewhere, not another entry")
	}
	// The position and the options are set apart: one keeps the other.
	if got := a.Pos(); got != (Pos{File: "k.conf", Line: 7}) || a.Options() != o {
		t.Errorf("after SetPos: at %v with %+v, want k.conf:7 with %+v", got, a.Options(), o)
	}
	moved := a
	moved.SetOptions(VIPOptions{Dev: "eth3"})
	if moved.Pos() != a.Pos() || moved.Dev() != "eth3" {
		t.Errorf("after SetOptions: at %v on %q, want %v on eth3", moved.Pos(), moved.Dev(), a.Pos())
	}
	elsewhere := b
	elsewhere.SetPos(Pos{File: "other.conf", Line: 7})
	if elsewhere == a || !elsewhere.SameEntry(a) {
		t.Error("the same entry at the same line of another file: want a different VIP, the same entry")
	}
	j, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"Prefix":"198.18.0.1/24","Dev":"eth1","Label":"eth1:v","Scope":"link","Broadcast":"198.18.0.255","NoDAD":true,"NoPrefixRoute":true,"Pos":{"File":"k.conf","Line":7}}`
	if string(j) != want {
		t.Errorf("JSON:\n got %s\nwant %s", j, want)
	}
	var back VIP
	if err := json.Unmarshal(j, &back); err != nil {
		t.Fatal(err)
	}
	if back != a {
		t.Errorf("read back %+v at %v, want %+v at %v", back.Options(), back.Pos(), a.Options(), a.Pos())
	}
}

// TestVIPSize: a node keeps one VIP per address for its life (10,000 in
// bench/scale and bench/ipfailover); its options are not fields of it.
func TestVIPSize(t *testing.T) {
	if n := unsafe.Sizeof(VIP{}); n > 48 {
		t.Errorf("a VIP takes %d bytes, want at most 48 (its options and file interned, its line 32 bits)", n)
	}
}

// TestInstanceSize: an Instance keeps its notify scripts behind a
// pointer, nil for most, so that 1,000 of them do not carry 240 bytes
// each of empty strings; the parsed instances of bench/scale's file are
// kept for the engine's life (docs/design/memory.md). 448 bytes is the
// size class it fits in now; 704 before.
func TestInstanceSize(t *testing.T) {
	if n := unsafe.Sizeof(Instance{}); n > 448 {
		t.Errorf("an Instance takes %d bytes, want at most 448", n)
	}
	cfg, err := Parse("k.conf", []byte("vrrp_instance A {\n interface eth0\n virtual_router_id 1\n priority 100\n virtual_ipaddress {\n  198.18.0.1/32\n }\n}\n"+
		"vrrp_instance B {\n interface eth0\n virtual_router_id 2\n priority 100\n notify_master /bin/true\n virtual_ipaddress {\n  198.18.0.2/32\n }\n}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := cfg.Instances[0].Notify; n != nil {
		t.Errorf("instance A without notify scripts has Notify %+v, want nil", *n)
	}
	if got := cfg.Instances[1].Notifies().Master; got != "/bin/true" {
		t.Errorf("instance B's notify_master is %q, want /bin/true", got)
	}
}
