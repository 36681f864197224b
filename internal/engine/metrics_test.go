package engine

import (
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vipstack/vipstack/internal/keepalived"
	basemetrics "github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/metrics/metricstest"
	"github.com/vipstack/vipstack/internal/track"
)

// metricsConf is one instance on eth0 with VRID 51, two addresses, and a
// weight -20 script; prio is the node's base priority.
func metricsConf(prio int) string {
	return fmt.Sprintf(`global_defs {
    vrrp_version 3
}
vrrp_script chk_lb {
    script "/bin/true"
    interval 1
    weight -20
    rise 1
    fall 1
}
vrrp_instance VI_1 {
    state BACKUP
    interface eth0
    virtual_router_id 51
    priority %d
    advert_int 1
    virtual_ipaddress {
        198.18.0.100/32
    }
    virtual_ipaddress_excluded {
        198.18.0.101/32
    }
    track_script {
        chk_lb
    }
}
`, prio)
}

// TestMetricsFollowHolder: on a simulated segment, the node at priority
// 100 holds both addresses and its series say so (state 2, VIPs held 1,
// effective priority 100, check up); the one at 90 says 0 for each VIP.
// When the check fails, the first node's effective priority drops to 80,
// the second takes the addresses, and both nodes' series follow. The
// registries pass the name lint.
func TestMetricsFollowHolder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		seg := &simSegment{}
		a := seg.node("a", "198.18.0.1/24")
		b := seg.node("b", "198.18.0.2/24")
		var failA, hold atomic.Bool
		regA, regB := basemetrics.NewRegistry(), basemetrics.NewRegistry()
		ea, _ := simEngine(t, a, metricsConf(100), nil, func(o *Options) { o.Registry = regA },
			simProbes(func(*keepalived.Script) track.Check { return heldProbe{hold: &hold, fail: &failA} }))
		var never atomic.Bool
		eb, _ := simEngine(t, b, metricsConf(90), nil, func(o *Options) { o.Registry = regB },
			simProbes(func(*keepalived.Script) track.Check { return heldProbe{hold: &hold, fail: &never} }))
		simRun(t, ea)
		simRun(t, eb)
		vip := netip.MustParseAddr("198.18.0.100")
		simWaitSole(t, []*simNode{a, b}, vip, a, 3*time.Second, 20*time.Second, "a at 100 over b at 90")

		const names = "vipstack_vrrp_state vipstack_vrrp_effective_priority vipstack_vrrp_vip_held vipstack_check_up"
		want := func(state, prio, held, up int) string {
			return fmt.Sprintf(`# HELP vipstack_check_up %s
# TYPE vipstack_check_up gauge
vipstack_check_up{check="chk_lb",instance="VI_1",interface="eth0",kind="script",vrid="51"} %d
vipstack_check_up{check="eth0",instance="VI_1",interface="eth0",kind="interface",vrid="51"} 1
# HELP vipstack_vrrp_effective_priority %s
# TYPE vipstack_vrrp_effective_priority gauge
vipstack_vrrp_effective_priority{instance="VI_1",interface="eth0",vrid="51"} %d
# HELP vipstack_vrrp_state %s
# TYPE vipstack_vrrp_state gauge
vipstack_vrrp_state{instance="VI_1",interface="eth0",vrid="51"} %d
# HELP vipstack_vrrp_vip_held %s
# TYPE vipstack_vrrp_vip_held gauge
vipstack_vrrp_vip_held{instance="VI_1",interface="eth0",vip="198.18.0.100/32",vrid="51"} %d
vipstack_vrrp_vip_held{instance="VI_1",interface="eth0",vip="198.18.0.101/32",vrid="51"} %d
`, statusHelp[checkName], up, statusHelp[effectiveName], prio, statusHelp[stateName], state, statusHelp[heldName], held, held)
		}
		compare := func(step, node string, reg prometheus.Gatherer, text string) {
			t.Helper()
			if err := testutil.GatherAndCompare(reg, strings.NewReader(text), strings.Fields(names)...); err != nil {
				t.Errorf("%s, node %s: %v", step, node, err)
			}
		}
		compare("a master", "a", regA, want(2, 100, 1, 1))
		compare("a master", "b", regB, want(1, 90, 0, 1))

		failA.Store(true)
		simWaitSole(t, []*simNode{a, b}, vip, b, 3*time.Second, 20*time.Second, "b after a's check failed")
		compare("a's check failing", "a", regA, want(1, 80, 0, 0))
		compare("a's check failing", "b", regB, want(2, 90, 1, 1))

		if got := testutil.ToFloat64(ea.metrics.checks.WithLabelValues("chk_lb", "failure")); got < 1 {
			t.Errorf(`a: vipstack_check_results_total{check="chk_lb",result="failure"} = %v, want at least 1`, got)
		}
		if got := testutil.ToFloat64(eb.metrics.checks.WithLabelValues("chk_lb", "failure")); got != 0 {
			t.Errorf(`b: vipstack_check_results_total{check="chk_lb",result="failure"} = %v, want 0`, got)
		}
		if got := gathered(t, regB, "vipstack_vrrp_transitions_total", map[string]string{"instance": "VI_1", "vrid": "51", "interface": "eth0", "to": "MASTER"}); got != 1 {
			t.Errorf(`b: vipstack_vrrp_transitions_total{to="MASTER"} = %v, want 1`, got)
		}
		if got := gathered(t, regB, "vipstack_vrrp_adverts_sent_total", map[string]string{"instance": "VI_1", "vrid": "51", "interface": "eth0"}); got < 1 {
			t.Errorf(`b: vipstack_vrrp_adverts_sent_total = %v, want at least 1 (b is master)`, got)
		}
		info := `# HELP vipstack_vrrp_instance_info ` + statusHelp[infoName] + `
# TYPE vipstack_vrrp_instance_info gauge
vipstack_vrrp_instance_info{family="4",instance="VI_1",interface="eth0",mode="multicast",version="3",vrid="51"} 1
`
		if err := testutil.GatherAndCompare(regA, strings.NewReader(info), "vipstack_vrrp_instance_info"); err != nil {
			t.Error(err)
		}
		metricstest.Lint(t, regA)
		metricstest.Lint(t, regB)
	})
}

