package node

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/engine"
	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
	"github.com/vipstack/vipstack/internal/redirect"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from WriteTable's output")

// TestWriteTable compares the status table with
// testdata/TestWriteTable_<case>.golden: priorities as the base plus each
// check, what a check adds in its other state, why a check fails under
// its instance, the LB's backends and the DNS.
func TestWriteTable(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 3, 4, 0, time.UTC)
	lbDown := &lbstats.Snapshot{Healthy: false, Backends: []lbstats.BackendStats{{Name: "masters", Servers: []lbstats.ServerStats{
		{Name: "master-1", Addr: "198.18.0.12:6443", Status: "DOWN", CheckStatus: "L4CON"}}}}}
	dns := &DNSStatus{Zone: "managed.example.com", Nodes: 6, Listening: []string{"udp [::]:53", "tcp [::]:53"}}
	for _, tc := range []struct {
		name string
		s    Status
	}{{
		name: "backup with a failing check",
		s: Status{
			Node: "master-0", Role: "master", Interface: "eth0", Now: at.Add(3*time.Minute + 10*time.Second),
			VRRP: []engine.InstanceStatus{{
				Name: "managed_API", State: "BACKUP", VRID: 124, VIPs: []string{"198.18.0.5/32"},
				Master: "198.18.0.12", MasterPriority: 65, BasePriority: 40, Effective: 45,
				Contributions: []engine.Contribution{
					{Source: "script chk_ocp_lb", Weight: 20, OK: false, Applied: 0, Reason: "127.0.0.1:9445/readyz: L4CON connection refused"},
					{Source: "script chk_ocp_both", Weight: 5, OK: true, Applied: 5, Reason: "passing reasons are not shown"},
					{Source: "interface eth0", OK: true},
				},
				LastTransition: &engine.Transition{From: "MASTER", To: "BACKUP", At: at,
					Reason: "advertisement from 198.18.0.12 with higher priority 65, ours 45"},
			}, {
				Name: "managed_INGRESS", State: "MASTER", VRID: 75, VIPs: []string{"198.18.0.7/32"},
				Master: "198.18.0.11", MasterPriority: 70, BasePriority: 20, Effective: 70,
				Contributions: []engine.Contribution{
					{Source: "script chk_ingress", Weight: 50, OK: true, Applied: 50},
					{Source: "interface eth0", OK: true},
				},
				LastTransition: &engine.Transition{From: "BACKUP", To: "MASTER", At: at, Reason: "no advertisement for 3.6s (master down interval)"},
			}},
			LB: lbDown, DNS: dns,
		},
	}, {
		name: "fault",
		s: Status{
			Node: "master-2", Role: "master", Interface: "eth0", Now: at,
			VRRP: []engine.InstanceStatus{{
				Name: "managed_DNS", State: "FAULT", VRID: 9, VIPs: []string{"198.18.0.9/32"},
				BasePriority: 40, Effective: 40, Fault: "script chk_dns failing",
				Contributions: []engine.Contribution{
					{Source: "script chk_dns", OK: false, Fault: true, Reason: "127.0.0.1:18080/health: L7STS 503\nService Unavailable"},
					{Source: "interface eth0", OK: true},
				},
				LastTransition: &engine.Transition{From: "BACKUP", To: "FAULT", At: at.Add(-26 * time.Hour), Reason: "script chk_dns failing"},
			}},
		},
	}, {
		// The reason is the last transition's: 40 then, 65 now.
		name: "backup after its checks recovered",
		s: Status{
			Node: "master-0", Role: "master", Interface: "eth0", Now: at.Add(3 * time.Minute),
			VRRP: []engine.InstanceStatus{{
				Name: "managed_API", State: "BACKUP", VRID: 124, VIPs: []string{"198.18.0.5/32"},
				Master: "198.18.0.12", MasterPriority: 65, BasePriority: 40, Effective: 65,
				Contributions: []engine.Contribution{
					{Source: "script chk_ocp_lb", Weight: 20, OK: true, Applied: 20},
					{Source: "script chk_ocp_both", Weight: 5, OK: true, Applied: 5},
				},
				LastTransition: &engine.Transition{From: "MASTER", To: "BACKUP", At: at,
					Reason: "advertisement from 198.18.0.12 with higher priority 65, ours 40"},
			}},
		},
	}, {
		// A dual-stack master whose LB is healthy: the IPv4 redirect is in
		// effect, the IPv6 one cannot be installed (the LB's health alone
		// would hide that).
		name: "redirects",
		s: Status{
			Node: "master-0", Role: "master", Interface: "eth0", Now: at,
			LB: &lbstats.Snapshot{Healthy: true},
			Redirects: []RedirectStatus{
				{VIP: "198.18.0.5:6443", ToPort: 9445, Want: "enable", InEffect: true},
				{VIP: "[fd00::5]:6443", ToPort: 9445, Want: "enable", Failures: 12,
					Error: "redirect: enable vipstack_redirect_fd00__5_6443: netlink receive: operation not permitted"},
				{VIP: "[fd00::6]:6443", ToPort: 9445, Want: "disable"},
				{VIP: "[fd00::7]:6443", ToPort: 9445},
			},
		},
	}, {
		name: "cluster file rejected",
		s: Status{
			Node: "worker-0", Role: "worker", Interface: "eth0", Now: at.Add(time.Minute),
			Loaded: at.Add(-2 * time.Hour), LoadError: "c.yaml: ports.lb: 53 is also the port of the cluster DNS (UDP and TCP)",
			Rejected: &Rejection{At: at, Error: "c.yaml: ports.lb: 53 is also the port of the cluster DNS (UDP and TCP)\n" +
				"c.yaml: nodes[1].role: \"infra\" is not a role (accepted: bootstrap, master, worker)"},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, tc.s); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "TestWriteTable_"+strings.ReplaceAll(tc.name, " ", "_")+".golden")
			if *update {
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Fatalf("table (-%s +got):\n%s", path, diff)
			}
		})
	}
}

