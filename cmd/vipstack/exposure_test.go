package main

import (
	"bytes"
	"net"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAddressDefaultsAreLoopback: status and metrics listen on loopback
// unless told otherwise. For every subcommand in the usage text it reads
// the defaults of the flags that name an address (`-addr` and `-*-addr`)
// from `vipstack CMD -h`, which parses the flags and stops before binding
// anything. Each default must be empty (off) or a loopback host, and the
// whole table must be as below, so a new subcommand or address flag has to
// be added here deliberately.
func TestAddressDefaultsAreLoopback(t *testing.T) {
	want := map[string]map[string]string{
		"agent":      {"health-addr": "127.0.0.1:9655", "metrics-addr": "127.0.0.1:9654", "pprof-addr": "", "status-addr": "127.0.0.1:9653"},
		"controller": {"health-addr": "", "metrics-addr": "127.0.0.1:9652", "pprof-addr": ""},
		"demo":       {},
		"dns":        {}, // its listeners are the Corefile's
		"ipfailover": {"metrics-addr": "", "pprof-addr": "", "status-addr": ""},
		"lb":         {"metrics-addr": ""}, // the frontends and stats are haproxy.cfg's
		"manifest":   {},                   // it prints; the pods' status port is on loopback
		"node":       {"metrics-addr": "127.0.0.1:9650", "status-addr": "127.0.0.1:9651"},
		"redirect":   {}, // it listens nowhere: it polls the monitor
		"render":     {},
		"status":     {"addr": "127.0.0.1:9651"}, // where it connects
		"vrrp":       {"metrics-addr": "", "pprof-addr": "", "status-addr": ""},
	}
	// notListeners are address flags that name no socket of ours.
	notListeners := map[string]string{
		"dns node-addr": "the node's own address, published over mDNS",
	}
	got := map[string]map[string]string{}
	for _, cmd := range subcommands(t) {
		t.Run(cmd, func(t *testing.T) {
			defaults := flagDefaults(t, cmd)
			got[cmd] = map[string]string{}
			for name, def := range defaults {
				if name != "addr" && !strings.HasSuffix(name, "-addr") {
					continue
				}
				if _, ok := notListeners[cmd+" "+name]; ok {
					continue
				}
				got[cmd][name] = def
				if def == "" {
					continue
				}
				host, _, err := net.SplitHostPort(def)
				if err != nil {
					t.Errorf("--%s default %q: %v", name, def, err)
					continue
				}
				if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
					t.Errorf("--%s defaults to %q, which is not loopback; want 127.0.0.1:PORT, [::1]:PORT or empty (off)", name, def)
				}
			}
		})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("address flag defaults by subcommand (-want +got):\n%s", diff)
	}
}

// TestPacketPathDefaults: the flags that let vipstack rewrite the host's
// packet path with nftables (a table that captures or translates other
// software's traffic) default to off, by subcommand. A new such flag, or
// a subcommand gaining one, has to be added here deliberately.
func TestPacketPathDefaults(t *testing.T) {
	want := map[string]map[string]string{
		"lb":   {"datapath": "relay", "redirect": ""},
		"node": {"datapath": "relay"},
	}
	packetPath := map[string]bool{"datapath": true, "redirect": true}
	got := map[string]map[string]string{}
	for _, cmd := range subcommands(t) {
		for name, def := range flagDefaults(t, cmd) {
			if !packetPath[name] {
				continue
			}
			if got[cmd] == nil {
				got[cmd] = map[string]string{}
			}
			got[cmd][name] = def
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("packet-path flag defaults by subcommand (-want +got):\n%s", diff)
	}
}

// TestHostDaemonsDefaultPorts: vipstack node (for the cluster's static
// pods), vipstack agent (the DaemonSet on the host network, for
// LoadBalancer Services) and vipstack controller may run on one host. With
// their defaults each must bind its own ports: 127.0.0.1:9650 and :9650
// cannot both listen, and the second daemon would exit at start.
func TestHostDaemonsDefaultPorts(t *testing.T) {
	owner := map[string]string{}
	for _, cmd := range []string{"node", "agent", "controller"} {
		for name, def := range flagDefaults(t, cmd) {
			if !strings.HasSuffix(name, "-addr") || def == "" {
				continue
			}
			_, port, err := net.SplitHostPort(def)
			if err != nil {
				t.Fatalf("vipstack %s --%s default %q: %v", cmd, name, def, err)
			}
			who := "vipstack " + cmd + " --" + name
			if o, ok := owner[port]; ok {
				t.Errorf("%s and %s both default to port %s", who, o, port)
			}
			owner[port] = who
		}
	}
	if len(owner) < 5 {
		t.Errorf("found %d default listener ports (%v), want the node's, the agent's and the controller's (5)", len(owner), owner)
	}
}

// subcommands lists the commands of the usage text that take flags.
func subcommands(t *testing.T) []string {
	t.Helper()
	var cmds []string
	seen := map[string]bool{}
	for _, line := range strings.Split(usage, "\n") {
		f := strings.Fields(line)
		if len(f) < 2 || f[0] != "vipstack" || seen[f[1]] || f[1] == "version" {
			continue
		}
		seen[f[1]] = true
		cmds = append(cmds, f[1])
	}
	if len(cmds) < 10 {
		t.Fatalf("found only %d subcommands (%q) in the usage text", len(cmds), cmds)
	}
	return cmds
}

// flagLine starts a flag's entry in flag.PrintDefaults output.
var (
	flagLine    = regexp.MustCompile(`^  -(\S+)`)
	defaultText = regexp.MustCompile(`\(default "((?:[^"\\]|\\.)*)"\)\s*$`)
)

// flagDefaults runs `vipstack CMD -h` and returns every flag's default as
// flag.PrintDefaults shows it ("" when it shows none: the zero value).
func flagDefaults(t *testing.T, cmd string) map[string]string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run([]string{cmd, "-h"}, &out, &errb); code != 2 && code != 0 {
		t.Fatalf("vipstack %s -h exited %d:\n%s%s", cmd, code, out.String(), errb.String())
	}
	defaults := map[string]string{}
	name, text := "", ""
	flush := func() {
		if name == "" {
			return
		}
		defaults[name] = ""
		if m := defaultText.FindStringSubmatch(strings.TrimSpace(text)); m != nil {
			defaults[name] = m[1]
		}
	}
	for _, line := range strings.Split(out.String()+errb.String(), "\n") {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			flush()
			name, text = m[1], ""
			continue
		}
		text += " " + strings.TrimSpace(line)
	}
	flush()
	if len(defaults) == 0 {
		t.Fatalf("vipstack %s -h lists no flags:\n%s%s", cmd, out.String(), errb.String())
	}
	return defaults
}
