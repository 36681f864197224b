//go:build linux

package story_test

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netns"

	"github.com/vipstack/vipstack/internal/node"
	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// The routed lab: FRR in a router namespace, master i (1-based) alone on
// 198.18.i.0/24 at .10 with the router at .1, a client on 198.18.100.0/24.
// No layer-2 segment joins the masters: the API VIP, 198.19.0.5 outside
// every subnet, reaches them only as a BGP host route.
const (
	bgpAPIVIP    = "198.19.0.5"
	bgpRouterASN = 64500
	bgpNodeASN   = 64512
)

// bgpClusterYAML is the cluster file; extraVIP, if set, is a second API
// VIP, and hold3 the hold time of m3's peer.
func bgpClusterYAML(masters int, extraVIP, hold3 string) string {
	var b strings.Builder
	vips := bgpAPIVIP
	if extraVIP != "" {
		vips += ", " + extraVIP
	}
	b.WriteString("name: t1\nbaseDomain: example.com\napiVIPs: [" + vips + "]\ningressVIPs: [198.18.1.7]\nmachineNetworks: [")
	for i := 1; i <= masters; i++ {
		if i > 1 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "198.18.%d.0/24", i)
	}
	b.WriteString("]\nnodes:\n")
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, "  - {name: m%d, role: master, ips: [198.18.%d.10]}\n", i, i)
	}
	fmt.Fprintf(&b, "bgp:\n  asn: %d\n  announce: [api, ingress]\n  peers:\n", bgpNodeASN)
	for i := 1; i <= masters; i++ {
		hold := "30s"
		if i == 3 && hold3 != "" {
			hold = hold3
		}
		bfd := ""
		if i == 1 { // m1's session runs BFD with FRR's bfdd
			bfd = ", bfd: {interval: 100ms, multiplier: 3}"
		}
		fmt.Fprintf(&b, "    - {address: 198.18.%d.1, asn: %d, nodes: [m%d], holdTime: %s, keepalive: 10s%s}\n", i, bgpRouterASN, i, hold, bfd)
	}
	return b.String()
}

func bgpFRRConf(masters int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "log stdout informational\nrouter bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n", bgpRouterASN)
	for i := 1; i <= masters; i++ {
		fmt.Fprintf(&b, " neighbor 198.18.%d.10 remote-as %d\n neighbor 198.18.%d.10 timers 10 30\n neighbor 198.18.%d.10 timers connect 1\n", i, bgpNodeASN, i, i)
		if i == 1 {
			// update-source: bgpd registers the BFD session with its
			// source from the start (see internal/bgp's FRR lab).
			b.WriteString(" neighbor 198.18.1.10 update-source 198.18.1.1\n neighbor 198.18.1.10 bfd profile fast\n")
		}
	}
	b.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n!\n")
	return b.String()
}

type routedLab struct {
	t      *testing.T
	tag    string
	router string
	client string
	nodes  []string
	dir    string
	frrDir string
	out    *syncbuf.Buffer
}

func ipNS(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

func execNS(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s in %s: %v: %s", strings.Join(args, " "), ns, err, out)
	}
	return string(out), nil
}

