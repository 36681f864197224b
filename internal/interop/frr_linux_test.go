package interop_test

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
)

// prefix starts the namespace names of these tests.
const prefix = "vrd"

const vrid = 51

// frrCase is one protocol combination FRR 8.4 and vipstack share.
type frrCase struct {
	name     string
	version  int
	family   int
	vip      netip.Addr
	interval time.Duration
}

var frrCases = []frrCase{
	{name: "v3-ipv4", version: 3, family: 4, vip: netip.MustParseAddr("198.18.0.100"), interval: 500 * time.Millisecond},
	{name: "v3-ipv6", version: 3, family: 6, vip: netip.MustParseAddr("fd00:bb::100"), interval: 500 * time.Millisecond},
	{name: "v2-ipv4", version: 2, family: 4, vip: netip.MustParseAddr("198.18.0.100"), interval: time.Second},
}

// pair is FRR on host 1 and vipstack on host 2 in one virtual router.
type pair struct {
	c        frrCase
	topo     *testnet.Topology
	frr      *peers.FRRNode
	vs       *peers.Node
	frrPrio  int
	vsPrio   int
	frrHigh  bool
	vsConf   peers.Conf
	bin, dir string
}

func vipstackBin(t *testing.T) string {
	t.Helper()
	testnet.RequireRoot(t)
	if _, err := os.Stat(filepath.Join(peers.FRRDir, "vrrpd")); err != nil {
		t.Skipf("skipping: FRR's vrrpd is not installed (%v)", err)
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// frrTempDir returns a test directory the user frr, which FRR's daemons
// run as, can enter.
func frrTempDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startPair starts both speakers; frrHigh gives FRR the higher priority.
func startPair(t *testing.T, bin string, c frrCase, frrHigh bool) *pair {
	t.Helper()
	p := &pair{c: c, topo: testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: prefix}), frrHigh: frrHigh, bin: bin, dir: frrTempDir(t)}
	p.frrPrio, p.vsPrio = 100, 200
	if frrHigh {
		p.frrPrio, p.vsPrio = 200, 100
	}
	h1 := p.topo.Hosts[0]
	fc := peers.FRRConf{Version: c.version, Interval: c.interval, VRID: vrid, Priority: p.frrPrio, VIPs: []netip.Addr{c.vip}}
	var err error
	p.frr, err = peers.StartFRR(h1, fc, filepath.Join(p.dir, "frr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FRR log:\n%s", p.frr.Log())
		}
		_ = p.frr.Kill()
	})
	bits := 32
	if c.family == 6 {
		bits = 128
	}
	p.vsConf = peers.Conf{Version: c.version, Interval: c.interval, VRID: vrid, Priority: p.vsPrio,
		VIP: netip.PrefixFrom(c.vip, bits)}
	p.vs = p.startVipstack(t, p.vsConf)
	return p
}

func (p *pair) startVipstack(t *testing.T, conf peers.Conf) *peers.Node {
	t.Helper()
	text, err := conf.Render("vs")
	if err != nil {
		t.Fatal(err)
	}
	n, err := peers.Start(p.topo.Hosts[1], peers.Vipstack, text, filepath.Join(p.dir, "vipstack"), p.bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("vipstack log:\n%s", n.Log())
		}
		if n.Alive() {
			_ = n.Kill()
		}
	})
	return n
}

// holders returns who acts as master now: FRR by its own status (its
// addresses stay on the macvlan whatever the state), vipstack by the VIP on
// its interface while it runs.
func (p *pair) holders() ([]string, error) {
	var out []string
	m, err := p.frr.Master(p.c.family)
	if err != nil {
		return nil, err
	}
	if m {
		out = append(out, "frr")
	}
	if p.vs.Alive() {
		held, err := p.topo.Hosts[1].HasAddr(p.c.vip)
		if err != nil {
			return nil, err
		}
		if held {
			out = append(out, "vipstack")
		}
	}
	return out, nil
}

