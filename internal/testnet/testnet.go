package testnet

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"
)

// RequireRoot skips t unless the test runs as root, which namespace and raw
// socket tests need.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("skipping: this test builds network namespaces and needs root (run the suite as root, e.g. via .ci/run)")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("skipping: iproute2's ip command is not installed")
	}
}

// Options describe a topology.
type Options struct {
	Hosts  int  // number of hosts on the bridge (at least 1)
	Client bool // add one more host, the client, on the same bridge
	// Prefix starts every namespace name; default "vst". Give each test
	// suite its own so leftovers can be traced to their owner.
	Prefix string
}

// Topology is a set of hosts on one bridge.
type Topology struct {
	Tag    string // random part shared by every namespace name
	Switch string // namespace holding the bridge "br0"
	Hosts  []*Host
	Client *Host // nil unless Options.Client

	tb     testing.TB // set by New: each tracked process is stopped in its own cleanup
	mu     sync.Mutex
	procs  []*exec.Cmd
	closed bool
}

// Host is one network namespace with an interface on the bridge.
type Host struct {
	Name      string       // namespace name
	Index     int          // 1-based; the client has index 100
	Link      string       // interface name inside the namespace
	IPv4      netip.Prefix // 198.18.0.(10+Index)/24
	IPv6      netip.Prefix // fd00:bb::(10+Index)/64
	LinkLocal netip.Addr   // the interface's fe80:: address
	MAC       string

	topo *Topology
}

// IPv4 and IPv6 prefixes shared by every topology (they are isolated from
// each other, so they may overlap).
var (
	netV4 = netip.MustParsePrefix("198.18.0.0/24")
	netV6 = netip.MustParsePrefix("fd00:bb::/64")
)

// HostIPv4 returns the address host index i gets.
func HostIPv4(i int) netip.Addr {
	b := netV4.Addr().As4()
	b[3] = byte(10 + i)
	return netip.AddrFrom4(b)
}

// HostIPv6 returns the IPv6 address host index i gets.
func HostIPv6(i int) netip.Addr {
	b := netV6.Addr().As16()
	b[15] = byte(10 + i)
	return netip.AddrFrom16(b)
}

// New builds a topology for a test and removes it when the test ends.
func New(t testing.TB, o Options) *Topology {
	t.Helper()
	RequireRoot(t)
	topo, err := Build(o)
	if err != nil {
		t.Fatalf("testnet: %v", err)
	}
	topo.tb = t
	t.Cleanup(topo.Close)
	return topo
}

// ReservedPorts are kept out of every host's ephemeral port range
// (net.ipv4.ip_local_reserved_ports, which is per namespace): vipstack
// listens on them at fixed addresses, and a connection that takes one as
// its source port makes that listen fail with "address already in use".
// A demo run in the test suite failed so once: a master's load balancer
// could not bind the seeds' haproxy stats port (cluster.LBStatsPort,
// 127.0.0.1:50000) for a minute, while nothing else listens there. The
// other fixed ports the seeds use are below the range.
const ReservedPorts = "50000"

