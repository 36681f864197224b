package main

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// vrrpVIPs are the VIPs of VI_1 (multicast) and VI_2 (unicast).
var vrrpVIPs = []netip.Addr{netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101")}

// vrrpConf is both nodes' keepalived.conf (as internal/engine's
// TestVRRPFlood runs it).
func vrrpConf(routerID string, prio int, self, peer netip.Addr) string {
	return fmt.Sprintf(`global_defs {
    router_id %[1]s
    vrrp_version 3
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority %[2]d
    advert_int 0.1
    virtual_ipaddress {
        198.18.0.100/32
    }
}
vrrp_instance VI_2 {
    state BACKUP
    interface eth0
    virtual_router_id 52
    priority %[2]d
    advert_int 0.1
    unicast_src_ip %[3]s
    unicast_peer {
        %[4]s
    }
    virtual_ipaddress {
        198.18.0.101/32
    }
}
`, routerID, prio, self, peer)
}

// packetClass is one kind of bogus packet.
type packetClass struct {
	unicast bool
	ttl     int
	build   func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte)
}

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

// packetClasses are sent in turn: the same mix as TestVRRPFlood.
func packetClasses() []packetClass {
	return []packetClass{
		{ttl: 255, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) { // wrong VRID
			return self, advert(3, 99, vrrpVIPs[0], self, dst)
		}},
		{ttl: 255, build: func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) { // bad checksum
			b := advert(3, 51, vrrpVIPs[0], self, dst)
			b[6] ^= byte(1 + r.IntN(255))
			return self, b
		}},
		{ttl: 64, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) { // TTL 64
			return self, advert(3, 51, vrrpVIPs[0], self, dst)
		}},
		{ttl: 255, build: func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) { // truncated
			return self, advert(3, 51, vrrpVIPs[0], self, dst)[:r.IntN(8)]
		}},
		{ttl: 255, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) { // version 4
			b := advert(3, 51, vrrpVIPs[0], self, dst)
			b[0] = 0x41
			return self, b
		}},
		{ttl: 255, build: func(r *rand.Rand, _, dst netip.Addr) (netip.Addr, []byte) { // v2 on the v3 VRID, spoofed
			src := spoofed(r)
			return src, advert(2, 51, vrrpVIPs[0], src, dst)
		}},
		{ttl: 255, build: func(r *rand.Rand, self, _ netip.Addr) (netip.Addr, []byte) { // garbage
			return self, randomBytes(r, r.IntN(64))
		}},
		{unicast: true, ttl: 255, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) { // valid, not a peer
			return self, advert(3, 52, vrrpVIPs[1], self, dst)
		}},
		{unicast: true, ttl: 255, build: func(r *rand.Rand, self, _ netip.Addr) (netip.Addr, []byte) { // garbage, unicast
			return self, randomBytes(r, 8+r.IntN(32))
		}},
	}
}

// flooder sends hand-made IPv4 packets from a raw socket in a namespace.
type flooder struct {
	pc   net.PacketConn
	raw  *ipv4.RawConn
	self netip.Addr
}

func newFlooder(h *testnet.Host) (*flooder, error) {
	f := &flooder{self: h.IPv4.Addr()}
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
		return nil, fmt.Errorf("raw socket in %s: %w", h.Name, err)
	}
	return f, nil
}

// flood sends max packets (or for limit) at rate per second; it returns
// how many it sent and how long that took.
func (f *flooder) flood(target netip.Addr, max, rate int, limit time.Duration, seed uint64) (int, time.Duration) {
	classes := packetClasses()
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	start := time.Now()
	n := 0
	for ; n < max; n++ {
		if n%100 == 0 {
			elapsed := time.Since(start)
			if elapsed > limit {
				break
			}
			if ahead := time.Duration(n)*time.Second/time.Duration(rate) - elapsed; ahead > 0 {
				time.Sleep(ahead) // pacing the load generator
			}
		}
		c := classes[n%len(classes)]
		dst := vrrp.MulticastIPv4
		if c.unicast {
			dst = target
		}
		src, payload := c.build(r, f.self, dst)
		h := &ipv4.Header{Version: ipv4.Version, Len: ipv4.HeaderLen, TOS: 0xc0, TotalLen: ipv4.HeaderLen + len(payload),
			TTL: c.ttl, Protocol: vrrp.ProtocolNumber, Src: src.AsSlice(), Dst: dst.AsSlice()}
		_ = f.raw.WriteTo(h, payload, nil) // a full send queue loses a packet, as on a real link
	}
	return n, time.Since(start)
}

