package keepalived

import (
	"math"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"
)

// maxTimer is the largest keepalived <TIMER>: 2^32-1 microseconds.
const maxTimer = math.MaxUint32 * time.Microsecond

// repeatable keywords may appear more than once in a vrrp_instance; their
// entries accumulate, as in keepalived.
const repeatable = "virtual_ipaddress virtual_ipaddress_excluded unicast_peer track_script track_interface track_process"

// entry checks a statement against a block's accepted keywords and rejects
// repeats. It reports whether the statement should be handled.
func (p *parser) entry(s *stmt, seen map[string]Pos, where, accepted, unsupported string) bool {
	if !inList(accepted, s.kw()) {
		p.reject(s, where, accepted, unsupported)
		return false
	}
	if inList(repeatable, s.kw()) {
		if _, ok := seen[s.kw()]; !ok {
			seen[s.kw()] = s.pos
		}
		return true
	}
	return p.once(seen, s)
}

// unhandled flags a keyword that is listed as accepted but has no handler;
// tests make sure it never happens.
func (p *parser) unhandled(s *stmt) {
	p.errs.add(s.pos, s.kw(), "internal error: keyword %q is accepted but not handled", s.kw())
}

// plainBlock checks a keyword that takes a block and no value.
func (p *parser) plainBlock(s *stmt) bool {
	if !p.blockOf(s) {
		return false
	}
	if len(s.words) != 1 {
		p.errs.add(s.pos, s.kw(), "%s takes no value before its { } block, got %d", s.kw(), len(s.words)-1)
		return false
	}
	return true
}

func (p *parser) global(stmts []*stmt) {
	g := &p.cfg.Global
	for _, s := range stmts {
		if !p.entry(s, p.globalSeen, "global_defs", globalAccepted, globalUnsupported) {
			continue
		}
		switch s.kw() {
		case "router_id":
			g.RouterID, _ = p.one(s, "a name")
		case "enable_script_security":
			g.EnableScriptSecurity = p.flag(s)
		case "script_user":
			if a, ok := p.nargs(s, 1, 2, "a user and an optional group"); ok {
				g.ScriptUser = a[0]
				if len(a) == 2 {
					g.ScriptGroup = a[1]
				}
			}
		case "vrrp_version":
			g.VRRPVersion, _ = p.intArg(s, 2, 3)
		case "vrrp_garp_master_delay":
			g.GARPMasterDelay, _ = p.wholeSecondsArg(s, 4294)
		case "vrrp_garp_master_repeat":
			g.GARPMasterRepeat, _ = p.intArg(s, 1, math.MaxInt32)
		case "vrrp_garp_master_refresh":
			g.GARPMasterRefresh, _ = p.wholeSecondsArg(s, 4294)
		case "vrrp_garp_master_refresh_repeat":
			g.GARPMasterRefreshRepeat, _ = p.intArg(s, 1, math.MaxInt32)
		case "vrrp_garp_interval":
			g.GARPInterval, _ = p.secondsArg(s, 0, maxTimer)
		case "vrrp_gna_interval":
			g.GNAInterval, _ = p.secondsArg(s, 0, maxTimer)
		case "max_auto_priority":
			if a, ok := p.nargs(s, 0, 1, "an optional value (-1..99)"); ok {
				g.MaxAutoPriority = 99 // keepalived: no value means the maximum
				if len(a) == 1 {
					g.MaxAutoPriority, _ = p.intVal(s.pos, s.kw(), a[0], -1, 99)
				}
			}
		case "vrrp_rt_priority":
			g.RTPriority = p.rtPriority(s)
		case "vrrp_priority":
			g.Nice, _ = p.intArg(s, -20, 19)
		case "vrrp_no_swap":
			g.NoSwap = p.flag(s)
		case "vrrp_rlimit_rttime":
			g.RLimitRTTime, _ = p.intArg(s, 1, math.MaxInt32)
		case "checker_rlimit_rttime":
			g.CheckerRLimitRTTime, _ = p.intArg(s, 1, math.MaxInt32)
		case "bfd_rlimit_rttime":
			g.BFDRLimitRTTime, _ = p.intArg(s, 1, math.MaxInt32)
		case "vrrp_startup_delay":
			g.StartupDelay, _ = p.secondsArg(s, 0, maxTimer)
		case "default_interface":
			if v, ok := p.one(s, "an interface name"); ok {
				g.DefaultInterface = p.ifName(s.pos, s.kw(), v)
			}
		case "checker_no_swap":
			g.CheckerNoSwap = p.flag(s)
		case "notification_email":
			p.emails(s)
		case "notification_email_from":
			g.NotificationEmailFrom, _ = p.one(s, "an email address")
		case "smtp_server":
			g.SMTPServer = p.smtpServer(s)
		case "smtp_helo_name":
			g.SMTPHeloName, _ = p.one(s, "a host name")
		case "smtp_connect_timeout":
			g.SMTPConnectTimeout, _ = p.wholeSecondsArg(s, 4294)
		case "smtp_alert":
			b, ok := p.boolArg(s)
			p.smtpAlert = ptrIf(b, ok)
		case "smtp_alert_vrrp":
			b, ok := p.boolArg(s)
			p.smtpAlertVRRP = ptrIf(b, ok)
		case "smtp_alert_checker":
			// keepalived's checker process alerts only for virtual_server,
			// which vipstack refuses: nothing to record.
			p.boolArg(s)
		case "no_email_faults":
			g.NoEmailFaults = p.flag(s)
		case "vrrp_mcast_group4", "vrrp_mcast_group6":
			p.mcastGroup(s)
		case "vrrp_check_unicast_src":
			g.CheckUnicastSrc = p.flag(s)
		case "dynamic_interfaces":
			// Nothing to record: vipstack always does what it asks of
			// keepalived (an instance whose interface is missing is in
			// FAULT until it appears; see the package doc).
			if a, ok := p.nargs(s, 0, 1, "nothing or allow_if_changes"); ok && len(a) == 1 && a[0] != "allow_if_changes" {
				p.errs.add(s.pos, a[0], "unknown dynamic_interfaces option %q (accepted: nothing or allow_if_changes)", a[0])
			}
		default:
			p.unhandled(s)
		}
	}
}

