package keepalived

import (
	"errors"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"github.com/vipstack/vipstack/internal/vrrp"
)

// validate runs the checks that need the whole file: required settings,
// cross references, address families, versions, and resolves values that
// depend on global_defs.
func (p *parser) validate() {
	for _, in := range p.cfg.Instances {
		m := p.insts[in]
		p.required(in, m)
		fam := p.vipFamily(in)
		p.version(in, m, fam)
		p.unicastFamily(in, m, fam)
		p.resolveGARP(in, m)
		in.SMTPAlert = deref(m.smtpAlert, deref(p.smtpAlertVRRP, deref(p.smtpAlert, false)))
		p.preempt(in, m)
		p.ownInterface(in)
		in.TrackScripts = p.dropUnknownTracks(in.Name, in.TrackScripts)
		in.TrackProcesses = p.dropUnknownProcesses(in.Name, in.TrackProcesses)
		p.ownerWeights(in)
		p.vmac(in, m)
	}
	p.vmacNames()
	duplicates(p.cfg.Instances, func(in *Instance) Pos { return p.insts[in].seen["virtual_router_id"] }, p.errs.add)
	p.checkSyncGroups()
	p.securityNote()
	p.smtpNote()
}

// smtpNote warns when an instance asks for alerts that cannot be sent.
func (p *parser) smtpNote() {
	g := p.cfg.Global
	for _, in := range p.cfg.Instances {
		if !in.SMTPAlert {
			continue
		}
		switch {
		case g.SMTPServer == "":
			p.warn(in.Pos, "vrrp_instance %q has smtp_alert but global_defs has no smtp_server: no alert is sent (as in keepalived)", in.Name)
		case len(g.NotificationEmail) == 0:
			p.warn(in.Pos, "vrrp_instance %q has smtp_alert but global_defs has no notification_email address: no alert is sent (as in keepalived)", in.Name)
		default:
			continue
		}
		return
	}
}

// ownerWeights warns about weights that cannot apply: the address owner
// (priority 255) keeps its priority whatever it tracks, and keepalived
// ignores its weighted track_script entries ("ignoring tracked script ...
// with weights due to address_owner").
func (p *parser) ownerWeights(in *Instance) {
	if in.Priority != 255 {
		return
	}
	for _, ts := range in.TrackScripts {
		w := ts.Weight
		if s := p.cfg.Scripts[ts.Name]; s != nil && !ts.HasWeight {
			w = s.Weight
		}
		if w != 0 {
			p.warn(ts.Pos, "track_script %s has weight %d, which has no effect with priority 255: the address owner keeps "+
				"255 (keepalived ignores the script); use weight 0 to go to FAULT when it fails", ts.Name, w)
		}
	}
	for _, ti := range in.TrackInterfaces {
		if ti.Weight != 0 {
			p.warn(ti.Pos, "track_interface %s has weight %d, which has no effect with priority 255: the address owner keeps 255",
				ti.Name, ti.Weight)
		}
	}
}

func (p *parser) required(in *Instance, m *instMeta) {
	if in.Interface == "" {
		p.errs.add(in.Pos, "interface", "vrrp_instance %q: interface is required", in.Name)
	}
	if _, ok := m.seen["virtual_router_id"]; !ok {
		p.errs.add(in.Pos, "virtual_router_id", "vrrp_instance %q: virtual_router_id is required (1..255)", in.Name)
	}
	if m.vipEntries == 0 {
		// keepalived 2.2.7 runs an IPv4 instance without addresses (it takes
		// part in elections; "at least one is sensible") and refuses an IPv6
		// one. The Kubernetes agent relies on the former to elect a group's
		// masters before its first Service arrives.
		v6 := in.UnicastSrcIP.Is6()
		for _, v := range in.ExcludedVIPs {
			v6 = v6 || v.Prefix.Addr().Is6()
		}
		if v6 {
			p.errs.add(in.Pos, "virtual_ipaddress", "vrrp_instance %q: an IPv6 instance needs at least one virtual_ipaddress", in.Name)
		} else {
			p.warn(in.Pos, "vrrp_instance %q has no virtual_ipaddress: it takes part in elections but holds no address", in.Name)
		}
	}
}

// preempt mirrors keepalived, which clears nopreempt where it cannot work.
func (p *parser) preempt(in *Instance, m *instMeta) {
	p.nopreempt(in, m)
	at, ok := m.seen["preempt_delay"]
	switch {
	case !ok || in.PreemptDelay == 0:
		return
	case !in.Preempt:
		p.warn(at, "preempt_delay has no effect with nopreempt (keepalived clears it)")
	case in.InitialState == "MASTER":
		p.warn(at, "preempt_delay has no effect with state MASTER (keepalived clears it, and preempts at once); use state BACKUP")
	default:
		return
	}
	in.PreemptDelay = 0
}

