//go:build linux

package discovery

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Root tests: real sockets in network namespaces. Our side runs in-process
// (MDNS.Run inside Host.Do, so its sockets live in the namespace); peers
// run as mdnstest processes so they can be killed with SIGKILL.

const mdnsTestPrefix = "vsK"

var (
	vip4 = netip.MustParseAddr("198.18.0.200")
	vip6 = netip.MustParseAddr("fd00:bb::200")
)

// nodeLog records every report of a source with the time it arrived.
type nodeLog struct {
	name string
	mu   sync.Mutex
	hist []nodeReport
	note chan struct{}
}

type nodeReport struct {
	at    time.Time
	nodes []Node
}

func newNodeLog(name string) *nodeLog { return &nodeLog{name: name, note: make(chan struct{}, 1)} }

func (l *nodeLog) add(at time.Time, nodes []Node) {
	l.mu.Lock()
	l.hist = append(l.hist, nodeReport{at, nodes})
	l.mu.Unlock()
	select {
	case l.note <- struct{}{}:
	default:
	}
}

func (l *nodeLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.hist)
}

// waitFor waits (bounded) for a report from index from on that satisfies
// ok, and returns when it arrived.
func (l *nodeLog) waitFor(t *testing.T, from int, bound time.Duration, what string, ok func([]Node) bool) time.Time {
	t.Helper()
	deadline := time.After(bound)
	for {
		l.mu.Lock()
		for i := from; i < len(l.hist); i++ {
			if ok(l.hist[i].nodes) {
				at := l.hist[i].at
				l.mu.Unlock()
				return at
			}
		}
		var last []Node
		if n := len(l.hist); n > 0 {
			last = l.hist[n-1].nodes
		}
		l.mu.Unlock()
		select {
		case <-l.note:
		case <-deadline:
			t.Fatalf("%s: no report within %v in which %s; last report: %v", l.name, bound, what, summary(last))
		}
	}
}

func hasNode(want Node) func([]Node) bool {
	return func(nodes []Node) bool {
		for _, n := range nodes {
			if n.Name == want.Name {
				return n.Role == want.Role && slices.Equal(n.Addrs, want.Addrs)
			}
		}
		return false
	}
}

func lacksNode(name string) func([]Node) bool {
	return func(nodes []Node) bool {
		for _, n := range nodes {
			if n.Name == name {
				return false
			}
		}
		return true
	}
}

// runLocal runs m inside h's namespace until the test ends or stop is called.
func runLocal(t *testing.T, h *testnet.Host, m *MDNS) (log *nodeLog, stop func()) {
	t.Helper()
	if m.Logger == nil {
		m.Logger = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	log = newNodeLog("local " + m.Self.Name)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- h.Do(func() error { return m.Run(ctx, func(n []Node) { log.add(time.Now(), n) }) })
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("MDNS.Run in %s: %v", h.Name, err)
				}
			case <-time.After(5 * time.Second):
				t.Errorf("MDNS.Run in %s did not return within 5s of cancel", h.Name)
			}
		})
	}
	t.Cleanup(stop)
	return log, stop
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// buildPeer builds the mdnstest helper.
func buildPeer(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mdnstest")
	out, err := exec.Command("go", "build", "-o", bin, "github.com/vipstack/vipstack/internal/discovery/mdnstest").CombinedOutput()
	if err != nil {
		t.Fatalf("go build mdnstest: %v\n%s", err, out)
	}
	return bin
}

type peer struct {
	cmd     *exec.Cmd
	log     *nodeLog
	started time.Time // first report: Run has opened its sockets
	stderr  *syncbuf.Buffer
	exited  chan struct{} // closed once the process is reaped
}

// startPeer runs mdnstest in h's namespace and waits for its first report.
func startPeer(t *testing.T, h *testnet.Host, bin string, args ...string) *peer {
	t.Helper()
	p := &peer{log: newNodeLog("peer " + h.Name), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	p.cmd = h.Command(bin, args...)
	p.cmd.Stderr = p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.StartFor(t, p.cmd); err != nil {
		t.Fatalf("start mdnstest: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var r struct {
				Time  time.Time `json:"time"`
				Nodes []Node    `json:"nodes"`
			}
			if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
				p.log.add(r.Time, r.Nodes)
			}
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
		}
		if t.Failed() {
			t.Logf("peer %v stderr:\n%s", args, p.stderr.String())
		}
	})
	p.started = p.log.waitFor(t, 0, 10*time.Second, "mdnstest started", func([]Node) bool { return true })
	return p
}