// Build creates a topology; the caller must Close it. Use New in tests.
func Build(o Options) (*Topology, error) {
	if o.Hosts < 1 || o.Hosts > 90 {
		return nil, fmt.Errorf("testnet: Hosts = %d, want 1..90", o.Hosts)
	}
	if o.Prefix == "" {
		o.Prefix = "vst"
	}
	var rb [4]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	tag := o.Prefix + hex.EncodeToString(rb[:])
	topo := &Topology{Tag: tag, Switch: tag + "-sw"}
	ok := false
	defer func() {
		if !ok {
			topo.Close()
		}
	}()
	if err := ipCmd("netns", "add", topo.Switch); err != nil {
		return nil, err
	}
	sw := []string{
		"link add br0 type bridge mcast_snooping 0 stp_state 0 forward_delay 0",
		"link set br0 up",
		"link set lo up",
	}
	for _, c := range sw {
		if err := ipCmd(append([]string{"-n", topo.Switch}, strings.Fields(c)...)...); err != nil {
			return nil, err
		}
	}
	add := func(idx int, name string) (*Host, error) {
		h := &Host{Name: name, Index: idx, Link: "eth0", topo: topo,
			IPv4: netip.PrefixFrom(HostIPv4(idx), netV4.Bits()),
			IPv6: netip.PrefixFrom(HostIPv6(idx), netV6.Bits()),
		}
		if err := ipCmd("netns", "add", name); err != nil {
			return nil, err
		}
		port := fmt.Sprintf("p%d", idx)
		steps := [][]string{
			{"-n", topo.Switch, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", name},
			{"-n", topo.Switch, "link", "set", port, "master", "br0", "up"},
		}
		for _, s := range steps {
			if err := ipCmd(s...); err != nil {
				return nil, err
			}
		}
		// DAD off so the IPv6 addresses (link-local included) are usable at
		// once; the fixed listening ports kept out of the ephemeral range.
		for _, k := range []string{"net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
			"net.ipv6.conf.eth0.accept_dad=0", "net.ipv4.conf.all.arp_ignore=0",
			"net.ipv4.ip_local_reserved_ports=" + ReservedPorts} {
			if out, err := exec.Command("ip", "netns", "exec", name, "sysctl", "-qw", k).CombinedOutput(); err != nil {
				return nil, fmt.Errorf("sysctl %s in %s: %v: %s", k, name, err, out)
			}
		}
		steps = [][]string{
			{"-n", name, "link", "set", "lo", "up"},
			{"-n", name, "addr", "add", h.IPv4.String(), "dev", "eth0"},
			{"-n", name, "addr", "add", h.IPv6.String(), "dev", "eth0", "nodad"},
			{"-n", name, "link", "set", "eth0", "up"},
		}
		for _, s := range steps {
			if err := ipCmd(s...); err != nil {
				return nil, err
			}
		}
		ll, mac, err := linkInfo(name)
		if err != nil {
			return nil, err
		}
		h.LinkLocal, h.MAC = ll, mac
		return h, nil
	}
	for i := 1; i <= o.Hosts; i++ {
		h, err := add(i, fmt.Sprintf("%s-h%d", tag, i))
		if err != nil {
			return nil, err
		}
		topo.Hosts = append(topo.Hosts, h)
	}
	if o.Client {
		h, err := add(100, tag+"-c")
		if err != nil {
			return nil, err
		}
		topo.Client = h
	}
	ok = true
	return topo, nil
}

// linkInfo waits (bounded) for eth0's link-local address to appear.
func linkInfo(ns string) (netip.Addr, string, error) {
	for i := 0; i < 100; i++ {
		out, err := exec.Command("ip", "-n", ns, "-o", "-6", "addr", "show", "dev", "eth0", "scope", "link").Output()
		if err != nil {
			return netip.Addr{}, "", fmt.Errorf("ip -n %s addr show: %w", ns, err)
		}
		f := strings.Fields(string(out))
		for j, w := range f {
			if w == "inet6" && j+1 < len(f) {
				p, err := netip.ParsePrefix(f[j+1])
				if err == nil {
					m, err := macOf(ns)
					if err != nil {
						return netip.Addr{}, "", err
					}
					return p.Addr(), m, nil
				}
			}
		}
		time.Sleep(20 * time.Millisecond) // waiting for the kernel, not for a timer of ours
	}
	return netip.Addr{}, "", fmt.Errorf("no link-local address on eth0 in %s after 2s", ns)
}

func macOf(ns string) (string, error) {
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show", "dev", "eth0").Output()
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(out))
	for j, w := range f {
		if w == "link/ether" && j+1 < len(f) {
			return f[j+1], nil
		}
	}
	return "", fmt.Errorf("no MAC for eth0 in %s", ns)
}

