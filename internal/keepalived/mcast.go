package keepalived

import "net/netip"

// mcastGroup parses vrrp_mcast_group4 / vrrp_mcast_group6. keepalived
// 2.2.7 reports a value that is not a multicast address of the family as a
// configuration error and keeps the default ("vrrp_mcast_group4 [10.1.1.1]
// is not multicast. Skipping"); vipstack refuses it, since nodes that
// disagree on the group do not hear each other. An IPv6 group that is not
// link-local is taken with keepalived's warning.
func (p *parser) mcastGroup(s *stmt) {
	fam, def := 4, "224.0.0.18"
	if s.kw() == "vrrp_mcast_group6" {
		fam, def = 6, "ff02::12"
	}
	v, ok := p.one(s, "an IPv"+itoa(fam)+" multicast address")
	if !ok {
		return
	}
	a, err := netip.ParseAddr(v)
	var why string
	switch {
	case err != nil || a.Zone() != "":
		why = "Can't parse " + s.kw() + " [" + v + "]"
	case family(a) != fam:
		why = s.kw() + " [" + v + "] is not IPv" + itoa(fam)
	case !a.IsMulticast():
		why = s.kw() + " [" + v + "] is not multicast"
	}
	if why != "" {
		p.errs.add(s.pos, s.kw(), "%s (keepalived skips it and uses %s; accepted: an IPv%d multicast address, default %s)",
			why, def, fam, def)
		return
	}
	if fam == 6 && !a.IsLinkLocalMulticast() {
		p.warn(s.pos, "%s [%s] should be link-local multicast.", s.kw(), v)
	}
	if fam == 4 {
		p.cfg.Global.McastGroup4 = a
	} else {
		p.cfg.Global.McastGroup6 = a
	}
}

// checkMcastGroup checks the model's groups (Validate).
func (v *checker) mcastGroups() {
	g := &v.cfg.Global
	for _, c := range []struct {
		kw  string
		a   netip.Addr
		fam int
	}{{"vrrp_mcast_group4", g.McastGroup4, 4}, {"vrrp_mcast_group6", g.McastGroup6, 6}} {
		if c.a.IsValid() && (family(c.a) != c.fam || !c.a.IsMulticast() || c.a.Zone() != "") {
			v.add(Pos{}, "global_defs", c.kw, "%s %s is not an IPv%d multicast address", c.kw, c.a, c.fam)
		}
	}
}
