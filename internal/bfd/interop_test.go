//go:build linux

package bfd

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

var capture = flag.Bool("capture", false, "TestFRRInterop: write bfdd's packets into testdata/frr-*.bin")

const bfddPath = "/usr/lib/frr/bfdd"

// interopCase is one session between bfdd on h1 and vipstack on h2.
type interopCase struct {
	name     string
	v6       bool
	multihop bool
}

func (c interopCase) addrs(bfdd, vs *testnet.Host) (bfddAddr, vsAddr netip.Addr) {
	if c.v6 {
		return bfdd.IPv6.Addr(), vs.IPv6.Addr()
	}
	return bfdd.IPv4.Addr(), vs.IPv4.Addr()
}

// bfddPeer is one entry of bfdd's "show bfd peers json".
type bfddPeer struct {
	Multihop         bool   `json:"multihop"`
	Peer             string `json:"peer"`
	Status           string `json:"status"`
	Diagnostic       string `json:"diagnostic"`
	RemoteDiagnostic string `json:"remote-diagnostic"`
	RemoteID         uint32 `json:"remote-id"`
	RemoteRxMS       int    `json:"remote-receive-interval"`
	RemoteTxMS       int    `json:"remote-transmit-interval"`
}

type bfdd struct {
	h   *testnet.Host
	dir string
	cmd *exec.Cmd
	out *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startBFDD runs FRR's bfdd on its own, without zebra (it retries the
// zebra socket and runs IP sessions meanwhile), configured from a file,
// with its vty socket in a private directory for vtysh.
func startBFDD(t *testing.T, h *testnet.Host, conf string) *bfdd {
	t.Helper()
	dir, err := os.MkdirTemp("", "vbf-bfdd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// bfdd drops to the frr user and writes its sockets here.
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	cf := filepath.Join(dir, "bfdd.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &bfdd{h: h, dir: dir, out: &syncBuffer{}}
	b.cmd = h.Command(bfddPath, "-f", cf, "-i", filepath.Join(dir, "bfdd.pid"), "-z", filepath.Join(dir, "zserv.api"),
		"--vty_socket", dir, "-P", "0", "--bfdctl", filepath.Join(dir, "bfdd.sock"), "-u", "frr", "-g", "frr")
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	if err := h.Start(b.cmd); err != nil {
		t.Fatalf("start bfdd: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("bfdd output:\n%s", testutil.Tail(b.out.String(), 40))
		}
	})
	return b
}

func (b *bfdd) peers() ([]bfddPeer, error) {
	out, err := b.h.Command("vtysh", "--vty_socket", b.dir, "-d", "bfdd", "-c", "show bfd peers json").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("vtysh: %v: %s", err, out)
	}
	var ps []bfddPeer
	if err := json.Unmarshal(out, &ps); err != nil {
		return nil, fmt.Errorf("vtysh output %q: %v", out, err)
	}
	return ps, nil
}

// peer returns bfdd's view of the session to addr.
func (b *bfdd) peer(addr netip.Addr, multihop bool) (bfddPeer, error) {
	ps, err := b.peers()
	if err != nil {
		return bfddPeer{}, err
	}
	for _, p := range ps {
		if p.Peer == addr.String() && p.Multihop == multihop {
			return p, nil
		}
	}
	return bfddPeer{}, fmt.Errorf("bfdd has no peer %v (multihop %v): %+v", addr, multihop, ps)
}

// recorder writes the first packet bfdd sends in each state to testdata
// when -capture is set.
type recorder struct {
	Transport
	name string
	mu   sync.Mutex
	seen map[State]bool
	t    *testing.T
}

func (r *recorder) Read(b []byte) (int, netip.AddrPort, int, error) {
	n, from, ttl, err := r.Transport.Read(b)
	if err != nil || !*capture || n < 2 {
		return n, from, ttl, err
	}
	st := State(b[1] >> 6)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen[st] {
		return n, from, ttl, err
	}
	r.seen[st] = true
	name := fmt.Sprintf("frr-bfdd-%s-%s", r.name, strings.ToLower(st.String()))
	txt := fmt.Sprintf("# BFD control packet (UDP payload) sent by FRR 8.4 bfdd, captured by TestFRRInterop -capture.\n"+
		"src %v\nttl %d\n", from, ttl)
	if werr := os.WriteFile(filepath.Join("testdata", name+".bin"), b[:n], 0o644); werr != nil {
		r.t.Errorf("capture: %v", werr)
	}
	if werr := os.WriteFile(filepath.Join("testdata", name+".txt"), []byte(txt), 0o644); werr != nil {
		r.t.Errorf("capture: %v", werr)
	}
	return n, from, ttl, err
}

func requireFRR(t *testing.T) {
	t.Helper()
	testnet.RequireRoot(t)
	for _, p := range []string{bfddPath, "vtysh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: FRR is not installed (%s: %v); .ci/run installs the frr package", p, err)
		}
	}
}

