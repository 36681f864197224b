package peers

import (
	"cmp"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// Impl names a VRRP implementation.
type Impl string

const (
	Keepalived Impl = "keepalived"
	Vipstack   Impl = "vipstack"
)

// Conf describes one node's keepalived.conf with a single instance.
type Conf struct {
	Version   int           // 2 or 3
	Interval  time.Duration // advert_int
	VRID      int
	Priority  int
	Interface string
	VIP       netip.Prefix
	Auth      string       // auth_pass for v2 PASS; "" = none
	Source    netip.Addr   // unicast_src_ip (unicast mode only)
	Peers     []netip.Addr // unicast peers; empty = multicast
	NoPreempt bool
	// Script, when set, is tracked with Weight (a vrrp_script named chk).
	Script   string
	Weight   int
	Notify   string // notify script (gets INSTANCE name state prio)
	Instance string // instance name, default VI_1
	// NoSecondGARP renders garp_master_delay 0: no second burst of
	// announcements after becoming master.
	NoSecondGARP bool
	// StartMaster renders state MASTER (which clears nopreempt and
	// preempt_delay; keepalived 2.2.7 and vipstack still start in BACKUP).
	StartMaster bool
	// RTPriority and RLimitRTTime render vrrp_rt_priority and
	// vrrp_rlimit_rttime (0: not set).
	RTPriority, RLimitRTTime int
}

// Config returns c as the typed keepalived model, for routerID. It is
// not validated: a test may want what keepalived corrects with a warning
// (StartMaster with NoPreempt).
func (c Conf) Config(routerID string) *keepalived.Config {
	cfg := keepalived.NewConfig()
	g := &cfg.Global
	g.RouterID, g.VRRPVersion, g.RTPriority, g.RLimitRTTime = routerID, c.Version, c.RTPriority, c.RLimitRTTime
	if c.Script != "" {
		g.EnableScriptSecurity, g.ScriptUser = true, "root"
		sc := keepalived.NewScript("chk", c.Script)
		sc.Weight = c.Weight
		cfg.Scripts[sc.Name] = sc
	}
	in := cfg.NewInstance(cmp.Or(c.Instance, "VI_1"))
	if c.StartMaster {
		in.InitialState = "MASTER"
	}
	in.Interface, in.VRID, in.Priority = cmp.Or(c.Interface, "eth0"), uint8(c.VRID), uint8(c.Priority)
	in.AdvertInterval, in.Version, in.Preempt = c.Interval, c.Version, !c.NoPreempt
	if c.NoSecondGARP {
		in.GARPMasterDelay = 0
	}
	if c.Auth != "" {
		in.AuthType, in.AuthPass = "PASS", c.Auth
	}
	if len(c.Peers) > 0 {
		in.UnicastSrcIP, in.UnicastPeers = c.Source, slices.Clone(c.Peers)
	}
	in.VIPs = []keepalived.VIP{{Prefix: c.VIP}}
	if c.Script != "" {
		in.TrackScripts = []keepalived.TrackScript{{Name: "chk"}}
	}
	if c.Notify != "" {
		in.Notify = &keepalived.Notify{Any: c.Notify}
	}
	cfg.Instances = []*keepalived.Instance{in}
	return cfg
}

// Render returns the keepalived.conf text, written by keepalived.Format.
func (c Conf) Render(routerID string) (string, error) {
	if c.VRID < 1 || c.VRID > 255 || c.Priority < 1 || c.Priority > 255 {
		return "", fmt.Errorf("peers: VRID %d, priority %d: want 1..255", c.VRID, c.Priority)
	}
	return string(keepalived.Format(c.Config(routerID))), nil
}

// Node is one running VRRP speaker.
type Node struct {
	Host *testnet.Host
	Impl Impl
	Dir  string
	Conf string // path of its keepalived.conf

	cmd  *exec.Cmd
	log  *syncbuf.Buffer
	done chan struct{}
}

// Start writes conf to dir and runs impl on h. vipstackBin is the vipstack
// binary (unused for keepalived). extra is appended to vipstack's flags.
func Start(h *testnet.Host, impl Impl, conf, dir, vipstackBin string, extra ...string) (*Node, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "keepalived.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		return nil, err
	}
	n := &Node{Host: h, Impl: impl, Dir: dir, Conf: path, log: &syncbuf.Buffer{Limit: 4 << 20}, done: make(chan struct{})}
	switch impl {
	case Keepalived:
		n.cmd = h.Command("keepalived", "-n", "-l", "-D", "--vrrp", "-f", path,
			"-p", filepath.Join(dir, "keepalived.pid"), "-r", filepath.Join(dir, "vrrp.pid"))
	case Vipstack:
		args := append([]string{"vrrp", "-f", path, "--state-dir", dir, "--log-level", "debug"}, extra...)
		n.cmd = h.Command(vipstackBin, args...)
	default:
		return nil, fmt.Errorf("unknown implementation %q", impl)
	}
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	if err := h.Start(n.cmd); err != nil {
		return nil, fmt.Errorf("start %s on %s: %w", impl, h.Name, err)
	}
	go func() {
		_ = n.cmd.Wait()
		close(n.done)
	}()
	return n, nil
}

// StartCmd starts any command built with h.Command (for example `vipstack
// node`) as a Node, so it gets the same log capture, Kill and Term.
func StartCmd(h *testnet.Host, c *exec.Cmd) (*Node, error) {
	n := &Node{Host: h, Impl: Vipstack, cmd: c, log: &syncbuf.Buffer{Limit: 4 << 20}, done: make(chan struct{})}
	c.Stdout, c.Stderr = n.log, n.log
	if err := h.Start(c); err != nil {
		return nil, fmt.Errorf("start %s on %s: %w", c.Path, h.Name, err)
	}
	go func() {
		_ = c.Wait()
		close(n.done)
	}()
	return n, nil
}

