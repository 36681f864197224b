package engine_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/vrrpflood"
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

// floodAdvert is the flooded nodes' advert interval (vrrpflood.Conf):
// 0.5 s, so the backup's Master_Down interval is 1.5 s + skew and a master
// whose adverts the flood delays or drops loses the VIP, while the
// machine's other load (tests run in parallel on two cores) cannot starve
// it that long. bench/flood runs the same flood at 0.1 s.
const floodAdvert = "0.5"

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
		conf := vrrpflood.Conf(n.h.Name, n.prio, n.h.IPv4.Addr(), n.peer.IPv4.Addr(), floodAdvert)
		// Info level: at debug, every dropped packet is a log line.
		node, err := peers.Start(n.h, peers.Vipstack, conf, t.TempDir(), bin,
			"--metrics-addr", metricsAddr, "--status-addr", statusAddr, "--log-level", "info")
		if err != nil {
			t.Fatal(err)
		}
		logOnFailure(t, node)
		nodes = append(nodes, node)
	}
	for _, vip := range vrrpflood.VIPs {
		if _, err := peers.WaitSoleHolder(topo.Hosts[:2], vip, master, time.Second, 20*time.Second); err != nil {
			t.Fatalf("before the flood: %v", err)
		}
	}
	watch := []*vrrpflood.AddrWatcher{newAddrWatcher(t, master), newAddrWatcher(t, backup)}
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
				held, err := w.Holds(vrrpflood.VIPs)
				mu.Lock()
				switch {
				case err != nil:
					violations = append(violations, fmt.Sprintf("reading addresses of node%d: %v", i+1, err))
				case i == 0 && slices.Contains(held, false):
					violations = append(violations, fmt.Sprintf("sample %d: the master holds %v of %v", samples, held, vrrpflood.VIPs))
				case i == 1 && slices.Contains(held, true):
					violations = append(violations, fmt.Sprintf("sample %d: the backup holds %v of %v", samples, held, vrrpflood.VIPs))
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

	res := newFlooder(t, attacker).Flood(vrrpflood.Classes(), master.IPv4.Addr(), floodPackets, floodRate, floodFor, 1)
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
	for _, c := range vrrpflood.Classes() {
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

func newFlooder(t *testing.T, h *testnet.Host) *vrrpflood.Flooder {
	t.Helper()
	f, err := vrrpflood.NewFlooder(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func newAddrWatcher(t *testing.T, h *testnet.Host) *vrrpflood.AddrWatcher {
	t.Helper()
	w, err := vrrpflood.NewAddrWatcher(h)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Close)
	return w
}