// signal sends sig to the peer (mdnstest itself: ip netns exec execs it).
func (p *peer) signal(t *testing.T, sig syscall.Signal) time.Time {
	t.Helper()
	at := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
	return at
}

func (p *peer) wait(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
	case <-time.After(5 * time.Second):
		t.Fatalf("mdnstest did not exit within 5s")
	}
}

func addVIPs(t *testing.T, h *testnet.Host) {
	t.Helper()
	for _, a := range []string{vip4.String() + "/32", vip6.String() + "/128"} {
		if out, err := exec.Command("ip", "-n", h.Name, "addr", "add", a, "dev", h.Link, "nodad").CombinedOutput(); err != nil {
			t.Fatalf("add VIP %s: %v: %s", a, err, out)
		}
	}
}

// sniffer collects every mDNS datagram seen on a host's link.
type sniffer struct {
	mu   sync.Mutex
	msgs []sniffed
}

type sniffed struct {
	from netip.AddrPort
	msg  *dns.Msg
	raw  []byte
}

func startSniffer(t *testing.T, h *testnet.Host) *sniffer {
	t.Helper()
	s := &sniffer{}
	var conns []net.PacketConn
	err := h.Do(func() error {
		ifi, err := net.InterfaceByName(h.Link)
		if err != nil {
			return err
		}
		ifaces := []net.Interface{*ifi}
		c, err := listenMDNS(ifaces)
		if err != nil {
			return err
		}
		if c.v4 == nil || c.v6 == nil {
			c.close()
			return errors.New("sniffer needs both IPv4 and IPv6")
		}
		conns = append(conns, c.v4.PacketConn, c.v6.PacketConn)
		return nil
	})
	if err != nil {
		t.Fatalf("sniffer: %v", err)
	}
	for _, c := range conns {
		t.Cleanup(func() { _ = c.Close() })
		go func() {
			buf := make([]byte, 9000)
			for {
				n, from, err := c.ReadFrom(buf)
				if err != nil {
					return
				}
				m := new(dns.Msg)
				if m.Unpack(buf[:n]) != nil {
					continue
				}
				s.mu.Lock()
				s.msgs = append(s.msgs, sniffed{from.(*net.UDPAddr).AddrPort(), m, append([]byte(nil), buf[:n]...)})
				s.mu.Unlock()
			}
		}()
	}
	return s
}

// addresses returns every address record for host seen on the link.
func (s *sniffer) addresses(host string) (addrs map[netip.Addr]int, packets int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	addrs = map[netip.Addr]int{}
	for _, m := range s.msgs {
		for _, rr := range append(append(append([]dns.RR(nil), m.msg.Answer...), m.msg.Ns...), m.msg.Extra...) {
			if !strings.EqualFold(rr.Header().Name, host) {
				continue
			}
			switch r := rr.(type) {
			case *dns.A:
				a, _ := netip.AddrFromSlice(r.A.To4())
				addrs[a]++
			case *dns.AAAA:
				a, _ := netip.AddrFromSlice(r.AAAA)
				addrs[a]++
			}
		}
	}
	return addrs, len(s.msgs)
}

func (s *sniffer) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.msgs)
}

// since returns the datagrams from mark on sent by one of from.
func (s *sniffer) since(mark int, from ...netip.Addr) [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]byte
	for _, m := range s.msgs[mark:] {
		if slices.Contains(from, m.from.Addr().WithZone("")) && m.from.Port() == mdnsPort {
			out = append(out, m.raw)
		}
	}
	return out
}