// Log returns what the node printed so far.
func (n *Node) Log() string { return n.log.String() }

// Alive reports whether the process still runs.
func (n *Node) Alive() bool {
	select {
	case <-n.done:
		return false
	default:
		return true
	}
}

// Kill crashes the node: SIGKILL to its whole process group (keepalived's
// parent alone would make its VRRP child exit gracefully).
func (n *Node) Kill() error {
	err := syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	return errors.Join(err, n.wait(5*time.Second))
}

// Term stops the node gracefully and waits for it.
func (n *Node) Term() error {
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	return n.wait(10 * time.Second)
}

// Signal sends sig to the node's main process.
func (n *Node) Signal(sig syscall.Signal) error { return n.cmd.Process.Signal(sig) }

// SignalGroup sends sig to the node's whole process group (keepalived's
// parent and VRRP child; vipstack's supervisor and engine), as a stall of
// the machine would hit both.
func (n *Node) SignalGroup(sig syscall.Signal) error { return syscall.Kill(-n.cmd.Process.Pid, sig) }

// EnginePid returns the PID of the process that speaks VRRP: the only child
// of the main process (keepalived's VRRP child, vipstack's supervised
// engine), or the main process when it has no child.
func (n *Node) EnginePid() (int, error) {
	pid := n.cmd.Process.Pid
	// A child is listed under the thread that forked it.
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		return 0, err
	}
	var f []string
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		f = append(f, strings.Fields(string(b))...)
	}
	if len(f) == 0 {
		return pid, nil
	}
	var child int
	if _, err := fmt.Sscan(f[0], &child); err != nil {
		return 0, err
	}
	return child, nil
}

// Pid is the main process ID.
func (n *Node) Pid() int { return n.cmd.Process.Pid }

func (n *Node) wait(d time.Duration) error {
	select {
	case <-n.done:
		return nil
	case <-time.After(d):
		return fmt.Errorf("%s on %s did not exit within %v", n.Impl, n.Host.Name, d)
	}
}

// Holders returns the hosts among hs that have addr configured.
func Holders(hs []*testnet.Host, addr netip.Addr) ([]*testnet.Host, error) {
	var out []*testnet.Host
	for _, h := range hs {
		ok, err := h.HasAddr(addr)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, h)
		}
	}
	return out, nil
}

// WaitSoleHolder polls (every 20 ms, at most timeout) until want is the only
// host among hs holding addr, and has stayed so for `stable`. It returns how
// long that took (until the state first appeared) and, on timeout, an error
// that says who held the address last.
func WaitSoleHolder(hs []*testnet.Host, addr netip.Addr, want *testnet.Host, stable, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	var since time.Time
	var last []*testnet.Host
	for time.Since(start) < timeout {
		hold, err := Holders(hs, addr)
		if err != nil {
			return 0, err
		}
		last = hold
		if len(hold) == 1 && hold[0] == want {
			if since.IsZero() {
				since = time.Now()
			}
			if time.Since(since) >= stable {
				return since.Sub(start), nil
			}
		} else {
			since = time.Time{}
		}
		time.Sleep(20 * time.Millisecond) // polling the system, bounded by timeout
	}
	var names []string
	for _, h := range last {
		names = append(names, h.Name)
	}
	return 0, fmt.Errorf("after %v, %v is held by %v, want only %s", timeout, addr, names, want.Name)
}

// BuildVipstack builds the vipstack binary into dir and returns its path.
// A bench's binary is built as hack/build.sh and the image build it: static
// (no cgo), paths trimmed, no symbol table. Its memory figures are then
// those of the binary users run: a cgo build maps the C library into each
// process (about 1 MiB more resident each).
func BuildVipstack(dir string) (string, error) {
	return buildInModule(dir, "vipstack", "./cmd/vipstack")
}

// shippedBuild are the flags of `go build` for a bench's binary, and the
// environment it adds (BuildVipstack).
var (
	shippedBuild = []string{"-trimpath", "-ldflags", "-s -w"}
	shippedEnv   = []string{"CGO_ENABLED=0"}
)

// buildInModule builds the main package pkg of the vipstack module into
// dir/name and returns its path. In a test binary the build is shared
// through buildCached; a bench builds its own, with shippedBuild's flags
// (CoreDNS's releases are built so too).
func buildInModule(dir, name, pkg string) (string, error) {
	out := filepath.Join(dir, name)
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	if testing.Testing() {
		return buildCached(root, dir, name, pkg)
	}
	cmd := exec.Command("go", append(append([]string{"build"}, shippedBuild...), "-o", out, pkg)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), shippedEnv...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, b)
	}
	return out, nil
}

func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", err
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return "", errors.New("not inside the vipstack module")
	}
	return filepath.Dir(mod), nil
}

// HAProxy runs haproxy in the foreground (`haproxy -db`) with the
// configuration text conf, in the test's network namespace (loopback
// addresses in conf), until the test ends. Its standard output and error
// go to the returned buffer (a `log stdout` target writes there too).
func HAProxy(t testing.TB, conf string) *syncbuf.Buffer {
	t.Helper()
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	out := new(syncbuf.Buffer)
	cmd := exec.Command("haproxy", "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() { // why haproxy did not answer, if it exited early
			t.Logf("haproxy (%v) wrote:\n%s", cmd.ProcessState, out.String())
		}
	})
	return out
}