// gathered is the value of the series of family name with exactly the
// labels want in reg; -1 when there is none.
func gathered(t *testing.T, reg prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			if len(m.GetLabel()) != len(want) {
				continue
			}
			for _, l := range m.GetLabel() {
				if want[l.GetName()] != l.GetValue() {
					continue series
				}
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return -1
}

// TestMetricsForgetRemovedInstances: after a reload that removes VI_2 and
// moves VI_1 to another VRID, no series names VI_2 or VI_1's old VRID;
// VI_1's new VRID has its own.
func TestMetricsForgetRemovedInstances(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("h", "198.18.0.1/24")
		inst := func(name string, vrid int, vip string) string {
			return fmt.Sprintf("vrrp_instance %s {\n    state BACKUP\n    interface eth0\n    virtual_router_id %d\n    priority 100\n    advert_int 1\n    virtual_ipaddress {\n        %s\n    }\n}\n", name, vrid, vip)
		}
		reg := prometheus.NewRegistry()
		e, _ := simEngine(t, n, inst("VI_1", 51, "198.18.0.100/32")+inst("VI_2", 52, "198.18.0.101/32"), nil, func(o *Options) { o.Registry = reg })
		simRun(t, e)
		time.Sleep(5 * time.Second) // both become master
		synctest.Wait()
		series := func() []string {
			t.Helper()
			fams, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, f := range fams {
				for _, m := range f.GetMetric() {
					var ls []string
					for _, l := range m.GetLabel() {
						if l.GetName() == "instance" || l.GetName() == "vrid" {
							ls = append(ls, l.GetValue())
						}
					}
					if len(ls) == 2 {
						out = append(out, ls[0]+"/"+ls[1])
					}
				}
			}
			return out
		}
		has := func(all []string, s string) bool { return strings.Contains(","+strings.Join(all, ",")+",", ","+s+",") }
		before := series()
		for _, want := range []string{"VI_1/51", "VI_2/52"} {
			if !has(before, want) {
				t.Fatalf("before the reload: no series of %s in %v", want, before)
			}
		}
		if err := os.WriteFile(e.opts.ConfigPath, []byte(inst("VI_1", 53, "198.18.0.100/32")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second)
		synctest.Wait()
		after := series()
		for _, gone := range []string{"VI_1/51", "VI_2/52"} {
			if has(after, gone) {
				t.Errorf("after the reload: series of %s remain: %v", gone, after)
			}
		}
		if !has(after, "VI_1/53") {
			t.Errorf("after the reload: no series of VI_1/53: %v", after)
		}
	})
}

