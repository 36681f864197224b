package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/routedlab"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// The lab: a router namespace, nodes n1 and n2 (the crash and stop
// trials) and n3 (the routes-to-a-new-peer trial) each on its own subnet
// behind it, a client on another. Node i is 198.18.i.10/24, the router
// 198.18.i.1; the VIP sits on n1's and n2's loopback.
var vip = netip.MustParseAddr("198.19.0.10")

const (
	routerASN = 64500
	nodeASN   = 64512
	greetPort = 8080
	scaleNode = 3
)

type lab struct {
	prefix string
	router string
	client string
	nodes  []string // node i is nodes[i-1]
	dir    string
	all    []string
	rl     *routedlab.Lab // for Nexthops
}

func nodeAddr(i int) netip.Addr   { return routedlab.SubnetV4(i, 10) }
func routerAddr(i int) netip.Addr { return routedlab.SubnetV4(i, 1) }

// newLab builds the namespaces; close removes them.
func newLab(prefix string, nodes int) (*lab, error) {
	var rb [3]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", prefix+"-")
	if err != nil {
		return nil, err
	}
	tag := prefix + hex.EncodeToString(rb[:])
	l := &lab{prefix: prefix, router: tag + "-r", client: tag + "-c", dir: dir}
	l.rl = &routedlab.Lab{Router: l.router}
	if err := os.Chmod(dir, 0o777); err != nil {
		return l, err
	}
	if err := l.add(l.router); err != nil {
		return l, err
	}
	for _, kv := range []string{"net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1"} {
		if _, err := routedlab.Exec(l.router, "sysctl", "-qw", kv); err != nil {
			return l, err
		}
	}
	for i := 1; i <= nodes; i++ {
		ns := fmt.Sprintf("%s-n%d", tag, i)
		if err := l.add(ns); err != nil {
			return l, err
		}
		if err := l.attach(ns, fmt.Sprintf("n%d", i), i); err != nil {
			return l, err
		}
		l.nodes = append(l.nodes, ns)
	}
	if err := l.add(l.client); err != nil {
		return l, err
	}
	return l, l.attach(l.client, "c", routedlab.ClientSubnet)
}

func (l *lab) add(ns string) error {
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("netns add %s: %v: %s", ns, err, out)
	}
	l.all = append(l.all, ns)
	return routedlab.IPIn(ns, "link", "set", "lo", "up")
}

func (l *lab) attach(ns, rlink string, i int) error {
	for _, s := range [][]string{
		{l.router, "link", "add", rlink, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{l.router, "addr", "add", routedlab.SubnetV4(i, 1).String() + "/24", "dev", rlink},
		{l.router, "link", "set", rlink, "up"},
		{ns, "addr", "add", routedlab.SubnetV4(i, 10).String() + "/24", "dev", "eth0"},
		{ns, "link", "set", "eth0", "up"},
		{ns, "route", "add", "default", "via", routedlab.SubnetV4(i, 1).String()},
	} {
		if err := routedlab.IPIn(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

func (l *lab) close() {
	for _, ns := range l.all {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	_ = os.RemoveAll(l.dir)
}

// nexthops is the router's kernel route to the VIP.
func (l *lab) nexthops() ([]string, error) { return l.rl.Nexthops(vip) }

// waitNexthops waits until the router's route to the VIP goes via exactly
// the nodes given.
func (l *lab) waitNexthops(timeout time.Duration, nodes ...int) error {
	var want []string
	for _, i := range nodes {
		want = append(want, nodeAddr(i).String())
	}
	slices.Sort(want)
	var got []string
	var err error
	for end := time.Now().Add(timeout); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got, err = l.nexthops(); err == nil && slices.Equal(got, want) {
			return nil
		}
	}
	return fmt.Errorf("the router's route to %v goes via %v (%v) after %v, want %v", vip, got, err, timeout, want)
}

// proc is a process started in a namespace, in its own process group.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	out  *syncbuf.Buffer
}

func start(ns string, env []string, out *syncbuf.Buffer, name string, args ...string) (*proc, error) {
	c := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start %s in %s: %w", name, ns, err)
	}
	p := &proc{name: name, cmd: c, done: make(chan struct{}), out: out}
	go func() { _ = c.Wait(); close(p.done) }()
	return p, nil
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *proc) kill() {
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	<-p.done
}

func (p *proc) exited(timeout time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// rss is the process's VmRSS in MiB (`ip netns exec` execs the command,
// so the pid is the daemon's).
func (p *proc) rss() (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024, err
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", p.cmd.Process.Pid)
}

// cpu is the process's user+system time in clock ticks.
func (p *proc) cpu() int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return -1
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return -1
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}

// idle waits until the process used no CPU for 300 ms.
func (p *proc) idle(timeout time.Duration) {
	prev := p.cpu()
	for end := time.Now().Add(timeout); time.Now().Before(end); {
		time.Sleep(300 * time.Millisecond)
		c := p.cpu()
		if c == prev {
			return
		}
		prev = c
	}
}

// frr is zebra, bfdd and bgpd in one namespace.
type frr struct {
	ns, dir string
	out     *syncbuf.Buffer
	procs   map[string]*proc
}

// startFRR runs zebra, bfdd (bfdConf) and bgpd (bgpConf) in ns, with
// their files in a new directory under dir.
func startFRR(ns, dir, bgpConf, bfdConf string) (*frr, error) {
	f := &frr{ns: ns, out: &syncbuf.Buffer{Limit: 1 << 20}, procs: map[string]*proc{}}
	var err error
	if f.dir, err = os.MkdirTemp(dir, "frr-"); err != nil {
		return nil, err
	}
	if err := os.Chmod(f.dir, 0o777); err != nil {
		return nil, err
	}
	zserv := filepath.Join(f.dir, "zserv.api")
	confs := map[string]string{"zebra": "", "bfdd": bfdConf, "bgpd": bgpConf}
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		cf := filepath.Join(f.dir, d+".conf")
		// Microsecond time stamps: the router's log dates BFD's
		// detection (routerLogDown).
		if err := os.WriteFile(cf, []byte("log stdout informational\nlog timestamp precision 6\n"+confs[d]), 0o644); err != nil {
			return f, err
		}
		args := []string{"-f", cf, "-i", filepath.Join(f.dir, d+".pid"), "-z", zserv, "--vty_socket", f.dir,
			"-u", "frr", "-g", "frr", "-P", "0"}
		if d == "bfdd" {
			args = append(args, "--bfdctl", filepath.Join(f.dir, "bfdd.sock"))
		}
		p, err := start(ns, nil, f.out, "/usr/lib/frr/"+d, args...)
		if err != nil {
			f.stop()
			return nil, err
		}
		f.procs[d] = p
		if d == "zebra" {
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
				if _, err := os.Stat(zserv); err == nil {
					break
				}
				if time.Now().After(end) {
					f.stop()
					return nil, fmt.Errorf("zebra in %s did not open %s", ns, zserv)
				}
			}
		}
	}
	return f, nil
}

