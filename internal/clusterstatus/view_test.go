package clusterstatus

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/engine"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the output")

var at = time.Date(2026, 11, 29, 1, 2, 3, 0, time.UTC)

// inst is a node's instance of the test cluster's Ingress VIP (or API VIP
// when name says so) in state, with chk_ingress passing or failing.
func inst(name, state string, base int, checkOK bool) engine.InstanceStatus {
	in := engine.InstanceStatus{Name: name, State: state, VRID: 42, VIPs: []string{"198.18.0.7"}, BasePriority: base, Effective: base}
	c := engine.Contribution{Source: "script chk_ingress", Weight: 50, OK: checkOK}
	if checkOK {
		c.Applied = 50
		in.Effective += 50
	} else {
		c.Reason = "GET http://localhost:1936/healthz/ready: 503 Service Unavailable"
	}
	in.Contributions = []engine.Contribution{c}
	if name == "t1_API" {
		in.VRID, in.VIPs, in.Contributions, in.Effective = 28, []string{"198.18.0.5"}, nil, base
	}
	if state == "MASTER" {
		in.LastTransition = &engine.Transition{From: "BACKUP", To: "MASTER", At: at, Reason: "master 198.18.0.13 (priority 40) is below our 90"}
	}
	return in
}

var expected = []Expected{
	{Instance: "t1_API", VRID: 28, VIPs: []string{"198.18.0.5"}, Nodes: []string{"master-0"}},
	{Instance: "t1_INGRESS", VRID: 42, VIPs: []string{"198.18.0.7"}, Nodes: []string{"master-0", "worker-0", "worker-1"}},
}

// scenarios are the cases of the golden tests and TestMerge.
var scenarios = []struct {
	name    string
	reports []Report
}{
	{name: "healthy", reports: []Report{
		{Node: "master-0", Address: "198.18.0.11:9652", Role: "master", Instances: []engine.InstanceStatus{inst("t1_API", "MASTER", 40, true), inst("t1_INGRESS", "BACKUP", 20, false)}},
		{Node: "worker-0", Address: "198.18.0.13:9652", Role: "worker", Instances: []engine.InstanceStatus{inst("t1_INGRESS", "MASTER", 40, true)}},
		{Node: "worker-1", Address: "198.18.0.14:9652", Role: "worker", Instances: []engine.InstanceStatus{inst("t1_INGRESS", "BACKUP", 40, true)}},
	}},
	{name: "check failed and VIP moved", reports: []Report{
		{Node: "master-0", Address: "198.18.0.11:9652", Role: "master", Instances: []engine.InstanceStatus{inst("t1_API", "MASTER", 40, true), inst("t1_INGRESS", "BACKUP", 20, false)}},
		{Node: "worker-0", Address: "198.18.0.13:9652", Role: "worker", Instances: []engine.InstanceStatus{inst("t1_INGRESS", "BACKUP", 40, false)}},
		{Node: "worker-1", Address: "198.18.0.14:9652", Role: "worker", Instances: []engine.InstanceStatus{inst("t1_INGRESS", "MASTER", 40, true)}},
	}},
	{name: "holder unreachable", reports: []Report{
		{Node: "master-0", Address: "198.18.0.11:9652", Role: "master", Instances: []engine.InstanceStatus{inst("t1_API", "MASTER", 40, true), inst("t1_INGRESS", "BACKUP", 20, false)}},
		{Node: "worker-0", Address: "198.18.0.13:9652", Role: "worker", Error: "dial tcp 198.18.0.13:9652: connect: connection refused"},
		{Node: "worker-1", Address: "198.18.0.14:9652", Role: "worker", Instances: []engine.InstanceStatus{inst("t1_INGRESS", "MASTER", 40, true)}},
	}},
	{name: "two holders and a conflict", reports: []Report{
		{Node: "master-0", Address: "198.18.0.11:9652", Role: "master", Instances: []engine.InstanceStatus{inst("t1_API", "MASTER", 40, true), inst("t1_INGRESS", "BACKUP", 20, false)}},
		{Node: "worker-0", Address: "198.18.0.13:9652", Role: "worker", Instances: []engine.InstanceStatus{func() engine.InstanceStatus {
			in := inst("t1_INGRESS", "MASTER", 40, true)
			in.Conflicts = []engine.Conflict{{Peer: "198.18.0.14", Kind: "auth", Detail: "authentication differs", Count: 7}}
			return in
		}()}},
		{Node: "worker-1", Address: "198.18.0.14:9652", Role: "worker", Instances: []engine.InstanceStatus{inst("t1_INGRESS", "MASTER", 40, true)}},
	}},
	{name: "nobody holds the API VIP", reports: []Report{
		{Node: "master-0", Address: "198.18.0.11:9652", Role: "master", Error: "context deadline exceeded"},
		{Node: "worker-0", Address: "198.18.0.13:9652", Role: "worker", Warnings: []string{"rejected its cluster file at 2026-11-29T01:00:00Z: c.yaml: ports.lb: 70000 is not a port (1..65535)"},
			Instances: []engine.InstanceStatus{inst("t1_INGRESS", "MASTER", 40, true)}},
		{Node: "worker-1", Address: "198.18.0.14:9652", Role: "worker", Instances: []engine.InstanceStatus{func() engine.InstanceStatus {
			in := inst("t1_INGRESS", "FAULT", 40, true)
			in.Fault = "interface eth0 is down"
			return in
		}()}},
	}},
}