// TestMetricsKeptOnRebuild: a reload that builds an instance anew under
// the same labels (a setting that needs a new instance changed) keeps its
// counters, as a CounterVec's series did: after the instance is master
// again, it has entered MASTER twice.
func TestMetricsKeptOnRebuild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := (&simSegment{}).node("h", "198.18.0.1/24")
		conf := func(extra string) string {
			return "vrrp_instance VI_1 {\n    state BACKUP\n    interface eth0\n    virtual_router_id 51\n    priority 100\n    advert_int 1\n" +
				extra + "    virtual_ipaddress {\n        198.18.0.100/32\n    }\n}\n"
		}
		reg := prometheus.NewRegistry()
		e, _ := simEngine(t, n, conf(""), nil, func(o *Options) { o.Registry = reg })
		simRun(t, e)
		time.Sleep(5 * time.Second) // master
		synctest.Wait()
		labels := map[string]string{"instance": "VI_1", "vrid": "51", "interface": "eth0", "to": "MASTER"}
		if got := gathered(t, reg, "vipstack_vrrp_transitions_total", labels); got != 1 {
			t.Fatalf("before the reload: transitions to MASTER = %v, want 1", got)
		}
		sent := gathered(t, reg, "vipstack_vrrp_adverts_sent_total", map[string]string{"instance": "VI_1", "vrid": "51", "interface": "eth0"})
		if err := os.WriteFile(e.opts.ConfigPath, []byte(conf("    garp_master_repeat 3\n")), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := e.Reload(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Second) // master again
		synctest.Wait()
		if got := gathered(t, reg, "vipstack_vrrp_transitions_total", labels); got != 2 {
			t.Errorf("after the rebuild: transitions to MASTER = %v, want 2 (1 before it, 1 after)", got)
		}
		if got := gathered(t, reg, "vipstack_vrrp_adverts_sent_total", map[string]string{"instance": "VI_1", "vrid": "51", "interface": "eth0"}); got <= sent {
			t.Errorf("after the rebuild: adverts sent = %v, want more than the %v before it", got, sent)
		}
	})
}

// TestScrapeOfManyInstances: the status of 1,000 instances with ten VIPs
// each is written as text with under two allocations per instance (a
// VRID's text), where client_golang's const metrics took about 20 per
// series, 368,000 a scrape; and what it writes parses to the series the
// status holds.
func TestScrapeOfManyInstances(t *testing.T) {
	var st []InstanceStatus
	for i := range 1000 {
		s := InstanceStatus{Name: fmt.Sprintf("VI_%d", i), VRID: uint8(i % 255), Interface: "eth0", Mode: "multicast", family: 4, Version: 2, state: 2,
			Contributions: []Contribution{{Source: "script chk", OK: i%2 == 0}}}
		for j := range 10 {
			s.VIPs = append(s.VIPs, fmt.Sprintf("198.18.%d.%d/32", i/25, (i%25)*10+j))
		}
		s.held = s.VIPs[:i%11]
		s.counts.sent, s.counts.transitions[2] = uint64(i), 1
		st = append(st, s)
	}
	src := statusText{status: func() []InstanceStatus { return st }}
	text := basemetrics.NewText(io.Discard)
	if n := testing.AllocsPerRun(3, func() { src.WriteText(text) }); n >= 2*float64(len(st)) {
		t.Errorf("WriteText of %d instances: %.0f allocations, want under %d", len(st), n, 2*len(st))
	}
	reg := &basemetrics.Registry{Registry: prometheus.NewRegistry()}
	reg.MustAddText(src)
	counts := map[string]int{}
	held := 0
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		counts[f.GetName()] = len(f.GetMetric())
		if f.GetName() == heldName {
			for _, m := range f.GetMetric() {
				held += int(m.GetGauge().GetValue())
			}
		}
	}
	want := map[string]int{sentName: 999, transitionsName: 1000, stateName: 1000, effectiveName: 1000, baseName: 1000, infoName: 1000, heldName: 10000, checkName: 1000}
	if d := cmp.Diff(want, counts); d != "" {
		t.Errorf("series per family (-want +got):\n%s", d)
	}
	if wantHeld := 1000/11*55 + 45; held != wantHeld { // i%11 held: 0+1+...+10 per 11 instances, then 0..9
		t.Errorf("VIPs held in the series: %d, want %d", held, wantHeld)
	}
}
