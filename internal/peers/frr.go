package peers

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/testnet"
)

// FRR names FRRouting's vrrpd (8.4 in Debian 12), run with its zebra.
const FRR Impl = "frr"

// FRRDir is where Debian installs the FRR daemons.
const FRRDir = "/usr/lib/frr"

// FRRConf describes one FRR vrrpd virtual router on a host's interface.
type FRRConf struct {
	Version   int           // 2 (IPv4 only) or 3
	Interval  time.Duration // advertisement-interval; v2 wants whole seconds
	VRID      int
	Priority  int // 1..254 (FRR refuses 255: it does not own addresses)
	Interface string
	VIPs      []netip.Addr // IPv4 and/or IPv6 virtual addresses
	NoPreempt bool
}

// Render returns vrrpd's configuration text, or an error naming the field
// FRR 8.4 would refuse.
func (c FRRConf) Render() (string, error) {
	switch {
	case c.VRID < 1 || c.VRID > 255:
		return "", fmt.Errorf("peers: FRR VRID %d: want 1..255", c.VRID)
	case c.Priority < 1 || c.Priority > 254:
		return "", fmt.Errorf("peers: FRR priority %d: want 1..254", c.Priority)
	case c.Version != 2 && c.Version != 3:
		return "", fmt.Errorf("peers: FRR version %d: want 2 or 3", c.Version)
	case c.Interval < 10*time.Millisecond || c.Interval > 40950*time.Millisecond || c.Interval%(10*time.Millisecond) != 0:
		return "", fmt.Errorf("peers: FRR advertisement interval %v: want 10ms..40.95s in steps of 10ms", c.Interval)
	case c.Version == 2 && c.Interval%time.Second != 0:
		return "", fmt.Errorf("peers: FRR VRRPv2 advertisement interval %v: want whole seconds", c.Interval)
	case len(c.VIPs) == 0:
		return "", errors.New("peers: FRR virtual router without addresses")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "interface %s\n", c.iface())
	fmt.Fprintf(&b, " vrrp %d version %d\n", c.VRID, c.Version)
	fmt.Fprintf(&b, " vrrp %d priority %d\n", c.VRID, c.Priority)
	fmt.Fprintf(&b, " vrrp %d advertisement-interval %d\n", c.VRID, c.Interval.Milliseconds())
	if c.NoPreempt {
		fmt.Fprintf(&b, " no vrrp %d preempt\n", c.VRID)
	}
	for _, a := range c.VIPs {
		switch {
		case a.Is4():
			fmt.Fprintf(&b, " vrrp %d ip %s\n", c.VRID, a)
		case c.Version == 2:
			return "", fmt.Errorf("peers: FRR VRRPv2 address %s: v2 is IPv4 only", a)
		default:
			fmt.Fprintf(&b, " vrrp %d ipv6 %s\n", c.VRID, a)
		}
	}
	b.WriteString("!\n")
	return b.String(), nil
}

func (c FRRConf) iface() string {
	if c.Interface == "" {
		return "eth0"
	}
	return c.Interface
}

// VMAC returns the virtual MAC of VRID for family 4 or 6 (RFC 5798 7.3).
func VMAC(family, vrid int) string {
	if family == 6 {
		return fmt.Sprintf("00:00:5e:00:02:%02x", vrid)
	}
	return fmt.Sprintf("00:00:5e:00:01:%02x", vrid)
}

// FRRNode is a running vrrpd with its zebra on one host.
type FRRNode struct {
	Host  *testnet.Host
	Conf  FRRConf   // the first virtual router (Status, Configure)
	Confs []FRRConf // every virtual router, Conf first
	Dir   string    // config files, sockets, pid files

	mu           sync.Mutex // guards zebra, vrrpd and past: Restart replaces them
	zebra, vrrpd *Node
	past         string // the logs of the daemons before a Restart
}

// StartFRR sets up what FRR's vrrpd needs on h and runs zebra and vrrpd
// there, with their own zebra socket and vty directory under dir:
// for each family among c.VIPs a macvlan (mode bridge) on c.Interface
// with the virtual MAC, random link-local generation, up, carrying the
// virtual addresses, as FRR's documentation asks of the operator; and
// arp_ignore 1 on c.Interface, so only the master answers ARP for them.
func StartFRR(h *testnet.Host, c FRRConf, dir string) (*FRRNode, error) {
	return StartFRRRouters(h, []FRRConf{c}, dir)
}