// TestMerge checks the holders, verdicts and problems of each scenario.
func TestMerge(t *testing.T) {
	want := map[string]struct {
		holders  map[string][]string
		verdicts map[string]string
		problems []string
	}{
		"healthy": {holders: map[string][]string{"t1_API": {"master-0"}, "t1_INGRESS": {"worker-0"}},
			verdicts: map[string]string{"t1_API": "ok", "t1_INGRESS": "ok"}, problems: []string{}},
		"check failed and VIP moved": {holders: map[string][]string{"t1_API": {"master-0"}, "t1_INGRESS": {"worker-1"}},
			verdicts: map[string]string{"t1_API": "ok", "t1_INGRESS": "ok"}, problems: []string{}},
		"holder unreachable": {holders: map[string][]string{"t1_API": {"master-0"}, "t1_INGRESS": {"worker-1"}},
			verdicts: map[string]string{"t1_API": "ok", "t1_INGRESS": "ok"},
			problems: []string{"node worker-0 (198.18.0.13:9652) did not answer: dial tcp 198.18.0.13:9652: connect: connection refused"}},
		"two holders and a conflict": {holders: map[string][]string{"t1_API": {"master-0"}, "t1_INGRESS": {"worker-0", "worker-1"}},
			verdicts: map[string]string{"t1_API": "ok", "t1_INGRESS": "2 holders"},
			problems: []string{"t1_INGRESS (198.18.0.7): held by 2 nodes at once: worker-0, worker-1",
				"t1_INGRESS on worker-0: VRID 42 conflict with 198.18.0.14 (auth): authentication differs"}},
		"nobody holds the API VIP": {holders: map[string][]string{"t1_API": {}, "t1_INGRESS": {"worker-0"}},
			verdicts: map[string]string{"t1_API": "no holder", "t1_INGRESS": "ok"},
			problems: []string{"t1_API (198.18.0.5): no node holds it",
				"node master-0 (198.18.0.11:9652) did not answer: context deadline exceeded",
				"node worker-0: rejected its cluster file at 2026-11-29T01:00:00Z: c.yaml: ports.lb: 70000 is not a port (1..65535)"}},
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			v := Merge("cluster t1", expected, sc.reports)
			w := want[sc.name]
			holders, verdicts := map[string][]string{}, map[string]string{}
			for _, x := range v.VIPs {
				holders[x.Instance], verdicts[x.Instance] = x.Holders, x.Verdict
			}
			if d := cmp.Diff(w.holders, holders); d != "" {
				t.Errorf("holders (-want +got):\n%s", d)
			}
			if d := cmp.Diff(w.verdicts, verdicts); d != "" {
				t.Errorf("verdicts (-want +got):\n%s", d)
			}
			if d := cmp.Diff(w.problems, v.Problems); d != "" {
				t.Errorf("problems (-want +got):\n%s", d)
			}
			if v.OK() != (len(w.problems) == 0) {
				t.Errorf("OK() = %v with problems %q", v.OK(), v.Problems)
			}
		})
	}
}

// TestSilentNodeStaysInItsVIPs: a node that does not answer is a member
// of every instance the cluster file gives it, in state unreachable.
func TestSilentNodeStaysInItsVIPs(t *testing.T) {
	v := Merge("cluster t1", expected, scenarios[4].reports)
	var got []string
	for _, x := range v.VIPs {
		for _, m := range x.Members {
			got = append(got, x.Instance+"/"+m.Node+"/"+m.State)
		}
	}
	want := []string{"t1_API/master-0/unreachable", "t1_INGRESS/master-0/unreachable", "t1_INGRESS/worker-0/MASTER", "t1_INGRESS/worker-1/FAULT"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("members (-want +got):\n%s", d)
	}
}

// TestGolden compares the table and the JSON of each scenario with
// testdata/<scenario>.{txt,json}.golden.
func TestGolden(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			v := Merge("cluster t1 (cluster file cluster.yaml)", expected, sc.reports)
			for ext, write := range map[string]func(*bytes.Buffer, View) error{
				"txt":  func(b *bytes.Buffer, v View) error { return WriteTable(b, v) },
				"json": func(b *bytes.Buffer, v View) error { return WriteJSON(b, v) },
			} {
				var b bytes.Buffer
				if err := write(&b, v); err != nil {
					t.Fatal(err)
				}
				path := filepath.Join("testdata", filepath.Base(t.Name())+"."+ext+".golden")
				if *update {
					if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if d := cmp.Diff(string(want), b.String()); d != "" {
					t.Errorf("%s (-want +got):\n%s", path, d)
				}
			}
		})
	}
}