// legacyQuery sends a one-shot (legacy unicast, RFC 6762 section 6.7) query
// from client to server:5353 and returns the address records answered.
func legacyQuery(t *testing.T, client *testnet.Host, server netip.Addr, name string) []netip.Addr {
	t.Helper()
	var got []netip.Addr
	err := client.Do(func() error {
		c, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(netip.AddrPortFrom(server, mdnsPort)))
		if err != nil {
			return err
		}
		defer c.Close()
		q := new(dns.Msg)
		q.SetQuestion(name, dns.TypeANY)
		q.RecursionDesired = false
		b, err := q.Pack()
		if err != nil {
			return err
		}
		if _, err := c.Write(b); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
		buf := make([]byte, 9000)
		n, err := c.Read(buf)
		if err != nil {
			return fmt.Errorf("legacy query %s to %v: %w", name, server, err)
		}
		r := new(dns.Msg)
		if err := r.Unpack(buf[:n]); err != nil {
			return err
		}
		if r.Id != q.Id {
			return fmt.Errorf("legacy reply ID %d, want %d", r.Id, q.Id)
		}
		for _, rr := range r.Answer {
			switch x := rr.(type) {
			case *dns.A:
				a, _ := netip.AddrFromSlice(x.A.To4())
				got = append(got, a)
			case *dns.AAAA:
				a, _ := netip.AddrFromSlice(x.AAAA)
				got = append(got, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sortAddrs(got)
	return got
}

func TestMDNSNamespacesSeeEachOther(t *testing.T) {
	testnet.RequireRoot(t)
	bin := buildPeer(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: mdnsTestPrefix})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	sniff := startSniffer(t, topo.Client)
	addVIPs(t, h1)

	// master-0 is given the VIPs too (as a careless caller would) and
	// must publish only its own addresses.
	self := Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{h1.IPv4.Addr(), h1.IPv6.Addr(), vip4, vip6}}
	m := &MDNS{Cluster: "c1", Self: self, Exclude: []netip.Addr{vip4, vip6}, TTL: 3 * time.Second}
	local, stopLocal := runLocal(t, h1, m)
	wantLocal := Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{h1.IPv4.Addr(), h1.IPv6.Addr()}}
	local.waitFor(t, 0, 5*time.Second, "master-0 reports itself", hasNode(wantLocal))

	p := startPeer(t, h2, bin, "-cluster", "c1", "-name", "worker-0", "-role", "worker", "-iface", "eth0", "-ttl", "3s",
		"-addr", h2.IPv4.Addr().String()+","+h2.IPv6.Addr().String())
	wantPeer := Node{Name: "worker-0", Role: Worker, Addrs: []netip.Addr{h2.IPv4.Addr(), h2.IPv6.Addr()}}
	joined := local.waitFor(t, 0, 10*time.Second, "master-0 sees worker-0 with both addresses", hasNode(wantPeer))
	seen := p.log.waitFor(t, 0, 10*time.Second, "worker-0 sees master-0 with both addresses and no VIP", hasNode(wantLocal))
	t.Logf("join: worker-0 started -> master-0 reports it: %v; worker-0 reports master-0 %v after its start",
		joined.Sub(p.started), seen.Sub(p.started))

	// A third host asks master-0 directly, over IPv4 and IPv6: only its
	// own addresses come back.
	for _, server := range []netip.Addr{h1.IPv4.Addr(), h1.IPv6.Addr()} {
		if got := legacyQuery(t, topo.Client, server, "master-0.local."); !slices.Equal(got, wantLocal.Addrs) {
			t.Errorf("legacy query to %v for master-0.local: %v, want %v", server, got, wantLocal.Addrs)
		}
	}

	// Several TTLs on, both are still there (refresh queries work on a
	// real link), and nothing else was ever reported.
	mark := local.mark()
	time.Sleep(10 * time.Second) // observing a steady state over three TTLs, not waiting for a timer
	if n := local.mark(); n != mark {
		local.mu.Lock()
		t.Errorf("master-0 reported %d changes in a steady state: %v", n-mark, local.hist[mark:])
		local.mu.Unlock()
	}

	p.signal(t, syscall.SIGTERM)
	p.wait(t)
	stopLocal()
	seenAddrs, packets := sniff.addresses("master-0.local.")
	if packets == 0 || seenAddrs[h1.IPv4.Addr()] == 0 || seenAddrs[h1.IPv6.Addr()] == 0 {
		t.Fatalf("sniffer saw %d packets, master-0 addresses %v: the check below would prove nothing", packets, seenAddrs)
	}
	for a, n := range seenAddrs {
		if a != h1.IPv4.Addr() && a != h1.IPv6.Addr() {
			t.Errorf("master-0.local was advertised with %v in %d records", a, n)
		}
	}
	t.Logf("sniffer: %d packets; address records for master-0.local: %v", packets, seenAddrs)
}

func TestMDNSLeave(t *testing.T) {
	testnet.RequireRoot(t)
	bin := buildPeer(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Prefix: mdnsTestPrefix})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	local, _ := runLocal(t, h1, &MDNS{Cluster: "c1", Self: Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{h1.IPv4.Addr()}}})
	want := Node{Name: "worker-0", Role: Worker, Addrs: []netip.Addr{h2.IPv4.Addr(), h2.IPv6.Addr()}}
	args := []string{"-cluster", "c1", "-name", "worker-0", "-role", "worker", "-addr", h2.IPv4.Addr().String() + "," + h2.IPv6.Addr().String()}

	// Goodbye: the peer's records live 120 s, so only the goodbye can
	// remove it within the bound.
	const rounds = 3
	var joins, leaves []time.Duration
	for i := 0; i < rounds; i++ {
		mark := local.mark()
		p := startPeer(t, h2, bin, append(args, "-ttl", "120s")...)
		joined := local.waitFor(t, mark, 10*time.Second, "worker-0 joined", hasNode(want))
		joins = append(joins, joined.Sub(p.started))
		mark = local.mark()
		sent := p.signal(t, syscall.SIGTERM)
		left := local.waitFor(t, mark, 10*time.Second, "worker-0 left after its goodbye", lacksNode("worker-0"))
		leaves = append(leaves, left.Sub(sent))
		p.wait(t)
	}
	t.Logf("join (peer start -> update): %v", joins)
	t.Logf("leave by goodbye (SIGTERM -> update): %v", leaves)

	// Silence: kill -9 sends nothing; the records (TTL 3 s) expire.
	mark := local.mark()
	p := startPeer(t, h2, bin, append(args, "-ttl", "3s")...)
	local.waitFor(t, mark, 10*time.Second, "worker-0 joined", hasNode(want))
	mark = local.mark()
	killed := p.signal(t, syscall.SIGKILL)
	left := local.waitFor(t, mark, 20*time.Second, "worker-0 expired after kill -9", lacksNode("worker-0"))
	t.Logf("leave by silence (SIGKILL -> update, TTL 3s): %v", left.Sub(killed))
}

