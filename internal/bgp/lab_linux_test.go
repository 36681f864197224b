//go:build linux

package bgp

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The lab: one router namespace, each node on its own subnet behind it,
// and a client on another. Node i is 198.18.i.10/24 and fd00:i::10/64
// with the router at .1 and ::1; the client is on subnet 100. The VIPs
// sit on every node's loopback.
var (
	vip4 = netip.MustParseAddr("198.19.0.10")
	vip6 = netip.MustParseAddr("fd00:99::10")
)

const (
	routerASN = 64500
	nodeASN   = 64512
	vipPort   = 8080
)

type lab struct {
	t      *testing.T
	tag    string
	router string // namespace names
	client string
	nodes  []string
	dir    string // temp dir for daemons' files
}

func subnetV4(i int, host byte) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i), host}) }
func subnetV6(i int, host byte) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("fd00:%d::%x", i, host))
}

func ipIn(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

func sysctlIn(ns string, kv ...string) error {
	for _, k := range kv {
		if out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-qw", k).CombinedOutput(); err != nil {
			return fmt.Errorf("sysctl %s in %s: %v: %s", k, ns, err, out)
		}
	}
	return nil
}

// newLab builds the namespaces and removes them when t ends.
func newLab(t *testing.T, nodes int) *lab {
	t.Helper()
	testnet.RequireRoot(t)
	var rb [4]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: its parent is private, and the daemons drop to the
	// frr user and write their sockets here.
	dir, err := os.MkdirTemp("", "vbgp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	l := &lab{t: t, tag: "vbgp" + hex.EncodeToString(rb[:]), dir: dir}
	l.router, l.client = l.tag+"-r", l.tag+"-c"
	var all []string
	t.Cleanup(func() {
		for _, ns := range all {
			_ = exec.Command("ip", "netns", "del", ns).Run()
		}
	})
	add := func(ns string) {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			t.Fatalf("netns add %s: %v: %s", ns, err, out)
		}
		all = append(all, ns)
		if err := sysctlIn(ns, "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0"); err != nil {
			t.Fatal(err)
		}
		if err := ipIn(ns, "link", "set", "lo", "up"); err != nil {
			t.Fatal(err)
		}
	}
	add(l.router)
	if err := sysctlIn(l.router, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		// ECMP by the 5-tuple, so one client's connections spread.
		"net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1"); err != nil {
		t.Fatal(err)
	}
	attach := func(ns, rlink string, i int) {
		steps := [][]string{
			{l.router, "link", "add", rlink, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{l.router, "addr", "add", subnetV4(i, 1).String() + "/24", "dev", rlink},
			{l.router, "addr", "add", subnetV6(i, 1).String() + "/64", "dev", rlink, "nodad"},
			{l.router, "link", "set", rlink, "up"},
			{ns, "addr", "add", subnetV4(i, 10).String() + "/24", "dev", "eth0"},
			{ns, "addr", "add", subnetV6(i, 0x10).String() + "/64", "dev", "eth0", "nodad"},
			{ns, "link", "set", "eth0", "up"},
			{ns, "route", "add", "default", "via", subnetV4(i, 1).String()},
			{ns, "-6", "route", "add", "default", "via", subnetV6(i, 1).String()},
		}
		for _, s := range steps {
			if err := ipIn(s[0], s[1:]...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 1; i <= nodes; i++ {
		ns := fmt.Sprintf("%s-n%d", l.tag, i)
		add(ns)
		attach(ns, fmt.Sprintf("n%d", i), i)
		for _, a := range [][]string{{vip4.String() + "/32"}, {vip6.String() + "/128", "nodad"}} {
			if err := ipIn(ns, append([]string{"addr", "add", a[0], "dev", "lo"}, a[1:]...)...); err != nil {
				t.Fatal(err)
			}
		}
		l.nodes = append(l.nodes, ns)
		// Each node answers on the VIP with its name.
		name := fmt.Sprintf("n%d", i)
		for _, v := range []netip.Addr{vip4, vip6} {
			greet(t, ns, netip.AddrPortFrom(v, vipPort).String(), name)
		}
	}
	add(l.client)
	attach(l.client, "c", 100)
	return l
}

// inNS runs f on a locked thread switched into ns; sockets opened in f
// stay in ns.
func inNS(ns string, f func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		h, err := netns.GetFromName(ns)
		if err != nil {
			errc <- err
			return
		}
		defer h.Close()
		if err := netns.Set(h); err != nil {
			errc <- err
			return
		}
		errc <- f()
		if netns.Set(orig) == nil {
			runtime.UnlockOSThread()
		}
	}()
	return <-errc
}

func greet(t *testing.T, ns, addr, answer string) {
	var ln net.Listener
	if err := inNS(ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatalf("listen %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, answer)
			c.Close()
		}
	}()
}

// reach dials the VIP from the client n times and counts the answers.
func (l *lab) reach(v netip.Addr, n int) (map[string]int, error) {
	got := map[string]int{}
	err := inNS(l.client, func() error {
		for range n {
			c, err := net.DialTimeout("tcp", netip.AddrPortFrom(v, vipPort).String(), 2*time.Second)
			if err != nil {
				return err
			}
			_ = c.SetDeadline(time.Now().Add(2 * time.Second))
			b, err := io.ReadAll(c)
			c.Close()
			if err != nil {
				return err
			}
			got[string(b)]++
		}
		return nil
	})
	return got, err
}

// cmd starts name in ns in its own process group, killed when t ends.
func (l *lab) start(t *testing.T, ns string, out io.Writer, stdin io.Reader, name string, args ...string) *exec.Cmd {
	t.Helper()
	c := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdout, c.Stderr, c.Stdin = out, out, stdin
	if err := c.Start(); err != nil {
		t.Fatalf("start %s in %s: %v", name, ns, err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_, _ = c.Process.Wait()
	})
	return c
}

// nexthops returns the gateways of the router's kernel route to v.
func (l *lab) nexthops(v netip.Addr) ([]string, error) {
	fam := "-4"
	if v.Is6() {
		fam = "-6"
	}
	out, err := exec.Command("ip", "-n", l.router, fam, "-j", "route", "show", v.String()+"/"+fmt.Sprint(v.BitLen())).Output()
	if err != nil {
		return nil, fmt.Errorf("ip route show %v: %v", v, err)
	}
	var rs []struct {
		Gateway  string `json:"gateway"`
		Protocol string `json:"protocol"`
		Nexthops []struct {
			Gateway string `json:"gateway"`
		} `json:"nexthops"`
	}
	if err := json.Unmarshal(out, &rs); err != nil {
		return nil, fmt.Errorf("ip route output %q: %v", out, err)
	}
	var gws []string
	for _, r := range rs {
		if r.Protocol != "bgp" && r.Protocol != "bird" {
			continue
		}
		if r.Gateway != "" {
			gws = append(gws, r.Gateway)
		}
		for _, n := range r.Nexthops {
			gws = append(gws, n.Gateway)
		}
	}
	return gws, nil
}

// wantNexthops waits until the router's route to v goes via exactly the
// nodes given (1-based), in the family of v.
func (l *lab) wantNexthops(t *testing.T, v netip.Addr, timeout time.Duration, nodes ...int) {
	t.Helper()
	var want []string
	for _, i := range nodes {
		if v.Is4() {
			want = append(want, subnetV4(i, 10).String())
		} else {
			want = append(want, subnetV6(i, 0x10).String())
		}
	}
	testutil.Eventually(t, timeout, func() error {
		got, err := l.nexthops(v)
		if err != nil {
			return err
		}
		if fmt.Sprint(sortedCopy(got)) != fmt.Sprint(sortedCopy(want)) {
			return fmt.Errorf("router's route to %v goes via %v, want %v", v, got, want)
		}
		return nil
	})
}

func sortedCopy(s []string) []string {
	c := append([]string(nil), s...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c
}

// speakerProc is a speaker run by this test binary in a node namespace
// (the whole process in the namespace, as GoBGP dials from goroutines of
// its own).
type speakerProc struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	log   *syncBuf
	mu    sync.Mutex
	exits chan error
}

type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

const helperEnv = "VBGP_SPEAKER_CONFIG"

// startSpeaker runs a speaker with cfg in node i's namespace, eligible
// for every route from the start.
func (l *lab) startSpeaker(t *testing.T, i int, cfg Config) *speakerProc {
	t.Helper()
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &speakerProc{log: &syncBuf{}, exits: make(chan error, 1)}
	c := exec.Command("ip", "netns", "exec", l.nodes[i-1], exe, "-test.run=^$")
	c.Env = append(os.Environ(), helperEnv+"="+string(b))
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stderr = p.log
	if p.in, err = c.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.out = bufio.NewReader(stdout)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	p.cmd = c
	go func() { p.exits <- c.Wait() }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		if t.Failed() {
			t.Logf("speaker n%d log:\n%s", i, testutil.Tail(p.log.String(), 30))
		}
	})
	return p
}

// send writes a command and returns the helper's one-line answer.
func (p *speakerProc) send(cmd string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, err := io.WriteString(p.in, cmd+"\n"); err != nil {
		return "", err
	}
	line, err := p.out.ReadString('\n')
	return strings.TrimSpace(line), err
}

func (p *speakerProc) status() (Status, error) {
	line, err := p.send("status")
	if err != nil {
		return Status{}, err
	}
	var st Status
	err = json.Unmarshal([]byte(line), &st)
	return st, err
}

// TestMain runs the speaker helper when the lab starts this binary as one.
func TestMain(m *testing.M) {
	if cfg := os.Getenv(helperEnv); cfg != "" {
		os.Exit(speakerHelper(cfg))
	}
	os.Exit(m.Run())
}

// speakerHelper runs a Speaker until SIGTERM (a graceful stop), taking
// "eligible", "ineligible" and "status" on stdin.
func speakerHelper(raw string) int {
	var cfg Config
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	e := &fakeElig{ch: make(chan struct{}, 1)}
	verdicts := func(ok bool, why string) []Verdict {
		var vs []Verdict
		for _, r := range cfg.Routes {
			vs = append(vs, Verdict{VIP: r.VIP, Eligible: ok, Reason: why})
		}
		return vs
	}
	e.v = verdicts(true, "helper started eligible")
	s, err := New(Options{Config: cfg, Eligibility: e, Logger: log})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			switch sc.Text() {
			case "eligible":
				e.set(verdicts(true, "check passing")...)
				fmt.Println("ok")
			case "ineligible":
				e.set(verdicts(false, "check failing")...)
				fmt.Println("ok")
			case "status":
				st, err := s.Status(ctx)
				if err != nil {
					fmt.Println(`{}`)
					continue
				}
				b, _ := json.Marshal(st)
				fmt.Println(string(b))
			}
		}
	}()
	if err := s.Run(ctx); err != nil && !errors.Is(err, context.Canceled) {
		log.Error("run", "err", err)
		return 1
	}
	log.Info("speaker stopped")
	return 0
}