// StartFRRRouters is StartFRR for several virtual routers (distinct
// VRIDs, one interface) in one vrrpd.
func StartFRRRouters(h *testnet.Host, cs []FRRConf, dir string) (*FRRNode, error) {
	text, err := RenderFRRRouters(cs)
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"zebra", "vrrpd"} {
		if _, err := os.Stat(filepath.Join(FRRDir, d)); err != nil {
			return nil, fmt.Errorf("peers: FRR's %s: %w", d, err)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	// The daemons drop to user frr, which must create its sockets here.
	if err := os.Chmod(dir, 0o777); err != nil {
		return nil, err
	}
	for _, c := range cs {
		if err := setupMacvlans(h, c); err != nil {
			return nil, err
		}
	}
	// vrrpd keeps the addresses on the macvlan and sets it protodown while
	// not master, but with arp_ignore 0 the parent answers ARP for them
	// with its own MAC in every state: a backup answering for the VIP.
	if _, err := h.Run("sysctl", "-qw", "net.ipv4.conf."+cs[0].iface()+".arp_ignore=1"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "vrrpd.conf"), []byte(text), 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "zebra.conf"), []byte("log timestamp precision 3\n!\n"), 0o644); err != nil {
		return nil, err
	}
	n := &FRRNode{Host: h, Conf: cs[0], Confs: slices.Clone(cs), Dir: dir}
	if err := n.startDaemons(); err != nil {
		return nil, err
	}
	return n, nil
}

// RenderFRRRouters renders several virtual routers of one interface for
// one vrrpd, or an error naming what FRR would refuse.
func RenderFRRRouters(cs []FRRConf) (string, error) {
	if len(cs) == 0 {
		return "", errors.New("peers: FRR without virtual routers")
	}
	var b strings.Builder
	b.WriteString("log timestamp precision 3\n") // timelines need milliseconds
	seen := map[int]bool{}
	for _, c := range cs {
		if c.iface() != cs[0].iface() {
			return "", fmt.Errorf("peers: FRR virtual router %d on %s, the first on %s: want one interface", c.VRID, c.iface(), cs[0].iface())
		}
		if seen[c.VRID] {
			return "", fmt.Errorf("peers: FRR VRID %d twice: want distinct VRIDs", c.VRID)
		}
		seen[c.VRID] = true
		text, err := c.Render()
		if err != nil {
			return "", err
		}
		b.WriteString(text)
	}
	return b.String(), nil
}

// startDaemons runs zebra, then vrrpd once zebra's socket exists, on the
// files in n.Dir; sockets a killed pair left are removed first.
func (n *FRRNode) startDaemons() error {
	h, dir := n.Host, n.Dir
	sock := filepath.Join(dir, "zserv.api")
	for _, f := range []string{sock, filepath.Join(dir, "zebra.vty"), filepath.Join(dir, "vrrpd.vty")} {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	common := func(daemon string) []string {
		return []string{"-f", filepath.Join(dir, daemon+".conf"), "-z", sock, "--vty_socket", dir, "-i", filepath.Join(dir, daemon+".pid"),
			"-u", "frr", "-g", "frr", "-P", "0", "--log", "stdout", "--log-level", "debug"}
	}
	zebra, err := StartCmd(h, h.Command(filepath.Join(FRRDir, "zebra"), common("zebra")...))
	if err != nil {
		return err
	}
	zebra.Impl = FRR
	n.mu.Lock()
	if n.zebra != nil {
		n.past = n.logLocked() + "---- started again\n"
	}
	n.zebra, n.vrrpd = zebra, nil
	n.mu.Unlock()
	if err := waitFile(sock, 10*time.Second); err != nil {
		_ = zebra.Kill()
		return fmt.Errorf("zebra on %s: %w\n%s", h.Name, err, zebra.Log())
	}
	vrrpd, err := StartCmd(h, h.Command(filepath.Join(FRRDir, "vrrpd"), common("vrrpd")...))
	if err != nil {
		_ = zebra.Kill()
		return err
	}
	vrrpd.Impl = FRR
	n.mu.Lock()
	n.vrrpd = vrrpd
	n.mu.Unlock()
	// vtysh fails ("failed to connect to any daemons") until vrrpd has
	// read its configuration and opened its vty socket.
	if err := waitFile(filepath.Join(dir, "vrrpd.vty"), 10*time.Second); err != nil {
		_ = n.Kill()
		return fmt.Errorf("vrrpd on %s: %w\n%s", h.Name, err, n.Log())
	}
	return nil
}

// daemons returns the current zebra and vrrpd (vrrpd nil while a start
// has not reached it).
func (n *FRRNode) daemons() (zebra, vrrpd *Node) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.zebra, n.vrrpd
}