func (p *parser) script(s *stmt) {
	name, ok := p.name(s)
	if !ok {
		return
	}
	sc := &Script{Name: name, Pos: s.pos, Interval: time.Second, Rise: 1, Fall: 1}
	seen := map[string]Pos{}
	for _, e := range s.block {
		if !p.entry(e, seen, "vrrp_script", scriptAccepted, "") {
			continue
		}
		switch e.kw() {
		case "script":
			sc.Command, sc.Args, _ = p.command(e)
		case "interval":
			sc.Interval, _ = p.scriptSeconds(e)
		case "timeout":
			sc.Timeout, _ = p.scriptSeconds(e)
		case "weight":
			if a, ok := p.nargs(e, 1, 2, "one value (-253..253) and an optional reverse"); ok {
				sc.Weight, _ = p.intVal(e.pos, "weight", a[0], -253, 253)
				if len(a) == 2 {
					sc.WeightReverse = a[1] == "reverse"
					if !sc.WeightReverse {
						p.errs.add(e.pos, "weight", "weight option %q is invalid (accepted: reverse)", a[1])
					}
				}
			}
		case "rise":
			sc.Rise, _ = p.intArg(e, 1, math.MaxInt32)
		case "fall":
			sc.Fall, _ = p.intArg(e, 1, math.MaxInt32)
		case "user":
			if a, ok := p.nargs(e, 1, 2, "a user and an optional group"); ok {
				sc.User = a[0]
				if len(a) == 2 {
					sc.Group = a[1]
				}
			}
		case "init_fail":
			sc.InitFail = p.flag(e)
		default:
			p.unhandled(e)
		}
	}
	if _, ok := seen["script"]; !ok {
		p.errs.add(s.pos, "script", "vrrp_script %q has no script line", name)
	}
	if _, ok := seen["timeout"]; !ok {
		sc.Timeout = sc.Interval // keepalived times a script out after its interval
	}
	if prev, ok := p.cfg.Scripts[name]; ok {
		p.errs.add(s.pos, s.kw(), "vrrp_script %q is already defined at %s", name, prev.Pos)
		return
	}
	p.cfg.Scripts[name] = sc
}

