package engine_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/net/ipv4"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// floodPrefix starts the namespace names of the flood test.
const floodPrefix = "vf"

// The flood's bounds: it stops at floodPackets or after floodFor,
// whichever comes first, and is paced at floodRate packets per second.
const (
	floodPackets = 60_000
	floodRate    = 15_000
	floodFor     = 8 * time.Second
)

// floodConf is the configuration of both flooded nodes: VI_1 multicast on
// VRID 51, VI_2 unicast (to peer only) on VRID 52, VRRPv3 at 0.5 s: the
// backup's Master_Down interval is 1.5 s + skew, so a master whose adverts
// the flood delays or drops loses the VIP, while the machine's other load
// (tests run in parallel on two cores) cannot starve it that long. bench/flood
// runs the same flood at 0.1 s.
func floodConf(routerID string, prio int, self, peer netip.Addr) string {
	return fmt.Sprintf(`global_defs {
    router_id %[1]s
    vrrp_version 3
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority %[2]d
    advert_int 0.5
    virtual_ipaddress {
        198.18.0.100/32
    }
}
vrrp_instance VI_2 {
    state BACKUP
    interface eth0
    virtual_router_id 52
    priority %[2]d
    advert_int 0.5
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

// floodVIPs are the VIPs of VI_1 and VI_2.
var floodVIPs = []netip.Addr{netip.MustParseAddr("198.18.0.100"), netip.MustParseAddr("198.18.0.101")}

// floodClass is one kind of bogus packet. Reason is the drop reason the
// engine must count it under ("" when it varies, as for random bytes).
type floodClass struct {
	Name   string
	Reason string
	// Unicast packets go to the target's own address, the others to
	// 224.0.0.18.
	Unicast bool
	TTL     int
	// build returns the packet's source and VRRP payload; r is the
	// flooder's own random source, self its real address, dst where the
	// packet goes.
	build func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte)
}

// advert marshals a VRRPv3 advertisement that would make a master step
// down if it were accepted (priority 254).
func advert(version int, vrid uint8, vip netip.Addr, src, dst netip.Addr) []byte {
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
// topology's hosts (198.18.0.11..13).
func spoofed(r *rand.Rand) netip.Addr {
	for {
		a := netip.AddrFrom4([4]byte{198, 18 + byte(r.IntN(2)), byte(r.IntN(256)), byte(1 + r.IntN(254))})
		if b := a.As4(); b[2] != 0 || b[3] < 10 || b[3] > 20 {
			return a
		}
	}
}

// floodClasses are the packets of the flood, sent in turn.
func floodClasses() []floodClass {
	mc := vrrp.MulticastIPv4
	return []floodClass{
		{Name: "wrong VRID", Reason: "other_vrid", TTL: 255, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 99, floodVIPs[0], self, dst)
		}},
		{Name: "bad checksum", Reason: "bad_checksum", TTL: 255, build: func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			b := advert(3, 51, floodVIPs[0], self, dst)
			b[6] ^= byte(1 + r.IntN(255))
			return self, b
		}},
		{Name: "TTL 64", Reason: "bad_ttl", TTL: 64, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 51, floodVIPs[0], self, dst)
		}},
		{Name: "truncated", Reason: "too_short", TTL: 255, build: func(r *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 51, floodVIPs[0], self, dst)[:r.IntN(8)]
		}},
		{Name: "wrong version", Reason: "bad_version", TTL: 255, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			b := advert(3, 51, floodVIPs[0], self, dst)
			b[0] = 0x41 // version 4, type 1
			return self, b
		}},
		{Name: "VRRPv2 on our v3 VRID, spoofed sources", Reason: "conflict_version", TTL: 255, build: func(r *rand.Rand, _, dst netip.Addr) (netip.Addr, []byte) {
			src := spoofed(r)
			return src, advert(2, 51, floodVIPs[0], src, mc)
		}},
		{Name: "garbage", TTL: 255, build: func(r *rand.Rand, self, _ netip.Addr) (netip.Addr, []byte) {
			b := make([]byte, r.IntN(64))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return self, b
		}},
		{Name: "valid advert from a non-peer (unicast)", Reason: "not_a_peer", Unicast: true, TTL: 255, build: func(_ *rand.Rand, self, dst netip.Addr) (netip.Addr, []byte) {
			return self, advert(3, 52, floodVIPs[1], self, dst)
		}},
		{Name: "garbage (unicast)", Unicast: true, TTL: 255, build: func(r *rand.Rand, self, _ netip.Addr) (netip.Addr, []byte) {
			b := make([]byte, 8+r.IntN(32))
			for i := range b {
				b[i] = byte(r.Uint32())
			}
			return self, b
		}},
	}
}

// flooder sends hand-made IPv4 packets with any source from a raw socket
// in its own namespace.
type flooder struct {
	raw  *ipv4.RawConn
	self netip.Addr
}

func newFlooder(t *testing.T, h *testnet.Host) *flooder {
	t.Helper()
	s := newRawSender(t, h)
	return &flooder{raw: s.raw, self: s.src}
}

// floodResult counts what was sent, by class name.
type floodResult struct {
	Sent     map[string]int
	Total    int
	Errors   int
	Duration time.Duration
}

// flood sends the classes in turn to 224.0.0.18 and, for unicast ones, to
// target, paced at rate packets per second, until max packets or until
// limit has passed.
func (f *flooder) flood(classes []floodClass, target netip.Addr, max, rate int, limit time.Duration, seed uint64) floodResult {
	r := rand.New(rand.NewPCG(seed, seed^0x5eed))
	res := floodResult{Sent: map[string]int{}}
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
		src, payload := c.build(r, f.self, dst)
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

// addrWatcher reads a namespace's addresses over netlink, cheaply enough
// to sample every 10 ms.
type addrWatcher struct {
	h    *netlink.Handle
	link netlink.Link
}

func newAddrWatcher(t *testing.T, host *testnet.Host) *addrWatcher {
	t.Helper()
	ns, err := netns.GetFromName(host.Name)
	if err != nil {
		t.Fatalf("open netns %s: %v", host.Name, err)
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		t.Fatalf("netlink handle in %s: %v", host.Name, err)
	}
	t.Cleanup(h.Close)
	link, err := h.LinkByName(host.Link)
	if err != nil {
		t.Fatalf("%s in %s: %v", host.Link, host.Name, err)
	}
	return &addrWatcher{h: h, link: link}
}

// holds returns which of vips are configured.
func (w *addrWatcher) holds(vips []netip.Addr) ([]bool, error) {
	addrs, err := w.h.AddrList(w.link, netlink.FAMILY_V4)
	if err != nil {
		return nil, err
	}
	out := make([]bool, len(vips))
	for _, a := range addrs {
		ip, ok := netip.AddrFromSlice(a.IP.To4())
		if !ok {
			continue
		}
		if i := slices.Index(vips, ip); i >= 0 {
			out[i] = true
		}
	}
	return out, nil
}

// processCPU returns the CPU time (user + system) of pid and of every
// process in its process group, from /proc.
func processCPU(pid int) (time.Duration, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	var ticks int64
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name, which is in parentheses: state
		// (3), ppid, pgrp (5), ... utime (14), stime (15).
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			continue
		}
		if pgrp, _ := strconv.Atoi(f[2]); pgrp != pid && p != pid {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64)
		st, _ := strconv.ParseInt(f[12], 10, 64)
		ticks += u + st
	}
	return time.Duration(ticks) * time.Second / 100, nil // USER_HZ is 100 on Linux
}

// TestVRRPFlood: a vipstack master (priority 150) and a vipstack backup
// (100), each with a multicast instance (VI_1) and a unicast one (VI_2),
// are flooded from a third namespace with protocol-112 packets that would
// each make the master step down if accepted (priority 254): wrong VRID,
// bad checksum, TTL 64, truncated, wrong version, VRRPv2 on the v3 VRID
// from spoofed sources, random bytes, and valid adverts for the unicast
// VRID from a host that is not a configured peer. While the flood runs,
// the VIPs are sampled every 10 ms on both nodes and the master's /status
// is fetched every 100 ms. Asserted: the master holds both VIPs and the
// backup neither in every sample; neither node changed state during the
// flood (transition counters, which see what 10 ms samples could miss); every expected drop reason was
// counted on the master; every /status answer came and said MASTER; the
// conflict list in /status stays bounded although the conflicting
// sources are many.
func TestVRRPFlood(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 3, Prefix: floodPrefix})
	master, backup, attacker := topo.Hosts[0], topo.Hosts[1], topo.Hosts[2]
	const (
		metricsAddr = "127.0.0.1:9660"
		statusAddr  = "127.0.0.1:9661"
	)
	var nodes []*peers.Node
	for _, n := range []struct {
		h, peer *testnet.Host
		prio    int
	}{{master, backup, 150}, {backup, master, 100}} {
		conf := floodConf(n.h.Name, n.prio, n.h.IPv4.Addr(), n.peer.IPv4.Addr())
		// Info level: at debug, every dropped packet is a log line.
		node, err := peers.Start(n.h, peers.Vipstack, conf, t.TempDir(), bin,
			"--metrics-addr", metricsAddr, "--status-addr", statusAddr, "--log-level", "info")
		if err != nil {
			t.Fatal(err)
		}
		logOnFailure(t, node)
		nodes = append(nodes, node)
	}
	for _, vip := range floodVIPs {
		if _, err := peers.WaitSoleHolder(topo.Hosts[:2], vip, master, time.Second, 20*time.Second); err != nil {
			t.Fatalf("before the flood: %v", err)
		}
	}
	watch := []*addrWatcher{newAddrWatcher(t, master), newAddrWatcher(t, backup)}
	enginePid, err := nodes[0].EnginePid()
	if err != nil {
		t.Fatal(err)
	}
	cpuBefore, _ := processCPU(enginePid)
	// Transitions so far (a start-up race may have made the backup master
	// for a moment): the flood must add none.
	transitions := func(h *testnet.Host) map[string]float64 {
		t.Helper()
		m, err := httpGet(h, metricsAddr, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return metricSum(m, "vipstack_vrrp_transitions_total", "to")
	}
	masterBefore, backupBefore := transitions(master), transitions(backup)

	// Observers: VIP holders every 10 ms, /status every 100 ms.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var (
		mu          sync.Mutex
		samples     int
		violations  []string
		statusCalls int
		statusFails []string
	)
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(10 * time.Millisecond) // the sampling period, observing from outside
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for i, w := range watch {
				held, err := w.holds(floodVIPs)
				mu.Lock()
				switch {
				case err != nil:
					violations = append(violations, fmt.Sprintf("reading addresses of node%d: %v", i+1, err))
				case i == 0 && slices.Contains(held, false):
					violations = append(violations, fmt.Sprintf("sample %d: the master holds %v of %v", samples, held, floodVIPs))
				case i == 1 && slices.Contains(held, true):
					violations = append(violations, fmt.Sprintf("sample %d: the backup holds %v of %v", samples, held, floodVIPs))
				}
				if i == 1 {
					samples++
				}
				mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		tick := time.NewTicker(100 * time.Millisecond) // probing period
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			msg := ""
			body, err := httpGet(master, statusAddr, "/status")
			if err != nil {
				msg = err.Error()
			} else {
				var st struct {
					Instances []engine.InstanceStatus `json:"instances"`
				}
				if err := json.Unmarshal([]byte(body), &st); err != nil {
					msg = fmt.Sprintf("decode /status: %v", err)
				} else {
					for _, in := range st.Instances {
						if in.State != "MASTER" {
							msg += fmt.Sprintf("%s is %s; ", in.Name, in.State)
						}
					}
				}
			}
			mu.Lock()
			statusCalls++
			if msg != "" {
				statusFails = append(statusFails, msg)
			}
			mu.Unlock()
		}
	}()

	res := newFlooder(t, attacker).flood(floodClasses(), master.IPv4.Addr(), floodPackets, floodRate, floodFor, 1)
	close(stop)
	wg.Wait()
	cpuAfter, _ := processCPU(enginePid)
	t.Logf("flood: %d packets in %v (%d send errors); master engine CPU during the flood %v; %d samples, %d /status calls",
		res.Total, res.Duration.Round(time.Millisecond), res.Errors, cpuAfter-cpuBefore, samples, statusCalls)

	if len(violations) > 0 {
		t.Errorf("mastership moved during the flood (%d of %d samples), first: %s", len(violations), samples, violations[0])
	}
	if samples < 50 {
		t.Errorf("only %d samples taken: the observer could not watch the flood", samples)
	}
	if len(statusFails) > 0 {
		t.Errorf("%d of %d /status requests failed or did not say MASTER, first: %s", len(statusFails), statusCalls, statusFails[0])
	}
	if res.Total == 0 || res.Errors == res.Total {
		t.Fatalf("the flood sent nothing (%d packets, %d errors)", res.Total, res.Errors)
	}

	// Every reason is counted on the master; the receive queue may still
	// hold the last packets, so wait (bounded) for the counters.
	var metrics string
	want := map[string]bool{}
	for _, c := range floodClasses() {
		if c.Reason != "" {
			want[c.Reason] = true
		}
	}
	poll(t, 10*time.Second, "every flood drop reason counted on the master", func() (bool, error) {
		m, err := httpGet(master, metricsAddr, "/metrics")
		if err != nil {
			return false, err
		}
		metrics = m
		got := metricSum(m, "vipstack_vrrp_packets_dropped_total", "reason")
		for r := range want {
			if got[r] == 0 {
				return false, fmt.Errorf("no %s drop counted", r)
			}
		}
		return true, nil
	})
	dropped := metricSum(metrics, "vipstack_vrrp_packets_dropped_total", "reason")
	var total float64
	for r, n := range dropped {
		total += n
		t.Logf("master dropped %-18s %v", r, n)
	}
	t.Logf("master counted %v drops of %d packets sent", total, res.Total)
	if diff := cmp.Diff(masterBefore, transitions(master)); diff != "" {
		t.Errorf("the master changed state during the flood: vipstack_vrrp_transitions_total by state entered (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(backupBefore, transitions(backup)); diff != "" {
		t.Errorf("the backup changed state during the flood: vipstack_vrrp_transitions_total by state entered (-before +after):\n%s", diff)
	}

	body, err := httpGet(master, statusAddr, "/status")
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Instances []engine.InstanceStatus `json:"instances"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("decode /status: %v", err)
	}
	for _, in := range st.Instances {
		t.Logf("/status %s: %s, %d conflicts listed, %d bytes of status", in.Name, in.State, len(in.Conflicts), len(body))
		if len(in.Conflicts) > maxListedConflicts {
			t.Errorf("/status %s lists %d conflicts after a flood from %d spoofed sources, want at most %d: every spoofed source costs memory",
				in.Name, len(in.Conflicts), res.Sent["VRRPv2 on our v3 VRID, spoofed sources"], maxListedConflicts)
		}
	}
}

// maxListedConflicts bounds the conflicts /status lists per instance.
const maxListedConflicts = 64
