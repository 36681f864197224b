package engine

import (
	"fmt"
	"os"
	"sort"

	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
)

// vmacNetlink is what use_vmac needs of the kernel beyond Netlink: the
// real netif.Handle has it; a Netlink without it (the simulated segment)
// cannot run a use_vmac instance.
type vmacNetlink interface {
	EnsureVMAC(netif.VMAC) (int, error)
	DeleteVMAC(netif.VMAC) error
	SweepVMACs(netif.VMACLedger, func(netif.VMAC) bool) ([]netif.VMAC, error)
}

// vmacNetlink is the engine's netlink as a vmacNetlink, when it is one
// (under the timing wrapper the loop sees).
func (e *Engine) vmacNetlink() (vmacNetlink, bool) {
	nl := e.nl
	if t, ok := nl.(timedNetlink); ok {
		nl = t.Netlink
	}
	vn, ok := nl.(vmacNetlink)
	return vn, ok
}

// vmacOf is the VMAC interface of an instance with use_vmac.
func vmacOf(ic *keepalived.Instance) netif.VMAC {
	return netif.VMAC{Name: ic.VMACInterface(), Parent: ic.Interface, MAC: netif.VMACAddr(ic.VRID, ic.Family()), Family: ic.Family()}
}

// vmacFor sets up the VMAC of an instance with use_vmac, as keepalived
// does: its VIPs go on the VMAC, its gratuitous ARPs and NAs go out of it
// (so they carry the virtual MAC), and so do its adverts unless
// vmac_xmit_base keeps them on the base interface (in.ifIndex stays the
// base's). It returns the interface for VIPs without a dev and the one to
// announce on. The VMAC is recorded in the VMAC ledger before it is
// created, so a crash cannot leave one unknown to the next start.
func (e *Engine) vmacFor(ic *keepalived.Instance, in *instance) (vipDev, annName string, annIndex int, err error) {
	if !ic.UseVMAC {
		return ic.Interface, ic.Interface, in.ifIndex, nil
	}
	nl, ok := e.vmacNetlink()
	if !ok {
		return "", "", 0, fmt.Errorf("use_vmac: this netlink cannot create VMAC interfaces")
	}
	v := vmacOf(ic)
	if e.vmacs == nil {
		e.vmacs = map[string]netif.VMAC{}
	}
	if _, ok := e.vmacs[v.Name]; !ok {
		e.vmacs[v.Name] = v
		e.saveVMACs()
	}
	idx, err := nl.EnsureVMAC(v)
	if err != nil {
		return "", "", 0, fmt.Errorf("use_vmac: %v", err)
	}
	if v.Family == 4 && rpFilter("all") != "0" {
		e.log.Warn("net.ipv4.conf.all.rp_filter is set: adverts received on the VMAC interface may be dropped "+
			"(keepalived sets it to 0 while it runs; vipstack leaves it to you)", "instance", ic.Name, "vmac", v.Name)
	}
	e.log.Info("VMAC interface ready", "instance", ic.Name, "vmac", v.Name, "mac", v.MAC.String(), "parent", v.Parent,
		"adverts_from", map[bool]string{true: v.Parent, false: v.Name}[ic.VMACXmitBase])
	if !ic.VMACXmitBase {
		in.ifIndex = idx
	}
	return v.Name, v.Name, idx, nil
}

func rpFilter(dev string) string {
	b, err := os.ReadFile("/proc/sys/net/ipv4/conf/" + dev + "/rp_filter")
	if err != nil || len(b) == 0 {
		return "0"
	}
	return string(b[:1])
}

// syncVMACs deletes the VMAC interfaces no running instance uses any more
// (a reload removed use_vmac or the instance; running false: every one,
// at shutdown), as keepalived deletes its VMACs when it stops.
func (e *Engine) syncVMACs(running bool) {
	if len(e.vmacs) == 0 {
		return
	}
	nl, ok := e.vmacNetlink()
	if !ok {
		return
	}
	used := map[string]bool{}
	if running {
		for _, in := range e.instances {
			if !in.life.has(condAbsent) && in.cfg.UseVMAC {
				used[in.cfg.VMACInterface()] = true
			}
		}
	}
	changed := false
	for _, name := range sortedKeys(e.vmacs) {
		if used[name] {
			continue
		}
		v := e.vmacs[name]
		if err := nl.DeleteVMAC(v); err != nil {
			e.log.Error("removing VMAC interface failed", "vmac", name, "err", err)
			continue
		}
		e.log.Info("VMAC interface removed", "vmac", name, "parent", v.Parent)
		delete(e.vmacs, name)
		changed = true
	}
	if changed {
		e.saveVMACs()
	}
}

// sweepVMACs removes, at start, the VMAC interfaces an earlier run left
// (killed before it could remove them), except those of instances a
// predecessor handed over.
func (e *Engine) sweepVMACs(nl Netlink) {
	vn, ok := nl.(vmacNetlink)
	if !ok || e.opts.Ledger.Path == "" {
		return
	}
	keep := map[string]bool{}
	for _, name := range e.opts.Adopt {
		if ic := instanceByName(e.cfg, name); ic != nil && ic.UseVMAC {
			keep[ic.VMACInterface()] = true
		}
	}
	removed, err := vn.SweepVMACs(netif.VMACLedgerOf(e.opts.Ledger), func(v netif.VMAC) bool {
		if keep[v.Name] {
			if e.vmacs == nil {
				e.vmacs = map[string]netif.VMAC{}
			}
			e.vmacs[v.Name] = v
			return true
		}
		return false
	})
	if err != nil {
		e.log.Warn("removing VMAC interfaces left by an earlier run failed", "err", err)
	}
	for _, v := range removed {
		e.log.Info("removed VMAC interface left by an earlier run", "vmac", v.Name, "parent", v.Parent)
	}
}

// saveVMACs writes the VMAC ledger beside the VIP ledger.
func (e *Engine) saveVMACs() {
	if e.opts.Ledger.Path == "" {
		return
	}
	var list []netif.VMAC
	for _, v := range e.vmacs {
		list = append(list, v)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Name < list[j].Name })
	if err := netif.VMACLedgerOf(e.opts.Ledger).Save(list); err != nil {
		e.log.Error("cannot record VMAC interfaces; a crash now would leave them behind", "err", err)
	}
}