// scriptSeconds parses a vrrp_script interval or timeout. keepalived 2.2.7
// takes whole seconds only; vipstack also takes fractions, with a warning.
func (p *parser) scriptSeconds(s *stmt) (time.Duration, bool) {
	d, ok := p.secondsArg(s, time.Microsecond, 4294*time.Second)
	if ok && d%time.Second != 0 {
		p.warn(s.pos, "%s %s is not a whole number of seconds: vipstack accepts it, keepalived 2.2.7 does not", s.kw(), fmtSeconds(d))
	}
	return d, ok
}

func (p *parser) instance(s *stmt) {
	name, ok := p.name(s)
	if !ok {
		return
	}
	in := &Instance{
		Name: name, Pos: s.pos, InitialState: "BACKUP", Priority: 100,
		AdvertInterval: time.Second, Preempt: true, Accept: true,
	}
	m := &instMeta{seen: map[string]Pos{}}
	for _, e := range s.block {
		if p.entry(e, m.seen, "vrrp_instance", instanceAccepted, instanceUnsupported) {
			p.instanceEntry(in, m, e)
		}
	}
	if prev, ok := p.instByName[name]; ok {
		p.errs.add(s.pos, s.kw(), "vrrp_instance %q is already defined at %s", name, prev.Pos)
		return
	}
	p.instByName[name] = in
	p.cfg.Instances = append(p.cfg.Instances, in)
	p.insts[in] = m
}

