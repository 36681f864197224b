package ipfailover

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// envErrorLine is the shape of every line of a rejection: it starts with
// the variable or the flag it is about.
var envErrorLine = regexp.MustCompile(`^(OPENSHIFT_HA_[^=: ]*|HA_EXCLUDED_VRRP_IDS|--[a-z-]+|flag for [^:]*)( \(default\))?[=: ]`)

// fuzzInput turns the fuzzer's bytes into an Input: env is the process
// environment, one KEY=value a line (EnvFrom picks the family out of it);
// flags is one NAME=value a line, keyed by variable name as the CLI fills
// Input.Flags.
func fuzzInput(env, flags []byte) Input {
	in := Input{Env: EnvFrom(strings.Split(string(env), "\n")), Flags: map[string]string{}}
	for _, l := range strings.Split(string(flags), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			in.Flags[k] = v
		}
	}
	return in
}

// FuzzParse checks the OPENSHIFT_HA_* conversion: Parse never panics and
// returns exactly one of a spec and an error; every error line names the
// variable or flag; an accepted spec keeps every documented bound; and the
// whole pure pipeline on it (RankOf, NewPlan, AssignVRIDs, Render read
// back by the keepalived.conf reader) succeeds, places every VIP in
// exactly one group and gives the groups distinct, non-excluded VRIDs. The
// seed corpus is testdata/env/*.env (seed 002's documented pod spec among
// them) and the crashers kept in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	files, err := filepath.Glob(filepath.Join("testdata", "env", "*.env"))
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed environments in testdata/env: %v", err)
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, []byte{}, uint8(0), true)
		f.Add(data, []byte{}, uint8(1), false)
	}
	f.Add([]byte("OPENSHIFT_HA_VIRTUAL_IPS=10.9.9.9\nOPENSHIFT_HA_MONITOR_PORT=8080\n"),
		[]byte(EnvVirtualIPs+"=10.1.1.1-3\n"+EnvMonitorPort+"=443\n"+EnvVRIDOffset+"=40\n"+EnvConfigName+"=pool-a\n"), uint8(2), true)
	f.Add([]byte("OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1\nOPENSHIFT_HA_VIRTUAL_IP=x\nOPENSHIFT_HA_PREEMPTION=preempt_nodelay 300\n"),
		[]byte("NOPE=1\n"), uint8(0), false)
	f.Add([]byte("OPENSHIFT_HA_VIRTUAL_IPS=10.1.1.1-255\nOPENSHIFT_HA_VIP_GROUPS=255\nOPENSHIFT_HA_VRRP_ID_OFFSET=0\n"), []byte{}, uint8(7), true)

	f.Fuzz(func(t *testing.T, env, flags []byte, rank uint8, checkPassed bool) {
		in := fuzzInput(env, flags)
		s, err := Parse(in)
		if (s == nil) == (err == nil) {
			t.Fatalf("Parse returned spec %v and error %v; want exactly one", s != nil, err)
		}
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if !envErrorLine.MatchString(l) {
					t.Fatalf("error line %q does not start with the variable or flag", l)
				}
			}
			return
		}
		checkSpec(t, s)
		checkPipeline(t, s, rank, checkPassed)
	})
}

