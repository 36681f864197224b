package lbkernel

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"time"

	"github.com/google/nftables"
	"github.com/google/nftables/binaryutil"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Table is the kernel path's nftables table in one network namespace.
// Install builds it for a plan, Update rewrites one backend's servers,
// Remove deletes it. Every change is one netlink transaction: a packet
// sees the old table or the new one, never a half.
type Table struct {
	// NetNS is a network namespace's file descriptor; 0 is the calling
	// thread's.
	NetNS int
	plan  *Plan
}

// ipsDstNAT is conntrack's IPS_DST_NAT status bit.
const ipsDstNAT = 0x20

// rtnLocal is the fib address type of a local address (RTN_LOCAL).
const rtnLocal = 2

// loIndex is the loopback interface's index in every network namespace.
const loIndex = 1

// hashSeed seeds balance source's jhash: fixed, so that a reload or a
// restart keeps each client on its server.
const hashSeed = 0x7669_7073

func (t *Table) open(op string) (*nftables.Conn, error) {
	var opts []nftables.ConnOption
	if t.NetNS != 0 {
		opts = append(opts, nftables.WithNetNSFd(t.NetNS))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("lbkernel: %s %s: open nftables: %w", op, TableName, err)
	}
	return c, nil
}

func table() *nftables.Table {
	return &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}
}

// Usable checks that nftables answers (CAP_NET_ADMIN, nf_tables in the
// kernel) without changing anything.
func (t *Table) Usable() error {
	c, err := t.open("list")
	if err != nil {
		return err
	}
	if _, err := c.ListTablesOfFamily(nftables.TableFamilyINet); err != nil {
		return fmt.Errorf("lbkernel: list inet tables: %w", err)
	}
	return nil
}

// Remove deletes the table; one that is not there is fine. It is also
// the sweep at start: a table a killed balancer left behind.
func (t *Table) Remove() error {
	c, err := t.open("remove")
	if err != nil {
		return err
	}
	c.AddTable(table())
	c.DelTable(table())
	if err := c.Flush(); err != nil {
		return fmt.Errorf("lbkernel: remove %s: %w", TableName, err)
	}
	return nil
}

// Present reports whether the table exists.
func (t *Table) Present() (bool, error) {
	c, err := t.open("list")
	if err != nil {
		return false, err
	}
	tables, err := c.ListTablesOfFamily(nftables.TableFamilyINet)
	if err != nil {
		return false, fmt.Errorf("lbkernel: list inet tables: %w", err)
	}
	for _, x := range tables {
		if x.Name == TableName {
			return true, nil
		}
	}
	return false, nil
}