func (p *parser) nopreempt(in *Instance, m *instMeta) {
	at, ok := m.seen["nopreempt"]
	switch {
	case !ok:
		return
	case in.Priority == 255:
		p.warn(at, "nopreempt has no effect with priority 255: the address owner always preempts (keepalived clears it)")
	case in.InitialState == "MASTER":
		p.warn(at, "nopreempt has no effect with state MASTER (keepalived clears it); use state BACKUP")
	default:
		return
	}
	in.Preempt = true
}

// ownInterface drops track_interface entries naming the instance's own
// interface, which keepalived ignores since it always tracks it.
func (p *parser) ownInterface(in *Instance) {
	in.TrackInterfaces = slices.DeleteFunc(in.TrackInterfaces, func(t TrackInterface) bool {
		if t.Name != in.Interface {
			return false
		}
		p.warn(t.Pos, "track_interface %s is the instance's own interface, which is always tracked; entry ignored as keepalived does", t.Name)
		return true
	})
}

func family(a netip.Addr) int {
	if a.Is4() {
		return 4
	}
	return 6
}

// vipFamily checks that all virtual_ipaddress entries share one family and
// returns it.
func (p *parser) vipFamily(in *Instance) int {
	fam := in.Family()
	for _, v := range in.VIPs {
		if f := family(v.Prefix.Addr()); f != fam {
			p.errs.add(v.Pos(), "virtual_ipaddress", "virtual_ipaddress %s is IPv%d but vrrp_instance %q has IPv%d addresses "+
				"before it; put the other family in virtual_ipaddress_excluded or another instance",
				v.Prefix.Addr(), f, in.Name, fam)
			break
		}
	}
	return fam
}

// version resolves the VRRP version (instance, else global, else 3 for IPv6
// and 2 for IPv4, as keepalived does) and checks what depends on it.
func (p *parser) version(in *Instance, m *instMeta, fam int) {
	at, explicit := m.seen["version"]
	if !explicit {
		at, explicit = p.globalSeen["vrrp_version"]
		in.Version = p.cfg.Global.VRRPVersion
	}
	if !explicit && fam == 6 {
		in.Version = 3
	}
	if fam == 6 && in.Version == 2 {
		p.errs.add(in.VIPs[0].Pos(), "version", "vrrp_instance %q has IPv6 virtual addresses, which need VRRP version 3, "+
			"but version 2 is set at %s; use vrrp_version 3", in.Name, at)
	}
	if at, ok := m.seen["advert_int"]; ok && m.advertRaw != "" {
		var ie *vrrp.IntervalError
		if errors.As(vrrp.CheckAdvertInterval(in.Version, in.AdvertInterval), &ie) {
			p.errs.add(at, "advert_int", "advert_int %s is not valid for VRRP version %d (accepted: %s)", m.advertRaw, in.Version, ie.Accepted())
		}
	}
	if at, ok := m.seen["authentication"]; ok && in.Version == 3 {
		// keepalived 2.2.7 runs such an instance without authentication
		// ("VRRP version 3 does not support authentication. Ignoring.";
		// keepalived -t exits 5 on it, as on any warning). OpenShift
		// writes authentication into its IPv6 instances, which keepalived
		// runs as VRRPv3: refusing the file would leave the node without
		// its VIPs where keepalived held them.
		p.warn(at, "authentication is not part of VRRP version 3 (RFC 5798); vrrp_instance %q runs without it, as keepalived does", in.Name)
		in.AuthType, in.AuthPass = "", ""
	}
}

func (p *parser) unicastFamily(in *Instance, m *instMeta, fam int) {
	if a := in.UnicastSrcIP; a.IsValid() && family(a) != fam {
		p.errs.add(m.seen[m.srcKw], m.srcKw, "%s %s is IPv%d but the virtual addresses of vrrp_instance %q are IPv%d",
			m.srcKw, a, family(a), in.Name, fam)
	}
	for i, a := range in.UnicastPeers {
		if family(a) != fam {
			p.errs.add(m.peerPos[i], "unicast_peer", "unicast_peer %s is IPv%d but the virtual addresses of vrrp_instance %q are IPv%d",
				a, family(a), in.Name, fam)
		}
	}
}

func (p *parser) resolveGARP(in *Instance, m *instMeta) {
	g := p.cfg.Global
	in.GARPMasterDelay = deref(m.garpDelay, g.GARPMasterDelay)
	in.GARPMasterRepeat = deref(m.garpRepeat, g.GARPMasterRepeat)
	in.GARPMasterRefresh = deref(m.garpRefresh, g.GARPMasterRefresh)
	in.GARPMasterRefreshRepeat = deref(m.garpRefRep, g.GARPMasterRefreshRepeat)
}

func deref[T any](v *T, def T) T {
	if v == nil {
		return def
	}
	return *v
}

