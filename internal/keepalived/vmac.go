package keepalived

import (
	"fmt"
	"strings"
)

// useVMAC parses "use_vmac [NAME]". keepalived 2.2.7 also takes a MAC
// address (a word with ":"), which vipstack does not support.
func (p *parser) useVMAC(in *Instance, s *stmt) {
	a, ok := p.nargs(s, 0, 1, "an optional interface name")
	if !ok {
		return
	}
	in.UseVMAC = true
	if len(a) == 0 {
		return
	}
	switch name := a[0]; {
	case strings.Contains(name, ":"):
		p.errs.add(s.pos, s.kw(), "use_vmac MAC address %q is not supported by vipstack (accepted: use_vmac [NAME]; "+
			"the MAC is 00:00:5e:00:01:VRID, or 00:00:5e:00:02:VRID for IPv6)", name)
	case !validIfName(name) || name == "." || name == "..":
		p.errs.add(s.pos, s.kw(), "VMAC interface name '%s' too long or invalid characters (accepted: 1-15 characters, "+
			"no \"/\", \":\" or blanks)", name)
	default:
		in.VMACName = name
	}
}

// vmac resolves what keepalived changes about use_vmac: unicast needs
// vmac_xmit_base, which keepalived sets with a message, and so does the
// reader; vmac_xmit_base without use_vmac does nothing, with keepalived's
// message.
func (p *parser) vmac(in *Instance, m *instMeta) {
	at, xmit := m.seen["vmac_xmit_base"]
	switch {
	case !in.UseVMAC && xmit:
		p.warn(at, "(%s) vmac_xmit_base is only valid with a vmac", in.Name)
		in.VMACXmitBase = false
	case in.UseVMAC && len(in.UnicastPeers) > 0 && !in.VMACXmitBase:
		p.warn(m.seen["use_vmac"], "(%s) unicast with use_vmac requires vmac_xmit_base - setting", in.Name)
		in.VMACXmitBase = true
	}
}

// vmacNames rejects two instances with the same VMAC interface (keepalived
// 2.2.7: "VRRP instance ... is already using ...").
func (p *parser) vmacNames() {
	used := map[string]*Instance{}
	for _, in := range p.cfg.Instances {
		name := in.VMACInterface()
		if name == "" {
			continue
		}
		if prev, ok := used[name]; ok {
			p.errs.add(p.insts[in].seen["use_vmac"], "use_vmac", "(%s) VRRP instance %s is already using %s (at %s); "+
				"name the VMAC interface: use_vmac NAME", in.Name, prev.Name, name, prev.Pos)
			continue
		}
		used[name] = in
	}
}

// vmac checks the model's VMAC settings (Validate).
func (v *checker) vmac(in *Instance, pos Pos, what string) {
	switch {
	case in.VMACName != "" && !in.UseVMAC:
		v.add(pos, what, "use_vmac", "VMACName %q is set without use_vmac", in.VMACName)
	case in.VMACName != "" && (!validIfName(in.VMACName) || strings.Contains(in.VMACName, ":")):
		v.add(pos, what, "use_vmac", "VMAC interface name %q is not a valid interface name", in.VMACName)
	case in.VMACXmitBase && !in.UseVMAC:
		v.add(pos, what, "vmac_xmit_base", "vmac_xmit_base has no effect without use_vmac")
	case in.UseVMAC && len(in.UnicastPeers) > 0 && !in.VMACXmitBase:
		v.add(pos, what, "vmac_xmit_base", "unicast with use_vmac requires vmac_xmit_base (keepalived sets it)")
	case in.UseVMAC && in.VMACInterface() == in.Interface:
		v.add(pos, what, "use_vmac", "%s", fmt.Sprintf("the VMAC interface %s is the instance's interface", in.Interface))
	}
}
