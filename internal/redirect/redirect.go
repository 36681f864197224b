package redirect

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Redirect sends TCP traffic for VIP:port to a local port (the LB frontend),
// for remote clients (prerouting) and local ones (output), with an nftables
// table of its own. The zero value is not usable; call New.
type Redirect struct {
	vip    netip.AddrPort
	toPort uint16
	lease  time.Duration
}

// DefaultLease is how long an Enable or a Renew keeps the redirect in
// effect. A process that dies without Disable (kill -9, a panic, the OOM
// killer) leaves its table behind; once the lease runs out, clients of the
// VIP reach whatever listens on VIP:PORT itself (the node's API server)
// instead of a frontend that no longer runs.
const DefaultLease = 5 * time.Second

// MinLease and MaxLease bound a lease.
const (
	MinLease = 100 * time.Millisecond
	MaxLease = time.Hour
)

// LeaseSet names the set in the table that holds the VIP's port while the
// lease runs: the rules redirect only ports in it.
const LeaseSet = "lease"

// New returns a redirect of TCP traffic for vip (address and port, IPv4 or
// IPv6) to toPort on the node, with DefaultLease. Nothing is installed
// until Enable; a bad address or port is reported by every method.
func New(vip netip.AddrPort, toPort uint16) *Redirect {
	return NewLeased(vip, toPort, DefaultLease)
}

// NewLeased is New with a lease of its own (MinLease..MaxLease).
func NewLeased(vip netip.AddrPort, toPort uint16, lease time.Duration) *Redirect {
	return &Redirect{vip: vip, toPort: toPort, lease: lease}
}

// Lease returns how long an Enable or Renew keeps the redirect in effect.
func (r *Redirect) Lease() time.Duration { return r.lease }

// VIP returns the address and port the redirect captures.
func (r *Redirect) VIP() netip.AddrPort { return r.vip }

// ToPort returns the local port traffic is sent to.
func (r *Redirect) ToPort() uint16 { return r.toPort }

// Table returns the name of the nftables table (family inet) the redirect
// owns.
func (r *Redirect) Table() string { return TableName(r.vip) }

// Ruleset returns the redirect's table as `nft list table` prints it.
func (r *Redirect) Ruleset() string { return Render(r.vip, r.toPort, r.lease) }

// TablePrefix starts the name of every table a Redirect installs.
const TablePrefix = "vipstack_redirect_"

// TableName returns the name of the inet table that redirects vip:
// TablePrefix followed by the address and port with every '.' and
// ':' turned into '_' (nft names allow letters, digits and '_').
func TableName(vip netip.AddrPort) string {
	a := strings.NewReplacer(".", "_", ":", "_").Replace(vip.Addr().String())
	return fmt.Sprintf("%s%s_%d", TablePrefix, a, vip.Port())
}

// Render returns the nftables ruleset a redirect of vip to toPort with the
// given lease installs, in the form `nft list table inet NAME` prints it
// (nft 1.0), ending with a newline, except that nft also prints how much
// of the lease is left after the element (" expires 4s996ms"). The output
// chain has no named priority in nft ("dstnat" is only defined for
// prerouting), so it shows the number, -100.
func Render(vip netip.AddrPort, toPort uint16, lease time.Duration) string {
	match := fmt.Sprintf("%s daddr %s tcp dport @%s redirect to :%d", l3Keyword(vip.Addr()), vip.Addr(), LeaseSet, toPort)
	var b strings.Builder
	fmt.Fprintf(&b, "table inet %s {\n", TableName(vip))
	fmt.Fprintf(&b, "\tset %s {\n\t\ttype inet_service\n\t\tflags timeout\n", LeaseSet)
	fmt.Fprintf(&b, "\t\telements = { %d timeout %s }\n\t}\n", vip.Port(), nftDuration(lease))
	for _, c := range baseChains() {
		b.WriteString("\n")
		fmt.Fprintf(&b, "\tchain %s {\n", c.name)
		fmt.Fprintf(&b, "\t\ttype nat hook %s priority %s; policy accept;\n", c.name, c.priorityText)
		fmt.Fprintf(&b, "\t\t%s\n", match)
		b.WriteString("\t}\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// nftDuration writes d as nft does: days, hours, minutes, seconds and
// milliseconds, each only when not zero ("1s500ms", "5s").
func nftDuration(d time.Duration) string {
	var b strings.Builder
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
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

// chain is one base chain of the table: the hook is named like the chain.
type chain struct {
	name         string // "prerouting" or "output", also the hook
	priorityText string // as nft lists it
}

// baseChains returns the table's chains in the order nft lists them. Both
// sit at the destination NAT priority (-100): prerouting catches clients on
// other hosts, output the node's own clients.
func baseChains() [2]chain {
	return [2]chain{
		{name: "prerouting", priorityText: "dstnat"},
		{name: "output", priorityText: "-100"},
	}
}

func l3Keyword(a netip.Addr) string {
	if a.Is4() {
		return "ip"
	}
	return "ip6"
}

// CheckVIP reports what is wrong with vip as the address and port a
// redirect captures, naming the bad value and what is accepted; nil when a
// Redirect of it can be installed. Callers check flags with it before
// anything runs: Enable reports the same error, but only once the load
// balancer is up.
func CheckVIP(vip netip.AddrPort) error {
	a := vip.Addr()
	switch {
	case !a.IsValid():
		return fmt.Errorf("VIP %q: not an address: want an IPv4 or IPv6 address and port such as 198.18.0.5:6443 or [fd00::5]:6443", vip)
	case a.Is4In6():
		return fmt.Errorf("VIP %s: IPv4-mapped IPv6 address never matches on the wire: use %s", vip, a.Unmap())
	case a.Zone() != "":
		return fmt.Errorf("VIP %s: an address with a zone is not accepted: want a global or unique local address", vip)
	case a.IsUnspecified() || a.IsLoopback() || a.IsMulticast() || a.IsLinkLocalUnicast():
		return fmt.Errorf("VIP %s: want a unicast address a node can hold (not unspecified, loopback, multicast or link-local)", vip)
	case vip.Port() == 0:
		return fmt.Errorf("VIP %s: port 0: want a port 1..65535", vip)
	}
	return nil
}

// validate reports what is wrong with the redirect's addresses, naming the
// field, the bad value and what is accepted.
func (r *Redirect) validate() error {
	if err := CheckVIP(r.vip); err != nil {
		return err
	}
	switch {
	case r.toPort == 0:
		return fmt.Errorf("redirect of %s to port 0: want a frontend port 1..65535", r.vip)
	case r.lease < MinLease || r.lease > MaxLease || r.lease%time.Millisecond != 0:
		return fmt.Errorf("redirect of %s: lease %v: want whole milliseconds from %v to %v", r.vip, r.lease, MinLease, MaxLease)
	}
	return nil
}