// frr is FRR 8.4 (zebra, bgpd, bfdd) as the lab's router.
type frr struct {
	l     *lab
	dir   string
	out   *syncBuf
	procs map[string]*exec.Cmd // by daemon
}

func requireFRR(t *testing.T) {
	t.Helper()
	testnet.RequireRoot(t)
	for _, p := range []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "vtysh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: FRR is not installed (%s: %v); .ci/run installs the frr package", p, err)
		}
	}
}

// startFRR runs zebra, bfdd and bgpd in the router namespace with bgpd's
// configuration bgpConf.
func (l *lab) startFRR(t *testing.T, bgpConf string) *frr {
	t.Helper()
	f := &frr{l: l, dir: filepath.Join(l.dir, "frr"), out: &syncBuf{}, procs: map[string]*exec.Cmd{}}
	if err := os.Mkdir(f.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.dir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FRR output:\n%s", testutil.Tail(f.out.String(), 60))
		}
	})
	zserv := filepath.Join(f.dir, "zserv.api")
	confs := map[string]string{
		"zebra": "log stdout informational\n",
		"bfdd":  "log stdout informational\nbfd\n profile fast\n  receive-interval 100\n  transmit-interval 100\n  detect-multiplier 3\n !\n!\n",
		"bgpd":  "log stdout informational\n" + bgpConf,
	}
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		cf := filepath.Join(f.dir, d+".conf")
		if err := os.WriteFile(cf, []byte(confs[d]), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-f", cf, "-i", filepath.Join(f.dir, d+".pid"), "-z", zserv, "--vty_socket", f.dir,
			"-u", "frr", "-g", "frr"}
		switch d {
		case "zebra":
			args = append(args, "-P", "0")
		case "bfdd":
			args = append(args, "-P", "0", "--bfdctl", filepath.Join(f.dir, "bfdd.sock"))
		case "bgpd":
			args = append(args, "-P", "0")
		}
		f.procs[d] = l.start(t, l.router, f.out, nil, "/usr/lib/frr/"+d, args...)
		if d == "zebra" {
			testutil.Eventually(t, 10*time.Second, func() error {
				_, err := os.Stat(zserv)
				return err
			})
		}
	}
	return f
}