// waitSole polls until want is the only master and stays so for stable;
// it returns how long until that state first appeared.
func (p *pair) waitSole(t *testing.T, want string, stable, timeout time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	var since time.Time
	var last []string
	for time.Since(start) < timeout {
		h, err := p.holders()
		if err != nil {
			t.Fatal(err)
		}
		last = h
		if len(h) == 1 && h[0] == want {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= stable {
				return since.Sub(start)
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(20 * time.Millisecond) // polling two processes, bounded by timeout
	}
	t.Fatalf("after %v the masters are %v, want only %s", timeout, last, want)
	return 0
}

// sampleOne checks that exactly want holds at every sample for d.
func (p *pair) sampleOne(t *testing.T, want string, d time.Duration) {
	t.Helper()
	n := 0
	for start := time.Now(); time.Since(start) < d; n++ {
		h, err := p.holders()
		if err != nil {
			t.Fatal(err)
		}
		if len(h) != 1 || h[0] != want {
			t.Fatalf("sample %d: masters %v, want only %s", n, h, want)
		}
		time.Sleep(50 * time.Millisecond) // sampling, bounded by d
	}
	t.Logf("%d samples over %v: only %s", n, d, want)
}

func (p *pair) master() string {
	if p.frrHigh {
		return "frr"
	}
	return "vipstack"
}

func (p *pair) backup() string {
	if p.frrHigh {
		return "vipstack"
	}
	return "frr"
}

// masterDown is the backup's Master_Down_Interval (RFC 5798 6.1).
func (p *pair) masterDown() time.Duration {
	low := min(p.frrPrio, p.vsPrio)
	skew := time.Duration(256-low) * p.c.interval / 256
	return 3*p.c.interval + skew
}

// checkAccepted checks that each side took the other's adverts: FRR as
// backup learned the master's interval and counts received adverts; no
// drop in vipstack's debug log nor a complaint in FRR's.
func (p *pair) checkAccepted(t *testing.T) {
	t.Helper()
	s, err := p.frr.Status(p.c.family)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("FRR %s: status %s, primary %s, rx %d, tx %d, master interval %d ms, skew %d ms, master down %d ms",
		p.c.name, s.Status, s.PrimaryAddress, s.Stats.AdverRx, s.Stats.AdverTx, s.MasterAdverInt, s.SkewTime, s.MasterDown)
	if p.frrHigh {
		if s.Status != "Master" || s.Stats.AdverTx == 0 {
			t.Errorf("FRR: status %s, %d adverts sent, want Master sending", s.Status, s.Stats.AdverTx)
		}
	} else {
		if s.Status != "Backup" || s.Stats.AdverRx == 0 {
			t.Errorf("FRR: status %s, %d adverts received, want Backup receiving vipstack's", s.Status, s.Stats.AdverRx)
		}
		if want := int(p.c.interval.Milliseconds()); s.MasterAdverInt != want {
			t.Errorf("FRR learned master interval %d ms, want %d (vipstack's)", s.MasterAdverInt, want)
		}
	}
	if strings.Contains(p.vs.Log(), "dropped") {
		t.Errorf("vipstack dropped packets:\n%s", grep(p.vs.Log(), "dropped"))
	}
	for _, w := range []string{"checksum", "TTL", "ttl", "Discard", "discard", "invalid", "Invalid"} {
		if strings.Contains(p.frr.Log(), w) {
			t.Errorf("FRR's log mentions %q:\n%s", w, grep(p.frr.Log(), w))
		}
	}
}

func grep(text, w string) string {
	var out []string
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, w) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFRRInterop runs FRR's vrrpd and vipstack in one virtual router for
// VRRPv3 IPv4 and IPv6 and VRRPv2 IPv4, each side as the higher priority:
// the election, adverts accepted both ways, then takeover after a crash
// (kill -9), a graceful stop (priority 0) and a priority drop.
func TestFRRInterop(t *testing.T) {
	bin := vipstackBin(t)
	for _, c := range frrCases {
		for _, frrHigh := range []bool{true, false} {
			dir := "vipstack-master"
			if frrHigh {
				dir = "frr-master"
			}
			t.Run(c.name+"/"+dir, func(t *testing.T) {
				t.Run("kill", func(t *testing.T) { testKill(t, bin, c, frrHigh) })
				t.Run("stop", func(t *testing.T) { testStop(t, bin, c, frrHigh) })
				t.Run("priority", func(t *testing.T) { testPriority(t, bin, c, frrHigh) })
			})
		}
	}
}

// elect starts the pair and checks the election and the adverts.
func elect(t *testing.T, bin string, c frrCase, frrHigh bool) *pair {
	t.Helper()
	p := startPair(t, bin, c, frrHigh)
	// Both start as backup; the higher waits its master-down interval.
	d := p.waitSole(t, p.master(), 2*p.c.interval, 3*p.masterDown()+10*time.Second)
	t.Logf("%s master after %v", p.master(), d)
	p.sampleOne(t, p.master(), 6*p.c.interval)
	p.checkAccepted(t)
	return p
}

func testKill(t *testing.T, bin string, c frrCase, frrHigh bool) {
	p := elect(t, bin, c, frrHigh)
	if frrHigh {
		if err := p.frr.Kill(); err != nil {
			t.Fatal(err)
		}
	} else if err := p.vs.Kill(); err != nil {
		t.Fatal(err)
	}
	// Bound: the backup's master-down interval, plus a margin for a
	// loaded two-core machine.
	bound := p.masterDown() + 2*time.Second
	d := p.waitSole(t, p.backup(), p.c.interval, bound)
	t.Logf("kill -9 %s: %s sole master after %v (master down %v, bound %v)", p.master(), p.backup(), d, p.masterDown(), bound)
}

func testStop(t *testing.T, bin string, c frrCase, frrHigh bool) {
	p := elect(t, bin, c, frrHigh)
	if frrHigh {
		// FRR's graceful stop of one router: its shutdown command.
		if err := p.frr.Configure(fmt.Sprintf("vrrp %d shutdown", vrid)); err != nil {
			t.Fatal(err)
		}
	} else if err := p.vs.Term(); err != nil {
		t.Fatal(err)
	}
	// A priority-0 advert makes the backup wait only its skew; the bound
	// stays below the master-down interval, so a missed priority 0
	// fails.
	bound := 3 * p.c.interval
	d := p.waitSole(t, p.backup(), p.c.interval, bound)
	t.Logf("graceful stop of %s: %s sole master after %v (skew %v, bound %v)", p.master(), p.backup(), d,
		time.Duration(256-min(p.frrPrio, p.vsPrio))*p.c.interval/256, bound)
}

func testPriority(t *testing.T, bin string, c frrCase, frrHigh bool) {
	p := elect(t, bin, c, frrHigh)
	if frrHigh {
		if err := p.frr.Configure(fmt.Sprintf("vrrp %d priority 50", vrid)); err != nil {
			t.Fatal(err)
		}
	} else {
		conf := p.vsConf
		conf.Priority = 50
		text, err := conf.Render("vs")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.vs.Conf, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := p.vs.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	// The preempting backup sees a lower priority and takes over when
	// its master-down timer runs out (RFC 5798 6.4.2), or earlier.
	bound := p.masterDown() + 2*time.Second
	d := p.waitSole(t, p.backup(), p.c.interval, bound)
	t.Logf("priority of %s to 50: %s sole master after %v (bound %v)", p.master(), p.backup(), d, bound)
	p.sampleOne(t, p.backup(), 4*p.c.interval)
}

// TestFRRWire captures the master's adverts on the backup's host, for each
// case and direction, and checks what both implementations require of the
// other's packets: version, VRID, priority, the advertised address, and a
// TTL/hop limit of 255. The capture is logged: docs/design/vrrp.md quotes it.
func TestFRRWire(t *testing.T) {
	bin := vipstackBin(t)
	for _, c := range frrCases {
		for _, frrHigh := range []bool{true, false} {
			dir := "vipstack-master"
			if frrHigh {
				dir = "frr-master"
			}
			t.Run(c.name+"/"+dir, func(t *testing.T) {
				p := elect(t, bin, c, frrHigh)
				backup := p.topo.Hosts[0]
				if frrHigh {
					backup = p.topo.Hosts[1]
				}
				filter := "ip proto 112"
				if c.family == 6 {
					filter = "ip6 proto 112"
				}
				out, err := backup.Run("timeout", "10", "tcpdump", "-i", "eth0", "-nn", "-e", "-v", "-c", "3", "-l", filter)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("on %s's host:\n%s", p.backup(), out)
				lines := strings.Split(out, "\n")
				want := []string{fmt.Sprintf("VRRPv%d, Advertisement, vrid %d, prio %d", c.version, vrid, max(p.frrPrio, p.vsPrio)),
					"addrs: " + c.vip.String()}
				if c.family == 4 {
					want = append(want, "ttl 255")
				} else {
					want = append(want, "hlim 255")
				}
				for _, w := range want {
					if !strings.Contains(strings.Join(lines, " "), w) {
						t.Errorf("capture lacks %q", w)
					}
				}
				p.checkAccepted(t)
			})
		}
	}
}

// TestFRRARP has a client on the segment resolve the VIP, with each side as
// master, and checks that only the master answers: vipstack with its
// interface's MAC, FRR with the virtual MAC from its macvlan (protodown
// while backup). Without arp_ignore 1 on FRR's parent interface (which
// StartFRR sets) FRR's host answered with the parent's MAC as backup too.
func TestFRRARP(t *testing.T) {
	bin := vipstackBin(t)
	c := frrCases[0]
	for _, frrHigh := range []bool{true, false} {
		dir := "vipstack-master"
		if frrHigh {
			dir = "frr-master"
		}
		t.Run(dir, func(t *testing.T) {
			p := elect(t, bin, c, frrHigh)
			want := p.topo.Hosts[1].MAC
			if frrHigh {
				want = peers.VMAC(4, vrid)
			}
			cl := p.topo.Client
			dump := cl.Command("timeout", "5", "tcpdump", "-i", "eth0", "-nn", "-l", "-c", "4", "arp and arp[6:2] = 2")
			var out strings.Builder
			dump.Stdout = &out
			if err := cl.Start(dump); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second) // let tcpdump open its socket (bounded, not a protocol timer)
			for i := 0; i < 3; i++ {
				if _, err := cl.Run("ip", "neigh", "flush", "dev", "eth0"); err != nil {
					t.Fatal(err)
				}
				if _, err := cl.Run("ping", "-c", "1", "-W", "1", c.vip.String()); err != nil {
					t.Fatal(err)
				}
			}
			_ = dump.Wait()
			var replies []string
			for _, l := range strings.Split(out.String(), "\n") {
				if strings.Contains(l, "Reply "+c.vip.String()+" is-at") {
					replies = append(replies, l)
					if !strings.Contains(l, "is-at "+want) {
						t.Errorf("reply from a non-master: %s (want only %s, %s's)", l, want, p.master())
					}
				}
			}
			if len(replies) == 0 {
				t.Fatalf("no ARP reply for %s captured:\n%s", c.vip, out.String())
			}
			t.Logf("%d replies, all is-at %s", len(replies), want)
		})
	}
}
