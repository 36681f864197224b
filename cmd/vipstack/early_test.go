package main

import (
	"bytes"
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/supervise"
)

// heavyInits are packages vipstack links for its other commands whose
// initialisation allocates much (GODEBUG=inittrace=1): client-go's
// scheme 0.65 MB, controller-runtime's apiutil 0.51, GoBGP's API 0.35,
// CoreDNS's server.
var heavyInits = []string{
	"k8s.io/client-go/kubernetes/scheme",
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil",
	"github.com/osrg/gobgp/v3/api",
	"github.com/coredns/coredns/core/dnsserver",
}

// envEarlyProbe marks TestVRRPEngineRunsEarly's run of this test binary
// as the engine: if the engine did not run from the initialisation,
// TestMain ends it at once rather than running the tests.
const envEarlyProbe = "VIPSTACK_TEST_EARLY_PROBE"

func TestMain(m *testing.M) {
	if os.Getenv(envEarlyProbe) != "" {
		fmt.Fprintln(os.Stderr, "the engine did not run from the initialisation")
		os.Exit(3)
	}
	os.Exit(m.Run())
}

// TestVRRPEngineRunsEarly: the engine of `vipstack vrrp` under its
// supervisor runs from the initialisation (internal/vrrpd/early), before
// the heavy packages initialise. This test binary (every package vipstack
// links) is run as that engine on a file that does not exist, with Go's
// trace of each package's initialisation: the engine must have run (its
// error names the file) with none of heavyInits initialised. The same
// binary initialising whole (no test to run) must show them all, or the
// list is stale.
func TestVRRPEngineRunsEarly(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "missing.conf")
	for _, tc := range []struct {
		name      string
		args      []string
		env       []string
		wantHeavy bool
		wantErr   bool
	}{
		{name: "engine under its supervisor", args: []string{"vrrp", "-f", conf, "--state-dir", dir},
			env: []string{supervise.EnvChild + "=1", envEarlyProbe + "=1"}, wantHeavy: false, wantErr: true},
		{name: "whole initialisation", args: []string{"-test.run=^$"}, wantHeavy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, inits := runInitTraced(t, tc.args, tc.env, tc.wantErr)
			checkHeavy(t, inits, tc.wantHeavy)
			if tc.wantErr && !strings.Contains(stderr, conf) {
				t.Errorf("the engine's error does not name %s; stderr:\n%s", conf, tail(stderr))
			}
		})
	}
}

// TestIPFailoverEngineRunsEarly: the pool of `vipstack ipfailover` under
// its supervisor runs from the initialisation (internal/ipfailoverd/early)
// when it is run by VRRP, before the heavy packages initialise; announced
// by BGP, it is left to main, after them (its speaker is among them). The
// test binary is run as that engine on an interface that does not exist:
// the pool must have run (its error names the interface) with none of
// heavyInits initialised; in BGP mode, TestMain must have been reached.
func TestIPFailoverEngineRunsEarly(t *testing.T) {
	dir := t.TempDir()
	const iface = "vif-missing0"
	pool := []string{"ipfailover", "--interface", iface, "--virtual-ips", "198.18.0.10", "--vrid-probe", "0", "--state-dir", dir}
	child := []string{supervise.EnvChild + "=1", envEarlyProbe + "=1"}
	for _, tc := range []struct {
		name      string
		args      []string
		wantHeavy bool
		wantOut   string // in stderr
	}{
		{name: "VRRP mode", args: append(pool, "vifpool"), wantHeavy: false, wantOut: `interface \"` + iface + `\" does not exist`}, // as slog quotes it
		{name: "BGP mode is left to main", args: append(pool, "--bgp-asn", "64512", "--bgp-peers", "198.18.1.1", "vifpool"),
			wantHeavy: true, wantOut: "the engine did not run from the initialisation"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stderr, inits := runInitTraced(t, tc.args, child, true)
			checkHeavy(t, inits, tc.wantHeavy)
			if !strings.Contains(stderr, tc.wantOut) {
				t.Errorf("stderr does not say %q:\n%s", tc.wantOut, tail(stderr))
			}
			// The pool's engine runs its Go code on one processor unless
			// $GOMAXPROCS says otherwise (daemon.OneProcessor).
			if !tc.wantHeavy && os.Getenv("GOMAXPROCS") == "" && !regexp.MustCompile(`msg="vipstack ipfailover starting" .* processors=1\b`).MatchString(stderr) {
				t.Errorf("the pool's engine did not say it starts on one processor:\n%s", tail(stderr))
			}
		})
	}
}