func (f *frr) vtysh(cmd string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", f.l.router, "vtysh", "--vty_socket", f.dir, "-c", cmd).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("vtysh -c %q: %v: %s", cmd, err, out)
	}
	return string(out), nil
}

// neighbor is part of bgpd's "show bgp neighbors json" for one peer.
type neighbor struct {
	State          string `json:"bgpState"`
	LastResetDueTo string `json:"lastResetDueTo"`
	MessageStats   struct {
		UpdatesRecv       int `json:"updatesRecv"`
		NotificationsRecv int `json:"notificationsRecv"`
	} `json:"messageStats"`
}

func (f *frr) neighbor(addr netip.Addr) (neighbor, error) {
	out, err := f.vtysh("show bgp neighbors " + addr.String() + " json")
	if err != nil {
		return neighbor{}, err
	}
	var m map[string]neighbor
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		return neighbor{}, fmt.Errorf("vtysh output %q: %v", out, err)
	}
	n, ok := m[addr.String()]
	if !ok {
		return neighbor{}, fmt.Errorf("bgpd has no neighbor %v: %s", addr, out)
	}
	return n, nil
}

// bird is BIRD 2 as the lab's router.
type bird struct {
	l    *lab
	sock string
	out  *syncBuf
}

func requireBIRD(t *testing.T) {
	t.Helper()
	testnet.RequireRoot(t)
	for _, p := range []string{"bird", "birdc"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: BIRD 2 is not installed (%s: %v); .ci/run installs the bird2 package", p, err)
		}
	}
}

// startBIRD runs bird in the router namespace with configuration conf.
func (l *lab) startBIRD(t *testing.T, conf string) *bird {
	t.Helper()
	b := &bird{l: l, sock: filepath.Join(l.dir, "bird.ctl"), out: &syncBuf{}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("BIRD output:\n%s", testutil.Tail(b.out.String(), 60))
		}
	})
	cf := filepath.Join(l.dir, "bird.conf")
	if err := os.WriteFile(cf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	l.start(t, l.router, b.out, nil, "bird", "-f", "-c", cf, "-s", b.sock, "-P", filepath.Join(l.dir, "bird.pid"))
	testutil.Eventually(t, 10*time.Second, func() error {
		_, err := b.birdc("show status")
		return err
	})
	return b
}

func (b *bird) birdc(cmd string) (string, error) {
	out, err := exec.Command("birdc", append([]string{"-s", b.sock}, strings.Fields(cmd)...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("birdc %s: %v: %s", cmd, err, out)
	}
	return string(out), nil
}