// TestListening checks that the DNS's sockets are named with their
// protocol, a UDP and a TCP socket on one address apart.
func TestListening(t *testing.T) {
	any6 := net.IPv6unspecified
	for _, tc := range []struct {
		name  string
		addrs []net.Addr
		want  []string
	}{
		{name: "none"},
		{name: "UDP and TCP on one address",
			addrs: []net.Addr{&net.TCPAddr{IP: any6, Port: 53}, &net.UDPAddr{IP: any6, Port: 53}},
			want:  []string{"udp [::]:53", "tcp [::]:53"}},
		{name: "two addresses",
			addrs: []net.Addr{&net.UDPAddr{IP: net.IPv4(198, 18, 0, 11), Port: 5353}, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}},
			want:  []string{"tcp 127.0.0.1:53", "udp 198.18.0.11:5353"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, listening(tc.addrs)); diff != "" {
				t.Fatalf("listening (-want +got):\n%s", diff)
			}
		})
	}
}

// TestContribution checks a check's share of the priority as the table
// shows it: what it adds now and, when nothing, what it adds otherwise.
func TestContribution(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    engine.Contribution
		want string
	}{
		{name: "passing, adding", c: engine.Contribution{Source: "script chk_ocp_both", Weight: 5, OK: true, Applied: 5},
			want: "+5(chk_ocp_both ok)"},
		{name: "failing, adding when ok", c: engine.Contribution{Source: "script chk_ocp_lb", Weight: 20},
			want: "+0(chk_ocp_lb failing, +20 when ok)"},
		{name: "negative weight, passing", c: engine.Contribution{Source: "script chk_x", Weight: -10, OK: true},
			want: "+0(chk_x ok, -10 when failing)"},
		{name: "negative weight, failing", c: engine.Contribution{Source: "script chk_x", Weight: -10, Applied: -10},
			want: "-10(chk_x failing)"},
		{name: "reversed weight, failing", c: engine.Contribution{Source: "script chk_x", Weight: 10, Applied: -10},
			want: "-10(chk_x failing)"},
		{name: "reversed weight, passing", c: engine.Contribution{Source: "script chk_x", Weight: 10, OK: true},
			want: "+0(chk_x ok, -10 when failing)"},
		{name: "interface down", c: engine.Contribution{Source: "interface eth1", Weight: 30},
			want: "+0(interface eth1 failing, +30 when ok)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := contribution(tc.c); got != tc.want {
				t.Fatalf("contribution(%+v) = %q, want %q", tc.c, got, tc.want)
			}
		})
	}
}

