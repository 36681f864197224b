package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/syncbuf"
)

// router is the routing daemon in the router namespace: FRR or BIRD.
type router interface {
	stop()
	// bfdUp reports whether a BFD session is up with every address.
	bfdUp(addrs ...netip.Addr) error
	// neighbor is the BGP session with a: established, and the routes
	// accepted over it.
	neighbor(a netip.Addr) (established bool, accepted int, err error)
	// shutdown takes the session with a down administratively, or back.
	shutdown(a netip.Addr, down bool) error
	// logMark is how much the router has logged; bfdDown is when it
	// logged its BFD session with a going down after mark.
	logMark() int
	bfdDown(mark int, a netip.Addr) (time.Time, error)
	// logSince is what the router logged after mark about a.
	logSince(mark int, a netip.Addr) string
}

// routerConf is what a router's configuration depends on.
type routerConf struct {
	mode        string // modeBFD or modeHold
	hold        time.Duration
	bfdInterval time.Duration
	bfdMult     int
}

// startRouterFRR runs FRR as the router: one neighbor per node, ECMP
// over 8 paths, BFD profile "fast" on n1 and n2 in the BFD mode; n3's
// session starts shut down. bfdd logs its state changes (debug bfd
// peer) for bfdDown.
func startRouterFRR(ns, dir string, rc routerConf) (*frrRouter, error) {
	var c strings.Builder
	fmt.Fprintf(&c, "router bgp %d\n bgp router-id 198.18.100.1\n no bgp ebgp-requires-policy\n", routerASN)
	for i := 1; i <= scaleNode; i++ {
		a := nodeAddr(i)
		fmt.Fprintf(&c, " neighbor %v remote-as %d\n neighbor %v update-source %v\n neighbor %v timers connect 1\n",
			a, nodeASN, a, routerAddr(i), a)
		if i == scaleNode {
			fmt.Fprintf(&c, " neighbor %v shutdown\n", a)
			continue
		}
		fmt.Fprintf(&c, " neighbor %v timers %d %d\n", a, int(rc.hold.Seconds())/3, int(rc.hold.Seconds()))
		if rc.mode == modeBFD {
			fmt.Fprintf(&c, " neighbor %v bfd profile fast\n", a)
		}
	}
	c.WriteString(" address-family ipv4 unicast\n  maximum-paths 8\n exit-address-family\n!\n")
	f, err := startFRR(ns, dir, c.String(), "log stdout debugging\ndebug bfd peer\n"+bfdConf(rc))
	if err != nil {
		return nil, err
	}
	return &frrRouter{f}, nil
}

func bfdConf(rc routerConf) string {
	ms := rc.bfdInterval.Milliseconds()
	return fmt.Sprintf("bfd\n profile fast\n  receive-interval %d\n  transmit-interval %d\n  detect-multiplier %d\n !\n!\n", ms, ms, rc.bfdMult)
}

// frrRouter is FRR (zebra, bfdd, bgpd) as the router.
type frrRouter struct{ *frr }

func (r *frrRouter) neighbor(a netip.Addr) (bool, int, error) {
	st, n, err := r.frr.neighbor(a)
	return st == "Established", n, err
}

func (r *frrRouter) shutdown(a netip.Addr, down bool) error {
	cmd := fmt.Sprintf("neighbor %v shutdown", a)
	if !down {
		cmd = "no " + cmd
	}
	_, err := r.vtysh("conf t", fmt.Sprintf("router bgp %d", routerASN), cmd)
	return err
}

func (r *frrRouter) logMark() int { return len(r.out.String()) }

func (r *frrRouter) logSince(mark int, a netip.Addr) string {
	return linesAbout(r.out.String(), mark, a.String()+" ")
}

// bfdDown finds bfdd's "state-change: [... peer:A ...] up -> down".
func (r *frrRouter) bfdDown(mark int, a netip.Addr) (time.Time, error) {
	return logTime(r.out.String(), mark, func(l string) bool {
		return strings.Contains(l, "state-change") && strings.Contains(l, "peer:"+a.String()+" ") && strings.Contains(l, "-> down")
	})
}

