package ipfailover

import "fmt"

// Firewall is the nftables rule that admits VRRP multicast (destination
// 224.0.0.18 or ff02::12, IP protocol 112), the image's
// `iptables -I CHAIN 1 -d 224.0.0.18/32 -j ACCEPT`.
//
// With a Chain, the rule is inserted first in every nftables chain of that
// name in a table of the right family (ip or inet for IPv4, ip6 or inet for
// IPv6): with iptables-nft, OPENSHIFT_HA_IPTABLES_CHAIN=INPUT is the chain
// INPUT of table ip filter. A chain that does not exist is not created (as
// in the image). Without a Chain, the rule goes in a table of its own,
// inet vipstack_ipfailover_<name>, whose input chain accepts by default:
// in nftables an accept in one base chain does not override a drop in
// another, so that table admits nothing a drop elsewhere refuses; it
// documents the pool's VRRP traffic and counts it. Name the chain that
// drops to admit VRRP through it.
//
// Every rule carries the comment Comment(), so Remove finds exactly the
// rules this pool added (and those a crashed earlier run left).
type Firewall struct {
	Chain      string // "" = a table of our own
	Family     int    // 4 or 6
	ConfigName string
}

// NewFirewall returns the firewall of pool s.
func NewFirewall(s *Spec) Firewall {
	return Firewall{Chain: s.IptablesChain, Family: s.Family(), ConfigName: s.ConfigName}
}

// Comment identifies this pool's rules.
func (f Firewall) Comment() string { return "vipstack ipfailover " + f.ConfigName }

// Table is the name of the pool's own table (used when Chain is "").
func (f Firewall) Table() string { return "vipstack_ipfailover_" + scrub(f.ConfigName) }

// Rule returns the rule as `nft list` prints it.
func (f Firewall) Rule() string {
	if f.Family == 6 {
		return fmt.Sprintf("ip6 daddr ff02::12 meta l4proto vrrp counter accept comment %q", f.Comment())
	}
	return fmt.Sprintf("ip daddr 224.0.0.18 meta l4proto vrrp counter accept comment %q", f.Comment())
}
