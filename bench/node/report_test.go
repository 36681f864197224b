package main

import (
	"bytes"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/render"
)

// TestClusterSpecYAML: the cluster files the benchmark writes load, give
// master-0 the API and Ingress instances with the other nodes as unicast
// peers, and render master-0's upstream files with the Ingress VIP in
// keepalived.conf and the Corefile.
func TestClusterSpecYAML(t *testing.T) {
	type summary struct {
		Nodes     []string
		Ingress   []netip.Addr
		Instances map[string][]netip.Addr // name -> peers
		Rendered  []string
	}
	w0 := extraNode{Name: "worker-0", IP: netip.MustParseAddr("198.18.0.31")}
	w1 := extraNode{Name: "worker-1", IP: netip.MustParseAddr("198.18.0.32")}
	m := func(i int) netip.Addr { return masterIP(i) }
	tests := []struct {
		name string
		spec clusterSpec
		want summary
	}{
		{
			name: "start",
			spec: clusterSpec{Ingress: netip.MustParseAddr(ingressA)},
			want: summary{
				Nodes:   []string{"master-0", "master-1", "master-2"},
				Ingress: []netip.Addr{netip.MustParseAddr(ingressA)},
				Instances: map[string][]netip.Addr{
					apiInst: {m(1), m(2)},
					ingInst: {m(1), m(2)},
				},
				Rendered: []string{render.CorefilePath, render.HAProxyCfgPath, render.KeepalivedConfPath},
			},
		},
		{
			name: "switched VIP, two workers added",
			spec: clusterSpec{Ingress: netip.MustParseAddr(ingressB), Workers: []extraNode{w0, w1}},
			want: summary{
				Nodes:   []string{"master-0", "master-1", "master-2", "worker-0", "worker-1"},
				Ingress: []netip.Addr{netip.MustParseAddr(ingressB)},
				Instances: map[string][]netip.Addr{
					apiInst: {m(1), m(2)},
					ingInst: {m(1), m(2), w0.IP, w1.IP},
				},
				Rendered: []string{render.CorefilePath, render.HAProxyCfgPath, render.KeepalivedConfPath},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cluster.Parse("cluster.yaml", tt.spec.YAML())
			if err != nil {
				t.Fatal(err)
			}
			got := summary{Ingress: c.IngressVIPs, Instances: map[string][]netip.Addr{}}
			for _, n := range c.Nodes {
				got.Nodes = append(got.Nodes, n.Name)
			}
			p, err := c.PlanFor("master-0")
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range p.Instances {
				got.Instances[in.Name] = in.Peers
			}
			files, err := render.Files(c, "master-0", render.Options{Interface: "eth0"})
			if err != nil {
				t.Fatal(err)
			}
			for _, rel := range []string{render.CorefilePath, render.HAProxyCfgPath, render.KeepalivedConfPath} {
				if _, ok := files[rel]; ok {
					got.Rendered = append(got.Rendered, rel)
				}
			}
			if diff := cmp.Diff(tt.want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("cluster file (-want +got):\n%s", diff)
			}
			vip := tt.spec.Ingress.String()
			if !strings.Contains(string(files[render.KeepalivedConfPath]), vip+"/32") {
				t.Errorf("keepalived.conf lacks the Ingress VIP %s", vip)
			}
			if !strings.Contains(string(files[render.CorefilePath]), "IN A "+vip) {
				t.Errorf("Corefile lacks the Ingress VIP %s", vip)
			}
		})
	}
}

// keepalivedLog is keepalived 2.2.7's output on master-0 (trimmed).
const keepalivedLog = `Sun Nov 22 08:33:48 2026: (managed_API) Entering BACKUP STATE (init)
Sun Nov 22 08:33:48 2026: (managed_INGRESS) Entering BACKUP STATE (init)
Sun Nov 22 08:33:48 2026: VRRP_Script(chk_ingress) succeeded
Sun Nov 22 08:33:48 2026: (managed_INGRESS) Changing effective priority from 20 to 70
Sun Nov 22 08:33:48 2026: VRRP_Script(chk_ocp_lb) failed (exited with status 7)
Sun Nov 22 08:33:48 2026: VRRP_Script(chk_ocp_both) succeeded
Sun Nov 22 08:33:48 2026: (managed_API) Changing effective priority from 40 to 45
Sun Nov 22 08:33:51 2026: (managed_INGRESS) Entering MASTER STATE
Sun Nov 22 08:33:54 2026: VRRP_Script(chk_ocp_lb) succeeded
Sun Nov 22 08:33:54 2026: (managed_API) Changing effective priority from 45 to 65
`