func (f *frr) stop() {
	for _, p := range f.procs {
		p.kill()
	}
}

// vtysh runs commands (several make one vtysh session, "conf t" first
// for configuration).
func (f *frr) vtysh(cmds ...string) (string, error) {
	args := []string{"netns", "exec", f.ns, "vtysh", "--vty_socket", f.dir}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("vtysh %q: %v: %s", cmds, err, out)
	}
	return string(out), nil
}

// bfdUp reports whether bfdd has a session up with every address given.
func (f *frr) bfdUp(addrs ...netip.Addr) error {
	out, err := f.vtysh("show bfd peers json")
	if err != nil {
		return err
	}
	var peers []struct {
		Peer   string `json:"peer"`
		Status string `json:"status"`
	}
	if err := json.Unmarshal([]byte(out), &peers); err != nil {
		return fmt.Errorf("show bfd peers: %v: %s", err, out)
	}
	for _, a := range addrs {
		if !slices.ContainsFunc(peers, func(p struct {
			Peer   string `json:"peer"`
			Status string `json:"status"`
		}) bool {
			return p.Peer == a.String() && p.Status == "up"
		}) {
			return fmt.Errorf("bfdd has no session up with %v: %s", a, out)
		}
	}
	return nil
}

// neighbor is the router's session with a: its state and the routes
// accepted over it.
func (f *frr) neighbor(a netip.Addr) (state string, accepted int, err error) {
	out, err := f.vtysh("show bgp neighbors " + a.String() + " json")
	if err != nil {
		return "", 0, err
	}
	var m map[string]struct {
		State string `json:"bgpState"`
		AF    map[string]struct {
			Accepted int `json:"acceptedPrefixCounter"`
		} `json:"addressFamilyInfo"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return "", 0, fmt.Errorf("show bgp neighbors: %v: %s", err, out)
	}
	n := m[a.String()]
	return n.State, n.AF["ipv4Unicast"].Accepted, nil
}

// monitor is `ip -ts monitor route` in a namespace, its lines kept.
type monitor struct {
	p     *proc
	mu    sync.Mutex
	lines []string
}

func startMonitor(ns string) (*monitor, error) {
	c := exec.Command("ip", "-n", ns, "-ts", "monitor", "route")
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	m := &monitor{p: &proc{name: "ip monitor", cmd: c, done: make(chan struct{})}}
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			m.mu.Lock()
			m.lines = append(m.lines, sc.Text())
			m.mu.Unlock()
		}
		_ = c.Wait()
		close(m.p.done)
	}()
	// ip opens its netlink socket before its first read; give it that.
	time.Sleep(100 * time.Millisecond)
	return m, nil
}

func (m *monitor) stop() []string {
	m.p.kill()
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lines
}

// prober is the probe helper in the client namespace.
type prober struct {
	p      *proc
	in     io.WriteCloser
	mu     sync.Mutex
	probes []probe
	read   chan struct{}
}

func startProber(ns string, pc probeConfig) (*prober, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(pc)
	c := exec.Command("ip", "netns", "exec", ns, exe)
	c.Env = append(os.Environ(), roleEnv+"=probe", configEnv+"="+string(b))
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stderr = os.Stderr
	in, err := c.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := c.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.Start(); err != nil {
		return nil, err
	}
	pr := &prober{p: &proc{name: "prober", cmd: c, done: make(chan struct{})}, in: in, read: make(chan struct{})}
	go func() {
		dec := json.NewDecoder(out)
		for {
			var p probe
			if dec.Decode(&p) != nil {
				break
			}
			pr.mu.Lock()
			pr.probes = append(pr.probes, p)
			pr.mu.Unlock()
		}
		close(pr.read)
		_ = c.Wait()
		close(pr.p.done)
	}()
	return pr, nil
}

// stop ends the probes and returns them all.
func (pr *prober) stop() []probe {
	pr.in.Close()
	select {
	case <-pr.read:
	case <-time.After(5 * time.Second):
		pr.p.kill()
		<-pr.read
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return pr.probes
}

// snapshot returns the probes so far.
func (pr *prober) snapshot() []probe {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	return slices.Clone(pr.probes)
}

// nft loads rules into ns.
func nft(ns, rules string) error {
	c := exec.Command("ip", "netns", "exec", ns, "nft", "-f", "-")
	c.Stdin = strings.NewReader(rules)
	if out, err := c.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %v: %s", ns, err, out)
	}
	return nil
}
