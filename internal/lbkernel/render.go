package lbkernel

import (
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TableName is the inet table the kernel path owns: swept at start (a
// table left by a balancer killed with SIGKILL goes before the new one is
// installed) and removed at exit. One kernel-path balancer per network
// namespace.
const TableName = "vipstack_lb"

// Target is a server that takes new connections, with its weight in
// force (above 0).
type Target struct {
	Name   string
	Addr   netip.AddrPort
	Weight int
}

// Slots returns, for servers of the given weights, which server each key
// 0..W-1 of a backend's map holds, W being the total weight: each server
// weight times, interleaved by smooth weighted round robin as the relay
// picks (weights 5,1,1 give 0 0 1 0 2 0 0), so that numgen's counter
// walks the servers in the relay's order. Weights of 0 or less get none.
func Slots(weights []int) []int {
	total := 0
	for _, w := range weights {
		total += max(w, 0)
	}
	cur := make([]int, len(weights))
	out := make([]int, 0, total)
	for range total {
		best := -1
		for i, w := range weights {
			if w <= 0 {
				continue
			}
			cur[i] += w
			if best < 0 || cur[i] > cur[best] {
				best = i
			}
		}
		cur[best] -= total
		out = append(out, best)
	}
	return out
}

// Elements are the map of a backend: key i (a slot) to the server's
// address, per Slots.
func Elements(targets []Target) []netip.AddrPort {
	ws := make([]int, len(targets))
	for i, t := range targets {
		ws[i] = t.Weight
	}
	var out []netip.AddrPort
	for _, i := range Slots(ws) {
		out = append(out, targets[i].Addr)
	}
	return out
}

// Names of a plan's objects in the table: backend i has map and chain
// "be<i>", frontend i chain "fe<i>" (shared by prerouting and output, so
// that its counter counts both), and set "ports" the frontends' ports
// (postrouting masquerades the connections DNATed to them).
func backendObj(i int) string  { return fmt.Sprintf("be%d", i) }
func frontendObj(i int) string { return fmt.Sprintf("fe%d", i) }

const portSet = "ports"

// suspectSet is the set of family f's servers (address . port) whose
// port refused a connection the kernel path sent there: the data path
// adds them, with Plan.SuspectFor's timeout; the daemon leaves them out
// of the maps while they are in it.
func suspectSet(f int) string { return fmt.Sprintf("suspects%d", f) }

// nftDuration writes d as nft does ("2s", "1s500ms").
func nftDuration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.unit; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.unit
		}
	}
	if b.Len() == 0 {
		return "0s"
	}
	return b.String()
}

// backendIndex is the index of backend name in p.Backends.
func (p *Plan) backendIndex(name string) int {
	for i, b := range p.Backends {
		if b == name {
			return i
		}
	}
	return -1
}

// Ports are the frontends' ports, each once, in plan order.
func (p *Plan) Ports() []uint16 {
	var out []uint16
	seen := map[uint16]bool{}
	for _, f := range p.Frontends {
		for _, b := range f.Binds {
			if port := b.Addr.Port(); !seen[port] {
				seen[port] = true
				out = append(out, port)
			}
		}
	}
	return out
}

// matches are the packet matches of a bind, one per family the backend
// (of family fam) can take, in nft's syntax; noLoopback leaves out
// clients with a loopback source address.
func (b Bind) matches(fam int, noLoopback bool) []string {
	var out []string
	for _, f := range []int{4, 6} {
		if f != fam || f == 4 && !b.IPv4 || f == 6 && !b.IPv6 {
			continue
		}
		l3 := map[int]string{4: "ip", 6: "ip6"}[f]
		dst := fmt.Sprintf("%s daddr %s", l3, b.Addr.Addr())
		if b.Wildcard {
			dst = fmt.Sprintf("meta nfproto ipv%d fib daddr type local", f)
		}
		if noLoopback {
			dst = map[int]string{4: "ip saddr != 127.0.0.0/8 ", 6: "ip6 saddr != ::1 "}[f] + dst
		}
		out = append(out, fmt.Sprintf("%s tcp dport %d", dst, b.Addr.Port()))
	}
	return out
}

