//go:build linux

package routedlab

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
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

	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// ClientSubnet is the client's subnet number.
const ClientSubnet = 100

// Options configure a lab.
type Options struct {
	// Prefix starts every namespace name (the test's own prefix), followed
	// by random hex and -r (router), -c (client), -n1... (nodes).
	Prefix string
	Nodes  int
}

// Lab is the namespaces of one test.
type Lab struct {
	Router string   // namespace names
	Client string   //
	Nodes  []string // node i+1 is Nodes[i]
	// Dir is a directory every user may write (the daemons drop to the
	// frr user and write their sockets there), removed when the test ends.
	Dir string

	all []string // the namespaces made, for Close
}

// SubnetV4 is host's IPv4 address on subnet i (node i: host 10, the
// router: host 1).
func SubnetV4(i int, host byte) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, byte(i), host}) }

// SubnetV6 is host's IPv6 address on subnet i.
func SubnetV6(i int, host byte) netip.Addr {
	return netip.MustParseAddr(fmt.Sprintf("fd00:%d::%x", i, host))
}

// RouterLink is the name of the router's end of node i's link (the
// node's end is eth0): setting it down is a cut cable as the node sees it.
func RouterLink(i int) string { return fmt.Sprintf("n%d", i) }

// IPIn runs `ip -n ns args...`.
func IPIn(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"-n", ns}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip -n %s %s: %v: %s", ns, strings.Join(args, " "), err, out)
	}
	return nil
}

// Exec runs a command in ns and returns its combined output.
func Exec(ns string, args ...string) (string, error) {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns}, args...)...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s in %s: %v: %s", strings.Join(args, " "), ns, err, out)
	}
	return string(out), nil
}

func sysctlIn(ns string, kv ...string) error {
	for _, k := range kv {
		if _, err := Exec(ns, "sysctl", "-qw", k); err != nil {
			return err
		}
	}
	return nil
}

// New builds the namespaces and removes them when t ends. It skips the
// test when not root.
func New(t testing.TB, o Options) *Lab {
	t.Helper()
	testnet.RequireRoot(t)
	l, err := Build(o)
	if l != nil {
		t.Cleanup(l.Close)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// Build builds the namespaces for a caller that is not a test (bench/chaos);
// Close removes them. On an error it returns what it built so far (nil
// if nothing), for the caller to Close.
func Build(o Options) (*Lab, error) {
	var rb [4]byte
	if _, err := rand.Read(rb[:]); err != nil {
		return nil, err
	}
	// Not t.TempDir: its parent is private.
	dir, err := os.MkdirTemp("", o.Prefix+"-")
	if err != nil {
		return nil, err
	}
	tag := o.Prefix + hex.EncodeToString(rb[:])
	l := &Lab{Router: tag + "-r", Client: tag + "-c", Dir: dir}
	if err := os.Chmod(dir, 0o777); err != nil {
		return l, err
	}
	if err := l.add(l.Router); err != nil {
		return l, err
	}
	if err := sysctlIn(l.Router, "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1",
		// ECMP by the 5-tuple, so one client's connections spread.
		"net.ipv4.fib_multipath_hash_policy=1", "net.ipv6.fib_multipath_hash_policy=1"); err != nil {
		return l, err
	}
	for i := 1; i <= o.Nodes; i++ {
		ns := fmt.Sprintf("%s-n%d", tag, i)
		if err := l.add(ns); err != nil {
			return l, err
		}
		l.Nodes = append(l.Nodes, ns)
		if err := l.attach(ns, RouterLink(i), i); err != nil {
			return l, err
		}
	}
	if err := l.add(l.Client); err != nil {
		return l, err
	}
	return l, l.attach(l.Client, "c", ClientSubnet)
}

// Close removes the lab's namespaces and its directory.
func (l *Lab) Close() {
	for _, ns := range l.all {
		_ = exec.Command("ip", "netns", "del", ns).Run()
	}
	l.all = nil
	_ = os.RemoveAll(l.Dir)
}

// add makes namespace ns with lo up, no duplicate address detection, and
// IPv6 addresses kept while a link is down (Linux flushes them by default,
// which would leave a node or the router without its address after a cut
// or an ifdown, as a host with static configuration is not).
func (l *Lab) add(ns string) error {
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("netns add %s: %v: %s", ns, err, out)
	}
	l.all = append(l.all, ns)
	if err := sysctlIn(ns, "net.ipv6.conf.all.accept_dad=0", "net.ipv6.conf.default.accept_dad=0",
		"net.ipv6.conf.all.keep_addr_on_down=1", "net.ipv6.conf.default.keep_addr_on_down=1"); err != nil {
		return err
	}
	return IPIn(ns, "link", "set", "lo", "up")
}

// attach links ns to the router on subnet i: the router's end is rlink.
func (l *Lab) attach(ns, rlink string, i int) error {
	for _, s := range [][]string{
		{l.Router, "link", "add", rlink, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{l.Router, "addr", "add", SubnetV4(i, 1).String() + "/24", "dev", rlink},
		{l.Router, "addr", "add", SubnetV6(i, 1).String() + "/64", "dev", rlink, "nodad"},
		{l.Router, "link", "set", rlink, "up"},
		{ns, "addr", "add", SubnetV4(i, 10).String() + "/24", "dev", "eth0"},
		{ns, "addr", "add", SubnetV6(i, 0x10).String() + "/64", "dev", "eth0", "nodad"},
		{ns, "link", "set", "eth0", "up"},
		{ns, "route", "add", "default", "via", SubnetV4(i, 1).String()},
		{ns, "-6", "route", "add", "default", "via", SubnetV6(i, 1).String()},
	} {
		if err := IPIn(s[0], s[1:]...); err != nil {
			return err
		}
	}
	return nil
}

// Do runs f on a locked thread switched into ns; sockets opened in f stay
// in ns.
func Do(ns string, f func() error) error {
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

// Start runs name in ns in its own process group, killed when t ends. The
// returned channel is closed once the process has exited (the command is
// waited for; do not call Wait).
func Start(t testing.TB, ns string, out io.Writer, stdin io.Reader, name string, args ...string) (*exec.Cmd, <-chan struct{}) {
	t.Helper()
	c := exec.Command("ip", append([]string{"netns", "exec", ns, name}, args...)...)
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Stdout, c.Stderr, c.Stdin = out, out, stdin
	if err := c.Start(); err != nil {
		t.Fatalf("start %s in %s: %v", name, ns, err)
	}
	done := make(chan struct{})
	go func() { _ = c.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		<-done
	})
	return c, done
}

// Nexthops returns, sorted, the gateways of the router's kernel route to
// v that a routing daemon (protocol bgp or bird) installed.
func (l *Lab) Nexthops(v netip.Addr) ([]string, error) {
	fam := "-4"
	if v.Is6() {
		fam = "-6"
	}
	out, err := exec.Command("ip", "-n", l.Router, fam, "-j", "route", "show", v.String()+"/"+fmt.Sprint(v.BitLen())).Output()
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
	slices.Sort(gws)
	return gws, nil
}

// WantNexthops waits until the router's route to v goes via exactly the
// nodes given (1-based), in the family of v.
func (l *Lab) WantNexthops(t testing.TB, v netip.Addr, timeout time.Duration, nodes ...int) {
	t.Helper()
	var want []string
	for _, i := range nodes {
		if v.Is4() {
			want = append(want, SubnetV4(i, 10).String())
		} else {
			want = append(want, SubnetV6(i, 0x10).String())
		}
	}
	slices.Sort(want)
	testutil.Eventually(t, timeout, func() error {
		got, err := l.Nexthops(v)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("router's route to %v goes via %v, want %v", v, got, want)
		}
		return nil
	})
}

// RequireFRR skips t unless root and FRR's zebra, bfdd, bgpd and vtysh
// are installed.
func RequireFRR(t testing.TB) {
	t.Helper()
	testnet.RequireRoot(t)
	for _, p := range []string{"/usr/lib/frr/zebra", "/usr/lib/frr/bgpd", "/usr/lib/frr/bfdd", "vtysh"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("skipping: FRR is not installed (%s: %v); .ci/run installs the frr package", p, err)
		}
	}
}