// startRouterBIRD runs BIRD 2 as the router with the same settings as
// FRR's: one bgp protocol per node (n3's disabled), ECMP into the
// kernel (merge paths), and in the BFD mode `bfd on` with the bfd
// protocol at the bench's interval and multiplier. Settings that are
// not BIRD's defaults: "error wait time" 1 s (BIRD waits 60 s by
// default before it accepts a node again after a session error, which
// would only slow the next trial); protocol states and events traced
// with microsecond time stamps, for bfdDown; and graceful restart off
// (below).
func startRouterBIRD(ns, dir string, rc routerConf) (*birdRouter, error) {
	var c strings.Builder
	ms := rc.bfdInterval.Milliseconds()
	fmt.Fprintf(&c, `router id 198.18.100.1;
log stderr all;
timeformat log "%%F %%T.%%6f";
debug protocols { states, events };
protocol device { scan time 10; }
protocol kernel { ipv4 { export where source = RTS_BGP; }; merge paths on; }
protocol bfd { interface "*" { min rx interval %d ms; min tx interval %d ms; multiplier %d; }; }
`, ms, ms, rc.bfdMult)
	for i := 1; i <= scaleNode; i++ {
		hold := rc.hold
		if i == scaleNode {
			hold = bfdHold
		}
		fmt.Fprintf(&c, "protocol bgp n%d {\n local %v as %d;\n neighbor %v as %d;\n hold time %d;\n keepalive time %d;\n connect retry time 1;\n error wait time 1, 1;\n ipv4 { import all; export none; };\n",
			i, routerAddr(i), routerASN, nodeAddr(i), nodeASN, int(hold.Seconds()), int(hold.Seconds())/3)
		// BIRD, graceful restart aware by default, takes an FRR
		// node's session ending without a NOTIFICATION (the hold
		// timer, a killed daemon between trials) for a graceful
		// restart and keeps its route for FRR's restart time (120 s).
		// The bench ends every session outright, as `bfd on` does.
		c.WriteString(" graceful restart off;\n")
		switch {
		case i == scaleNode:
			c.WriteString(" disabled;\n")
		case rc.mode == modeBFD:
			c.WriteString(" bfd on;\n")
		}
		c.WriteString("}\n")
	}
	d, err := os.MkdirTemp(dir, "bird-")
	if err != nil {
		return nil, err
	}
	b := &birdRouter{sock: filepath.Join(d, "bird.ctl"), out: &syncbuf.Buffer{Limit: 1 << 22}}
	cf := filepath.Join(d, "bird.conf")
	if err := os.WriteFile(cf, []byte(c.String()), 0o644); err != nil {
		return nil, err
	}
	if out, err := exec.Command("bird", "-p", "-c", cf).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("bird -p -c %s: %v: %s", cf, err, out)
	}
	if b.p, err = start(ns, nil, b.out, "bird", "-f", "-c", cf, "-s", b.sock, "-P", filepath.Join(d, "bird.pid")); err != nil {
		return nil, err
	}
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err = b.birdc("show", "status"); err == nil {
			return b, nil
		}
		if time.Now().After(end) {
			b.stop()
			return nil, err
		}
	}
}

// birdRouter is BIRD 2 as the router.
type birdRouter struct {
	sock string
	out  *syncbuf.Buffer
	p    *proc
}

func (b *birdRouter) stop() { b.p.kill() }

func (b *birdRouter) birdc(args ...string) (string, error) {
	out, err := exec.Command("birdc", append([]string{"-s", b.sock}, args...)...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("birdc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func (b *birdRouter) bfdUp(addrs ...netip.Addr) error {
	out, err := b.birdc("show", "bfd", "sessions")
	if err != nil {
		return err
	}
	up := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) >= 3 && f[2] == "Up" {
			up[f[0]] = true
		}
	}
	for _, a := range addrs {
		if !up[a.String()] {
			return fmt.Errorf("bird has no BFD session up with %v: %s", a, out)
		}
	}
	return nil
}

var birdImported = regexp.MustCompile(`Routes:\s+(\d+) imported`)

func (b *birdRouter) neighbor(a netip.Addr) (bool, int, error) {
	out, err := b.birdc("show", "protocols", "all", birdProto(a))
	if err != nil {
		return false, 0, err
	}
	var n int
	if m := birdImported.FindStringSubmatch(out); m != nil {
		n, _ = strconv.Atoi(m[1])
	}
	return strings.Contains(out, "BGP state:          Established"), n, nil
}

func (b *birdRouter) shutdown(a netip.Addr, down bool) error {
	cmd := "enable"
	if down {
		cmd = "disable"
	}
	_, err := b.birdc(cmd, birdProto(a))
	return err
}

func (b *birdRouter) logMark() int { return len(b.out.String()) }

func (b *birdRouter) logSince(mark int, a netip.Addr) string {
	return linesAbout(b.out.String(), mark, birdProto(a)+":", a.String()+" ")
}

// bfdDown finds the bfd protocol's "Session to A changed state from Up
// to Down".
func (b *birdRouter) bfdDown(mark int, a netip.Addr) (time.Time, error) {
	return logTime(b.out.String(), mark, func(l string) bool {
		return strings.Contains(l, "Session to "+a.String()+" ") && strings.Contains(l, "to Down")
	})
}

// birdProto is the node's protocol name: n1, n2, n3.
func birdProto(a netip.Addr) string { return fmt.Sprintf("n%d", a.As4()[2]) }

// logStamp is a log line's leading time stamp: FRR's "2026/11/29
// 20:23:21.529442" or BIRD's "2026-11-29 20:23:21.529442".
var logStamp = regexp.MustCompile(`^(\d{4})[/-](\d\d)[/-](\d\d) (\d\d:\d\d:\d\d\.\d+)`)

// logTime is the time stamp of the first line of log after mark that
// match accepts.
func logTime(log string, mark int, match func(string) bool) (time.Time, error) {
	if mark > len(log) {
		mark = len(log)
	}
	for _, l := range strings.Split(log[mark:], "\n") {
		if !match(l) {
			continue
		}
		m := logStamp.FindStringSubmatch(l)
		if m == nil {
			return time.Time{}, fmt.Errorf("router log line without a time stamp: %q", l)
		}
		return time.ParseInLocation("2006-01-02 15:04:05.999999", m[1]+"-"+m[2]+"-"+m[3]+" "+m[4], time.Local)
	}
	return time.Time{}, fmt.Errorf("the router logged no BFD session going down")
}

// linesAbout is the last 20 lines of log after mark that hold any of
// words.
func linesAbout(log string, mark int, words ...string) string {
	var out []string
	for _, l := range strings.Split(log[min(mark, len(log)):], "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return strings.Join(out[max(0, len(out)-20):], "\n")
}