// Ruleset returns the table for plan p with each backend's targets (by
// backend name; none: the backend's chain is empty and its clients reach
// the relay, which refuses them as haproxy does with no server), in nft's
// syntax, ending with a newline. The numgen (roundrobin) or jhash
// (source) modulus is the number of the map's elements.
func Ruleset(p *Plan, targets map[string][]Target) string {
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format+"\n", a...) }
	w("table inet %s {", TableName)
	for i, name := range p.Backends {
		fam := p.Family[name]
		w("\tmap %s {", backendObj(i))
		w("\t\ttype integer : %s . inet_service", map[int]string{4: "ipv4_addr", 6: "ipv6_addr"}[fam])
		if els := Elements(targets[name]); len(els) > 0 {
			parts := make([]string, len(els))
			for k, a := range els {
				parts[k] = fmt.Sprintf("%d : %s . %d", k, a.Addr(), a.Port())
			}
			w("\t\telements = { %s }", strings.Join(parts, ", "))
		}
		w("\t}")
		w("")
	}
	ports := make([]string, 0)
	for _, port := range p.Ports() {
		ports = append(ports, fmt.Sprint(port))
	}
	w("\tset %s {", portSet)
	w("\t\ttype inet_service")
	if len(ports) > 0 {
		w("\t\telements = { %s }", strings.Join(ports, ", "))
	}
	w("\t}")
	if len(p.DNATTimeouts) > 0 {
		w("")
		w("\tct timeout %s {", ctTimeoutObj)
		w("\t\tprotocol tcp")
		w("\t\tl3proto inet")
		w("\t\tpolicy = %s", ctTimeoutText(p.DNATTimeouts))
		w("\t}")
	}
	for _, f := range []int{4, 6} {
		w("")
		w("\tset %s {", suspectSet(f))
		w("\t\ttype %s . inet_service", map[int]string{4: "ipv4_addr", 6: "ipv6_addr"}[f])
		w("\t\tflags dynamic,timeout")
		w("\t\ttimeout %s", nftDuration(p.SuspectFor))
		w("\t}")
	}
	for i, name := range p.Backends {
		w("")
		w("\tchain %s {", backendObj(i))
		if rule := backendRule(p, i, len(Elements(targets[name]))); rule != "" {
			w("\t\t%s", rule)
		}
		w("\t}")
	}
	for i, f := range p.Frontends {
		w("")
		w("\tchain %s {", frontendObj(i))
		set := ""
		if len(p.DNATTimeouts) > 0 {
			set = fmt.Sprintf("ct timeout set %q ", ctTimeoutObj)
		}
		w("\t\t%scounter goto %s", set, backendObj(p.backendIndex(f.Backend)))
		w("\t}")
	}
	for _, c := range []struct{ name, hook string }{{"prerouting", "dstnat"}, {"output", "-100"}} {
		w("")
		w("\tchain %s {", c.name)
		w("\t\ttype nat hook %s priority %s; policy accept;", c.name, c.hook)
		for i, f := range p.Frontends {
			for _, bd := range f.Binds {
				for _, m := range bd.matches(p.Family[f.Backend], c.name == "output" && p.Remote[f.Backend]) {
					w("\t\t%s jump %s", m, frontendObj(i))
				}
			}
		}
		w("\t}")
	}
	for _, c := range []struct{ name, hook string }{{"watch_prerouting", "prerouting"}, {"watch_output", "output"}} {
		w("")
		w("\tchain %s {", c.name)
		w("\t\ttype filter hook %s priority filter; policy accept;", c.hook)
		for _, f := range []int{4, 6} {
			l3 := map[int]string{4: "ip", 6: "ip6"}[f]
			w("\t\tmeta nfproto ipv%d tcp flags rst ct direction reply ct status & (assured|dnat) == dnat ct original proto-dst @%s add @%s { %s saddr . tcp sport }", f, portSet, suspectSet(f), l3)
		}
		w("\t}")
	}
	w("")
	w("\tchain postrouting {")
	w("\t\ttype nat hook postrouting priority srcnat; policy accept;")
	w("\t\toif != \"lo\" ct status dnat ct original proto-dst @%s masquerade", portSet)
	w("\t}")
	w("}")
	return b.String()
}

// backendRule is backend i's rule for n map elements; "" for none.
func backendRule(p *Plan, i, n int) string {
	if n == 0 {
		return ""
	}
	name := p.Backends[i]
	l3 := map[int]string{4: "ip", 6: "ip6"}[p.Family[name]]
	pick := fmt.Sprintf("numgen inc mod %d", n)
	if p.balanceOf(name) == lbconfig.Source {
		pick = fmt.Sprintf("jhash %s saddr mod %d", l3, n)
	}
	return fmt.Sprintf("dnat %s to %s map @%s", l3, pick, backendObj(i))
}

// balanceOf is the balance of backend name (the first frontend's view).
func (p *Plan) balanceOf(name string) lbconfig.Balance {
	for _, f := range p.Frontends {
		if f.Backend == name {
			return f.Balance
		}
	}
	return lbconfig.RoundRobin
}
