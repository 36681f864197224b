package announce

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/mdlayher/ethernet"
	"github.com/mdlayher/packet"
	"github.com/vipstack/vipstack/internal/testnet"
	"golang.org/x/sys/unix"
)

// waitLimit bounds every wait for a frame or a kernel update; never asserted.
const waitLimit = 20 * time.Second

func TestNewErrors(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
	_, err := New(&net.Interface{Name: "lo", Index: 1})
	if err == nil || !strings.Contains(err.Error(), "want a 6-byte Ethernet MAC") {
		t.Errorf("New on an interface without a MAC = %v; want a MAC error", err)
	}
	a, err := New(&net.Interface{Name: "x0", Index: 999, HardwareAddr: testMAC})
	if err != nil {
		t.Fatal(err)
	}
	// Bad addresses are refused before any socket is opened.
	for _, bad := range []netip.Addr{{}, netip.MustParseAddr("224.0.0.18"), allNodes} {
		if err := a.Announce(bad); err == nil || !strings.Contains(err.Error(), "x0") {
			t.Errorf("Announce(%v) = %v; want an error naming the interface", bad, err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if err := a.Announce(addrA); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Announce after Close = %v; want net.ErrClosed", err)
	}
}

// capture is a packet socket on host h's link, opened inside its namespace.
type capture struct {
	c *packet.Conn
}

func openCapture(t *testing.T, h *testnet.Host) *capture {
	t.Helper()
	var c *packet.Conn
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		c, err = packet.Listen(ifi, packet.Raw, unix.ETH_P_ALL, nil)
		return err
	})
	if err != nil {
		t.Fatalf("packet socket in %s: %v", h.Name, err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	return &capture{c: c}
}

// next returns the next frame for which match is true.
func (c *capture) next(t *testing.T, what string, match func(f *ethernet.Frame) bool) []byte {
	t.Helper()
	buf := make([]byte, 2048)
	for {
		n, _, err := c.c.ReadFrom(buf)
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		var f ethernet.Frame
		if err := f.UnmarshalBinary(buf[:n]); err != nil {
			continue
		}
		if match(&f) {
			return bytes.Clone(buf[:n])
		}
	}
}

// neighMAC polls h's neighbour table for addr until it shows want (the
// kernel updates it right after the tap that saw the frame) or the bound.
func neighMAC(t *testing.T, h *testnet.Host, addr netip.Addr, want string) string {
	t.Helper()
	var out string
	for deadline := time.Now().Add(waitLimit); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) { // waiting for the kernel, not for a timer of ours
		var err error
		out, err = h.Run("ip", "neigh", "show", addr.String(), "dev", h.Link)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out, "lladdr "+want) {
			break
		}
	}
	return strings.TrimSpace(out)
}