func (p *parser) instanceEntry(in *Instance, m *instMeta, s *stmt) {
	switch s.kw() {
	case "state":
		// keepalived 2.2.7 reads the first word and ignores any after it
		// without a word (measured: "state MASTER priority 200" runs at
		// priority 100); vipstack does the same and says so.
		if a, ok := p.nargs(s, 1, math.MaxInt, "one value (MASTER or BACKUP)"); ok {
			v := a[0]
			if v != "MASTER" && v != "BACKUP" {
				p.errs.add(s.pos, s.kw(), "state %q is invalid (accepted: MASTER, BACKUP)", v)
			}
			if len(a) > 1 {
				p.warn(s.pos, "state %s: the words after it (%q) are ignored, as keepalived 2.2.7 ignores them; "+
					"put each setting on its own line", v, strings.Join(a[1:], " "))
			}
			in.InitialState = v
		}
	case "interface":
		if v, ok := p.one(s, "an interface name"); ok {
			in.Interface = p.ifName(s.pos, s.kw(), v)
		}
	case "virtual_router_id":
		if v, ok := p.intArg(s, 1, 255); ok {
			in.VRID = uint8(v)
		}
	case "priority":
		if v, ok := p.intArg(s, 1, 255); ok {
			in.Priority = uint8(v)
		}
	case "advert_int":
		if d, ok := p.secondsArg(s, 10*time.Millisecond, 255*time.Second); ok {
			in.AdvertInterval, m.advertRaw = d, s.words[1].text
		}
	case "version":
		in.Version, _ = p.intArg(s, 2, 3)
	case "nopreempt", "preempt":
		other := map[string]string{"nopreempt": "preempt", "preempt": "nopreempt"}[s.kw()]
		if at, ok := m.seen[other]; ok {
			p.errs.add(s.pos, s.kw(), "%s conflicts with %s at %s", s.kw(), other, at)
		}
		if p.flag(s) {
			in.Preempt = s.kw() == "preempt"
		}
	case "preempt_delay":
		in.PreemptDelay, _ = p.secondsArg(s, 0, 1000*time.Second)
	case "authentication":
		p.auth(in, s)
	case "virtual_ipaddress", "virtual_ipaddress_excluded":
		if !p.plainBlock(s) {
			return
		}
		// Room for the whole block at once: grown by append, a list of
		// ten VIPs kept room for sixteen (1,000 instances of ten: 0.9 MiB
		// of a running engine's heap, docs/design/memory.md).
		if s.kw() == "virtual_ipaddress" {
			in.VIPs = slices.Grow(in.VIPs, len(s.block))
		} else {
			in.ExcludedVIPs = slices.Grow(in.ExcludedVIPs, len(s.block))
		}
		for _, e := range s.block {
			v, ok := p.vip(e, s.kw())
			if s.kw() == "virtual_ipaddress" {
				m.vipEntries++
				if ok {
					in.VIPs = append(in.VIPs, v)
				}
			} else if ok {
				in.ExcludedVIPs = append(in.ExcludedVIPs, v)
			}
		}
	case "unicast_src_ip", "mcast_src_ip":
		// keepalived 2.2.7 reads both into one setting, the source
		// address of the adverts, multicast or unicast alike.
		other := map[string]string{"unicast_src_ip": "mcast_src_ip", "mcast_src_ip": "unicast_src_ip"}[s.kw()]
		if at, ok := m.seen[other]; ok {
			p.errs.add(s.pos, s.kw(), "%s and %s at %s both set the advert source address (keepalived reads them as one "+
				"setting, the last wins); keep one", s.kw(), other, at)
			return
		}
		if v, ok := p.one(s, "an IP address"); ok {
			in.UnicastSrcIP, _ = p.addr(s.pos, s.kw(), v)
			m.srcKw = s.kw()
		}
	case "unicast_peer":
		p.peers(in, m, s)
	case "track_script":
		in.TrackScripts = append(in.TrackScripts, p.trackScripts(s)...)
	case "track_interface":
		if !p.plainBlock(s) {
			return
		}
		for _, e := range s.block {
			if w, _, ok := p.trackWeight(e, s.kw()); ok {
				in.TrackInterfaces = append(in.TrackInterfaces, TrackInterface{Name: p.ifName(e.pos, s.kw(), e.kw()), Weight: w, Pos: e.pos})
			}
		}
	case "notify_master", "notify_backup", "notify_fault", "notify_stop", "notify":
		if in.Notify == nil {
			in.Notify = new(Notify)
		}
		p.notify(in.Notify, s)
		if *in.Notify == (Notify{}) {
			in.Notify = nil // the line was refused: no script
		}
	case "garp_master_delay":
		d, ok := p.wholeSecondsArg(s, 4294)
		m.garpDelay = ptrIf(d, ok)
	case "garp_master_repeat":
		n, ok := p.intArg(s, 1, math.MaxInt32)
		m.garpRepeat = ptrIf(n, ok)
	case "garp_master_refresh":
		d, ok := p.wholeSecondsArg(s, 4294)
		m.garpRefresh = ptrIf(d, ok)
	case "garp_master_refresh_repeat":
		n, ok := p.intArg(s, 1, math.MaxInt32)
		m.garpRefRep = ptrIf(n, ok)
	case "dont_track_primary":
		in.DontTrackPrimary = p.flag(s)
	case "smtp_alert":
		b, ok := p.boolArg(s)
		m.smtpAlert = ptrIf(b, ok)
	case "check_unicast_src":
		in.CheckUnicastSrc = p.flag(s)
	case "use_vmac":
		p.useVMAC(in, s)
	case "vmac_xmit_base":
		in.VMACXmitBase = p.flag(s)
	case "track_process":
		in.TrackProcesses = append(in.TrackProcesses, p.trackProcesses(s)...)
	case "accept", "no_accept":
		other := map[string]string{"accept": "no_accept", "no_accept": "accept"}[s.kw()]
		if at, ok := m.seen[other]; ok {
			p.errs.add(s.pos, s.kw(), "%s conflicts with %s at %s", s.kw(), other, at)
		}
		if p.flag(s) {
			in.Accept = s.kw() == "accept"
		}
	default:
		p.unhandled(s)
	}
}