func alive(d *Node) bool { return d != nil && d.Alive() }

// Restart runs zebra and vrrpd again after both ended (a crash): the
// macvlans and their addresses stay as the crash left them, as they do on
// a host whose FRR service is restarted.
func (n *FRRNode) Restart() error {
	if z, v := n.daemons(); alive(z) || alive(v) {
		return fmt.Errorf("peers: FRR on %s: restart while zebra or vrrpd still runs", n.Host.Name)
	}
	return n.startDaemons()
}

// Running reports whether both zebra and vrrpd run.
func (n *FRRNode) Running() bool {
	z, v := n.daemons()
	return alive(z) && alive(v)
}

// SignalAll sends sig to the process groups of vrrpd and zebra (a stall
// of the machine stops both).
func (n *FRRNode) SignalAll(sig syscall.Signal) error {
	var errs []error
	for _, d := range n.both() {
		errs = append(errs, d.SignalGroup(sig))
	}
	return errors.Join(errs...)
}

// both lists the daemons started so far, vrrpd first.
func (n *FRRNode) both() []*Node {
	z, v := n.daemons()
	var out []*Node
	for _, d := range []*Node{v, z} {
		if d != nil {
			out = append(out, d)
		}
	}
	return out
}

// Reload has vrrpd apply its configuration file again (`vtysh -f`), as
// an operator's reload of an unchanged file does.
func (n *FRRNode) Reload() error {
	_, err := n.Host.Run("vtysh", "--vty_socket", n.Dir, "-d", "vrrpd", "-f", filepath.Join(n.Dir, "vrrpd.conf"))
	return err
}

// FRRLink is the macvlan vrrpd uses for VRID in family 4 or 6.
func FRRLink(family, vrid int) string { return fmt.Sprintf("vrrp%d-%d", family, vrid) }

// Links lists the node's macvlans.
func (n *FRRNode) Links() []string {
	var out []string
	for _, c := range n.Confs {
		for _, fam := range c.families() {
			out = append(out, FRRLink(fam, c.VRID))
		}
	}
	return out
}

// families lists 4 and/or 6, as c.VIPs have them.
func (c FRRConf) families() []int {
	var out []int
	for _, a := range c.VIPs {
		fam := 6
		if a.Is4() {
			fam = 4
		}
		if !slices.Contains(out, fam) {
			out = append(out, fam)
		}
	}
	slices.Sort(out)
	return out
}

