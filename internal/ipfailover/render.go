package ipfailover

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/track"
)

// Node is what the configuration of one node needs beyond the plan.
type Node struct {
	Interface string
	// Address is the node's address on Interface: the port check's target
	// (as in the image) and, in unicast mode, the source of adverts.
	Address        netip.Addr
	Rank           int
	Version        int           // VRRP version, 2 (the image's) or 3
	AdvertInterval time.Duration // 1 s in the image
	// CheckPassed says the check (port or script) passed once at start:
	// the groups this node prefers then start as MASTER, as the image's
	// `state MASTER`. Otherwise the check starts as failing (init_fail),
	// so a node whose port does not answer never holds VIPs.
	CheckPassed bool
}

// CheckName returns the name of the pool's vrrp_script.
func CheckName(s *Spec) string { return "chk_" + scrub(s.ConfigName) }

// Checks reports whether the pool has a check: the check script, or the
// monitor port unless it is 0.
func Checks(s *Spec) bool { return s.CheckScript != "" || s.MonitorPort != 0 }

// MonitorTarget is the address and port the port check connects to.
func MonitorTarget(s *Spec, n Node) netip.AddrPort {
	a := n.Address
	if !a.IsLinkLocalUnicast() {
		a = a.WithZone("")
	}
	return netip.AddrPortFrom(a, uint16(s.MonitorPort))
}

// Render returns this node's configuration as keepalived.conf text. It is
// what vipstack runs (Keepalived parses it back) and what keepalived itself
// would run for the same plan: the port check is written as the image's
// `bash -c '</dev/tcp/ADDR/PORT'`, which vipstack replaces by a native
// connect.
func (p *Plan) Render(s *Spec, n Node) string {
	var b strings.Builder
	w := func(indent int, format string, args ...any) {
		b.WriteString(strings.Repeat("    ", indent))
		fmt.Fprintf(&b, format, args...)
		b.WriteByte('\n')
	}
	mode := "multicast"
	if s.Unicast() {
		mode = "unicast"
	}
	w(0, "! vipstack ipfailover %s: %d VIPs in %d groups, %s, node %s rank %d of %d", s.ConfigName, len(s.VIPs), len(p.Groups), mode, n.Address, n.Rank, p.Ranks)
	w(0, "global_defs {")
	w(1, "router_id %s", scrub(s.ConfigName))
	w(1, "vrrp_version %d", n.Version)
	w(0, "}")
	if Checks(s) {
		w(0, "")
		w(0, "vrrp_script %s {", CheckName(s))
		if s.CheckScript != "" {
			w(1, "script %s", quoteCommand(s.CheckScript))
		} else {
			t := MonitorTarget(s, n)
			w(1, "script \"/bin/bash -c '</dev/tcp/%s/%d'\"", t.Addr(), t.Port())
		}
		w(1, "interval %s", seconds(s.CheckInterval))
		if !n.CheckPassed {
			w(1, "init_fail")
		}
		w(0, "}")
	}
	var peers []netip.Addr
	for _, a := range s.Peers {
		if a != n.Address.WithZone("") {
			peers = append(peers, a)
		}
	}
	for i := range p.Groups {
		g := &p.Groups[i]
		w(0, "")
		w(0, "vrrp_instance %s {", g.Name)
		master := g.Order[0] == n.Rank && s.Preempt && n.CheckPassed
		if master {
			w(1, "state MASTER")
		}
		w(1, "interface %s", n.Interface)
		w(1, "virtual_router_id %d", g.VRID)
		w(1, "priority %d", g.Priority(n.Rank))
		w(1, "advert_int %s", seconds(n.AdvertInterval))
		switch {
		case !s.Preempt:
			w(1, "nopreempt")
		case s.PreemptDelay > 0 && !master:
			// keepalived clears preempt_delay with state MASTER ("will
			// not work with initial state MASTER"); leave it out so both
			// runners of this text behave alike.
			w(1, "preempt_delay %s", seconds(s.PreemptDelay))
		}
		if n.Version == 2 {
			w(1, "authentication {")
			w(2, "auth_type PASS")
			w(2, "auth_pass %s", quote(s.ConfigName))
			w(1, "}")
		}
		if Checks(s) {
			w(1, "track_script {")
			w(2, "%s", CheckName(s))
			w(1, "}")
		}
		if s.NotifyScript != "" {
			w(1, "notify %s", quoteCommand(s.NotifyScript))
		}
		if len(peers) > 0 {
			w(1, "unicast_src_ip %s", n.Address.WithZone(""))
			w(1, "unicast_peer {")
			for _, a := range peers {
				w(2, "%s", a)
			}
			w(1, "}")
		}
		adv := g.Advertised()
		w(1, "virtual_ipaddress {")
		for _, a := range adv {
			w(2, "%s dev %s", netip.PrefixFrom(a, a.BitLen()), n.Interface)
		}
		w(1, "}")
		if rest := g.VIPs[len(adv):]; len(rest) > 0 {
			w(1, "virtual_ipaddress_excluded {")
			for _, a := range rest {
				w(2, "%s dev %s", netip.PrefixFrom(a, a.BitLen()), n.Interface)
			}
			w(1, "}")
		}
		w(0, "}")
	}
	return b.String()
}

// Keepalived returns this node's configuration as the engine runs it:
// Render's text read back by the keepalived.conf reader (so it is exactly
// what the reader accepts and validates), with probe, when not nil,
// running the pool's check: the port check natively instead of its bash
// command, the check script with the pool's variables in its environment.
// name labels the text in errors.
func (p *Plan) Keepalived(s *Spec, n Node, probe track.Check, name string) (*keepalived.Config, error) {
	text := p.Render(s, n)
	cfg, err := keepalived.Parse(name, []byte(text), nil)
	if err != nil {
		return nil, fmt.Errorf("generated configuration rejected (a bug): %w", err)
	}
	if sc := cfg.Scripts[CheckName(s)]; sc != nil && probe != nil {
		sc.Probe = probe
	}
	return cfg, nil
}

// quote writes v as a keepalived.conf quoted word such as auth_pass's.
// keepalived takes the text between the quotes as it is (no escapes,
// unlike Go's %q, which would double a backslash); Parse refuses the values
// this cannot write: a double quote, a newline, or a backslash at the end.
func quote(v string) string { return `"` + v + `"` }

// quoteCommand writes a script command line in double quotes. keepalived
// splits a script line like a shell, where a backslash in double quotes
// escapes the next character, so the backslashes of v are doubled to reach
// the command as written (Parse refuses double quotes and newlines). Go's
// %q would also turn non-ASCII and control characters into escapes that
// the split does not share.
func quoteCommand(v string) string { return `"` + strings.ReplaceAll(v, `\`, `\\`) + `"` }

// seconds formats d the way keepalived.conf writes durations.
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}