// Install replaces whatever table there was with p's, each backend's map
// holding targets[backend]. Connections already NATed keep going: their
// translation is in conntrack, not in the table.
func (t *Table) Install(p *Plan, targets map[string][]Target) error {
	c, err := t.open("install")
	if err != nil {
		return err
	}
	tb := table()
	c.AddTable(tb)
	c.DelTable(tb)
	c.AddTable(tb)
	maps := make([]*nftables.Set, len(p.Backends))
	for i, name := range p.Backends {
		maps[i] = backendMap(tb, i, p.Family[name])
		if err := c.AddSet(maps[i], mapElements(targets[name])); err != nil {
			return fmt.Errorf("lbkernel: install: map of backend %s: %w", name, err)
		}
	}
	ports := &nftables.Set{Table: tb, Name: portSet, KeyType: nftables.TypeInetService}
	var pe []nftables.SetElement
	for _, port := range p.Ports() {
		pe = append(pe, nftables.SetElement{Key: binary.BigEndian.AppendUint16(nil, port)})
	}
	if err := c.AddSet(ports, pe); err != nil {
		return fmt.Errorf("lbkernel: install: set %s: %w", portSet, err)
	}
	beChains := make([]*nftables.Chain, len(p.Backends))
	for i, name := range p.Backends {
		beChains[i] = c.AddChain(&nftables.Chain{Name: backendObj(i), Table: tb})
		if ex := backendExprs(p, i, maps[i], len(Elements(targets[name]))); ex != nil {
			c.AddRule(&nftables.Rule{Table: tb, Chain: beChains[i], Exprs: ex})
		}
	}
	var setTimeout []expr.Any
	if len(p.DNATTimeouts) > 0 {
		c.AddObj(dnatTimeoutObj(tb, p.DNATTimeouts))
		setTimeout = []expr.Any{&expr.Objref{Type: int(nftables.ObjTypeCtTimeout), Name: ctTimeoutObj}}
	}
	feChains := make([]*nftables.Chain, len(p.Frontends))
	for i, f := range p.Frontends {
		ch := c.AddChain(&nftables.Chain{Name: frontendObj(i), Table: tb})
		feChains[i] = ch
		c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: append(slices.Clone(setTimeout),
			&expr.Counter{},
			&expr.Verdict{Kind: expr.VerdictGoto, Chain: backendObj(p.backendIndex(f.Backend))},
		)})
	}
	accept := nftables.ChainPolicyAccept
	for _, hook := range []*nftables.ChainHook{nftables.ChainHookPrerouting, nftables.ChainHookOutput} {
		name := "prerouting"
		if hook == nftables.ChainHookOutput {
			name = "output"
		}
		ch := c.AddChain(&nftables.Chain{Name: name, Table: tb, Type: nftables.ChainTypeNAT, Hooknum: hook,
			Priority: nftables.ChainPriorityNATDest, Policy: &accept})
		for i, f := range p.Frontends {
			for _, bd := range f.Binds {
				for _, m := range bindExprs(bd, p.Family[f.Backend], hook == nftables.ChainHookOutput && p.Remote[f.Backend]) {
					m = append(m, &expr.Verdict{Kind: expr.VerdictJump, Chain: feChains[i].Name})
					c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: m})
				}
			}
		}
	}
	if err := t.addWatch(c, tb, p, ports); err != nil {
		return err
	}
	post := c.AddChain(&nftables.Chain{Name: "postrouting", Table: tb, Type: nftables.ChainTypeNAT,
		Hooknum: nftables.ChainHookPostrouting, Priority: nftables.ChainPriorityNATSource, Policy: &accept})
	c.AddRule(&nftables.Rule{Table: tb, Chain: post, Exprs: []expr.Any{
		// Not to a server on this host (out through lo): it answers
		// its local client directly, and masquerading to lo would find
		// no address of global scope where the namespace has none.
		&expr.Meta{Key: expr.MetaKeyOIF, Register: 1},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, loIndex)},
		&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, ipsDstNAT), Xor: make([]byte, 4)},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: make([]byte, 4)},
		&expr.Ct{Register: 1, Key: expr.CtKeyPROTODST, Direction: 0},
		&expr.Lookup{SourceRegister: 1, SetName: ports.Name, SetID: ports.ID},
		&expr.Masq{},
	}})
	if err := c.Flush(); err != nil {
		return fmt.Errorf("lbkernel: install %s: %w", TableName, err)
	}
	t.plan = p
	return nil
}

// Update replaces backend's servers with targets in one transaction: its
// map's elements and its rule (whose modulus is their number). New
// connections see the old servers or the new ones; established ones keep
// their server.
func (t *Table) Update(backend string, targets []Target) error {
	p := t.plan
	if p == nil {
		return fmt.Errorf("lbkernel: update backend %s: the table is not installed", backend)
	}
	i := p.backendIndex(backend)
	if i < 0 {
		return nil // not a kernel backend
	}
	c, err := t.open("update")
	if err != nil {
		return err
	}
	tb := table()
	m := backendMap(tb, i, p.Family[backend])
	ch := &nftables.Chain{Name: backendObj(i), Table: tb}
	c.FlushChain(ch)
	c.FlushSet(m)
	if els := mapElements(targets); len(els) > 0 {
		if err := c.SetAddElements(m, els); err != nil {
			return fmt.Errorf("lbkernel: update backend %s: %w", backend, err)
		}
		c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: backendExprs(p, i, m, len(els))})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("lbkernel: update backend %s: %w", backend, err)
	}
	return nil
}

// Connections returns the connections each frontend of the plan has
// taken (its chain's counter: only a connection's first packet passes
// the nat hooks), by frontend name.
func (t *Table) Connections() (map[string]uint64, error) {
	p := t.plan
	if p == nil {
		return nil, nil
	}
	c, err := t.open("list")
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for i, f := range p.Frontends {
		rules, err := c.GetRules(table(), &nftables.Chain{Name: frontendObj(i), Table: table()})
		if err != nil {
			return nil, fmt.Errorf("lbkernel: list chain %s: %w", frontendObj(i), err)
		}
		for _, r := range rules {
			for _, e := range r.Exprs {
				if ctr, ok := e.(*expr.Counter); ok {
					out[f.Name] += ctr.Packets
				}
			}
		}
	}
	return out, nil
}

// dnatTimeoutObj is the ct timeout object of the DNATed connections,
// every TCP state given (the library fills missing ones from its own
// defaults, which it keeps in a package map that it also writes into: a
// complete policy leaves nothing of it in ours).
func dnatTimeoutObj(tb *nftables.Table, ts []uint32) *nftables.NamedObj {
	policy := expr.CtStatePolicyTimeout{}
	for i, v := range ts {
		policy[uint16(i)] = v
	}
	return &nftables.NamedObj{Table: tb, Name: ctTimeoutObj, Type: nftables.ObjTypeCtTimeout,
		Obj: &expr.CtTimeout{L3Proto: unix.NFPROTO_INET, L4Proto: unix.IPPROTO_TCP, Policy: policy}}
}

