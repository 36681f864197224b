package redirect

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Enable installs the redirect in the calling thread's network namespace,
// in effect for one lease (see Renew). It flushes and rebuilds the table in
// one transaction, so calling it again (or with a new frontend port) is
// safe and never leaves a partial table.
func (r *Redirect) Enable() error {
	c, err := r.open("enable")
	if err != nil {
		return err
	}
	t := &nftables.Table{Name: r.Table(), Family: nftables.TableFamilyINet}
	// Add, delete and re-add in one batch: whatever the table held (an
	// older port, rules added by hand) is gone when the batch commits, and
	// the delete cannot fail for a missing table.
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	set := r.leaseSet(t)
	if err := c.AddSet(set, r.leaseElements()); err != nil {
		return fmt.Errorf("redirect: enable %s: set %s: %w", r.Table(), LeaseSet, err)
	}
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
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: r.exprs(set)})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("redirect: enable %s (%s to :%d): %w", r.Table(), r.vip, r.toPort, err)
	}
	return nil
}

// Renew starts a new lease: the redirect stays in effect for another
// Lease from now. It replaces the set's element in one transaction, so the
// redirect never lapses meanwhile; it fails when the table is gone (the
// caller enables it again).
func (r *Redirect) Renew() error {
	c, err := r.open("renew")
	if err != nil {
		return err
	}
	set := r.leaseSet(&nftables.Table{Name: r.Table(), Family: nftables.TableFamilyINet})
	// Flush, then add: a running lease is replaced, a lapsed one restarts.
	c.FlushSet(set)
	if err := c.SetAddElements(set, r.leaseElements()); err != nil {
		return fmt.Errorf("redirect: renew %s: %w", r.Table(), err)
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("redirect: renew %s: %w", r.Table(), err)
	}
	return nil
}

// Live reports whether the redirect is in effect in the calling thread's
// network namespace: its table is there and its lease has not run out.
func (r *Redirect) Live() (bool, error) {
	if ok, err := r.Enabled(); !ok || err != nil {
		return false, err
	}
	c, err := r.open("list")
	if err != nil {
		return false, err
	}
	elems, err := c.GetSetElements(r.leaseSet(&nftables.Table{Name: r.Table(), Family: nftables.TableFamilyINet}))
	if err != nil {
		return false, fmt.Errorf("redirect: list set %s of %s: %w", LeaseSet, r.Table(), err)
	}
	return len(elems) > 0, nil
}

// leaseSet is the table's set of ports whose lease runs.
func (r *Redirect) leaseSet(t *nftables.Table) *nftables.Set {
	return &nftables.Set{Table: t, Name: LeaseSet, KeyType: nftables.TypeInetService, HasTimeout: true}
}

// leaseElements is the VIP's port for one lease.
func (r *Redirect) leaseElements() []nftables.SetElement {
	return []nftables.SetElement{{Key: binary.BigEndian.AppendUint16(nil, r.vip.Port()), Timeout: r.lease}}
}

// Disable removes the redirect from the calling thread's network namespace.
// A table that is already gone is fine.
func (r *Redirect) Disable() error {
	c, err := r.open("disable")
	if err != nil {
		return err
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
// thread's network namespace, whether or not its lease runs (see Live).
func (r *Redirect) Enabled() (bool, error) {
	c, err := r.open("list")
	if err != nil {
		return false, err
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

// exprs is the rule `ip[6] daddr VIP tcp dport @lease redirect to
// :TOPORT`, expression for expression as nft 1.0 builds it (so `nft list`
// prints it back as Render does).
func (r *Redirect) exprs(set *nftables.Set) []expr.Any {
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
		&expr.Lookup{SourceRegister: 1, SetName: set.Name, SetID: set.ID},
		&expr.Immediate{Register: 1, Data: binary.BigEndian.AppendUint16(nil, r.toPort)},
		&expr.Redir{RegisterProtoMin: 1, RegisterProtoMax: 1, Flags: unix.NF_NAT_RANGE_PROTO_SPECIFIED},
	}
}

// open checks the redirect and opens a netlink connection to nftables in
// the calling thread's network namespace, for op (named in errors).
func (r *Redirect) open(op string) (*nftables.Conn, error) {
	if err := r.validate(); err != nil {
		return nil, fmt.Errorf("redirect: %s: %w", op, err)
	}
	c, err := nftables.New()
	if err != nil {
		return nil, fmt.Errorf("redirect: %s %s: open nftables: %w", op, r.Table(), err)
	}
	return c, nil
}