func ptrIf[T any](v T, ok bool) *T {
	if !ok {
		return nil
	}
	return &v
}

// ifName checks an interface name given for keyword kw.
func (p *parser) ifName(pos Pos, kw, v string) string {
	if !validIfName(v) {
		p.errs.add(pos, kw, "%s %q is not a valid interface name (1-15 characters, no \"/\", \":\" or blanks)", kw, v)
	}
	return v
}

// addr parses an IP address without a zone.
func (p *parser) addr(pos Pos, kw, v string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(v)
	if err != nil || a.Zone() != "" {
		p.errs.add(pos, kw, "%s %q is not an IP address", kw, v)
		return netip.Addr{}, false
	}
	return a, true
}

func (p *parser) auth(in *Instance, s *stmt) {
	if !p.plainBlock(s) {
		return
	}
	seen := map[string]Pos{}
	for _, e := range s.block {
		if !p.entry(e, seen, "authentication", authAccepted, "") {
			continue
		}
		v, ok := p.one(e, map[string]string{"auth_type": "PASS", "auth_pass": "a password"}[e.kw()])
		switch {
		case !ok:
		case e.kw() == "auth_type" && v == "AH":
			p.errs.add(e.pos, e.kw(), "auth_type AH is not supported by vipstack (accepted: PASS)")
		case e.kw() == "auth_type" && v != "PASS":
			p.errs.add(e.pos, e.kw(), "auth_type %q is invalid (accepted: PASS)", v)
		case e.kw() == "auth_type":
			in.AuthType = v
		case v == "":
			p.errs.add(e.pos, e.kw(), "auth_pass is empty")
		default:
			in.AuthPass = v
			if len(v) > 8 {
				p.warn(e.pos, "auth_pass is %d characters; only the first 8 (%q) are sent, as keepalived does", len(v), v[:8])
			}
		}
	}
	_, hasType := seen["auth_type"]
	_, hasPass := seen["auth_pass"]
	switch {
	case hasType && !hasPass:
		p.errs.add(s.pos, s.kw(), "authentication has auth_type but no auth_pass")
	case hasPass && !hasType:
		p.errs.add(s.pos, s.kw(), "authentication has auth_pass but no auth_type (accepted: PASS)")
	}
}

// vip parses one virtual_ipaddress(_excluded) entry:
// ADDR[/LEN] [brd ADDR] [dev IF] [scope SCOPE] [label LABEL] [-nodad] [noprefixroute]
func (p *parser) vip(e *stmt, block string) (VIP, bool) {
	if !p.leaf(e) {
		return VIP{}, false
	}
	var v VIP
	pfx, err := netip.ParsePrefix(e.kw())
	if a, aerr := netip.ParseAddr(e.kw()); aerr == nil && a.Zone() == "" {
		pfx, err = netip.PrefixFrom(a, a.BitLen()), nil
	}
	if err != nil {
		p.errs.add(e.pos, block, "%s entry %q is not an address or address/length", block, e.kw())
		return VIP{}, false
	}
	v.Prefix = pfx
	var o VIPOptions
	ok := true
	args := e.args()
	for i := 0; i < len(args); i++ {
		opt := args[i]
		switch opt {
		case "-nodad":
			o.NoDAD = true
			if pfx.Addr().Is4() {
				p.warn(e.pos, "-nodad has no effect on IPv4 address %s", pfx.Addr())
			}
			continue
		case "noprefixroute":
			o.NoPrefixRoute = true
			continue
		case "brd", "dev", "scope", "label":
		default:
			if inList(vipUnsupported, opt) {
				p.errs.add(e.pos, opt, "%s option %q is not supported by vipstack", block, opt)
			} else {
				p.errs.add(e.pos, opt, "unknown %s option %q (accepted: %s)", block, opt, vipAccepted)
			}
			return VIP{}, false
		}
		if i+1 == len(args) {
			p.errs.add(e.pos, opt, "%s option %q needs a value", block, opt)
			return VIP{}, false
		}
		i++
		val := args[i]
		switch opt {
		case "brd":
			b, err := netip.ParseAddr(val)
			switch {
			case err != nil || !b.Is4():
				p.errs.add(e.pos, opt, "brd %q is not an IPv4 address", val)
				ok = false
			case !pfx.Addr().Is4():
				p.errs.add(e.pos, opt, "brd is only valid for IPv4 addresses, not %s", pfx.Addr())
				ok = false
			}
			o.Broadcast = b
		case "dev":
			o.Dev = p.ifName(e.pos, opt, val)
		case "scope":
			if !inList("global site link host nowhere", val) {
				p.errs.add(e.pos, opt, "scope %q is invalid (accepted: global, site, link, host, nowhere)", val)
				ok = false
			}
			o.Scope = val
		case "label":
			if len(val) > 15 {
				p.errs.add(e.pos, opt, "label %q is longer than 15 characters", val)
				ok = false
			}
			if pfx.Addr().Is6() {
				p.warn(e.pos, "label %q has no effect on IPv6 address %s", val, pfx.Addr())
			}
			o.Label = val
		}
	}
	v.set(e.pos, o)
	return v, ok
}