// avahi runs a private D-Bus system bus and avahi-daemon in h's namespace.
type avahi struct {
	env []string
	h   *testnet.Host
}

func startAvahi(t *testing.T, h *testnet.Host) *avahi {
	t.Helper()
	for _, b := range []string{"avahi-daemon", "avahi-browse", "avahi-publish", "avahi-resolve", "dbus-daemon"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("skipping: %s not installed (apt-get install -y avahi-daemon avahi-utils dbus-daemon)", b)
		}
	}
	dir := t.TempDir()
	bus := filepath.Join(dir, "bus")
	busConf := `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=` + bus + `</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/><allow own="*"/><allow send_destination="*"/><allow receive_sender="*"/>
  </policy>
</busconfig>
`
	avahiConf := `[server]
host-name=avahi-peer
domain-name=local
use-ipv4=yes
use-ipv6=yes
allow-interfaces=` + h.Link + `
enable-dbus=yes
disallow-other-stacks=no
[wide-area]
enable-wide-area=no
[publish]
publish-addresses=yes
publish-hinfo=no
publish-workstation=no
publish-domain=no
[reflector]
enable-reflector=no
[rlimits]
`
	for name, body := range map[string]string{"bus.conf": busConf, "avahi.conf": avahiConf} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a := &avahi{env: append(os.Environ(), "DBUS_SYSTEM_BUS_ADDRESS=unix:path="+bus), h: h}
	dbus := h.Command("dbus-daemon", "--config-file="+filepath.Join(dir, "bus.conf"), "--nofork", "--nopidfile")
	dbusLog := &syncbuf.Buffer{}
	dbus.Stdout, dbus.Stderr = dbusLog, dbusLog
	if err := h.Start(dbus); err != nil {
		t.Fatalf("dbus-daemon: %v", err)
	}
	stopByPID(t, dbus)
	waitPath(t, bus)
	// avahi-daemon keeps its PID file and socket in the fixed directory
	// /run/avahi-daemon: a private tmpfs there (ip netns exec already gives
	// the command its own mount namespace) keeps it off any other avahi.
	d := h.Command("sh", "-c", "mkdir -p /run/avahi-daemon && mount -t tmpfs vsK-avahi /run/avahi-daemon && "+
		"exec avahi-daemon -f "+filepath.Join(dir, "avahi.conf")+" --no-drop-root --no-chroot --no-rlimits --no-proc-title")
	d.Env = a.env
	logs := &syncbuf.Buffer{}
	d.Stdout, d.Stderr = logs, logs
	if err := h.Start(d); err != nil {
		t.Fatalf("avahi-daemon: %v", err)
	}
	stopByPID(t, d)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("avahi-daemon log:\n%s\ndbus-daemon log:\n%s", logs.String(), dbusLog.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		ready := strings.Contains(logs.String(), "Server startup complete")
		if ready {
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("avahi-daemon did not start within 10s")
		}
		time.Sleep(50 * time.Millisecond) // polling a log for a process we do not control
	}
}

