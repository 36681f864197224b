package vrrpflood

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// VIPs are the addresses of Conf's VI_1 (multicast, VRID 51) and VI_2
// (unicast, VRID 52).
var VIPs = []netip.Addr{netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101")}

// Conf is the keepalived.conf of both flooded nodes: VI_1 multicast on
// VRID 51, VI_2 unicast (to peer only) on VRID 52, VRRPv3 with adverts
// every advert (keepalived's advert_int text, e.g. "0.1"), written by
// keepalived.Format. It panics when advert is not a number of seconds, a
// mistake in the calling test.
func Conf(routerID string, prio int, self, peer netip.Addr, advert string) string {
	d, err := time.ParseDuration(advert + "s")
	if err != nil || strings.ContainsAny(advert, "+-") {
		panic(fmt.Sprintf("vrrpflood.Conf: advert %q is not a number of seconds", advert))
	}
	cfg := keepalived.NewConfig()
	cfg.Global.RouterID, cfg.Global.VRRPVersion = routerID, 3
	for i, name := range []string{"VI_1", "VI_2"} {
		in := cfg.NewInstance(name)
		in.Interface, in.VRID, in.Priority, in.AdvertInterval = "eth0", uint8(51+i), uint8(prio), d
		in.VIPs = []keepalived.VIP{{Prefix: netip.PrefixFrom(VIPs[i], 32)}}
		if i == 1 {
			in.UnicastSrcIP, in.UnicastPeers = self, []netip.Addr{peer}
		}
		cfg.Instances = append(cfg.Instances, in)
	}
	return string(keepalived.Format(cfg))
}

// Class is one kind of bogus packet. Reason is the drop reason vipstack's
// engine counts it under ("" when it varies, as for random bytes).
type Class struct {
	Name   string
	Reason string
	// Unicast packets go to the target's own address, the others to
	// 224.0.0.18.
	Unicast bool
	TTL     int
	// Build returns the packet's source and VRRP payload; r is the
	// flooder's random source, self its real address, dst where the
	// packet goes.
	Build func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte)
}

// advert marshals an advertisement that would make a master step down if
// it were accepted (priority 254).
func advert(version int, vrid uint8, vip, src, dst netip.Addr) []byte {
	a := vrrp.Advertisement{Version: version, VRID: vrid, Priority: 254, Interval: 100 * time.Millisecond, Addresses: []netip.Addr{vip}}
	if version == 2 {
		a.Interval = time.Second
	}
	b, err := a.Marshal(src, dst)
	if err != nil {
		panic(fmt.Sprintf("marshal flood advert: %v", err)) // a bug in this file
	}
	return b
}

// spoofed returns a random source in 198.18.0.0/15 that is none of the
// topology's hosts (198.18.0.10..20).
func spoofed(r *rand.Rand) netip.Addr {
	for {
		a := netip.AddrFrom4([4]byte{198, 18 + byte(r.IntN(2)), byte(r.IntN(256)), byte(1 + r.IntN(254))})
		if b := a.As4(); b[2] != 0 || b[3] < 10 || b[3] > 20 {
			return a
		}
	}
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// Classes are the packets of the flood against Conf, sent in turn.
func Classes() []Class {
	return []Class{
		{Name: "wrong VRID", Reason: "other_vrid", TTL: 255, Build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 99, VIPs[0], self, dst)
		}},
		{Name: "bad checksum", Reason: "bad_checksum", TTL: 255, Build: func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			b := advert(3, 51, VIPs[0], self, dst)
			b[6] ^= byte(1 + r.IntN(255))
			return self, b
		}},
		{Name: "TTL 64", Reason: "bad_ttl", TTL: 64, Build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 51, VIPs[0], self, dst)
		}},
		{Name: "truncated", Reason: "too_short", TTL: 255, Build: func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 51, VIPs[0], self, dst)[:r.IntN(8)]
		}},
		{Name: "wrong version", Reason: "bad_version", TTL: 255, Build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			b := advert(3, 51, VIPs[0], self, dst)
			b[0] = 0x41 // version 4, type 1
			return self, b
		}},
		{Name: "VRRPv2 on our v3 VRID, spoofed sources", Reason: "conflict_version", TTL: 255, Build: func(r *rand.Rand, _, dst netip.Addr) (netip.Addr, []byte) {
			src := spoofed(r)
			return src, advert(2, 51, VIPs[0], src, dst)
		}},
		{Name: "garbage", TTL: 255, Build: func(r *rand.Rand, self, _ netip.Addr) (netip.Addr, []byte) {
			return self, randomBytes(r, r.IntN(64))
		}},
		{Name: "valid advert from a non-peer (unicast)", Reason: "not_a_peer", Unicast: true, TTL: 255, Build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 52, VIPs[1], self, dst)
		}},
		{Name: "garbage (unicast)", Unicast: true, TTL: 255, Build: func(r *rand.Rand, self, _ netip.Addr) (netip.Addr, []byte) {
			return self, randomBytes(r, 8+r.IntN(32))
		}},
	}
}

