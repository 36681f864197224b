package ipfailover

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// poolHelperEnv, set to a state directory, makes
// TestPoolReleasesSettingsVIPs run the pool in its own process, in the
// namespace its parent started it in: a pool's engine runs on many
// threads, which cannot all join a namespace.
const poolHelperEnv = "VIPSTACK_TEST_POOL_IN_PROCESS"

// TestPoolReleasesSettingsVIPs runs a pool in process (the other pool
// tests run the binary, which hides its insides): once it runs, its
// settings and its plan no longer hold the VIP list (the engine's
// configuration does: 0.26 MB at 10,000 VIPs), what the status and the
// family checks read from them is unchanged, and the pool still takes
// every VIP and gives every one back when stopped.
func TestPoolReleasesSettingsVIPs(t *testing.T) {
	if os.Getenv(poolHelperEnv) != "" {
		poolInProcess(t)
		return
	}
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vsR"})
	topo.Hosts[0].RunTest(t, "TestPoolReleasesSettingsVIPs", poolHelperEnv+"="+t.TempDir())
}

// poolInProcess is the pool's side: one node holding 40 VIPs on eth0.
func poolInProcess(t *testing.T) {
	spec, err := Parse(Input{Env: map[string]string{
		EnvConfigName:   "vsrel",
		EnvVirtualIPs:   "198.18.16.1-198.18.16.40",
		EnvInterface:    "eth0",
		EnvMonitorPort:  "0",
		EnvReplicaCount: "1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := spec.VIPs
	p, err := New(Options{Spec: spec, Version: 3, AdvertInterval: 100 * time.Millisecond,
		Ledger: netif.Ledger{Path: filepath.Join(os.Getenv(poolHelperEnv), "vsrel.vips")},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		t.Fatal(err)
	}
	before := p.Status()
	ctx, cancel := context.WithCancel(t.Context())
	ran := make(chan error, 1)
	go func() { ran <- p.Run(ctx) }()
	select {
	case <-p.Running():
	case err := <-ran:
		t.Fatalf("Run ended before the engine ran: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the engine did not run within a minute")
	}
	p.mu.Lock()
	s, plan := p.opts.Spec, p.plan
	p.mu.Unlock()
	if s.VIPs != nil || s.Family() != 4 || s.ConfigName != "vsrel" {
		t.Errorf("running pool's settings: %d VIPs, family %d, name %q; want none kept, 4, vsrel", len(s.VIPs), s.Family(), s.ConfigName)
	}
	n := 0
	for _, g := range plan.Groups {
		n += g.NumVIPs()
		if len(g.VIPs) != 0 {
			t.Errorf("running pool's plan: group %d keeps %d VIPs, want none (their count only)", g.VRID, len(g.VIPs))
		}
	}
	if n != len(want) {
		t.Errorf("running pool's plan counts %d VIPs, want %d", n, len(want))
	}
	if st := p.Status(); st.VIPs != before.VIPs || st.VIPs != len(want) {
		t.Errorf("status VIPs %d while running, %d before; want %d", st.VIPs, before.VIPs, len(want))
	}
	onLink := func() (map[netip.Addr]bool, error) {
		ifi, err := net.InterfaceByName("eth0")
		if err != nil {
			return nil, err
		}
		as, err := ifi.Addrs()
		if err != nil {
			return nil, err
		}
		m := map[netip.Addr]bool{}
		for _, a := range as {
			if pfx, err := netip.ParsePrefix(a.String()); err == nil {
				m[pfx.Addr()] = true
			}
		}
		return m, nil
	}
	testutil.Eventually(t, 30*time.Second, func() error {
		m, err := onLink()
		if err != nil {
			return err
		}
		for _, v := range want {
			if !m[v] {
				return fmt.Errorf("%v not on eth0 (status held %d)", v, p.Status().Held)
			}
		}
		return nil
	})
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run after stop: %v", err)
	}
	m, err := onLink()
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range want {
		if m[v] {
			t.Errorf("%v still on eth0 after the pool stopped", v)
		}
	}
}
