package redirect

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Enable installs the redirect in the calling thread's network namespace.
// It flushes and rebuilds the table in one transaction, so calling it again
// (or with a new frontend port) is safe and never leaves a partial table.
func (r *Redirect) Enable() error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("redirect: enable: %w", err)
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("redirect: enable %s: open nftables: %w", r.Table(), err)
	}
	t := &nftables.Table{Name: r.Table(), Family: nftables.TableFamilyINet}
	// Add, delete and re-add in one batch: whatever the table held (an
	// older port, rules added by hand) is gone when the batch commits, and
	// the delete cannot fail for a missing table.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	accept := nftables.ChainPolicyAccept
	for _, bc := range baseChains() {
		hook := nftables.ChainHookPrerouting
		if bc.name == "output" {
			hook = nftables.ChainHookOutput
		}
		ch := c.AddChain(&nftables.Chain{
			Name:     bc.name,
			Table:    t,
			Type:     nftables.ChainTypeNAT,
			Hooknum:  hook,
			Priority: nftables.ChainPriorityNATDest,
			Policy:   &accept,
		})
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r.exprs()})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("redirect: enable %s (%s to :%d): %w", r.Table(), r.vip, r.toPort, err)
	}
	return nil
}

// Disable removes the redirect from the calling thread's network namespace.
// A table that is already gone is fine.
func (r *Redirect) Disable() error {
	if err := r.validate(); err != nil {
		return fmt.Errorf("redirect: disable: %w", err)
	}
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("redirect: disable %s: open nftables: %w", r.Table(), err)
	}
	// Adding first makes the delete succeed whether or not the table
	// exists, in one transaction (no list-then-delete race).
	t := &nftables.Table{Name: r.Table(), Family: nftables.TableFamilyINet}
	c.AddTable(t)
	c.DelTable(t)
	if err := c.Flush(); err != nil {
		return fmt.Errorf("redirect: disable %s: %w", r.Table(), err)
	}
	return nil
}

// Enabled reports whether the redirect's table exists in the calling
// thread's network namespace.
func (r *Redirect) Enabled() (bool, error) {
	if err := r.validate(); err != nil {
		return false, fmt.Errorf("redirect: enabled: %w", err)
	}
	c, err := nftables.New()
	if err != nil {
		return false, fmt.Errorf("redirect: list %s: open nftables: %w", r.Table(), err)
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("redirect: list inet tables: %w", err)
	}
	for _, t := range tables {
		if t.Name == r.Table() {
			return true, nil
		}
	}
	return false, nil
}

// exprs is the rule `ip[6] daddr VIP tcp dport PORT redirect to :TOPORT`,
// expression for expression as nft 1.0 builds it (so `nft list` prints it
// back as Render does).
func (r *Redirect) exprs() []expr.Any {
	a := r.vip.Addr()
	nfproto, daddrOff, daddr := byte(unix.NFPROTO_IPV4), uint32(16), a.AsSlice()
	if a.Is6() {
		nfproto, daddrOff = unix.NFPROTO_IPV6, 24
	}
	return []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: daddrOff, Len: uint32(len(daddr))},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: daddr},
		&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, r.vip.Port())},
		&expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, r.toPort)},
		&expr.Redir{RegisterProtoMin: 1, RegisterProtoMax: 1, Flags: unix.NF_NAT_RANGE_PROTO_SPECIFIED},
	}
}