func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// All returns the hosts and, if present, the client.
func (t *Topology) All() []*Host {
	all := append([]*Host(nil), t.Hosts...)
	if t.Client != nil {
		all = append(all, t.Client)
	}
	return all
}

// Close kills every process started through the topology (by PID, whole
// process group) and deletes its namespaces. It is safe to call twice.
func (t *Topology) Close() {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return
	}
	t.closed = true
	procs := t.procs
	t.mu.Unlock()
	for _, c := range procs {
		stop(c)
	}
	names := []string{}
	for _, h := range t.All() {
		names = append(names, h.Name)
	}
	if t.Switch != "" {
		names = append(names, t.Switch)
	}
	for _, name := range names {
		if err := deleteNetns(name); err != nil && t.tb != nil {
			t.tb.Logf("testnet: namespace %s left behind: %v", name, err)
		}
	}
}

// deleteNetns deletes the namespace name, trying again for up to 3 s
// while the deletion fails and the namespace is still there: a process
// that outlives the stop of its process group (a daemon's forked child
// still exiting) keeps its mount busy. The error names the processes
// still in it.
func deleteNetns(name string) error {
	var err error
	for try := 0; try < 30; try++ {
		var out []byte
		if out, err = exec.Command("ip", "netns", "del", name).CombinedOutput(); err == nil {
			return nil
		}
		if _, serr := os.Stat("/run/netns/" + name); os.IsNotExist(serr) {
			return nil
		}
		err = fmt.Errorf("ip netns del: %w: %s", err, strings.TrimSpace(string(out)))
		time.Sleep(100 * time.Millisecond) // for the processes in it to exit
	}
	pids, _ := exec.Command("ip", "netns", "pids", name).Output()
	return fmt.Errorf("%w (processes in it: %q)", err, strings.Fields(string(pids)))
}