// addrWatcher reads a namespace's IPv4 addresses over netlink.
type addrWatcher struct {
	h    *netlink.Handle
	link netlink.Link
}

func newAddrWatcher(host *testnet.Host) (*addrWatcher, error) {
	ns, err := netns.GetFromName(host.Name)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, err
	}
	link, err := h.LinkByName(host.Link)
	if err != nil {
		h.Close()
		return nil, err
	}
	return &addrWatcher{h: h, link: link}, nil
}

func (w *addrWatcher) holds() ([]bool, error) {
	addrs, err := w.h.AddrList(w.link, netlink.FAMILY_V4)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(vrrpVIPs))
	for _, a := range addrs {
		if ip, ok := netip.AddrFromSlice(a.IP.To4()); ok {
			if i := slices.Index(vrrpVIPs, ip); i >= 0 {
				out[i] = true
			}
		}
	}
	return out, nil
}

// startVRRP starts impl on h with conf; the daemons log at their normal
// level (keepalived without -D, vipstack at info).
func (b *bench) startVRRP(h *testnet.Host, impl, conf, dir string) (*peers.Node, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	var args []string
	name := b.bin
	switch impl {
	case implKeepalived:
		name = "keepalived"
		args = []string{"-n", "-l", "--vrrp", "-f", path, "-p", filepath.Join(dir, "keepalived.pid"), "-r", filepath.Join(dir, "vrrp.pid")}
	case implVipstack:
		args = []string{"vrrp", "-f", path, "--state-dir", dir, "--metrics-addr", "127.0.0.1:9660"}
	}
	n, err := peers.StartCmd(h, h.Command(name, args...))
	if err != nil {
		return nil, err
	}
	b.atClose(func() {
		if n.Alive() {
			n.Kill()
		}
	})
	return n, nil
}

// vrrp floods keepalived and vipstack in turn with the same packets.
func (b *bench) vrrp(o options) ([]vrrpFigures, error) {
	b.say("vrrp: building three namespaces")
	topo, err := b.topology(testnet.Options{Hosts: 3, Prefix: "vf"})
	if err != nil {
		return nil, err
	}
	master, backup, attacker := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	fl, err := newFlooder(attacker)
	if err != nil {
		return nil, err
	}
	defer fl.pc.Close()
	var watch []*addrWatcher
	for _, h := range []*testnet.Host{master, backup} {
		w, err := newAddrWatcher(h)
		if err != nil {
			return nil, err
		}
		defer w.h.Close()
		watch = append(watch, w)
	}
	var figs []vrrpFigures
	for _, impl := range []string{implKeepalived, implVipstack} {
		f, err := b.vrrpOne(o, impl, topo, fl, watch)
		if err != nil {
			return figs, fmt.Errorf("%s: %w", impl, err)
		}
		figs = append(figs, f)
	}
	return figs, nil
}