func stopByPID(t *testing.T, c *exec.Cmd) {
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = c.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		}
	})
}

func waitPath(t *testing.T, path string) {
	t.Helper()
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(25 * time.Millisecond) // polling for another process's socket
	}
	t.Fatalf("%s did not appear", path)
}

// run runs an avahi client in the namespace (at most 15 s) and returns its
// output.
func (a *avahi) run(name string, args ...string) (string, error) {
	c := a.h.Command("timeout", append([]string{"-s", "KILL", "15", name}, args...)...)
	c.Env = a.env
	out, err := c.CombinedOutput()
	return string(out), err
}

// start starts a long-running avahi client (avahi-publish) that stops when
// t ends: t is often a subtest of the test that built the topology.
func (a *avahi) start(t *testing.T, name string, args ...string) *exec.Cmd {
	t.Helper()
	c := a.h.Command(name, args...)
	c.Env = a.env
	out := &syncbuf.Buffer{}
	c.Stdout, c.Stderr = out, out
	if err := a.h.StartFor(t, c); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	stopByPID(t, c)
	for i := 0; ; i++ {
		s := out.String()
		if strings.Contains(s, "Established under name") {
			return c
		}
		if i == 200 {
			t.Fatalf("%s %v: not established within 10s: %s", name, args, s)
		}
		time.Sleep(50 * time.Millisecond) // polling another process's output
	}
}

var captureAvahi = flag.Bool("mdns.capture", false, "TestMDNSAvahiInterop: rewrite "+avahiCaptureDir+" with the packets avahi sends")