// checkSpec checks the bounds an accepted spec promises.
func checkSpec(t *testing.T, s *Spec) {
	t.Helper()
	if len(s.VIPs) == 0 || len(s.VIPs) > MaxVIPs {
		t.Fatalf("accepted %d VIPs; want 1 to %d", len(s.VIPs), MaxVIPs)
	}
	for i, a := range s.VIPs {
		if err := checkVIP(a); err != nil || a.Is4() != s.VIPs[0].Is4() || slices.Contains(s.VIPs[:i], a) {
			t.Fatalf("accepted VIP %v (of %v): %v", a, s.VIPs[0], err)
		}
	}
	for i, a := range s.Peers {
		if a.Is4() != s.VIPs[0].Is4() || slices.Contains(s.Peers[:i], a) || !a.IsGlobalUnicast() {
			t.Fatalf("accepted peer %v (peers %v, VIP family of %v)", a, s.Peers, s.VIPs[0])
		}
	}
	switch {
	case s.VIPGroups < 0 || s.VIPGroups > len(s.VIPs):
		t.Fatalf("accepted %d VIP groups for %d VIPs", s.VIPGroups, len(s.VIPs))
	case s.MonitorPort < 0 || s.MonitorPort > 65535:
		t.Fatalf("accepted monitor port %d", s.MonitorPort)
	case s.ReplicaCount < 1 || s.ReplicaCount > MaxReplicas:
		t.Fatalf("accepted replica count %d", s.ReplicaCount)
	case s.VRIDOffset < 0 || s.VRIDOffset > 254:
		t.Fatalf("accepted VRID offset %d", s.VRIDOffset)
	case s.CheckInterval < 10*time.Millisecond || s.CheckInterval > maxCheckInterval:
		t.Fatalf("accepted check interval %v", s.CheckInterval)
	case s.PreemptDelay < 0 || s.PreemptDelay > maxPreemptDelay || (!s.Preempt && s.PreemptDelay != 0):
		t.Fatalf("accepted preemption %v with delay %v", s.Preempt, s.PreemptDelay)
	case scrub(s.ConfigName) == "" || strings.ContainsAny(s.ConfigName, "\"\n\r\x00"):
		t.Fatalf("accepted config name %q", s.ConfigName)
	case s.Interface != "" && !validIfName(s.Interface):
		t.Fatalf("accepted interface %q", s.Interface)
	case s.IptablesChain != "" && !validChain(s.IptablesChain):
		t.Fatalf("accepted chain %q", s.IptablesChain)
	case !slices.IsSorted(s.ExcludedVRIDs) || len(slices.Compact(slices.Clone(s.ExcludedVRIDs))) != len(s.ExcludedVRIDs):
		t.Fatalf("excluded VRIDs %v are not sorted and unique", s.ExcludedVRIDs)
	}
	for _, v := range s.ExcludedVRIDs {
		if v < 1 || v > 255 {
			t.Fatalf("accepted excluded VRID %d", v)
		}
	}
	if s.CheckScript != "" && (len(s.Check) == 0 || !strings.HasPrefix(s.Check[0], "/")) {
		t.Fatalf("check script %q split into %q", s.CheckScript, s.Check)
	}
	for _, w := range s.Warnings {
		if !envErrorLine.MatchString(w) {
			t.Fatalf("warning %q does not start with the variable", w)
		}
	}
}