// doNS runs f on a locked thread in ns; sockets opened in f stay there.
func doNS(ns string, f func() error) error {
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

func newRoutedLab(t *testing.T, masters int) *routedLab {
	t.Helper()
	var rb [3]byte
	if _, err := rand.Read(rb[:]); err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: FRR drops to the frr user and writes its sockets here.
	dir, err := os.MkdirTemp("", "vbg2-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	l := &routedLab{t: t, tag: "vbg2" + hex.EncodeToString(rb[:]), dir: dir, out: &syncbuf.Buffer{}}
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
		if err := ipNS(ns, "link", "set", "lo", "up"); err != nil {
			t.Fatal(err)
		}
	}
	add(l.router)
	if _, err := execNS(l.router, "sysctl", "-qw", "net.ipv4.ip_forward=1", "net.ipv4.fib_multipath_hash_policy=1"); err != nil {
		t.Fatal(err)
	}
	attach := func(ns, rlink string, i int) {
		for _, s := range [][]string{
			{l.router, "link", "add", rlink, "type", "veth", "peer", "name", "eth0", "netns", ns},
			{l.router, "addr", "add", fmt.Sprintf("198.18.%d.1/24", i), "dev", rlink},
			{l.router, "link", "set", rlink, "up"},
			{ns, "addr", "add", fmt.Sprintf("198.18.%d.10/24", i), "dev", "eth0"},
			{ns, "link", "set", "eth0", "up"},
			{ns, "route", "add", "default", "via", fmt.Sprintf("198.18.%d.1", i)},
		} {
			if err := ipNS(s[0], s[1:]...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 1; i <= masters; i++ {
		ns := fmt.Sprintf("%s-m%d", l.tag, i)
		add(ns)
		attach(ns, fmt.Sprintf("m%d", i), i)
		l.nodes = append(l.nodes, ns)
	}
	add(l.client)
	attach(l.client, "c", 100)
	return l
}

// start runs name in ns in its own process group, killed when the test ends.
func (l *routedLab) start(ns string, out io.Writer, name string, args ...string) (*exec.Cmd, <-chan struct{}) {
	l.t.Helper()
	c := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdout, c.Stderr = out, out
	if err := c.Start(); err != nil {
		l.t.Fatalf("start %s in %s: %v", name, ns, err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	l.t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return c, done
}

func (l *routedLab) startFRR(conf string) {
	l.t.Helper()
	l.frrDir = filepath.Join(l.dir, "frr")
	if err := os.Mkdir(l.frrDir, 0o777); err != nil {
		l.t.Fatal(err)
	}
	if err := os.Chmod(l.frrDir, 0o777); err != nil {
		l.t.Fatal(err)
	}
	zserv := filepath.Join(l.frrDir, "zserv.api")
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		cf := filepath.Join(l.frrDir, d+".conf")
		body := "log stdout informational\n"
		switch d {
		case "bgpd":
			body = conf
		case "bfdd":
			body += "bfd\n profile fast\n  receive-interval 100\n  transmit-interval 100\n  detect-multiplier 3\n !\n!\n"
		}
		args := []string{"-f", cf, "-i", filepath.Join(l.frrDir, d+".pid"), "-z", zserv,
			"--vty_socket", l.frrDir, "-u", "frr", "-g", "frr", "-P", "0"}
		if d == "bfdd" {
			args = append(args, "--bfdctl", filepath.Join(l.frrDir, "bfdd.sock"))
		}
		if err := os.WriteFile(cf, []byte(body), 0o644); err != nil {
			l.t.Fatal(err)
		}
		l.start(l.router, l.out, "/usr/lib/frr/"+d, args...)
		if d == "zebra" {
			testutil.Eventually(l.t, 10*time.Second, func() error { _, err := os.Stat(zserv); return err })
		}
	}
}

func (l *routedLab) vtysh(cmd string) (string, error) {
	return execNS(l.router, "vtysh", "--vty_socket", l.frrDir, "-c", cmd)
}

// nexthops returns the gateways of the router's kernel route to v that
// bgpd installed.
func (l *routedLab) nexthops(v string) ([]string, error) {
	out, err := exec.Command("ip", "-n", l.router, "-4", "-j", "route", "show", v+"/32").Output()
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
		if r.Protocol != "bgp" {
			continue
		}
		if r.Gateway != "" {
			gws = append(gws, r.Gateway)
		}
		for _, n := range r.Nexthops {
			gws = append(gws, n.Gateway)
		}
	}
	slices.Sort(gws)
	return gws, nil
}

func (l *routedLab) wantNexthops(v string, timeout time.Duration, masters ...int) {
	l.t.Helper()
	var want []string
	for _, i := range masters {
		want = append(want, fmt.Sprintf("198.18.%d.10", i))
	}
	slices.Sort(want)
	testutil.Eventually(l.t, timeout, func() error {
		got, err := l.nexthops(v)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("the router's route to %s goes via %v, want %v", v, got, want)
		}
		return nil
	})
}

// serveTLSIn answers HTTPS on addr in ns with body.
func serveTLSIn(t *testing.T, ns, addr, body string) {
	t.Helper()
	var ln net.Listener
	if err := doNS(ns, func() (err error) { ln, err = net.Listen("tcp", addr); return err }); err != nil {
		t.Fatal(err)
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, body)
	})}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
}

// nodeStatus reads `vipstack status -o json` in ns.
func nodeStatus(bin, ns string) (node.Status, error) {
	var s node.Status
	out, err := execNS(ns, bin, "status", "-o", "json")
	if err != nil {
		return s, err
	}
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		return s, fmt.Errorf("status JSON: %v: %q", err, out)
	}
	return s, nil
}