func TestMDNSAvahiInterop(t *testing.T) {
	testnet.RequireRoot(t)
	topo := testnet.New(t, testnet.Options{Hosts: 2, Client: true, Prefix: mdnsTestPrefix})
	h1, h2 := topo.Hosts[0], topo.Hosts[1]
	av := startAvahi(t, h2)
	sniff := startSniffer(t, topo.Client)
	addVIPs(t, h1)
	self := Node{Name: "master-0", Role: Master, Addrs: []netip.Addr{h1.IPv4.Addr(), h1.IPv6.Addr()}}
	local, stopLocal := runLocal(t, h1, &MDNS{Cluster: "c1", Self: self, Exclude: []netip.Addr{vip4, vip6}, Interface: h1.Link})

	t.Run("avahi-browse sees vipstack's service", func(t *testing.T) {
		// avahi-browse -p escapes '@' as \064; a resolved line is
		// =;eth0;IPv4;master-0\064c1;_vipstack._tcp;local;master-0.local;198.18.0.11;9;"role=master" ...
		var out string
		for i := 0; i < 10; i++ {
			var err error
			if out, err = av.run("avahi-browse", "-r", "-p", "-t", "_vipstack._tcp"); err != nil {
				t.Fatalf("avahi-browse: %v: %s", err, out)
			}
			for _, line := range strings.Split(out, "\n") {
				f := strings.Split(line, ";")
				if len(f) >= 10 && f[0] == "=" && f[3] == `master-0\064c1` {
					if a, err := netip.ParseAddr(f[7]); err != nil || !slices.Contains(self.Addrs, a) || f[6] != "master-0.local" || f[8] != "9" {
						t.Errorf("avahi-browse resolved master-0@c1 to host %s address %s port %s; want master-0.local, one of %v, 9", f[6], f[7], f[8], self.Addrs)
					}
					for _, kv := range []string{`"cluster=c1"`, `"name=master-0"`, `"role=master"`} {
						if !strings.Contains(line, kv) {
							t.Errorf("avahi-browse line lacks TXT %s: %s", kv, line)
						}
					}
					t.Logf("avahi-browse: %s", line)
					return
				}
			}
		}
		t.Fatalf("avahi-browse never resolved master-0@c1; last output:\n%s", out)
	})

	t.Run("avahi resolves vipstack's host name, never to a VIP", func(t *testing.T) {
		for _, tc := range []struct{ flag, want string }{{"-4", h1.IPv4.Addr().String()}, {"-6", h1.IPv6.Addr().String()}} {
			out, err := av.run("avahi-resolve", tc.flag, "-n", "master-0.local")
			if err != nil {
				t.Fatalf("avahi-resolve %s: %v: %s", tc.flag, err, out)
			}
			if got := strings.Fields(out); len(got) != 2 || got[1] != tc.want {
				t.Errorf("avahi-resolve %s -n master-0.local = %q, want %s", tc.flag, out, tc.want)
			}
		}
	})

	t.Run("vipstack sees a service and host published with avahi-publish", func(t *testing.T) {
		mark := local.mark()
		sniffMark := sniff.mark()
		av.start(t, "avahi-publish", "-a", "-R", "peer-9.local", "198.18.0.99")
		av.start(t, "avahi-publish", "-a", "-R", "peer-9.local", "fd00:bb::99")
		start := time.Now()
		svc := av.start(t, "avahi-publish", "-s", "-H", "peer-9.local", "peer-9@c1", "_vipstack._tcp", "9", "cluster=c1", "name=peer-9", "role=worker")
		want := Node{Name: "peer-9", Role: Worker, Addrs: addrs("198.18.0.99", "fd00:bb::99")}
		at := local.waitFor(t, mark, 10*time.Second, "peer-9 (avahi) joined with both addresses", hasNode(want))
		t.Logf("avahi-published peer seen %v after avahi-publish -s started (avahi probes ~0.75 s first)", at.Sub(start))

		// avahi's records live 120 s; only its goodbye removes the node
		// within the bound.
		mark = local.mark()
		sent := time.Now()
		if err := syscall.Kill(-svc.Process.Pid, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		left := local.waitFor(t, mark, 10*time.Second, "peer-9 left after avahi's goodbye", lacksNode("peer-9"))
		t.Logf("avahi goodbye (SIGTERM to avahi-publish -> update): %v", left.Sub(sent))
		if *captureAvahi {
			pkts := sniff.since(sniffMark, h2.IPv4.Addr(), h2.IPv6.Addr(), h2.LinkLocal)
			if err := os.RemoveAll(avahiCaptureDir); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(avahiCaptureDir, 0o755); err != nil {
				t.Fatal(err)
			}
			for i, b := range pkts {
				if err := os.WriteFile(filepath.Join(avahiCaptureDir, fmt.Sprintf("%03d.bin", i)), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			t.Logf("wrote %d packets from avahi to %s", len(pkts), avahiCaptureDir)
		}
	})

	t.Run("avahi drops vipstack's service after its goodbye", func(t *testing.T) {
		stopLocal()
		for i := 0; i < 20; i++ {
			out, err := av.run("avahi-browse", "-p", "-t", "_vipstack._tcp")
			if err != nil {
				t.Fatalf("avahi-browse: %v: %s", err, out)
			}
			if !strings.Contains(out, `master-0\064c1`) {
				return
			}
			time.Sleep(250 * time.Millisecond) // avahi keeps a goodbye'd record for 1 s (RFC 6762 section 10.1)
		}
		t.Errorf("avahi still lists master-0@c1 5s after vipstack's goodbye")
	})
}