// checkPipeline runs what a node computes from an accepted spec.
func checkPipeline(t *testing.T, s *Spec, rank uint8, checkPassed bool) {
	t.Helper()
	// This node: one of the peers in unicast mode, else an address of the
	// VIPs' family picked by rank.
	self := netip.AddrFrom4([4]byte{198, 18, 0, rank})
	if s.Family() == 6 {
		self = netip.AddrFrom16([16]byte{0: 0xfd, 15: rank})
	}
	if s.Unicast() {
		self = s.Peers[int(rank)%len(s.Peers)]
	}
	ranks, err := RankOf(self, s, nil)
	if err != nil {
		if !strings.Contains(err.Error(), fmt.Sprintf("at most %d", MaxReplicas)) {
			t.Fatalf("RankOf(%v): %v", self, err)
		}
		return
	}
	if ranks.Self < 0 || ranks.Self >= ranks.Count {
		t.Fatalf("RankOf(%v) = %+v", self, ranks)
	}
	p := NewPlan(s, ranks.Count)
	if len(p.Groups) == 0 || len(p.Groups) > len(s.VIPs) {
		t.Fatalf("%d groups for %d VIPs", len(p.Groups), len(s.VIPs))
	}
	var placed []netip.Addr
	for _, g := range p.Groups {
		if len(g.VIPs) == 0 {
			t.Fatalf("group %s holds no VIP", g.Name)
		}
		placed = append(placed, g.VIPs...)
		order := slices.Sorted(slices.Values(g.Order))
		for i, r := range order {
			if r != i || len(order) != ranks.Count {
				t.Fatalf("group %s order %v is not a permutation of the %d ranks", g.Name, g.Order, ranks.Count)
			}
		}
	}
	slices.SortFunc(placed, netip.Addr.Compare)
	want := slices.SortedFunc(slices.Values(s.VIPs), netip.Addr.Compare)
	if !slices.Equal(placed, want) {
		t.Fatalf("the groups hold %d VIPs, the spec has %d (or not the same ones)", len(placed), len(want))
	}

	if _, err := AssignVRIDs(p, s, nil, ranks.Members); err != nil {
		if !strings.Contains(err.Error(), EnvVIPGroups) {
			t.Fatalf("AssignVRIDs error does not say what to change: %v", err)
		}
		return
	}
	var vrids []uint8
	for _, g := range p.Groups {
		if g.VRID == 0 || slices.Contains(vrids, g.VRID) || slices.Contains(s.ExcludedVRIDs, int(g.VRID)) {
			t.Fatalf("group %s has VRID %d (taken %v, excluded %v)", g.Name, g.VRID, vrids, s.ExcludedVRIDs)
		}
		vrids = append(vrids, g.VRID)
	}

	iface := s.Interface
	if iface == "" {
		iface = "eth0"
	}
	version := 2
	if s.Family() == 6 || rank&1 == 1 {
		version = 3
	}
	n := Node{Interface: iface, Address: self, Rank: ranks.Self, Version: version, AdvertInterval: time.Second, CheckPassed: checkPassed}
	cfg, err := p.Keepalived(s, n, nil, "fuzz.conf")
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Render(s, n))
	}
	if sc := cfg.Scripts[CheckName(s)]; s.CheckScript != "" && (sc == nil || !slices.Equal(sc.Args, s.Check)) {
		t.Fatalf("the check script reads back as %+v; want the words %q", sc, s.Check)
	}
	if len(cfg.Instances) != len(p.Groups) {
		t.Fatalf("the configuration has %d instances for %d groups", len(cfg.Instances), len(p.Groups))
	}
	for i, in := range cfg.Instances {
		g := p.Groups[i]
		if in.VRID != g.VRID || len(in.VIPs)+len(in.ExcludedVIPs) != len(g.VIPs) || in.Priority != g.Priority(ranks.Self) {
			t.Fatalf("instance %s (VRID %d, priority %d, %d+%d VIPs) does not match group %s (VRID %d, priority %d, %d VIPs)",
				in.Name, in.VRID, in.Priority, len(in.VIPs), len(in.ExcludedVIPs), g.Name, g.VRID, g.Priority(ranks.Self), len(g.VIPs))
		}
		if in.Notifies().Any != s.NotifyScript {
			t.Fatalf("instance %s has notify script %q; want %q", in.Name, in.Notifies().Any, s.NotifyScript)
		}
		if version == 2 && in.AuthPass != s.ConfigName {
			t.Fatalf("instance %s has password %q; want the config name %q as the image does", in.Name, in.AuthPass, s.ConfigName)
		}
	}
}

// TestSeedEnvironments checks that the seed environments are accepted and
// pass the fuzz target's properties, so the fuzzer starts from valid specs.
func TestSeedEnvironments(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "env", "*.env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range files {
		t.Run(filepath.Base(p), func(t *testing.T) {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			s, err := Parse(fuzzInput(data, nil))
			if err != nil {
				t.Fatal(err)
			}
			checkSpec(t, s)
			for rank := range uint8(4) {
				checkPipeline(t, s, rank, rank%2 == 0)
			}
		})
	}
}