// Command returns a command that runs inside the host's namespace. It runs in
// its own process group, and Close kills it if it is still running. Start it
// with Start, or StartFor in a subtest (or cmd.Start followed by Track or
// TrackFor).
func (h *Host) Command(name string, args ...string) *exec.Cmd {
	c := exec.Command("ip", append([]string{"netns", "exec", h.Name, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return c
}

// RunTest runs the test binary's test named test again, alone, as a whole
// process in h's namespace (a Go program runs on many threads, which
// cannot all join a namespace), with env added to its environment; the
// child's own -test.timeout (2m) bounds it and dumps its goroutines if it
// hangs. It fails tb, with the child's output, unless the child passes.
func (h *Host) RunTest(tb testing.TB, test string, env ...string) {
	tb.Helper()
	exe, err := os.Executable()
	if err != nil {
		tb.Fatal(err)
	}
	c := h.Command(exe, "-test.run", "^"+test+"$", "-test.v", "-test.count=1", "-test.timeout", "2m")
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+test) {
		tb.Fatalf("%s in %s: %v:\n%s", test, h.Name, err, out)
	}
}

// Track registers a started command so Close kills it. In a topology from
// New it is also killed, and waited for, in a cleanup of its own on the test
// that built the topology: that cleanup runs before those registered earlier,
// such as the removal of a t.TempDir the process writes into.
//
// A subtest that starts a process in its parent's topology must use TrackFor
// (or StartFor) with its own tb instead: otherwise the process outlives the
// subtest and its t.TempDir.
func (h *Host) Track(c *exec.Cmd) {
	h.TrackFor(h.topo.tb, c)
}

// TrackFor is Track with the process killed, and waited for, when tb ends
// rather than when the test that built the topology ends. tb is the test
// (or subtest) that started c; nil leaves c to Close alone.
func (h *Host) TrackFor(tb testing.TB, c *exec.Cmd) {
	h.topo.mu.Lock()
	h.topo.procs = append(h.topo.procs, c)
	h.topo.mu.Unlock()
	if tb != nil {
		tb.Cleanup(func() { stop(c) })
	}
}

// stop kills c's process group and waits, up to 10 s, until c has exited.
// It does not reap c, so whoever calls c.Wait still gets its status.
func stop(c *exec.Cmd) {
	if c.Process == nil || errors.Is(c.Process.Signal(syscall.Signal(0)), os.ErrProcessDone) {
		return
	}
	_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
	_ = c.Process.Kill()
	exited := make(chan struct{})
	go func() {
		defer close(exited)
		waitExited(c.Process.Pid)
	}()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
	}
}

// Start starts c and tracks it (see Track).
func (h *Host) Start(c *exec.Cmd) error {
	return h.StartFor(h.topo.tb, c)
}

// StartFor starts c and tracks it for tb (see TrackFor): c is killed, and
// waited for, when tb ends.
func (h *Host) StartFor(tb testing.TB, c *exec.Cmd) error {
	if err := c.Start(); err != nil {
		return err
	}
	h.TrackFor(tb, c)
	return nil
}

// Run runs a command in the host's namespace and returns its combined output.
func (h *Host) Run(name string, args ...string) (string, error) {
	out, err := h.Command(name, args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s in %s: %w: %s", name, strings.Join(args, " "), h.Name, err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Greet listens on addr in the host's namespace and answers every
// connection with payload, then closes it: a stand-in server whose answer
// says who was reached. It stops when tb ends.
func (h *Host) Greet(tb testing.TB, addr string, payload []byte) {
	tb.Helper()
	var ln net.Listener
	if err := h.Do(func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		tb.Fatalf("greet on %s in %s: %v", addr, h.Name, err)
	}
	tb.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(payload)
			c.Close()
		}
	}()
}

// Do runs f on a locked OS thread switched into the host's namespace.
// Sockets opened inside f stay in that namespace after f returns.
func (h *Host) Do(f func() error) error {
	errc := make(chan error, 1)
	go func() {
		// The thread is not unlocked: it may not return to the pool in the
		// wrong namespace, so the runtime retires it when this goroutine ends.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		target, err := netns.GetFromName(h.Name)
		if err != nil {
			errc <- fmt.Errorf("open netns %s: %w", h.Name, err)
			return
		}
		defer target.Close()
		if err := netns.Set(target); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", h.Name, err)
			return
		}
		errc <- f()
		if err := netns.Set(orig); err == nil {
			runtime.UnlockOSThread()
		}
	}()
	return errors.Join(<-errc)
}

// SetLink sets the host's interface up or down (from the host's side).
func (h *Host) SetLink(up bool) error {
	state := "down"
	if up {
		state = "up"
	}
	return ipCmd("-n", h.Name, "link", "set", h.Link, state)
}

// Cut disconnects the host from the bridge (its own link stays up, as when a
// switch port or cable fails) or reconnects it.
func (h *Host) Cut(cut bool) error {
	state := "up"
	if cut {
		state = "down"
	}
	return ipCmd("-n", h.topo.Switch, "link", "set", fmt.Sprintf("p%d", h.Index), state)
}

// Addrs lists the host's addresses on its link as "addr/len" strings.
func (h *Host) Addrs() ([]string, error) {
	out, err := exec.Command("ip", "-n", h.Name, "-o", "addr", "show", "dev", h.Link).Output()
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		for j, w := range f {
			if (w == "inet" || w == "inet6") && j+1 < len(f) {
				addrs = append(addrs, f[j+1])
			}
		}
	}
	return addrs, nil
}

// HasAddr reports whether addr (without length) is configured on the host's link.
func (h *Host) HasAddr(addr netip.Addr) (bool, error) {
	addrs, err := h.Addrs()
	if err != nil {
		return false, err
	}
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a); err == nil && p.Addr() == addr {
			return true, nil
		}
	}
	return false, nil
}