func backendMap(tb *nftables.Table, i, fam int) *nftables.Set {
	addr := nftables.TypeIPAddr
	if fam == 6 {
		addr = nftables.TypeIP6Addr
	}
	return &nftables.Set{Table: tb, Name: backendObj(i), IsMap: true, KeyType: nftables.TypeInteger,
		DataType: nftables.MustConcatSetType(addr, nftables.TypeInetService), KeyByteOrder: binaryutil.NativeEndian}
}

// mapElements are a backend's map elements: slot k (host byte order, as
// numgen and jhash write it) to the server's address and port, the port
// padded to a register's 4 bytes as nft pads a concatenation.
func mapElements(targets []Target) []nftables.SetElement {
	var out []nftables.SetElement
	for k, a := range Elements(targets) {
		val := append(a.Addr().AsSlice(), 0, 0, 0, 0)
		binary.BigEndian.PutUint16(val[len(val)-4:], a.Port())
		out = append(out, nftables.SetElement{Key: binary.NativeEndian.AppendUint32(nil, uint32(k)), Val: val})
	}
	return out
}

// backendExprs is backend i's rule for n map elements (nil for none):
// numgen inc (roundrobin) or jhash of the source address (source) modulo
// n, looked up in the map, DNAT to the address and port it gives.
func backendExprs(p *Plan, i int, m *nftables.Set, n int) []expr.Any {
	if n == 0 {
		return nil
	}
	fam := p.Family[p.Backends[i]]
	nfproto, saddrOff, alen, portReg := uint32(unix.NFPROTO_IPV4), uint32(12), uint32(4), uint32(9)
	if fam == 6 {
		nfproto, saddrOff, alen, portReg = unix.NFPROTO_IPV6, 8, 16, 2
	}
	var pick []expr.Any
	if p.balanceOf(p.Backends[i]) == lbconfig.Source {
		pick = []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: saddrOff, Len: alen},
			&expr.Hash{SourceRegister: 1, DestRegister: 1, Length: alen, Modulus: uint32(n), Seed: hashSeed, Type: expr.HashTypeJenkins},
		}
	} else {
		pick = []expr.Any{&expr.Numgen{Register: 1, Modulus: uint32(n), Type: unix.NFT_NG_INCREMENTAL}}
	}
	return append(pick,
		&expr.Lookup{SourceRegister: 1, DestRegister: 1, IsDestRegSet: true, SetName: m.Name, SetID: m.ID},
		&expr.NAT{Type: expr.NATTypeDestNAT, Family: nfproto, RegAddrMin: 1, RegProtoMin: portReg, Specified: true},
	)
}

// notLoopback matches a source address of family f that is not a
// loopback one (127.0.0.0/8, ::1).
func notLoopback(f int) []expr.Any {
	if f == 4 {
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 12, Len: 4},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4, Mask: []byte{255, 0, 0, 0}, Xor: make([]byte, 4)},
			&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{127, 0, 0, 0}},
		}
	}
	return []expr.Any{
		&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: 8, Len: 16},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: netip.IPv6Loopback().AsSlice()},
	}
}

// bindExprs are the matches of bd for a backend of family fam, one rule
// each (see Bind.matches for their nft form).
func bindExprs(bd Bind, fam int, noLoopback bool) [][]expr.Any {
	var out [][]expr.Any
	for _, f := range []int{4, 6} {
		if f != fam || f == 4 && !bd.IPv4 || f == 6 && !bd.IPv6 {
			continue
		}
		nfproto, daddrOff := byte(unix.NFPROTO_IPV4), uint32(16)
		if f == 6 {
			nfproto, daddrOff = unix.NFPROTO_IPV6, 24
		}
		ex := []expr.Any{
			&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto}},
		}
		if noLoopback {
			ex = append(ex, notLoopback(f)...)
		}
		if bd.Wildcard {
			ex = append(ex,
				&expr.Fib{Register: 1, ResultADDRTYPE: true, FlagDADDR: true},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, rtnLocal)})
		} else {
			a := bd.Addr.Addr().Unmap()
			if f == 6 {
				a = bd.Addr.Addr()
			}
			ex = append(ex,
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: daddrOff, Len: uint32(len(a.AsSlice()))},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: a.AsSlice()})
		}
		ex = append(ex,
			&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2},
			&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.BigEndian.AppendUint16(nil, bd.Addr.Port())},
		)
		out = append(out, ex)
	}
	return out
}