func setupMacvlans(h *testnet.Host, c FRRConf) error {
	fams := map[int][]netip.Addr{}
	for _, a := range c.VIPs {
		if a.Is4() {
			fams[4] = append(fams[4], a)
		} else {
			fams[6] = append(fams[6], a)
		}
	}
	for fam, addrs := range fams {
		dev := FRRLink(fam, c.VRID)
		// iproute2 refuses addrgenmode in "link add" for a macvlan
		// ("Address family not supported"), so it is set afterwards.
		steps := [][]string{
			{"link", "add", dev, "link", c.iface(), "type", "macvlan", "mode", "bridge"},
			{"link", "set", dev, "address", VMAC(fam, c.VRID), "addrgenmode", "random"},
		}
		for _, a := range addrs {
			if fam == 6 {
				steps = append(steps, []string{"addr", "add", netip.PrefixFrom(a, 128).String(), "dev", dev, "nodad"})
			} else {
				steps = append(steps, []string{"addr", "add", netip.PrefixFrom(a, 32).String(), "dev", dev})
			}
		}
		steps = append(steps, []string{"link", "set", dev, "up"})
		for i, s := range steps {
			if _, err := h.Run("ip", s...); err != nil {
				return err
			}
			if i == 0 && fam == 6 {
				if _, err := h.Run("sysctl", "-qw", "net.ipv6.conf."+dev+".accept_dad=0"); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func waitFile(path string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond) // waiting for another process, bounded
	}
	return fmt.Errorf("%s did not appear within %v", path, d)
}

// Vtysh runs vtysh commands against this node's vrrpd.
func (n *FRRNode) Vtysh(cmds ...string) (string, error) {
	args := []string{"--vty_socket", n.Dir, "-d", "vrrpd"}
	for _, c := range cmds {
		args = append(args, "-c", c)
	}
	return n.Host.Run("vtysh", args...)
}

// FRRStatus is one family's part of `show vrrp VRID json`.
type FRRStatus struct {
	Interface      string   `json:"interface"`
	PrimaryAddress string   `json:"primaryAddress"`
	Status         string   `json:"status"` // Initialize, Backup, Master
	Priority       int      `json:"effectivePriority"`
	MasterAdverInt int      `json:"masterAdverInterval"` // ms, learned from the master
	SkewTime       int      `json:"skewTime"`            // ms
	MasterDown     int      `json:"masterDownInterval"`  // ms
	Addresses      []string `json:"addresses"`
	Stats          struct {
		AdverTx     int `json:"adverTx"`
		AdverRx     int `json:"adverRx"`
		Transitions int `json:"transitions"`
	} `json:"stats"`
}

// Status returns vrrpd's view of the virtual router for family 4 or 6.
func (n *FRRNode) Status(family int) (FRRStatus, error) {
	out, err := n.Vtysh(fmt.Sprintf("show vrrp %d json", n.Conf.VRID))
	if err != nil {
		return FRRStatus{}, err
	}
	var vrs []struct {
		V4 FRRStatus `json:"v4"`
		V6 FRRStatus `json:"v6"`
	}
	if err := json.Unmarshal([]byte(out), &vrs); err != nil {
		return FRRStatus{}, fmt.Errorf("show vrrp json on %s: %w: %q", n.Host.Name, err, out)
	}
	if len(vrs) != 1 {
		return FRRStatus{}, fmt.Errorf("show vrrp %d json on %s: %d routers", n.Conf.VRID, n.Host.Name, len(vrs))
	}
	if family == 6 {
		return vrs[0].V6, nil
	}
	return vrs[0].V4, nil
}

// Master reports whether vrrpd runs and is master for family.
func (n *FRRNode) Master(family int) (bool, error) {
	if _, v := n.daemons(); !alive(v) {
		return false, nil
	}
	s, err := n.Status(family)
	if err != nil {
		return false, err
	}
	return s.Status == "Master", nil
}

// Configure runs configuration commands on the node's interface.
func (n *FRRNode) Configure(lines ...string) error {
	cmds := []string{"configure terminal", "interface " + n.Conf.iface()}
	_, err := n.Vtysh(append(cmds, lines...)...)
	return err
}

// Log returns what vrrpd and zebra printed, since the first start.
func (n *FRRNode) Log() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.logLocked()
}

func (n *FRRNode) logLocked() string {
	text := n.past
	for _, d := range []struct {
		name string
		n    *Node
	}{{"vrrpd", n.vrrpd}, {"zebra", n.zebra}} {
		if d.n != nil {
			text += "--- " + d.name + "\n" + d.n.Log()
		}
	}
	return text
}

// Alive reports whether vrrpd still runs.
func (n *FRRNode) Alive() bool {
	_, v := n.daemons()
	return alive(v)
}

// Kill crashes vrrpd and zebra (SIGKILL).
func (n *FRRNode) Kill() error {
	var errs []error
	for _, d := range n.both() {
		errs = append(errs, d.Kill())
	}
	return errors.Join(errs...)
}

// Stop ends both daemons gracefully (SIGTERM), vrrpd first.
func (n *FRRNode) Stop() error {
	var errs []error
	for _, d := range n.both() {
		if d.Alive() {
			if err := d.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
				errs = append(errs, err)
			}
			errs = append(errs, d.wait(10*time.Second))
		}
	}
	return errors.Join(errs...)
}