// TestMergeBGP: the VIPs announced by BGP are in the view with the nodes
// announcing them over an established session (m1), a node announcing
// with no session up (m2) is no announcer, a node whose check fails says
// why, a silent node stays a member, unreachable; a VIP nobody announces
// is a problem, and so is one only demoted nodes announce (the DNS VIP:
// m2, not demoted, has no session). The table and JSON are compared with
// testdata/bgp.*.golden.
func TestMergeBGP(t *testing.T) {
	exp := []Expected{
		{Instance: "api", VIPs: []string{"198.19.0.5"}, Nodes: []string{"m1", "m2", "m3"}, BGP: true},
		{Instance: "ingress", VIPs: []string{"198.19.0.7"}, Nodes: []string{"m1", "m2", "m3"}, BGP: true},
		{Instance: "dns", VIPs: []string{"198.19.0.9"}, Nodes: []string{"m1", "m2", "m3"}, BGP: true},
	}
	routes := func(api, ingress, dnsDemoted bool) []BGPRouteReport {
		r := []BGPRouteReport{{VIP: "198.19.0.5", Role: "api", Announced: api, Reason: "eligible: lb ok"},
			{VIP: "198.19.0.7", Role: "ingress", Announced: ingress, Reason: "eligible: chk_ingress ok"},
			{VIP: "198.19.0.9", Role: "dns", Announced: true, Demoted: dnsDemoted, Reason: "eligible: chk_dns ok"}}
		if !ingress {
			r[1].Reason = "chk_ingress failing (GET http://localhost:1936/healthz/ready: 503)"
		}
		if dnsDemoted {
			r[2].Reason = "demoted: chk_dns failing (exit 1)"
		}
		return r
	}
	reports := []Report{
		{Node: "m1", Address: "198.18.1.10:9652", Role: "master", BGP: &BGPReport{Peers: 1, Established: 1, Routes: routes(true, false, true)}},
		{Node: "m2", Address: "198.18.2.10:9652", Role: "master", BGP: &BGPReport{Peers: 1, Established: 0, Routes: routes(true, true, false)}},
		{Node: "m3", Address: "198.18.3.10:9652", Role: "master", Error: "context deadline exceeded"},
	}
	v := Merge("cluster t1 (cluster file cluster.yaml)", exp, reports)
	want := []BGPVIP{
		{Address: "198.19.0.5", Role: "api", Announcers: []string{"m1"}, Verdict: VerdictOK, Members: []BGPMember{
			{Node: "m1", Route: RouteAnnounced, Reason: "eligible: lb ok", Sessions: "1/1"},
			{Node: "m2", Route: RouteAnnounced, Reason: "eligible: lb ok", Sessions: "0/1"},
			{Node: "m3", Route: Unreachable}}},
		{Address: "198.19.0.7", Role: "ingress", Announcers: []string{}, Verdict: VerdictNoAnnouncer, Members: []BGPMember{
			{Node: "m1", Route: RouteNotAnnounced, Reason: "chk_ingress failing (GET http://localhost:1936/healthz/ready: 503)", Sessions: "1/1"},
			{Node: "m2", Route: RouteAnnounced, Reason: "eligible: chk_ingress ok", Sessions: "0/1"},
			{Node: "m3", Route: Unreachable}}},
		{Address: "198.19.0.9", Role: "dns", Announcers: []string{"m1"}, Verdict: VerdictDemoted, Members: []BGPMember{
			{Node: "m1", Route: RouteDemoted, Reason: "demoted: chk_dns failing (exit 1)", Sessions: "1/1"},
			{Node: "m2", Route: RouteAnnounced, Reason: "eligible: chk_dns ok", Sessions: "0/1"},
			{Node: "m3", Route: Unreachable}}},
	}
	if d := cmp.Diff(want, v.BGP); d != "" {
		t.Errorf("BGP VIPs (-want +got):\n%s", d)
	}
	wantProblems := []string{"198.19.0.7 (ingress, BGP): no node announces it over an established session",
		"198.19.0.9 (dns, BGP): every node announcing it is demoted (m1): a check fails on each",
		"node m3 (198.18.3.10:9652) did not answer: context deadline exceeded"}
	if d := cmp.Diff(wantProblems, v.Problems); d != "" {
		t.Errorf("problems (-want +got):\n%s", d)
	}
	if len(v.VIPs) != 0 {
		t.Errorf("VRRP VIPs %+v, want none (every VIP is announced by BGP)", v.VIPs)
	}
	for ext, write := range map[string]func(*bytes.Buffer, View) error{
		"txt":  func(b *bytes.Buffer, v View) error { return WriteTable(b, v) },
		"json": func(b *bytes.Buffer, v View) error { return WriteJSON(b, v) },
	} {
		var b bytes.Buffer
		if err := write(&b, v); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "bgp."+ext+".golden")
		if *update {
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		golden, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update)", err)
		}
		if d := cmp.Diff(string(golden), b.String()); d != "" {
			t.Errorf("%s (-want +got):\n%s", path, d)
		}
	}
}