// ipsAssured is conntrack's IPS_ASSURED status bit: the handshake
// completed.
const ipsAssured = 0x04

// tcpRST is the RST bit of the TCP flags byte (offset 13).
const tcpRST = 0x04

func suspects(tb *nftables.Table, f int, timeout time.Duration) *nftables.Set {
	addr := nftables.TypeIPAddr
	if f == 6 {
		addr = nftables.TypeIP6Addr
	}
	return &nftables.Set{Table: tb, Name: suspectSet(f), KeyType: nftables.MustConcatSetType(addr, nftables.TypeInetService),
		HasTimeout: true, Timeout: timeout, Dynamic: true}
}

// addWatch adds the suspect sets and the filter chains that fill them:
// a TCP reset from a server, in the reply direction of a connection we
// DNATed (ct status dnat) that never completed its handshake (not
// assured), puts the server's address and port in the set of its family.
// Prerouting sees the resets of servers elsewhere and, through lo, of
// this host's servers to this host's clients; output those of this
// host's servers to remote clients.
func (t *Table) addWatch(c *nftables.Conn, tb *nftables.Table, p *Plan, ports *nftables.Set) error {
	sets := map[int]*nftables.Set{}
	for _, f := range []int{4, 6} {
		sets[f] = suspects(tb, f, p.SuspectFor)
		if err := c.AddSet(sets[f], nil); err != nil {
			return fmt.Errorf("lbkernel: install: set %s: %w", suspectSet(f), err)
		}
	}
	accept := nftables.ChainPolicyAccept
	for _, hook := range []*nftables.ChainHook{nftables.ChainHookPrerouting, nftables.ChainHookOutput} {
		name := "watch_prerouting"
		if hook == nftables.ChainHookOutput {
			name = "watch_output"
		}
		ch := c.AddChain(&nftables.Chain{Name: name, Table: tb, Type: nftables.ChainTypeFilter, Hooknum: hook,
			Priority: nftables.ChainPriorityFilter, Policy: &accept})
		for _, f := range []int{4, 6} {
			nfproto, saddrOff, alen := byte(unix.NFPROTO_IPV4), uint32(12), uint32(4)
			portReg := uint32(9)
			if f == 6 {
				nfproto, saddrOff, alen, portReg = unix.NFPROTO_IPV6, 8, 16, 12
			}
			c.AddRule(&nftables.Rule{Table: tb, Chain: ch, Exprs: []expr.Any{
				&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{nfproto}},
				&expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.IPPROTO_TCP}},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 13, Len: 1},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 1, Mask: []byte{tcpRST}, Xor: []byte{0}},
				&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0}},
				&expr.Ct{Register: 1, Key: expr.CtKeyDIRECTION},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{1}}, // IP_CT_DIR_REPLY
				&expr.Ct{Register: 1, Key: expr.CtKeySTATUS},
				&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
					Mask: binary.NativeEndian.AppendUint32(nil, ipsDstNAT|ipsAssured), Xor: make([]byte, 4)},
				&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, ipsDstNAT)},
				&expr.Ct{Register: 1, Key: expr.CtKeyPROTODST, Direction: 0},
				&expr.Lookup{SourceRegister: 1, SetName: ports.Name, SetID: ports.ID},
				&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: saddrOff, Len: alen},
				&expr.Payload{DestRegister: portReg, Base: expr.PayloadBaseTransportHeader, Offset: 0, Len: 2},
				&expr.Dynset{SrcRegKey: 1, SetName: sets[f].Name, SetID: sets[f].ID, Operation: unix.NFT_DYNSET_OP_ADD},
			}})
		}
	}
	return nil
}

// Suspects returns the servers (address and port) whose port refused a
// connection within the plan's SuspectFor.
func (t *Table) Suspects() (map[netip.AddrPort]bool, error) {
	if t.plan == nil {
		return nil, nil
	}
	c, err := t.open("list")
	if err != nil {
		return nil, err
	}
	out := map[netip.AddrPort]bool{}
	for _, f := range []int{4, 6} {
		els, err := c.GetSetElements(suspects(table(), f, 0))
		if err != nil {
			return nil, fmt.Errorf("lbkernel: list set %s: %w", suspectSet(f), err)
		}
		alen := 4
		if f == 6 {
			alen = 16
		}
		for _, e := range els {
			if len(e.Key) < alen+2 {
				continue
			}
			a, _ := netip.AddrFromSlice(e.Key[:alen])
			out[netip.AddrPortFrom(a, binary.BigEndian.Uint16(e.Key[alen:alen+2]))] = true
		}
	}
	return out, nil
}