func TestEffectivePriorities(t *testing.T) {
	tests := []struct {
		name string
		log  string
		want map[string]int
	}{
		{name: "every check passing", log: keepalivedLog, want: map[string]int{apiInst: 65, ingInst: 70}},
		{name: "before the LB check rose", log: keepalivedLog[:strings.Index(keepalivedLog, "Sun Nov 22 08:33:51")],
			want: map[string]int{apiInst: 45, ingInst: 70}},
		{name: "no change yet", log: "Sun Nov 22 08:33:48 2026: (managed_API) Entering BACKUP STATE (init)\n", want: map[string]int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, effectivePriorities(tt.log)); diff != "" {
				t.Errorf("effectivePriorities (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want float64
	}{
		{name: "empty", in: nil, want: 0},
		{name: "one", in: []float64{3}, want: 3},
		{name: "even", in: []float64{3, 1}, want: 2},
		{name: "odd, unsorted", in: []float64{5, 1, 3}, want: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := median(tt.in); got != tt.want {
				t.Errorf("median(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

func TestTotal(t *testing.T) {
	parts := []usage{
		{Name: "keepalived", Procs: 2, RSS: []float64{10, 11}, Anon: []float64{4, 5}, PSS: []float64{6, 6}, CPU: []float64{0.5}, Window: 30 * time.Second, PerProc: []float64{7, 3}},
		{Name: "haproxy", Procs: 2, RSS: []float64{20, 20}, PSS: []float64{15, 16}, CPU: []float64{0.25}, Window: 30 * time.Second},
		{Name: "coredns", Procs: 1, RSS: []float64{50, 52}, PSS: []float64{49, 50}, CPU: []float64{0.25}, Window: 30 * time.Second},
	}
	want := usage{Name: "sum", Procs: 5, RSS: []float64{80, 83}, Anon: []float64{4, 5}, PSS: []float64{70, 72}, CPU: []float64{1}, Window: 30 * time.Second}
	got := total("sum", parts)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("total (-want +got):\n%s", diff)
	}
	if p := got.cpuPercent(); p < 3.33 || p > 3.34 {
		t.Errorf("cpuPercent = %v, want 1 s of 30 s = 3.33", p)
	}
}

// TestPrintRest checks the ratio row and the verdicts: RSS PASS at or
// below 0.5 (issue 32), CPU at or below 1, MISS above.
func TestPrintRest(t *testing.T) {
	win := 30 * time.Second
	trio := []usage{
		{Name: "keepalived", Procs: 2, RSS: []float64{12}, Anon: []float64{4}, File: []float64{8}, PSS: []float64{7}, CPU: []float64{0.6}, Window: win},
		{Name: "haproxy -W", Procs: 2, RSS: []float64{24}, Anon: []float64{12}, File: []float64{12}, PSS: []float64{15}, CPU: []float64{0.2}, Window: win},
		{Name: "CoreDNS", Procs: 1, RSS: []float64{54}, Anon: []float64{8}, File: []float64{46}, PSS: []float64{52}, CPU: []float64{0.2}, Window: win},
	}
	tests := []struct {
		name string
		vip  usage
		want []string // lines, compared word by word
	}{
		{
			name: "less of both",
			vip: usage{Name: "vipstack node", Procs: 2, RSS: []float64{45}, Anon: []float64{10}, File: []float64{35}, PSS: []float64{37},
				CPU: []float64{0.25}, Window: win, PerProc: []float64{18.5, 26.5}},
			want: []string{
				"vipstack node 2 45.0 [45.0..45.0] 10.0 35.0 37.0 0.25 0.83 18.5 + 26.5",
				"upstream total 5 90.0 [90.0..90.0] 24.0 66.0 74.0 1.00 3.33",
				"vipstack / upstream 0.50 0.42 0.53 0.50 0.25",
				"PASS RSS at rest: vipstack/upstream = 0.500 (want <= 0.500)",
				"PASS CPU at rest: vipstack/upstream = 0.250 (want <= 1.000)",
			},
		},
		{
			name: "more memory",
			vip:  usage{Name: "vipstack node", Procs: 2, RSS: []float64{99}, Anon: []float64{20}, File: []float64{79}, PSS: []float64{80}, CPU: []float64{1}, Window: win},
			want: []string{
				"MISS RSS at rest: vipstack/upstream = 1.100 (want <= 0.500)",
				"PASS CPU at rest: vipstack/upstream = 1.000 (want <= 1.000)",
			},
		},
		{
			name: "less memory, not half",
			vip:  usage{Name: "vipstack node", Procs: 2, RSS: []float64{54}, Anon: []float64{20}, File: []float64{34}, PSS: []float64{46}, CPU: []float64{1.1}, Window: win},
			want: []string{
				"MISS RSS at rest: vipstack/upstream = 0.600 (want <= 0.500)",
				"MISS CPU at rest: vipstack/upstream = 1.100 (want <= 1.000)",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			printRest(&b, tt.vip, trio)
			lines := map[string]bool{}
			for _, l := range strings.Split(b.String(), "\n") {
				lines[strings.Join(strings.Fields(l), " ")] = true
			}
			for _, w := range tt.want {
				if !lines[w] {
					t.Errorf("output lacks the line %q:\n%s", w, b.String())
				}
			}
		})
	}
}

func TestPrintLatency(t *testing.T) {
	ms := time.Millisecond
	rows := []latencyRow{
		{Change: "a worker added", Observed: "its name answers", Trigger: "SIGHUP", Times: []time.Duration{30 * ms, 20 * ms, 10 * ms}},
		{Change: "a worker added", Observed: "its name answers", Trigger: "watch 1 s", Times: []time.Duration{400 * ms, -1, 900 * ms}},
		{Change: "x", Observed: "y", Trigger: "z", Times: []time.Duration{-1}},
	}
	var b bytes.Buffer
	printLatency(&b, rows)
	got := strings.Split(strings.TrimSpace(b.String()), "\n")
	want := []string{
		"change          observed          trigger    ms median [min..max]  per trial",
		"a worker added  its name answers  SIGHUP     20 [10..30]           30 20 10",
		"a worker added  its name answers  watch 1 s  650 [400..900] (2 of 3)  400 - 900",
		"x               y                 z          not observed          -",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(got), len(want), b.String())
	}
	// Compared word by word: tabwriter pads each column to its widest cell.
	for i, g := range got {
		if strings.Join(strings.Fields(g), " ") != strings.Join(strings.Fields(want[i]), " ") {
			t.Errorf("line %d = %q, want %q", i, g, want[i])
		}
	}
}