// TestStoryBGP runs `vipstack node` on three masters, each alone on its
// subnet behind FRR (m1's session with BFD against FRR's bfdd), with the
// API (and Ingress) VIPs announced by BGP:
// the API route is ECMP over the three, a client reaches the API through
// the VIP, a failing check on one master withdraws its route (and
// `vipstack status` says why), it comes back when the check passes, and
// a graceful stop withdraws the route before the agent exits. Ingress,
// whose check fails everywhere (no router runs), is never announced.
func TestStoryBGP(t *testing.T) {
	testnet.RequireRoot(t)
	for _, p := range []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "vtysh", "nft"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: %s is not installed (%v); .ci/run installs frr and nftables", p, err)
		}
	}
	const masters = 3
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	l := newRoutedLab(t, masters)
	l.startFRR(bgpFRRConf(masters))
	cfg := filepath.Join(l.dir, "cluster.yaml")
	if err := os.WriteFile(cfg, []byte(bgpClusterYAML(masters, "", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := make([]*syncbuf.Buffer, masters)
	procs := make([]*exec.Cmd, masters)
	exited := make([]<-chan struct{}, masters)
	for i := range masters {
		ns := l.nodes[i]
		serveTLSIn(t, ns, ":6443", fmt.Sprintf("ok from m%d", i+1))
		logs[i] = &syncbuf.Buffer{}
		procs[i], exited[i] = l.start(ns, logs[i], bin, "node", "--config", cfg, "--node", fmt.Sprintf("m%d", i+1),
			"--state-dir", filepath.Join(l.dir, fmt.Sprintf("m%d", i+1)), "--log-level", "debug")
	}
	t.Cleanup(func() {
		if t.Failed() {
			for i, b := range logs {
				t.Logf("---- m%d log:\n%s", i+1, testutil.Tail(b.String(), 60))
			}
			t.Logf("---- FRR:\n%s", testutil.Tail(l.out.String(), 40))
			out, _ := l.vtysh("show bgp ipv4 unicast")
			t.Logf("---- show bgp ipv4 unicast:\n%s", out)
		}
	})

	// Every master's checks pass (rise 3 at 2 s): the route is ECMP
	// over all three.
	l.wantNexthops(bgpAPIVIP, 60*time.Second, 1, 2, 3)
	get := func() (string, error) {
		var body string
		err := doNS(l.client, func() error {
			conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 2 * time.Second}, "tcp", bgpAPIVIP+":6443", &tls.Config{InsecureSkipVerify: true})
			if err != nil {
				return err
			}
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
			fmt.Fprintf(conn, "GET /readyz HTTP/1.0\r\n\r\n")
			b, err := io.ReadAll(conn)
			body = string(b)
			return err
		})
		return body, err
	}
	testutil.Eventually(t, 15*time.Second, func() error {
		body, err := get()
		if err != nil || !strings.Contains(body, "ok from m") {
			return fmt.Errorf("client through the API VIP: %v %q", err, body)
		}
		return nil
	})
	for range 10 {
		if body, err := get(); err != nil || !strings.Contains(body, "ok from m") {
			t.Fatalf("client through the API VIP: %v %q", err, body)
		}
	}

	// Status of m1: its peer established, the API route announced with
	// its checks, the Ingress route not announced with its failing check.
	testutil.Eventually(t, 10*time.Second, func() error {
		s, err := nodeStatus(bin, l.nodes[0])
		if err != nil {
			return err
		}
		if s.BGP == nil || len(s.BGP.Peers) != 1 || s.BGP.Peers[0].Session != "established" || s.BGP.Peers[0].BFD != "up" {
			return fmt.Errorf("m1's BGP status: %+v, want its one peer established, BFD up", s.BGP)
		}
		for _, r := range s.BGP.Routes {
			switch r.Prefix {
			case bgpAPIVIP + "/32":
				if !r.Announced || !strings.Contains(r.Reason, "chk_ocp_lb ok") {
					return fmt.Errorf("API route: %+v, want announced with chk_ocp_lb ok", r)
				}
			case "198.18.1.7/32":
				if r.Announced || !strings.Contains(r.Reason, "chk_ingress failing") {
					return fmt.Errorf("Ingress route: %+v, want not announced, chk_ingress failing", r)
				}
			default:
				return fmt.Errorf("unexpected route %+v", r)
			}
		}
		return nil
	})
	if out, err := execNS(l.nodes[0], bin, "status"); err != nil || !strings.Contains(out, "route "+bgpAPIVIP+"/32 (api): announced") ||
		!strings.Contains(out, "peer 198.18.1.1 AS 64500 (eBGP): established, 1 routes sent, BFD up") {
		t.Errorf("vipstack status on m1: %v\n%s", err, out)
	}
	if got, _ := l.nexthops("198.18.1.7"); len(got) != 0 {
		t.Errorf("the Ingress VIP, whose check fails on every master, is routed via %v", got)
	}

	// m2's load balancer stops answering its checks (its port refused on
	// loopback): m2 withdraws, the route goes over m1 and m3 only.
	block := func(ns string, on bool) {
		t.Helper()
		if on {
			for _, cmd := range [][]string{
				{"add", "table", "inet", "vbg2"},
				{"add", "chain", "inet", "vbg2", "out", "{ type filter hook output priority 0 ; }"},
				{"add", "rule", "inet", "vbg2", "out", "oifname", "lo", "tcp", "dport", "9445", "reject", "with", "tcp", "reset"},
			} {
				if out, err := execNS(ns, append([]string{"nft"}, cmd...)...); err != nil {
					t.Fatal(err, out)
				}
			}
			return
		}
		if out, err := execNS(ns, "nft", "delete", "table", "inet", "vbg2"); err != nil {
			t.Fatal(err, out)
		}
	}
	block(l.nodes[1], true)
	l.wantNexthops(bgpAPIVIP, 20*time.Second, 1, 3)
	s, err := nodeStatus(bin, l.nodes[1])
	if err != nil {
		t.Fatal(err)
	}
	if s.BGP == nil || !slices.ContainsFunc(s.BGP.Routes, func(r node.BGPRouteStatus) bool {
		return r.Prefix == bgpAPIVIP+"/32" && !r.Announced && strings.Contains(r.Reason, "not eligible: chk_ocp_lb failing")
	}) {
		t.Errorf("m2's status with its LB check failing: %+v, want the API route not announced, chk_ocp_lb failing", s.BGP)
	}
	for range 10 {
		if body, err := get(); err != nil || !strings.Contains(body, "ok from m") {
			t.Fatalf("client through the API VIP with m2 withdrawn: %v %q", err, body)
		}
	}
	block(l.nodes[1], false)
	l.wantNexthops(bgpAPIVIP, 30*time.Second, 1, 2, 3)

	// A reload adds an API VIP on every master and changes m3's peer: the
	// new VIP is announced by all three, m3's session restarts, and the
	// sessions of m1 and m2, whose peers did not change, stay up.
	dropped := func(i int) int {
		t.Helper()
		out, err := l.vtysh(fmt.Sprintf("show bgp neighbors 198.18.%d.10 json", i))
		if err != nil {
			t.Fatal(err)
		}
		var n map[string]struct {
			Dropped int `json:"connectionsDropped"`
		}
		if err := json.Unmarshal([]byte(out), &n); err != nil {
			t.Fatalf("show bgp neighbors json: %v: %q", err, out)
		}
		return n[fmt.Sprintf("198.18.%d.10", i)].Dropped
	}
	before := []int{dropped(1), dropped(2), dropped(3)}
	if err := os.WriteFile(cfg, []byte(bgpClusterYAML(masters, "198.19.0.6", "60s")), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range procs {
		if err := c.Process.Signal(syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	l.wantNexthops("198.19.0.6", 30*time.Second, 1, 2, 3)
	l.wantNexthops(bgpAPIVIP, 30*time.Second, 1, 2, 3)
	testutil.Eventually(t, 10*time.Second, func() error {
		if got := []int{dropped(1), dropped(2), dropped(3)}; got[0] != before[0] || got[1] != before[1] || got[2] != before[2]+1 {
			return fmt.Errorf("sessions dropped by the reload (m1, m2, m3): %v before, %v after; want m3's alone", before, got)
		}
		return nil
	})
	if out, err := execNS(l.nodes[0], "ip", "-4", "addr", "show", "dev", "lo"); err != nil || !strings.Contains(out, "198.19.0.6/32") {
		t.Errorf("m1's loopback after the reload lacks the new VIP (%v):\n%s", err, out)
	}

	// A graceful stop of m3: its route is gone once the agent has exited
	// (the hold timer, 30 s, would take far longer).
	if err := syscall.Kill(procs[2].Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited[2]:
	case <-time.After(20 * time.Second):
		t.Fatal("m3's agent has not exited 20 s after SIGTERM")
	}
	// bgpd takes a moment to program the kernel after the UPDATE.
	l.wantNexthops(bgpAPIVIP, 2*time.Second, 1, 2)
	l.wantNexthops("198.19.0.6", 2*time.Second, 1, 2)
	if !strings.Contains(logs[2].String(), "bgp: withdrew") {
		t.Errorf("m3's log has no withdrawal before it exited:\n%s", testutil.Tail(logs[2].String(), 30))
	}
	if out, err := execNS(l.nodes[2], "ip", "-4", "addr", "show", "dev", "lo"); err != nil || strings.Contains(out, bgpAPIVIP) {
		t.Errorf("m3's loopback after the stop still holds the VIP (%v):\n%s", err, out)
	}
}