// runInitTraced runs this test binary with args, env added to its
// environment and GODEBUG=inittrace=1, and returns its stderr and the
// packages it initialised; wantErr says whether it must fail.
func runInitTraced(t *testing.T, args, env []string, wantErr bool) (string, map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(append(os.Environ(), "GODEBUG=inittrace=1"), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if (err != nil) != wantErr {
		t.Fatalf("exit: %v, want an error: %v; stderr:\n%s", err, wantErr, tail(stderr.String()))
	}
	inits := initialised(stderr.String())
	t.Logf("%d packages initialised", len(inits))
	return stderr.String(), inits
}

// checkHeavy checks whether each of heavyInits initialised.
func checkHeavy(t *testing.T, inits map[string]bool, want bool) {
	t.Helper()
	for _, p := range heavyInits {
		if inits[p] != want {
			t.Errorf("%s initialised: %v, want %v (%d packages initialised)", p, inits[p], want, len(inits))
		}
	}
}

// initialised are the packages a GODEBUG=inittrace=1 trace shows.
func initialised(trace string) map[string]bool {
	re := regexp.MustCompile(`(?m)^init (\S+) @`)
	m := map[string]bool{}
	for _, s := range re.FindAllStringSubmatch(trace, -1) {
		m[s[1]] = true
	}
	return m
}

// tail is the end of a long output, for a failure message.
func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// TestCleanupRunsEarly: the clean-up a small supervisor runs after its
// child crashed releases the child's VIPs from the initialisation
// (internal/cleanup/early for the Spec's ledgers; ipfailoverd/early for a
// pool, by VRRP or BGP), before the heavy packages initialise. This test
// binary is run as each clean-up with a ledger recording a VIP on an
// interface that does not exist: the sweep drops that entry (the ledger
// is empty after it) and the process exits 0 with none of heavyInits
// initialised, TestMain never reached.
func TestCleanupRunsEarly(t *testing.T) {
	vip := netif.VIP{Prefix: netip.MustParsePrefix("198.18.0.10/32"), Dev: "vif-missing0"}
	for _, tc := range []struct {
		name   string
		args   func(dir string) []string
		ledger func(dir string) (netif.Ledger, error)
		spec   bool // the supervisor's Spec names the ledger
	}{
		{name: "node", spec: true,
			args: func(dir string) []string {
				return []string{"node", "--config", filepath.Join(dir, "missing.yaml"), "--node", "n1", "--state-dir", dir}
			},
			ledger: func(dir string) (netif.Ledger, error) { return netif.LedgerIn(dir, "bgp") }},
		{name: "vrrp", spec: true,
			args: func(dir string) []string {
				return []string{"vrrp", "-f", filepath.Join(dir, "missing.conf"), "--state-dir", dir}
			},
			ledger: func(dir string) (netif.Ledger, error) { return netif.LedgerIn(dir, "vrrp") }},
		{name: "ipfailover by BGP",
			args: func(dir string) []string {
				return []string{"ipfailover", "--interface", vip.Dev, "--virtual-ips", "198.18.0.10", "--state-dir", dir,
					"--bgp-asn", "64512", "--bgp-peers", "198.18.1.1", "vifpool"}
			},
			ledger: func(dir string) (netif.Ledger, error) { return netif.LedgerIn(dir, "ipfailover-vifpool") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := tc.ledger(dir)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Save([]netif.VIP{vip}); err != nil {
				t.Fatal(err)
			}
			release := "1"
			if tc.spec {
				b, err := supervise.Spec{LogFormat: "text", LogLevel: "info", LogAttrs: []string{"node", "n1"}, Ledgers: []string{l.Path}}.MarshalText()
				if err != nil {
					t.Fatal(err)
				}
				release = string(b)
			}
			_, inits := runInitTraced(t, tc.args(dir), []string{supervise.EnvCleanup + "=" + release, envEarlyProbe + "=1"}, false)
			checkHeavy(t, inits, false)
			if left, err := l.Load(); err != nil || len(left) != 0 {
				t.Errorf("the ledger after the clean-up: %v, %v; want it empty", left, err)
			}
		})
	}
}