func TestAnnounceOnTheWire(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vsC"})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	mac1, err := net.ParseMAC(h1.MAC)
	if err != nil {
		t.Fatal(err)
	}
	vip4 := netip.MustParseAddr("198.18.0.100")
	vip6 := netip.MustParseAddr("fd00:bb::100")
	notHeld6 := netip.MustParseAddr("fd00:bb::101") // not configured: sent thanks to IPV6_FREEBIND
	const stale = "02:00:00:00:00:99"
	for _, args := range [][]string{
		// The VIPs as the daemon adds them before announcing.
		{"-n", h1.Name, "addr", "add", vip4.String() + "/32", "dev", "eth0"},
		{"-n", h1.Name, "addr", "add", vip6.String() + "/128", "dev", "eth0", "nodad"},
		// h2 believes the VIPs are elsewhere: the announcements must fix that.
		{"-n", h2.Name, "neigh", "replace", vip4.String(), "lladdr", stale, "dev", "eth0", "nud", "stale"},
		{"-n", h2.Name, "neigh", "replace", vip6.String(), "lladdr", stale, "dev", "eth0", "nud", "stale"},
	} {
		if out, err := h1.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v: %s", args, err, out)
		}
	}

	var a *Announcer
	if err := h1.Do(func() error {
		ifi, err := net.InterfaceByName(h1.Link)
		if err != nil {
			return err
		}
		a, err = New(ifi)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	// The sockets open lazily, in the calling thread's namespace: announce
	// from inside h1.
	announce := func(t *testing.T, addr netip.Addr) {
		t.Helper()
		if err := h1.Do(func() error { return a.Announce(addr) }); err != nil {
			t.Fatal(err)
		}
	}

	t.Run("gratuitous ARP", func(t *testing.T) {
		c := openCapture(t, h2)
		announce(t, vip4)
		got := c.next(t, "the gratuitous ARP", func(f *ethernet.Frame) bool {
			return f.EtherType == ethernet.EtherTypeARP && len(f.Payload) >= 28 &&
				bytes.Equal(f.Payload[14:18], vip4.AsSlice())
		})
		want, err := MarshalGARP(mac1, vip4)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("frame on the wire (-want +got):\n%s", diff)
		}
		if out := neighMAC(t, h2, vip4, h1.MAC); !strings.Contains(out, "lladdr "+h1.MAC) {
			t.Errorf("h2's ARP entry after the gratuitous ARP: %q; want lladdr %s", out, h1.MAC)
		}
	})

	// A node of 1,000 instances and 10,000 VIPs sends 20,000 at its
	// start: each allocated about 1.5 KB before (docs/design/memory.md).
	t.Run("gratuitous ARPs allocate nothing", func(t *testing.T) {
		other := netip.MustParseAddr("198.18.0.101")
		announce(t, other) // opens the socket in h1 if the subtest above did not
		c := openCapture(t, h2)
		allocs := testing.AllocsPerRun(50, func() {
			if err := a.Announce(other); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("allocations per gratuitous ARP sent = %v; want 0", allocs)
		}
		got := c.next(t, "a gratuitous ARP for "+other.String(), func(f *ethernet.Frame) bool {
			return f.EtherType == ethernet.EtherTypeARP && len(f.Payload) >= 28 &&
				bytes.Equal(f.Payload[14:18], other.AsSlice())
		})
		want, err := MarshalGARP(mac1, other)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("frame on the wire (-want +got):\n%s", diff)
		}
	})

	isNA := func(target netip.Addr) func(f *ethernet.Frame) bool {
		return func(f *ethernet.Frame) bool {
			p := f.Payload
			return f.EtherType == ethernet.EtherTypeIPv6 && len(p) >= 40+24 && p[6] == 58 &&
				p[40] == 136 && bytes.Equal(p[48:64], target.AsSlice())
		}
	}
	for _, tc := range []struct {
		name   string
		target netip.Addr
		neigh  bool
	}{
		{name: "unsolicited NA", target: vip6, neigh: true},
		{name: "unsolicited NA for an address not yet configured", target: notHeld6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := openCapture(t, h2)
			announce(t, tc.target)
			frame := c.next(t, "the neighbor advertisement", isNA(tc.target))
			var f ethernet.Frame
			if err := f.UnmarshalBinary(frame); err != nil {
				t.Fatal(err)
			}
			if f.Destination.String() != "33:33:00:00:00:01" || f.Source.String() != h1.MAC {
				t.Errorf("Ethernet %s -> %s; want %s -> 33:33:00:00:00:01", f.Source, f.Destination, h1.MAC)
			}
			src, dst, hop, body := icmpOfFrame(t, frame)
			type ip6 struct {
				Src, Dst netip.Addr
				Hop      int
			}
			if diff := cmp.Diff(ip6{tc.target, allNodes, 255}, ip6{src, dst, hop},
				cmp.Comparer(func(x, y netip.Addr) bool { return x == y })); diff != "" {
				t.Errorf("IPv6 header (-want +got):\n%s", diff)
			}
			sum := binary.BigEndian.Uint16(body[2:4])
			zeroed := bytes.Clone(body)
			zeroed[2], zeroed[3] = 0, 0
			if want := pseudoChecksum(src, dst, zeroed); sum != want {
				t.Errorf("ICMPv6 checksum %#04x, want %#04x", sum, want)
			}
			if body[4] != 0x20 {
				t.Errorf("NA flags %#02x, want 0x20 (Override only)", body[4])
			}
			want, err := MarshalNA(mac1, tc.target)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, zeroed); diff != "" {
				t.Errorf("ICMPv6 message (-want +got, checksum zeroed):\n%s", diff)
			}
			if tc.neigh {
				if out := neighMAC(t, h2, tc.target, h1.MAC); !strings.Contains(out, "lladdr "+h1.MAC) {
					t.Errorf("h2's neighbour entry after the NA: %q; want lladdr %s", out, h1.MAC)
				}
			}
		})
	}
}