// waitEvent waits for the session to report a change to want.
func waitEvent(t *testing.T, s *Session, want State, timeout time.Duration) Event {
	t.Helper()
	deadline := time.After(timeout)
	for {
		select {
		case ev := <-s.Events():
			t.Logf("%v: %v", ev.At.Format("15:04:05.000"), ev)
			if ev.To == want {
				return ev
			}
		case <-deadline:
			rej, err := s.Rejected()
			t.Fatalf("no change to %v within %v (state %v; rejected %v, last error %v)", want, timeout, s.State(), rej, err)
		}
	}
}

// TestFRRInterop runs FRR's bfdd on one host and a vipstack Session per
// case on another: single hop and multihop, IPv4 and IPv6, all at once.
// Every session comes Up on both sides; closing vipstack's session
// silently takes bfdd's Down by detection time; killing bfdd takes
// vipstack's Down the same way.
func TestFRRInterop(t *testing.T) {
	requireFRR(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vbf"})
	hb, hv := topo.Hosts[0], topo.Hosts[1]
	cases := []interopCase{
		{name: "ipv4", v6: false},
		{name: "ipv6", v6: true},
		{name: "ipv4-multihop", multihop: true},
		{name: "ipv6-multihop", v6: true, multihop: true},
	}
	// 300ms x 3 on both sides: a detection time of 900ms.
	const iv, mult = 300 * time.Millisecond, 3
	var conf strings.Builder
	conf.WriteString("log stdout debugging\ndebug bfd peer\ndebug bfd network\nbfd\n")
	for _, c := range cases {
		b, v := c.addrs(hb, hv)
		mh := ""
		if c.multihop {
			mh = " multihop"
		}
		fmt.Fprintf(&conf, " peer %v%s local-address %v\n  receive-interval 300\n  transmit-interval 300\n  detect-multiplier 3\n !\n", v, mh, b)
	}
	conf.WriteString("!\n")
	bd := startBFDD(t, hb, conf.String())

	sessions := map[string]*Session{}
	for _, c := range cases {
		b, v := c.addrs(hb, hv)
		cfg := SessionConfig{Local: v, Peer: b, Multihop: c.multihop, DesiredMinTx: iv, RequiredMinRx: iv, DetectMult: mult}
		if c.multihop {
			cfg.MinTTL = 254 // bfdd's default minimum-ttl for multihop
		}
		var tr *udpTransport
		if err := hv.Do(func() (err error) { tr, err = listenUDP(cfg); return err }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s, err := NewSession(cfg, &recorder{Transport: tr, name: c.name, seen: map[State]bool{}, t: t})
		if err != nil {
			tr.Close()
			t.Fatalf("%s: %v", c.name, err)
		}
		t.Cleanup(func() { s.Close() })
		sessions[c.name] = s
	}

	// Up on both sides. Out of Up both send once a second (RFC 5880
	// 6.8.3), so this takes a few seconds; the bound only ends a hung test.
	for _, c := range cases {
		t.Run(c.name+"/up", func(t *testing.T) {
			waitEvent(t, sessions[c.name], Up, 20*time.Second)
			_, v := c.addrs(hb, hv)
			testutil.Eventually(t, 10*time.Second, func() error {
				p, err := bd.peer(v, c.multihop)
				if err != nil {
					return err
				}
				if p.Status != "up" || p.RemoteID != sessions[c.name].LocalDiscr() {
					return fmt.Errorf("bfdd: %+v, want up with remote-id %d", p, sessions[c.name].LocalDiscr())
				}
				return nil
			})
			if rej, err := sessions[c.name].Rejected(); len(rej) != 0 {
				t.Errorf("vipstack discarded bfdd's packets: %v, last: %v", rej, err)
			}
		})
	}
	if t.Failed() {
		return
	}

	// vipstack stops sending: bfdd goes Down when its detection time
	// passes. The bound is generous (2 cores shared); the log shows the
	// measured time.
	c := cases[0]
	_, v := c.addrs(hb, hv)
	t.Run("vipstack-silent/bfdd-down", func(t *testing.T) {
		start := time.Now()
		sessions[c.name].Close()
		testutil.Eventually(t, 10*time.Second, func() error {
			p, err := bd.peer(v, c.multihop)
			if err != nil {
				return err
			}
			if p.Status != "down" {
				return fmt.Errorf("bfdd: %+v, want down", p)
			}
			if p.Diagnostic != "control detection time expired" {
				return fmt.Errorf("bfdd diagnostic %q, want control detection time expired", p.Diagnostic)
			}
			return nil
		})
		took := time.Since(start)
		t.Logf("bfdd saw %s down %v after vipstack stopped (detection time %v, polled every %v)", c.name, took, mult*iv, testutil.Interval)
		if took > mult*iv+3*time.Second {
			t.Errorf("bfdd took %v to see the session down, want about the detection time %v", took, mult*iv)
		}
	})

	// AdminDown from vipstack: bfdd goes down at once with the neighbour's
	// diagnostic.
	c2 := cases[1]
	_, v2 := c2.addrs(hb, hv)
	t.Run("vipstack-admindown/bfdd-down", func(t *testing.T) {
		if err := sessions[c2.name].AdminDown(context.Background()); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			p, err := bd.peer(v2, c2.multihop)
			if err != nil {
				return err
			}
			if p.Status != "down" || p.RemoteDiagnostic != "administratively down" {
				return fmt.Errorf("bfdd: %+v, want down with remote-diagnostic administratively down", p)
			}
			return nil
		})
	})

	// A poll sequence: vipstack slows down to 500ms while Up; bfdd learns
	// the new intervals and the session stays Up on both sides.
	c3 := cases[3]
	_, v3 := c3.addrs(hb, hv)
	t.Run("vipstack-poll/bfdd-learns", func(t *testing.T) {
		s := sessions[c3.name]
		if err := s.SetIntervals(context.Background(), 500*time.Millisecond, 500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 10*time.Second, func() error {
			p, err := bd.peer(v3, c3.multihop)
			if err != nil {
				return err
			}
			if p.Status != "up" || p.RemoteRxMS != 500 || p.RemoteTxMS != 500 {
				return fmt.Errorf("bfdd: %+v, want up with remote intervals 500ms", p)
			}
			return nil
		})
		select {
		case ev := <-s.Events():
			t.Errorf("session changed state during the poll sequence: %v", ev)
		default:
		}
		if s.State() != Up {
			t.Errorf("state %v, want Up", s.State())
		}
	})

	// bfdd dies: the multihop sessions go Down by detection time.
	t.Run("bfdd-killed/vipstack-down", func(t *testing.T) {
		start := time.Now()
		if err := syscall.Kill(-bd.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// The IPv6 multihop session runs at 500ms now: bfdd's 300ms TX
		// against our 500ms RX gives 3 x 500ms.
		for i, c := range cases[2:] {
			detect := []time.Duration{mult * iv, mult * 500 * time.Millisecond}[i]
			ev := waitEvent(t, sessions[c.name], Down, 10*time.Second)
			took := time.Since(start)
			t.Logf("%s: vipstack saw Down %v after bfdd was killed (detection time %v)", c.name, took, detect)
			if ev.Diag != DiagControlDetectExpired {
				t.Errorf("%s: diag %v, want %v", c.name, ev.Diag, DiagControlDetectExpired)
			}
			if took > detect+3*time.Second {
				t.Errorf("%s: took %v, want about the detection time %v", c.name, took, detect)
			}
		}
	})
}

// TestFRRPassword: FRR 8.4's bfdd has no authentication. It ignores the
// authentication section of our packets, while a vipstack session with a
// password discards bfdd's packets without one (RFC 5880 section 6.8.6):
// the session never comes Up and says why.
func TestFRRPassword(t *testing.T) {
	requireFRR(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: "vbf"})
	hb, hv := topo.Hosts[0], topo.Hosts[1]
	bd := startBFDD(t, hb, fmt.Sprintf("bfd\n peer %v local-address %v\n !\n!\n", hv.IPv4.Addr(), hb.IPv4.Addr()))
	var s *Session
	cfg := SessionConfig{Local: hv.IPv4.Addr(), Peer: hb.IPv4.Addr(), DesiredMinTx: 300 * time.Millisecond,
		RequiredMinRx: 300 * time.Millisecond, DetectMult: 3, Password: "vipstack-bfd", KeyID: 1}
	if err := hv.Do(func() (err error) { s, err = Dial(cfg); return err }); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	testutil.Eventually(t, 20*time.Second, func() error {
		if rej, _ := s.Rejected(); rej[ReasonAuth] < 2 {
			return fmt.Errorf("rejected %v, want at least 2 auth failures", rej)
		}
		return nil
	})
	_, last := s.Rejected()
	t.Logf("vipstack: %v", last)
	if !strings.Contains(last.Error(), "no authentication section (A bit clear): want simple password, key ID 1") {
		t.Errorf("last error %v, want the missing A bit named", last)
	}
	if s.State() != Down {
		t.Errorf("vipstack state %v, want Down", s.State())
	}
	p, err := bd.peer(hv.IPv4.Addr(), false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bfdd: %+v", p)
	if p.Status == "up" {
		t.Errorf("bfdd is up with a peer that discards all its packets")
	}
}
