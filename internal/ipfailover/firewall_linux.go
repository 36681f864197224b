package ipfailover

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"github.com/google/nftables/userdata"
	"golang.org/x/sys/unix"
)

// ErrNoChain is returned (wrapped) by Install when no chain has the given
// name; the caller reports it and carries on, as the image does.
var ErrNoChain = errors.New("no such nftables chain")

// Install adds the rule in the calling thread's network namespace and
// returns where ("inet vipstack_ipfailover_x input", "ip filter INPUT").
// Rules of this pool left by an earlier run are replaced, so it is safe to
// call again.
func (f Firewall) Install() ([]string, error) {
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("firewall: open nftables: %w", err)
	}
	if f.Chain == "" {
		t := &nftables.Table{Name: f.Table(), Family: nftables.TableFamilyINet}
		c.AddTable(t)
		c.DelTable(t)
		c.AddTable(t)
		accept := nftables.ChainPolicyAccept
		ch := c.AddChain(&nftables.Chain{Name: "input", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: f.exprs(t.Family), UserData: f.userData()})
		if err := c.Flush(); err != nil {
			return nil, fmt.Errorf("firewall: add table inet %s: %w", f.Table(), err)
		}
		return []string{"inet " + f.Table() + " input"}, nil
	}
	chains, err := f.chains(c)
	if err != nil {
		return nil, err
	}
	if len(chains) == 0 {
		return nil, fmt.Errorf("firewall: %s=%q: %w in a table of family %s (with iptables-legacy the chain is not visible to nftables); no rule added", EnvIptablesChain, f.Chain, ErrNoChain, f.families())
	}
	if err := f.removeRules(c, chains); err != nil {
		return nil, err
	}
	var where []string
	for _, ch := range chains {
		c.InsertRule(&nftables.Rule{Table: ch.Table, Chain: ch, Exprs: f.exprs(ch.Table.Family), UserData: f.userData()})
		where = append(where, family(ch.Table.Family)+" "+ch.Table.Name+" "+ch.Name)
	}
	if err := c.Flush(); err != nil {
		return nil, fmt.Errorf("firewall: insert rule in %v: %w", where, err)
	}
	return where, nil
}

// Remove deletes this pool's rules (or its table) from the calling
// thread's network namespace. Nothing to remove is fine.
func (f Firewall) Remove() error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("firewall: open nftables: %w", err)
	}
	if f.Chain == "" {
		t := &nftables.Table{Name: f.Table(), Family: nftables.TableFamilyINet}
		c.AddTable(t)
		c.DelTable(t)
		if err := c.Flush(); err != nil {
			return fmt.Errorf("firewall: delete table inet %s: %w", f.Table(), err)
		}
		return nil
	}
	chains, err := f.chains(c)
	if err != nil {
		return err
	}
	return f.removeRules(c, chains)
}

// Packets returns how many packets this pool's rules admitted so far.
func (f Firewall) Packets() (uint64, error) {
	c, err := nftables.New()
	if err != nil {
		return 0, fmt.Errorf("firewall: open nftables: %w", err)
	}
	var chains []*nftables.Chain
	if f.Chain == "" {
		t := &nftables.Table{Name: f.Table(), Family: nftables.TableFamilyINet}
		chains = []*nftables.Chain{{Name: "input", Table: t}}
	} else if chains, err = f.chains(c); err != nil {
		return 0, err
	}
	var n uint64
	for _, ch := range chains {
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return 0, fmt.Errorf("firewall: list rules of %s %s: %w", ch.Table.Name, ch.Name, err)
		}
		for _, r := range rules {
			if !f.ours(r) {
				continue
			}
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					n += ctr.Packets
				}
			}
		}
	}
	return n, nil
}

func (f Firewall) chains(c *nftables.Conn) ([]*nftables.Chain, error) {
	all, err := c.ListChains()
	if err != nil {
		return nil, fmt.Errorf("firewall: list chains: %w", err)
	}
	var out []*nftables.Chain
	for _, ch := range all {
		if ch.Name != f.Chain {
			continue
		}
		switch ch.Table.Family {
		case nftables.TableFamilyINet:
		case nftables.TableFamilyIPv4:
			if f.Family == 6 {
				continue
			}
		case nftables.TableFamilyIPv6:
			if f.Family != 6 {
				continue
			}
		default:
			continue
		}
		out = append(out, ch)
	}
	return out, nil
}

func (f Firewall) removeRules(c *nftables.Conn, chains []*nftables.Chain) error {
	n := 0
	for _, ch := range chains {
		rules, err := c.GetRules(ch.Table, ch)
		if err != nil {
			return fmt.Errorf("firewall: list rules of %s %s: %w", ch.Table.Name, ch.Name, err)
		}
		for _, r := range rules {
			if f.ours(r) {
				if err := c.DelRule(r); err != nil {
					return fmt.Errorf("firewall: delete rule %d of %s %s: %w", r.Handle, ch.Table.Name, ch.Name, err)
				}
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("firewall: delete %d rules: %w", n, err)
	}
	return nil
}

func (f Firewall) ours(r *nftables.Rule) bool {
	s, ok := userdata.GetString(r.UserData, userdata.TypeComment)
	return ok && s == f.Comment()
}

func (f Firewall) userData() []byte {
	return userdata.AppendString(nil, userdata.TypeComment, f.Comment())
}

func (f Firewall) families() string {
	if f.Family == 6 {
		return "ip6 or inet"
	}
	return "ip or inet"
}

// exprs builds `[meta nfproto X] daddr GROUP meta l4proto 112 counter
// accept` for a table of family fam.
func (f Firewall) exprs(fam nftables.TableFamily) []expr.Any {
	group, proto, off := netip.MustParseAddr("224.0.0.18"), byte(unix.NFPROTO_IPV4), uint32(16)
	if f.Family == 6 {
		group, proto, off = netip.MustParseAddr("ff02::12"), byte(unix.NFPROTO_IPV6), 24
	}
	var out []expr.Any
	if fam == nftables.TableFamilyINet {
		out = append(out,
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}})
	}
	return append(out,
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: uint32(group.BitLen() / 8)},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: group.AsSlice()},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{112}},
		&expr.Counter{},
		&expr.Verdict{Kind: expr.VerdictAccept},
	)
}

func family(f nftables.TableFamily) string {
	switch f {
	case nftables.TableFamilyIPv4:
		return "ip"
	case nftables.TableFamilyIPv6:
		return "ip6"
	case nftables.TableFamilyINet:
		return "inet"
	}
	return fmt.Sprintf("family(%d)", f)
}