func (p *parser) peers(in *Instance, m *instMeta, s *stmt) {
	if !p.plainBlock(s) {
		return
	}
	for _, e := range s.block {
		if !p.leaf(e) {
			continue
		}
		if a := e.args(); len(a) > 0 {
			if a[0] == "min_ttl" || a[0] == "max_ttl" {
				p.errs.add(e.pos, a[0], "unicast_peer option %q is not supported by vipstack", a[0])
			} else {
				p.errs.add(e.pos, a[0], "unexpected %q after unicast_peer address (one address per line)", a[0])
			}
			continue
		}
		a, ok := p.addr(e.pos, "unicast_peer", e.kw())
		if !ok {
			continue
		}
		if i := slices.Index(in.UnicastPeers, a); i >= 0 {
			// keepalived 2.2.7 accepts a repeated peer without a word
			// (-t exits 0) and sends every advert to it once per entry.
			p.warn(e.pos, "unicast_peer %s is already listed at %s in vrrp_instance %q; the repeat is ignored "+
				"(keepalived 2.2.7 sends each advert to it once per entry)", a, m.peerPos[i], in.Name)
			continue
		}
		in.UnicastPeers = append(in.UnicastPeers, a)
		m.peerPos = append(m.peerPos, e.pos)
	}
}

func (p *parser) trackScripts(s *stmt) []TrackScript {
	if !p.plainBlock(s) {
		return nil
	}
	var out []TrackScript
	for _, e := range s.block {
		if w, has, ok := p.trackWeight(e, s.kw()); ok {
			ts := TrackScript{Name: e.kw(), Weight: w, HasWeight: has, Pos: e.pos}
			if _, ok := p.cfg.Scripts[ts.Name]; !ok {
				// keepalived 2.2.7 looks the name up while it reads the
				// block: a vrrp_script defined further down is not
				// found, and the entry is dropped (see dropUnknownTracks).
				p.unknownTracks[e.pos] = true
			}
			out = append(out, ts)
		}
	}
	return out
}

// trackWeight parses the optional "weight N" after a tracked name.
func (p *parser) trackWeight(e *stmt, block string) (w int, has, ok bool) {
	if !p.leaf(e) {
		return 0, false, false
	}
	a := e.args()
	switch {
	case len(a) == 0:
		return 0, false, true
	case a[0] != "weight" || len(a) == 1:
		p.errs.add(e.pos, block, "unexpected %q after %s entry %q (accepted: NAME [weight -253..253])", a[0], block, e.kw())
		return 0, false, false
	case len(a) > 2 && inList("reverse noreverse no_reverse", a[2]):
		p.errs.add(e.pos, a[2], "%s option %q is not supported by vipstack", block, a[2])
		return 0, false, false
	case len(a) > 2:
		p.errs.add(e.pos, block, "unexpected %q after %s entry %q (accepted: NAME [weight -253..253])", a[2], block, e.kw())
		return 0, false, false
	}
	w, ok = p.intVal(e.pos, "weight", a[1], -253, 253)
	return w, true, ok
}