// FRR is FRR running as the lab's router.
type FRR struct {
	ns    string
	Dir   string
	Out   *syncbuf.Buffer
	Procs map[string]*exec.Cmd // by daemon: zebra, bfdd, bgpd
}

// BFDProfileFast is a bfdd configuration with profile "fast": 100 ms x 3.
const BFDProfileFast = "bfd\n profile fast\n  receive-interval 100\n  transmit-interval 100\n  detect-multiplier 3\n !\n!\n"

// StartFRR runs zebra, bfdd (with configuration bfdConf) and bgpd (with
// bgpConf) in the router namespace; their output goes to Out, and its
// tail to the log if t fails.
func (l *Lab) StartFRR(t testing.TB, bgpConf, bfdConf string) *FRR {
	t.Helper()
	f := &FRR{ns: l.Router, Dir: filepath.Join(l.Dir, "frr"), Out: &syncbuf.Buffer{}, Procs: map[string]*exec.Cmd{}}
	if err := os.Mkdir(f.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f.Dir, 0o777); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("FRR output:\n%s", testutil.Tail(f.Out.String(), 60))
		}
	})
	zserv := filepath.Join(f.Dir, "zserv.api")
	confs := map[string]string{
		"zebra": "log stdout informational\n",
		"bfdd":  "log stdout informational\n" + bfdConf,
		"bgpd":  "log stdout informational\n" + bgpConf,
	}
	for _, d := range []string{"zebra", "bfdd", "bgpd"} {
		cf := filepath.Join(f.Dir, d+".conf")
		if err := os.WriteFile(cf, []byte(confs[d]), 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"-f", cf, "-i", filepath.Join(f.Dir, d+".pid"), "-z", zserv, "--vty_socket", f.Dir,
			"-u", "frr", "-g", "frr", "-P", "0"}
		if d == "bfdd" {
			args = append(args, "--bfdctl", filepath.Join(f.Dir, "bfdd.sock"))
		}
		f.Procs[d], _ = Start(t, l.Router, f.Out, nil, "/usr/lib/frr/"+d, args...)
		if d == "zebra" {
			testutil.Eventually(t, 10*time.Second, func() error {
				_, err := os.Stat(zserv)
				return err
			})
		}
	}
	return f
}

// Vtysh runs one vtysh command against the lab's FRR.
func (f *FRR) Vtysh(cmd string) (string, error) {
	out, err := exec.Command("ip", "netns", "exec", f.ns, "vtysh", "--vty_socket", f.Dir, "-c", cmd).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("vtysh -c %q: %v: %s", cmd, err, out)
	}
	return string(out), nil
}