// dropUnknownTracks removes the track_script entries that keepalived 2.2.7
// ignores: those naming a vrrp_script that is not defined where the entry is
// read, because it is defined further down or not at all. keepalived logs
// "(VI_1) track script chk not found, ignoring..." and runs the instance
// without the check; vipstack does the same, with a warning in keepalived's
// words and, for a script defined later, what surprises in it.
func (p *parser) dropUnknownTracks(owner string, ts []TrackScript) []TrackScript {
	return slices.DeleteFunc(ts, func(t TrackScript) bool {
		if !p.unknownTracks[t.Pos] {
			return false
		}
		sc, later := p.cfg.Scripts[t.Name]
		switch {
		case later:
			p.warn(t.Pos, "(%s) track script %s not found, ignoring... WARNING: vrrp_script %s is defined at %s, after this "+
				"track_script; keepalived 2.2.7 only knows scripts defined above their use, so %s runs WITHOUT this check "+
				"(vipstack does the same); move vrrp_script %s above it", owner, t.Name, t.Name, sc.Pos, owner, t.Name)
		default:
			if p.defined == "" {
				p.defined = p.scriptNames()
			}
			p.warn(t.Pos, "(%s) track script %s not found, ignoring... (%s); %s runs without it, as in keepalived",
				owner, t.Name, p.defined, owner)
		}
		return true
	})
}

// scriptNames lists the defined vrrp_script names for error messages, at
// most ten of them.
func (p *parser) scriptNames() string {
	if len(p.cfg.Scripts) == 0 {
		return "no vrrp_script is defined"
	}
	names := slices.Sorted(maps.Keys(p.cfg.Scripts))
	if len(names) > 10 {
		names = append(names[:10], "...")
	}
	return "defined: " + strings.Join(names, ", ")
}

func (p *parser) checkSyncGroups() {
	owner := map[string]*SyncGroup{}
	for _, g := range p.cfg.SyncGroups {
		g.TrackScripts = p.dropUnknownTracks(g.Name, g.TrackScripts)
		for _, name := range g.Members {
			if _, ok := p.instByName[name]; !ok {
				p.errs.add(g.Pos, "group", "vrrp_sync_group %q: member %q is not a defined vrrp_instance", g.Name, name)
				continue
			}
			if prev, ok := owner[name]; ok {
				p.errs.add(g.Pos, "group", "vrrp_sync_group %q: vrrp_instance %q is already in vrrp_sync_group %q at %s",
					g.Name, name, prev.Name, prev.Pos)
				continue
			}
			owner[name] = g
		}
		if len(g.Members) == 1 {
			p.warn(g.Pos, "vrrp_sync_group %q has only one vrrp_instance", g.Name)
		}
	}
	for _, in := range p.cfg.Instances {
		if g, ok := owner[in.Name]; ok {
			p.syncWeights(in, g)
		}
	}
}

// syncWeights rejects weighted tracking in a sync group member: keepalived
// ignores it unless sync_group_tracking_weight is set, which vipstack does
// not support.
func (p *parser) syncWeights(in *Instance, g *SyncGroup) {
	const why = "but vrrp_instance %q is in vrrp_sync_group %q, where keepalived ignores weighted tracking; " +
		"use weight 0 or track it on the sync group"
	for _, t := range in.TrackScripts {
		w := t.Weight
		if sc, ok := p.cfg.Scripts[t.Name]; ok && !t.HasWeight {
			w = sc.Weight
		}
		if w != 0 {
			p.errs.add(t.Pos, "track_script", "track_script %q has weight %d, "+why, t.Name, w, in.Name, g.Name)
		}
	}
	for _, t := range in.TrackInterfaces {
		if t.Weight != 0 {
			p.errs.add(t.Pos, "track_interface", "track_interface %s has weight %d, "+why, t.Name, t.Weight, in.Name, g.Name)
		}
	}
	for _, t := range in.TrackProcesses {
		w := t.Weight
		if tp, ok := p.cfg.Processes[t.Name]; ok && !t.HasWeight {
			w = tp.Weight
		}
		if w != 0 {
			p.errs.add(t.Pos, "track_process", "track_process %q has weight %d, "+why, t.Name, w, in.Name, g.Name)
		}
	}
}

// securityNote mirrors keepalived's SECURITY VIOLATION warning: scripts are
// run but enable_script_security is not set.
func (p *parser) securityNote() {
	if pos, ok := p.cfg.SecurityViolation(); ok {
		p.warn(pos, "scripts are configured but enable_script_security is not set (keepalived reports a SECURITY VIOLATION)")
	}
}

// SecurityViolation reports whether c runs scripts (tracked or notify)
// without enable_script_security, and where the first one is configured:
// keepalived 2.2.7 logs "SECURITY VIOLATION - scripts are being executed
// but script_security not enabled" and keepalived -t exits 6 for it.
func (c *Config) SecurityViolation() (Pos, bool) {
	if c.Global.EnableScriptSecurity {
		return Pos{}, false
	}
	runs := func(ts []TrackScript, n Notify) bool { return len(ts) > 0 || n != Notify{} }
	for _, in := range c.Instances {
		if runs(in.TrackScripts, in.Notifies()) {
			return in.Pos, true
		}
	}
	for _, g := range c.SyncGroups {
		if runs(g.TrackScripts, g.Notify) {
			return g.Pos, true
		}
	}
	return Pos{}, false
}