func (b *bench) vrrpOne(o options, impl string, topo *testnet.Topology, fl *flooder, watch []*addrWatcher) (vrrpFigures, error) {
	f := vrrpFigures{Impl: impl, Counted: -1}
	master, backup := topo.Hosts[0], topo.Hosts[1]
	var nodes []*peers.Node
	for i, n := range []struct {
		h, peer *testnet.Host
		prio    int
	}{{master, backup, 150}, {backup, master, 100}} {
		node, err := b.startVRRP(n.h, impl, vrrpConf(fmt.Sprintf("n%d", i+1), n.prio, n.h.IPv4.Addr(), n.peer.IPv4.Addr()),
			filepath.Join(b.work, impl, strconv.Itoa(i+1)))
		if err != nil {
			return f, err
		}
		nodes = append(nodes, node)
	}
	defer func() {
		for _, n := range nodes {
			if n.Alive() {
				n.Term()
			}
		}
	}()
	b.say("vrrp: %s master and backup started; waiting for the master to hold both VIPs", impl)
	for _, vip := range vrrpVIPs {
		if _, err := peers.WaitSoleHolder(topo.Hosts[:2], vip, master, 2*time.Second, 30*time.Second); err != nil {
			return f, fmt.Errorf("before the flood: %w\n%s", err, tailLog(nodes[0].Log()))
		}
	}
	cpu := func() (time.Duration, time.Duration, error) {
		m, err1 := groupCPU(nodes[0].Pid())
		bk, err2 := groupCPU(nodes[1].Pid())
		return m, bk, errorsJoin(err1, err2)
	}
	window := time.Duration(o.vrrpPackets) * time.Second / time.Duration(o.vrrpRate)
	window = min(window, o.vrrpLimit)
	m0, b0, err := cpu()
	if err != nil {
		return f, err
	}
	b.say("vrrp: %s idle for %v", impl, window.Round(time.Millisecond))
	time.Sleep(window) // the idle window measured
	m1, b1, err := cpu()
	if err != nil {
		return f, err
	}
	f.MasterIdle, f.BackupIdle = m1-m0, b1-b0

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			mh, err1 := watch[0].holds()
			bh, err2 := watch[1].holds()
			f.Samples++
			if err1 != nil || err2 != nil {
				f.Violations++
				continue
			}
			if slices.Contains(mh, false) || slices.Contains(bh, true) {
				f.Violations++
			}
			for i := range vrrpVIPs {
				if !mh[i] || bh[i] {
					f.Moved[i]++
				}
			}
		}
	}()
	b.say("vrrp: flooding %s: %d packets at %d/s", impl, o.vrrpPackets, o.vrrpRate)
	f.Sent, f.Flood = fl.flood(master.IPv4.Addr(), o.vrrpPackets, o.vrrpRate, o.vrrpLimit, 1)
	close(stop)
	wg.Wait()
	m2, b2, err := cpu()
	if err != nil {
		return f, err
	}
	f.MasterCPU, f.BackupCPU = m2-m1, b2-b1
	if f.Violations > 0 {
		// What the nodes said about their states, for the report.
		var why []string
		for _, l := range strings.Split(nodes[0].Log()+nodes[1].Log(), "\n") {
			if strings.Contains(l, "Entering") || strings.Contains(l, "higher priority") || strings.Contains(l, "MASTER") {
				why = append(why, l)
			}
		}
		if len(why) > 20 {
			why = why[:20]
		}
		b.say("vrrp: %s: mastership moved in %d of %d samples; the nodes logged:\n  %s", impl, f.Violations, f.Samples, strings.Join(why, "\n  "))
	}
	if impl == implVipstack {
		time.Sleep(500 * time.Millisecond) // let the engine read what is still queued before counting
		if text, err := httpGetIn(master, "127.0.0.1:9660", "/metrics"); err == nil {
			f.Counted = metricTotal(text, "vipstack_vrrp_packets_dropped_total")
		}
	}
	return f, nil
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func tailLog(s string) string {
	l := strings.Split(strings.TrimSpace(s), "\n")
	if len(l) > 30 {
		l = l[len(l)-30:]
	}
	return strings.Join(l, "\n")
}

// metricTotal sums every series of metric name in a Prometheus text
// exposition.
func metricTotal(text, name string) float64 {
	var total float64
	for _, line := range strings.Split(text, "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			total += v
		}
	}
	return total
}