// TestSince checks how the table dates a transition: the time of day and
// its age, the date when it is of another day, no age without the
// agent's time.
func TestSince(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 3, 4, 0, time.UTC)
	for _, tc := range []struct {
		name string
		now  time.Time
		want string
	}{
		{name: "seconds", now: at.Add(42*time.Second + 900*time.Millisecond), want: "12:03:04 (42s ago)"},
		{name: "minutes", now: at.Add(3*time.Minute + 59*time.Second), want: "12:03:04 (3m ago)"},
		{name: "hours", now: at.Add(2*time.Hour + 5*time.Minute), want: "12:03:04 (2h5m ago)"},
		{name: "another day", now: at.Add(13 * time.Hour), want: "2026-03-01 12:03:04 (13h0m ago)"},
		{name: "days", now: at.Add(50 * time.Hour), want: "2026-03-01 12:03:04 (2d ago)"},
		{name: "now ahead of the agent's clock", now: at.Add(-time.Second), want: "12:03:04 (0s ago)"},
		{name: "now unknown", want: "2026-03-01 12:03:04"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := since(at, tc.now); got != tc.want {
				t.Fatalf("since(%v, %v) = %q, want %q", at, tc.now, got, tc.want)
			}
		})
	}
}

// TestStatusClusterFile checks that the status says when the cluster file
// in force was loaded, and apart from it when and why a later one was
// refused.
func TestStatusClusterFile(t *testing.T) {
	loaded := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	rejected := loaded.Add(5 * time.Minute)
	type file struct {
		Loaded    time.Time
		Rejected  *Rejection
		LoadError string
	}
	for _, tc := range []struct {
		name       string
		rejectedAt time.Time
		loadErr    string
		want       file
	}{
		{name: "loaded", want: file{Loaded: loaded}},
		{name: "a later version rejected", rejectedAt: rejected, loadErr: "c.yaml: bad",
			want: file{Loaded: loaded, Rejected: &Rejection{At: rejected, Error: "c.yaml: bad"}, LoadError: "c.yaml: bad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Agent{clk: clock.NewFake(rejected.Add(time.Minute)), plan: &cluster.Plan{Node: cluster.Node{Name: "m0", Role: cluster.Master}},
				lastLoad: loaded, rejectedAt: tc.rejectedAt, loadErr: tc.loadErr}
			s := a.Status()
			if diff := cmp.Diff(tc.want, file{s.Loaded, s.Rejected, s.LoadError}); diff != "" {
				t.Fatalf("cluster file (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStatusRedirects checks that the status reports each API VIP
// redirect's state as its Follower knows it: a master whose load balancer
// is healthy but whose redirect cannot be installed says so.
func TestStatusRedirects(t *testing.T) {
	tg := &failingToggler{}
	f := redirect.NewFollower(tg, slog.New(slog.NewTextHandler(io.Discard, nil)), clock.NewFake(time.Unix(0, 0)))
	go f.Run()
	defer f.Stop()
	vip := netip.MustParseAddrPort("198.18.0.5:6443")
	a := &Agent{clk: clock.NewFake(time.Unix(0, 0)), plan: &cluster.Plan{Node: cluster.Node{Name: "m0", Role: cluster.Master}},
		followers: map[netip.AddrPort]*follower{vip: {f: f, toPort: 9445}}}
	if diff := cmp.Diff([]RedirectStatus{{VIP: "198.18.0.5:6443", ToPort: 9445}}, a.Status().Redirects); diff != "" {
		t.Errorf("before a verdict (-want +got):\n%s", diff)
	}
	f.Set(true)
	want := []RedirectStatus{{VIP: "198.18.0.5:6443", ToPort: 9445, Want: "enable", Failures: 1, Error: "nft: operation not permitted"}}
	var got []RedirectStatus
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) { // the follower's goroutine, not a timer
		if got = a.Status().Redirects; cmp.Equal(want, got) {
			break
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after a failed enable (-want +got):\n%s", diff)
	}
}

// failingToggler is a redirect whose every change fails.
type failingToggler struct{}

func (failingToggler) Enable() error        { return errors.New("nft: operation not permitted") }
func (failingToggler) Disable() error       { return errors.New("nft: operation not permitted") }
func (failingToggler) Renew() error         { return errors.New("nft: operation not permitted") }
func (failingToggler) Lease() time.Duration { return 5 * time.Second }
