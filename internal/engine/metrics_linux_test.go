package engine_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestMetricsScrape: `vipstack vrrp` at priority 100 with a weight -20
// check, keepalived 2.2.7 at 90, in two network namespaces. Scraping
// vipstack's /metrics over HTTP: while it is master its VIP is held (1),
// the check up, the effective priority 100; once the check fails the
// effective priority is 80, keepalived takes the VIP, and the series say
// so (held 0, check down, failures counted). The scrape passes the name
// lint and carries the build information and the Go and process series.
// The log (--log-format json) has one event per state change with the
// stable keys.
func TestMetricsScrape(t *testing.T) {
	testnet.RequireRoot(t)
	bin := vipstackBin(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vo1m"})
	subH, peerH := topo.Hosts[0], topo.Hosts[1]
	vip := netip.MustParseAddr("198.18.0.100")
	dir := t.TempDir() // root-owned, under sticky /tmp: passes enable_script_security
	chk, flag := filepath.Join(dir, "chk.sh"), filepath.Join(dir, "fail")
	writeScript(t, chk, fmt.Sprintf("test ! -e %s\n", flag))
	const metricsAddr = "127.0.0.1:9670"
	conf := func(prio int, script string) string {
		c := peers.Conf{Version: 3, Interval: 200 * time.Millisecond, VRID: 51, Priority: prio, VIP: netip.PrefixFrom(vip, 32),
			Script: script, Weight: -20}
		text, err := c.Render(fmt.Sprintf("r%d", prio))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	sub, err := peers.Start(subH, peers.Vipstack, conf(100, chk), filepath.Join(dir, "vipstack"), bin,
		"--metrics-addr", metricsAddr, "--log-level", "info", "--log-format", "json")
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, sub)
	peer, err := peers.Start(peerH, peers.Keepalived, conf(90, ""), filepath.Join(dir, "keepalived"), "")
	if err != nil {
		t.Fatal(err)
	}
	logOnFailure(t, peer)
	hosts := []*testnet.Host{subH, peerH}
	if _, err := peers.WaitSoleHolder(hosts, vip, subH, time.Second, 20*time.Second); err != nil {
		t.Fatalf("vipstack at 100 over keepalived at 90: %v", err)
	}

	// Labels in the exposition's order (sorted by name).
	const labels = `instance="VI_1",interface="eth0",vrid="51"`
	scrape := func() string {
		t.Helper()
		text, err := httpGet(subH, metricsAddr, "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	// expect waits until every series in want has its value in a scrape.
	expect := func(step string, want map[string]string) string {
		t.Helper()
		var text string
		testutil.Eventually(t, 10*time.Second, func() error {
			text = scrape()
			for series, v := range want {
				if !strings.Contains(text, "\n"+series+" "+v+"\n") {
					return fmt.Errorf("%s: no %s %s in the scrape:\n%s", step, series, v, grepLines(text, "vipstack_"))
				}
			}
			return nil
		})
		return text
	}
	text := expect("master", map[string]string{
		`vipstack_vrrp_state{` + labels + `}`:                                                                             "2",
		`vipstack_vrrp_effective_priority{` + labels + `}`:                                                                "100",
		`vipstack_vrrp_base_priority{` + labels + `}`:                                                                     "100",
		`vipstack_vrrp_vip_held{instance="VI_1",interface="eth0",vip="198.18.0.100/32",vrid="51"}`:                        "1",
		`vipstack_check_up{check="chk",instance="VI_1",interface="eth0",kind="script",vrid="51"}`:                         "1",
		`vipstack_check_up{check="eth0",instance="VI_1",interface="eth0",kind="interface",vrid="51"}`:                     "1",
		`vipstack_check_results_total{check="chk",result="failure"}`:                                                      "0",
		`vipstack_vrrp_transitions_total{instance="VI_1",interface="eth0",to="MASTER",vrid="51"}`:                         "1",
		`vipstack_vrrp_instance_info{family="4",instance="VI_1",interface="eth0",mode="multicast",version="3",vrid="51"}`: "1",
	})
	for _, name := range []string{"vipstack_build_info{", "go_goroutines ", "process_cpu_seconds_total ", "process_resident_memory_bytes "} {
		if !strings.Contains(text, "\n"+name) {
			t.Errorf("the scrape has no %s series", strings.TrimRight(name, "{ "))
		}
	}
	problems, err := promlint.New(strings.NewReader(text)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("metric name lint: %s: %s", p.Metric, p.Text)
	}

	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := peers.WaitSoleHolder(hosts, vip, peerH, time.Second, 20*time.Second); err != nil {
		t.Fatalf("keepalived at 90 over vipstack at 100-20: %v", err)
	}
	text = expect("check failing", map[string]string{
		`vipstack_vrrp_state{` + labels + `}`:                                                      "1",
		`vipstack_vrrp_effective_priority{` + labels + `}`:                                         "80",
		`vipstack_vrrp_vip_held{instance="VI_1",interface="eth0",vip="198.18.0.100/32",vrid="51"}`: "0",
		`vipstack_check_up{check="chk",instance="VI_1",interface="eth0",kind="script",vrid="51"}`:  "0",
		`vipstack_vrrp_transitions_total{instance="VI_1",interface="eth0",to="BACKUP",vrid="51"}`:  "2",
	})
	if f := metricSum(text, "vipstack_check_results_total", "result")["failure"]; f < 1 {
		t.Errorf("vipstack_check_results_total{result=failure} = %v after the check failed, want at least 1", f)
	}

	// The state changes in the JSON log: INIT->BACKUP, BACKUP->MASTER,
	// MASTER->BACKUP, each one object with the stable keys.
	var changes []map[string]any
	for _, line := range strings.Split(sub.Log(), "\n") {
		var ev map[string]any
		if json.Unmarshal([]byte(line), &ev) != nil || ev["msg"] != "VRRP state change" {
			continue
		}
		changes = append(changes, ev)
	}
	var got []string
	for _, ev := range changes {
		for _, k := range []string{"instance", "vrid", "interface", "from", "to", "reason", "priority", "master", "master_priority"} {
			if _, ok := ev[k]; !ok {
				t.Errorf("state change %v lacks %q", ev, k)
			}
		}
		got = append(got, fmt.Sprintf("%v->%v prio %v", ev["from"], ev["to"], ev["priority"]))
	}
	want := []string{"INIT->BACKUP prio 100", "BACKUP->MASTER prio 100", "MASTER->BACKUP prio 80"}
	if strings.Join(got, ", ") != strings.Join(want, ", ") {
		t.Errorf("state changes logged: %v, want %v", got, want)
	}
	if len(changes) == 3 && (changes[2]["master"] != peerH.IPv4.Addr().String() || changes[2]["vrid"] != float64(51)) {
		t.Errorf("the step-down names master %v vrid %v, want keepalived's %s and 51", changes[2]["master"], changes[2]["vrid"], peerH.IPv4.Addr())
	}
}

// grepLines returns the lines of text that start with prefix.
func grepLines(text, prefix string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
