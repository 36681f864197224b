//go:build linux

package bgp

import (
	"bufio"
	"context"
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
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/routedlab"
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
	rl     *routedlab.Lab
	router string // namespace names
	client string
	nodes  []string
	dir    string // temp dir for daemons' files
}

func subnetV4(i int, host byte) netip.Addr { return routedlab.SubnetV4(i, host) }
func subnetV6(i int, host byte) netip.Addr { return routedlab.SubnetV6(i, host) }

func ipIn(ns string, args ...string) error { return routedlab.IPIn(ns, args...) }

// newLab builds the namespaces (internal/routedlab), with the VIPs on
// every node's loopback and each node answering on them with its name,
// and removes them when t ends.
func newLab(t *testing.T, nodes int) *lab {
	t.Helper()
	return newLabPrefixed(t, "vbgp", nodes)
}

// newLabPrefixed is newLab with the namespaces' names starting with prefix.
func newLabPrefixed(t *testing.T, prefix string, nodes int) *lab {
	t.Helper()
	rl := routedlab.New(t, routedlab.Options{Prefix: prefix, Nodes: nodes})
	l := &lab{t: t, rl: rl, router: rl.Router, client: rl.Client, nodes: rl.Nodes, dir: rl.Dir}
	for i, ns := range l.nodes {
		for _, a := range [][]string{{vip4.String() + "/32"}, {vip6.String() + "/128", "nodad"}} {
			if err := ipIn(ns, append([]string{"addr", "add", a[0], "dev", "lo"}, a[1:]...)...); err != nil {
				t.Fatal(err)
			}
		}
		name := fmt.Sprintf("n%d", i+1)
		for _, v := range []netip.Addr{vip4, vip6} {
			greet(t, ns, netip.AddrPortFrom(v, vipPort).String(), name)
		}
	}
	return l
}

// inNS runs f in ns (routedlab.Do).
func inNS(ns string, f func() error) error { return routedlab.Do(ns, f) }

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

// start runs name in ns in its own process group, killed when t ends.
func (l *lab) start(t *testing.T, ns string, out io.Writer, stdin io.Reader, name string, args ...string) *exec.Cmd {
	t.Helper()
	c, _ := routedlab.Start(t, ns, out, stdin, name, args...)
	return c
}

// nexthops returns the gateways of the router's kernel route to v.
func (l *lab) nexthops(v netip.Addr) ([]string, error) { return l.rl.Nexthops(v) }

// watchRoute records every change of the router's kernel route to v, from
// a netlink subscription in its namespace, until the test ends; the func
// returned gives the record so far ("added via ..." or "deleted via ..."),
// in order.
func (l *lab) watchRoute(t *testing.T, v netip.Addr) func() []string {
	t.Helper()
	ns, err := netns.GetFromName(l.rl.Router)
	if err != nil {
		t.Fatal(err)
	}
	defer ns.Close()
	updates := make(chan netlink.RouteUpdate, 64)
	done := make(chan struct{})
	if err := netlink.RouteSubscribeWithOptions(updates, done, netlink.RouteSubscribeOptions{Namespace: &ns}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		for u := range updates {
			if u.Dst == nil || !u.Dst.IP.Equal(v.AsSlice()) {
				continue
			}
			what := "added"
			if u.Type == unix.RTM_DELROUTE {
				what = "deleted"
			}
			gws := []string{}
			if u.Gw != nil {
				gws = append(gws, u.Gw.String())
			}
			for _, nh := range u.MultiPath {
				gws = append(gws, nh.Gw.String())
			}
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%s via %v", what, gws))
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		close(done)
		<-finished
	})
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// wantNexthops waits until the router's route to v goes via exactly the
// nodes given (1-based), in the family of v.
func (l *lab) wantNexthops(t *testing.T, v netip.Addr, timeout time.Duration, nodes ...int) {
	t.Helper()
	l.rl.WantNexthops(t, v, timeout, nodes...)
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
// "eligible", "ineligible", "demoted" and "status" on stdin.
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
	demoted := func() []Verdict {
		vs := verdicts(true, "weighted check failing")
		for i := range vs {
			vs[i].Demoted = true
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
			case "demoted":
				e.set(demoted()...)
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
	*routedlab.FRR
	procs map[string]*exec.Cmd // by daemon
}

func requireFRR(t *testing.T) {
	t.Helper()
	routedlab.RequireFRR(t)
}

// startFRR runs zebra, bfdd (profile fast: 100 ms x 3) and bgpd in the
// router namespace with bgpd's configuration bgpConf.
func (l *lab) startFRR(t *testing.T, bgpConf string) *frr {
	t.Helper()
	f := l.rl.StartFRR(t, bgpConf, routedlab.BFDProfileFast)
	return &frr{FRR: f, procs: f.Procs}
}

func (f *frr) vtysh(cmd string) (string, error) { return f.Vtysh(cmd) }

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