// Flooder sends hand-made IPv4 packets with any source from a raw socket
// in its host's namespace.
type Flooder struct {
	pc   net.PacketConn
	raw  *ipv4.RawConn
	self netip.Addr
}

// NewFlooder opens the raw socket in h's namespace (CAP_NET_RAW).
func NewFlooder(h *testnet.Host) (*Flooder, error) {
	f := &Flooder{self: h.IPv4.Addr()}
	err := h.Do(func() error {
		pc, err := net.ListenPacket("ip4:112", "0.0.0.0")
		if err != nil {
			return err
		}
		f.pc = pc
		if f.raw, err = ipv4.NewRawConn(pc); err != nil {
			return err
		}
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		return f.raw.SetMulticastInterface(ifi)
	})
	if err != nil {
		if f.pc != nil {
			f.pc.Close()
		}
		return nil, fmt.Errorf("vrrpflood: raw socket in %s: %w", h.Name, err)
	}
	return f, nil
}

// Close closes the socket.
func (f *Flooder) Close() error { return f.pc.Close() }

// Result counts what a flood sent.
type Result struct {
	Sent     map[string]int // by class name
	Total    int
	Errors   int // sends that failed (a full send queue loses a packet, as on a real link)
	Duration time.Duration
}

// Flood sends classes in turn to 224.0.0.18 and, for unicast ones, to
// target, paced at rate packets per second, until max packets or until
// limit has passed. seed fixes the random parts.
func (f *Flooder) Flood(classes []Class, target netip.Addr, max, rate int, limit time.Duration, seed uint64) Result {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	res := Result{Sent: map[string]int{}}
	start := time.Now()
	for res.Total < max {
		if res.Total%100 == 0 {
			elapsed := time.Since(start)
			if elapsed > limit {
				break
			}
			// Pacing the load generator (not waiting for the code under test).
			if ahead := time.Duration(res.Total)*time.Second/time.Duration(rate) - elapsed; ahead > 0 {
				time.Sleep(ahead)
			}
		}
		c := classes[res.Total%len(classes)]
		dst := vrrp.MulticastIPv4
		if c.Unicast {
			dst = target
		}
		src, payload := c.Build(r, f.self, dst)
		h := &ipv4.Header{Version: ipv4.Version, Len: ipv4.HeaderLen, TOS: 0xc0, TotalLen: ipv4.HeaderLen + len(payload),
			TTL: c.TTL, Protocol: vrrp.ProtocolNumber, Src: src.AsSlice(), Dst: dst.AsSlice()}
		if err := f.raw.WriteTo(h, payload, nil); err != nil {
			res.Errors++
		}
		res.Sent[c.Name]++
		res.Total++
	}
	res.Duration = time.Since(start)
	return res
}

// AddrWatcher reads a namespace's IPv4 addresses over netlink, cheaply
// enough to sample every 10 ms.
type AddrWatcher struct {
	h    *netlink.Handle
	link netlink.Link
}

// NewAddrWatcher opens a netlink handle in host's namespace.
func NewAddrWatcher(host *testnet.Host) (*AddrWatcher, error) {
	ns, err := netns.GetFromName(host.Name)
	if err != nil {
		return nil, fmt.Errorf("vrrpflood: open netns %s: %w", host.Name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("vrrpflood: netlink handle in %s: %w", host.Name, err)
	}
	link, err := h.LinkByName(host.Link)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("vrrpflood: %s in %s: %w", host.Link, host.Name, err)
	}
	return &AddrWatcher{h: h, link: link}, nil
}

// Close closes the handle.
func (w *AddrWatcher) Close() { w.h.Close() }

// Holds returns which of vips are configured.
func (w *AddrWatcher) Holds(vips []netip.Addr) ([]bool, error) {
	addrs, err := w.h.AddrList(w.link, netlink.FAMILY_V4)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(vips))
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			if i := slices.Index(vips, ip); i >= 0 {
				out[i] = true
			}
		}
	}
	return out, nil
}
