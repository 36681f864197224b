package demo

import (
	"encoding/binary"
	"fmt"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// lbBlockTable is the nftables table (family inet) that makes a node's load
// balancer unreachable from the node itself.
const lbBlockTable = "vipstack_demo_lb_down"

// setLBBlock installs (block) or removes, in the calling thread's network
// namespace, the table
//
//	table inet vipstack_demo_lb_down {
//		chain input {
//			type filter hook input priority filter; policy accept;
//			iifname "lo" tcp dport PORT reject with tcp reset
//		}
//	}
//
// Either way it is one transaction that first drops whatever the table
// held.
func setLBBlock(block bool, port uint16) error {
	c, err := nftables.New()
	if err != nil {
		return fmt.Errorf("nftables: %w", err)
	}
	t := &nftables.Table{Name: lbBlockTable, Family: nftables.TableFamilyINet}
	c.AddTable(t)
	c.DelTable(t)
	if block {
		c.AddTable(t)
		accept := nftables.ChainPolicyAccept
		ch := c.AddChain(&nftables.Chain{Name: "input", Table: t, Type: nftables.ChainTypeFilter,
			Hooknum: nftables.ChainHookInput, Priority: nftables.ChainPriorityFilter, Policy: &accept})
		ifname := make([]byte, unix.IFNAMSIZ)
		copy(ifname, "lo")
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{
			&expr.Meta{Key: expr.MetaKeyIIFNAME, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: ifname},
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, port)},
			&expr.Reject{Type: unix.NFT_REJECT_TCP_RST},
		}})
	}
	if err := c.Flush(); err != nil {
		if block {
			return fmt.Errorf("nftables: block the LB port %d on loopback: %w", port, err)
		}
		return fmt.Errorf("nftables: unblock the LB port %d: %w", port, err)
	}
	return nil
}