func (p *parser) notify(n *Notify, s *stmt) {
	cmd, _, as, ok := p.commandAs(s)
	if !ok {
		return
	}
	switch s.kw() {
	case "notify_master":
		n.Master, n.MasterAs = cmd, as
	case "notify_backup":
		n.Backup, n.BackupAs = cmd, as
	case "notify_fault":
		n.Fault, n.FaultAs = cmd, as
	case "notify_stop":
		n.Stop, n.StopAs = cmd, as
	case "notify":
		n.Any, n.AnyAs = cmd, as
	}
}

func (p *parser) syncGroup(s *stmt) {
	name, ok := p.name(s)
	if !ok {
		return
	}
	g := &SyncGroup{Name: name, Pos: s.pos}
	seen := map[string]Pos{}
	members := map[string]bool{}
	for _, e := range s.block {
		if !p.entry(e, seen, "vrrp_sync_group", syncAccepted, syncUnsupported) {
			continue
		}
		switch e.kw() {
		case "group":
			if !p.plainBlock(e) {
				continue
			}
			for _, m := range e.block {
				if !p.leaf(m) {
					continue
				}
				for _, w := range m.words {
					if members[w.text] {
						p.errs.add(m.pos, "group", "vrrp_sync_group %q lists %q twice", name, w.text)
						continue
					}
					members[w.text] = true
					g.Members = append(g.Members, w.text)
				}
			}
		case "track_script":
			g.TrackScripts = append(g.TrackScripts, p.trackScripts(e)...)
		case "notify_master", "notify_backup", "notify_fault", "notify_stop", "notify":
			p.notify(&g.Notify, e)
		default:
			p.unhandled(e)
		}
	}
	if at, ok := seen["group"]; !ok || len(g.Members) == 0 {
		if !ok {
			at = s.pos
		}
		p.errs.add(at, "group", "vrrp_sync_group %q needs a group { } block naming at least one vrrp_instance", name)
	}
	if prev, ok := p.syncNames[name]; ok {
		p.errs.add(s.pos, s.kw(), "vrrp_sync_group %q is already defined at %s", name, prev)
		return
	}
	p.syncNames[name] = s.pos
	p.cfg.SyncGroups = append(p.cfg.SyncGroups, g)
}

// emails reads a notification_email block: one address per line (keepalived
// takes every word of a line as an address).
func (p *parser) emails(s *stmt) {
	if !p.plainBlock(s) {
		return
	}
	for _, e := range s.block {
		if !p.leaf(e) {
			continue
		}
		for _, w := range e.words {
			if strings.ContainsAny(w.text, "<>\r\n") || w.text == "" {
				p.errs.add(e.pos, s.kw(), "notification_email %q is not an email address", w.text)
				continue
			}
			p.cfg.Global.NotificationEmail = append(p.cfg.Global.NotificationEmail, w.text)
		}
	}
	if len(s.block) == 0 {
		p.warn(s.pos, "Warning - empty notification_email block")
	}
}

// smtpServer parses "smtp_server HOST [PORT]" into host:port.
func (p *parser) smtpServer(s *stmt) string {
	a, ok := p.nargs(s, 1, 2, "a host name or IP address and an optional port")
	if !ok {
		return ""
	}
	port := 25
	if len(a) == 2 {
		if port, ok = p.intVal(s.pos, "smtp_server port", a[1], 1, 65535); !ok {
			return ""
		}
	}
	host := a[0]
	if ad, err := netip.ParseAddr(host); err == nil && ad.Zone() == "" {
		host = ad.String()
	} else if !validHostName(host) {
		p.errs.add(s.pos, s.kw(), "smtp_server %q is neither an IP address nor a host name", host)
		return ""
	}
	return net.JoinHostPort(host, strconv.Itoa(port))
}
