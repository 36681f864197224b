package keepalived

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/vrrp"
)

// Validate checks the model itself, for a configuration built in code (the
// node agent, ipfailover, the Kubernetes agent) as much as for one the
// reader produced: the reader's rules on values, required settings, cross
// references, address families, versions and duplicates. Parse runs it on
// every configuration it accepts, so a parsed Config always passes.
//
// Each rejection is an *Error naming the block and the setting in
// keepalived.conf words. Where the model has a position (a configuration
// read from a file) the error starts with its file:line; a configuration
// built in code has none, and the error names the instance or script and
// the setting. The errors are joined, at most 20 of them.
//
// Where the reader only warns and changes the setting as keepalived does
// (nopreempt with priority 255, a track_script naming an unknown script,
// authentication in a version 3 instance), the reader's result passes and
// a model that still has the setting is rejected: built in code, it is a
// mistake.
func (c *Config) Validate() error {
	v := &checker{cfg: c, errs: &errList{}}
	v.global()
	for _, name := range slices.Sorted(maps.Keys(c.Scripts)) {
		v.script(name, c.Scripts[name])
	}
	v.instances()
	v.processes()
	v.syncGroups()
	return v.errs.err()
}

type checker struct {
	cfg  *Config
	errs *errList
}

// add records a rejection at pos, prefixed with what (the block, e.g.
// `vrrp_instance "VI"`) when there is one.
func (v *checker) add(pos Pos, what, kw, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if what != "" {
		msg = what + ": " + msg
	}
	v.errs.errs = append(v.errs.errs, &Error{Pos: pos, Keyword: kw, Msg: msg})
	if len(v.errs.errs) > maxReported {
		v.errs.errs = v.errs.errs[:maxReported]
		v.errs.dropped++
	}
}

func (v *checker) intRange(pos Pos, what, kw string, n, lo, hi int) {
	if n < lo || n > hi {
		v.add(pos, what, kw, "%s %d is out of range (accepted: %d..%d)", kw, n, lo, hi)
	}
}

func (v *checker) seconds(pos Pos, what, kw string, d, lo, hi time.Duration) {
	if d < lo || d > hi || d%time.Microsecond != 0 {
		v.add(pos, what, kw, "%s %v is out of range (accepted: %s..%s seconds, in microseconds)", kw, d, fmtSeconds(lo), fmtSeconds(hi))
	}
}

func (v *checker) wholeSeconds(pos Pos, what, kw string, d time.Duration) {
	if d < 0 || d > 4294*time.Second || d%time.Second != 0 {
		v.add(pos, what, kw, "%s %v is not valid (accepted: whole seconds 0..4294)", kw, d)
	}
}

func (v *checker) ifName(pos Pos, what, kw, name string) {
	if !validIfName(name) {
		v.add(pos, what, kw, "%s %q is not a valid interface name (1-15 characters, no \"/\", \":\" or blanks)", kw, name)
	}
}

func (v *checker) global() {
	g := &v.cfg.Global
	const what = "global_defs"
	var pos Pos
	if g.VRRPVersion != 2 && g.VRRPVersion != 3 {
		v.add(pos, what, "vrrp_version", "vrrp_version %d is out of range (accepted: 2..3)", g.VRRPVersion)
	}
	v.wholeSeconds(pos, what, "vrrp_garp_master_delay", g.GARPMasterDelay)
	v.intRange(pos, what, "vrrp_garp_master_repeat", g.GARPMasterRepeat, 1, 1<<31-1)
	v.wholeSeconds(pos, what, "vrrp_garp_master_refresh", g.GARPMasterRefresh)
	v.intRange(pos, what, "vrrp_garp_master_refresh_repeat", g.GARPMasterRefreshRepeat, 1, 1<<31-1)
	v.seconds(pos, what, "vrrp_garp_interval", g.GARPInterval, 0, maxTimer)
	v.seconds(pos, what, "vrrp_gna_interval", g.GNAInterval, 0, maxTimer)
	v.seconds(pos, what, "vrrp_startup_delay", g.StartupDelay, 0, maxTimer)
	v.intRange(pos, what, "max_auto_priority", g.MaxAutoPriority, -1, 99)
	v.intRange(pos, what, "vrrp_rt_priority", g.RTPriority, 0, 99)
	v.intRange(pos, what, "vrrp_rlimit_rttime", g.RLimitRTTime, 0, 1<<31-1)
	v.intRange(pos, what, "checker_rlimit_rttime", g.CheckerRLimitRTTime, 0, 1<<31-1)
	v.intRange(pos, what, "bfd_rlimit_rttime", g.BFDRLimitRTTime, 0, 1<<31-1)
	if g.DefaultInterface != "" {
		v.ifName(pos, what, "default_interface", g.DefaultInterface)
	}
	if g.ScriptGroup != "" && g.ScriptUser == "" {
		v.add(pos, what, "script_user", "script_user has a group (%q) but no user", g.ScriptGroup)
	}
	v.wholeSeconds(pos, what, "smtp_connect_timeout", g.SMTPConnectTimeout)
	v.mcastGroups()
}

func (v *checker) script(name string, sc *Script) {
	what := fmt.Sprintf("vrrp_script %q", name)
	if sc == nil {
		v.add(Pos{}, what, "vrrp_script", "no script (nil)")
		return
	}
	if sc.Name != name {
		v.add(sc.Pos, what, "vrrp_script", "is named %q in Scripts but %q in its Name", name, sc.Name)
	}
	if args, err := SplitCommand(sc.Command); err != nil || len(args) == 0 {
		v.add(sc.Pos, what, "script", "script %q is not a command line (%v)", sc.Command, cmp.Or(err, errors.New("empty")))
	}
	v.seconds(sc.Pos, what, "interval", sc.Interval, time.Microsecond, 4294*time.Second)
	v.seconds(sc.Pos, what, "timeout", sc.Timeout, time.Microsecond, 4294*time.Second)
	v.intRange(sc.Pos, what, "weight", sc.Weight, -253, 253)
	v.intRange(sc.Pos, what, "rise", sc.Rise, 1, 1<<31-1)
	v.intRange(sc.Pos, what, "fall", sc.Fall, 1, 1<<31-1)
	if sc.Group != "" && sc.User == "" {
		v.add(sc.Pos, what, "user", "user has a group (%q) but no user", sc.Group)
	}
}

func (v *checker) instances() {
	names := map[string]*Instance{}
	var insts []*Instance
	for i, in := range v.cfg.Instances {
		if in == nil {
			v.add(Pos{}, fmt.Sprintf("Instances[%d]", i), "vrrp_instance", "no instance (nil)")
			continue
		}
		insts = append(insts, in)
		what := fmt.Sprintf("vrrp_instance %q", in.Name)
		if prev, ok := names[in.Name]; ok {
			v.add(in.Pos, what, "vrrp_instance", "is already defined%s", at(prev.Pos))
		}
		names[in.Name] = in
		v.instance(in, what)
	}
	duplicates(insts, func(in *Instance) Pos { return in.Pos }, func(pos Pos, kw, format string, a ...any) {
		v.add(pos, "", kw, format, a...)
	})
}

// at returns " at file:line", or "" for a configuration built in code.
func at(p Pos) string {
	if p == (Pos{}) {
		return ""
	}
	return " at " + p.String()
}

// duplicates rejects two instances with one interface, VRID and family,
// and an address held twice on one device, in the reader (vridAt is the
// virtual_router_id line) and in Validate (the instance's position).
func duplicates(insts []*Instance, vridAt func(*Instance) Pos, add func(pos Pos, kw, format string, a ...any)) {
	type vrKey struct {
		ifname string
		vrid   uint8
		family int
	}
	type vipKey struct {
		addr netip.Addr
		dev  string
	}
	type vipAt struct {
		in  *Instance
		pos Pos
	}
	// Both maps made at their size: grown by doubling, they were most of
	// the 11 MB this allocated for a file of 1,000 instances and 10,000
	// addresses (it runs twice).
	n := 0
	for _, in := range insts {
		n += in.NumVIPs()
	}
	vrids := make(map[vrKey]*Instance, len(insts))
	vips := make(map[vipKey]vipAt, n)
	for _, in := range insts {
		fam := in.Family()
		if in.VRID != 0 && in.Interface != "" {
			k := vrKey{in.Interface, in.VRID, fam}
			if prev, dup := vrids[k]; dup {
				add(cmp.Or(vridAt(in), in.Pos), "virtual_router_id", "vrrp_instance %q uses interface %s, virtual_router_id %d and IPv%d "+
					"like vrrp_instance %q%s; one of them must differ", in.Name, in.Interface, in.VRID, fam, prev.Name, at(prev.Pos))
			} else {
				vrids[k] = in
			}
		}
		// keepalived 2.2.7 accepts an address in two instances, and the
		// instance that lets it go removes it from under the one that
		// holds it (seen: one in FAULT left the other MASTER without it).
		for a := range in.AllVIPs() {
			dev := cmp.Or(a.Dev(), in.Interface)
			k := vipKey{a.Prefix.Addr(), dev}
			prev, dup := vips[k]
			switch {
			case !dup:
				vips[k] = vipAt{in, a.Pos()}
			case prev.in == in:
				first := ""
				if prev.pos != (Pos{}) {
					first = " (first at " + prev.pos.String() + ")"
				}
				add(cmp.Or(a.Pos(), in.Pos), "virtual_ipaddress", "address %s on %s is listed twice in vrrp_instance %q%s",
					k.addr, dev, in.Name, first)
			default:
				add(cmp.Or(a.Pos(), in.Pos), "virtual_ipaddress", "address %s on %s of vrrp_instance %q is also in vrrp_instance %q%s; "+
					"an address belongs to one instance (the instance that lets it go would remove it from under the other)",
					k.addr, dev, in.Name, prev.in.Name, at(prev.pos))
			}
		}
	}
}

func (v *checker) instance(in *Instance, what string) {
	pos := in.Pos
	if in.Name == "" {
		v.add(pos, what, "vrrp_instance", "the name is empty")
	}
	if in.InitialState != "MASTER" && in.InitialState != "BACKUP" {
		v.add(pos, what, "state", "state %q is invalid (accepted: MASTER, BACKUP)", in.InitialState)
	}
	if in.Interface == "" {
		v.add(pos, what, "interface", "interface is required")
	} else {
		v.ifName(pos, what, "interface", in.Interface)
	}
	if in.VRID == 0 {
		v.add(pos, what, "virtual_router_id", "virtual_router_id is required (1..255)")
	}
	if in.Priority == 0 {
		v.add(pos, what, "priority", "priority 0 is out of range (accepted: 1..255)")
	}
	fam := in.Family()
	switch {
	case in.Version != 2 && in.Version != 3:
		v.add(pos, what, "version", "version %d is out of range (accepted: 2..3)", in.Version)
	case fam == 6 && in.Version == 2:
		v.add(pos, what, "version", "has IPv6 virtual addresses, which need VRRP version 3, but version 2 is set")
	default:
		var ie *vrrp.IntervalError
		if errors.As(vrrp.CheckAdvertInterval(in.Version, in.AdvertInterval), &ie) {
			v.add(pos, what, "advert_int", "advert_int %s is not valid for VRRP version %d (accepted: %s)",
				fmtSeconds(in.AdvertInterval), in.Version, ie.Accepted())
		}
	}
	v.seconds(pos, what, "preempt_delay", in.PreemptDelay, 0, 1000*time.Second)
	switch {
	case in.AuthType == "" && in.AuthPass == "":
	case in.AuthType != "PASS":
		v.add(pos, what, "auth_type", "auth_type %q is invalid (accepted: PASS)", in.AuthType)
	case in.AuthPass == "":
		v.add(pos, what, "auth_pass", "authentication has auth_type but no auth_pass")
	case in.Version == 3:
		v.add(pos, what, "authentication", "authentication is not part of VRRP version 3 (RFC 5798); leave it out")
	}
	if len(in.VIPs) == 0 && (in.UnicastSrcIP.Is6() || slices.ContainsFunc(in.ExcludedVIPs, func(a VIP) bool { return a.Prefix.Addr().Is6() })) {
		v.add(pos, what, "virtual_ipaddress", "an IPv6 instance needs at least one virtual_ipaddress")
	}
	for i, a := range in.VIPs {
		if f := family(a.Prefix.Addr()); a.Prefix.IsValid() && f != fam {
			v.add(cmp.Or(a.Pos(), pos), what, "virtual_ipaddress", "virtual_ipaddress %s is IPv%d but the addresses before it are IPv%d; "+
				"put the other family in virtual_ipaddress_excluded or another instance", a.Prefix.Addr(), f, fam)
		}
		v.vip(a, fmt.Sprintf("virtual_ipaddress[%d]", i), pos, what)
	}
	for i, a := range in.ExcludedVIPs {
		v.vip(a, fmt.Sprintf("virtual_ipaddress_excluded[%d]", i), pos, what)
	}
	if a := in.UnicastSrcIP; a.IsValid() && (family(a) != fam || a.Zone() != "") {
		v.add(pos, what, "unicast_src_ip", "unicast_src_ip %s is not an IPv%d address without zone, the family of the virtual addresses", a, fam)
	}
	for i, a := range in.UnicastPeers {
		switch {
		case !a.IsValid() || family(a) != fam || a.Zone() != "":
			v.add(pos, what, "unicast_peer", "unicast_peer %s is not an IPv%d address without zone, the family of the virtual addresses", a, fam)
		case slices.Index(in.UnicastPeers, a) != i:
			v.add(pos, what, "unicast_peer", "unicast_peer %s is listed twice", a)
		}
	}
	v.tracks(in.TrackScripts, pos, what)
	for _, t := range in.TrackInterfaces {
		at := cmp.Or(t.Pos, pos)
		v.ifName(at, what, "track_interface", t.Name)
		v.intRange(at, what, "weight", t.Weight, -253, 253)
		if t.Name == in.Interface {
			v.add(at, what, "track_interface", "track_interface %s is the instance's own interface, which is always tracked", t.Name)
		}
	}
	v.notify(in.Notifies(), pos, what)
	v.vmac(in, pos, what)
	v.wholeSeconds(pos, what, "garp_master_delay", in.GARPMasterDelay)
	v.intRange(pos, what, "garp_master_repeat", in.GARPMasterRepeat, 1, 1<<31-1)
	v.wholeSeconds(pos, what, "garp_master_refresh", in.GARPMasterRefresh)
	v.intRange(pos, what, "garp_master_refresh_repeat", in.GARPMasterRefreshRepeat, 1, 1<<31-1)
	if !in.Preempt && (in.Priority == 255 || in.InitialState == "MASTER") {
		v.add(pos, what, "nopreempt", "nopreempt has no effect with priority 255 or state MASTER (keepalived clears it)")
	}
	if in.PreemptDelay != 0 && (!in.Preempt || in.InitialState == "MASTER") {
		v.add(pos, what, "preempt_delay", "preempt_delay has no effect with nopreempt or state MASTER (keepalived clears it)")
	}
}

func (v *checker) vip(a VIP, field string, instPos Pos, what string) {
	pos := cmp.Or(a.Pos(), instPos)
	p := a.Prefix
	if !p.IsValid() || p.Addr().Zone() != "" {
		v.add(pos, what, "virtual_ipaddress", "%s %v is not an address or address/length", field, p)
		return
	}
	o := a.Options()
	if o.Dev != "" {
		v.ifName(pos, what, "dev", o.Dev)
	}
	if o.Broadcast.IsValid() && (!o.Broadcast.Is4() || !p.Addr().Is4()) {
		v.add(pos, what, "brd", "%s: brd %s is only valid as an IPv4 address for an IPv4 address", field, o.Broadcast)
	}
	if o.Scope != "" && !inList("global site link host nowhere", o.Scope) {
		v.add(pos, what, "scope", "%s: scope %q is invalid (accepted: global, site, link, host, nowhere)", field, o.Scope)
	}
	if len(o.Label) > 15 {
		v.add(pos, what, "label", "%s: label %q is longer than 15 characters", field, o.Label)
	}
}

// tracks checks track_script entries: the script must be defined (the
// reader drops an entry naming an unknown one, as keepalived does).
func (v *checker) tracks(ts []TrackScript, pos Pos, what string) {
	for _, t := range ts {
		at := cmp.Or(t.Pos, pos)
		if _, ok := v.cfg.Scripts[t.Name]; !ok {
			v.add(at, what, "track_script", "track_script %q names no vrrp_script (%s)", t.Name, v.scriptNames())
		}
		v.intRange(at, what, "weight", t.Weight, -253, 253)
	}
}

func (v *checker) scriptNames() string {
	p := parser{cfg: v.cfg}
	return p.scriptNames()
}

func (v *checker) notify(n Notify, pos Pos, what string) {
	for _, kv := range []struct{ kw, cmd string }{
		{"notify_master", n.Master}, {"notify_backup", n.Backup}, {"notify_fault", n.Fault},
		{"notify_stop", n.Stop}, {"notify", n.Any},
	} {
		if kv.cmd == "" {
			continue
		}
		if args, err := SplitCommand(kv.cmd); err != nil || len(args) == 0 {
			v.add(pos, what, kv.kw, "%s %q is not a command line (%v)", kv.kw, kv.cmd, cmp.Or(err, errors.New("empty")))
		}
	}
	for _, kv := range []struct {
		kw, cmd string
		as      RunAs
	}{
		{"notify_master", n.Master, n.MasterAs}, {"notify_backup", n.Backup, n.BackupAs}, {"notify_fault", n.Fault, n.FaultAs},
		{"notify_stop", n.Stop, n.StopAs}, {"notify", n.Any, n.AnyAs},
	} {
		switch {
		case kv.as == RunAs{}:
		case kv.cmd == "":
			v.add(pos, what, kv.kw, "%s has a user (%q) but no command", kv.kw, kv.as.User)
		case kv.as.User == "" || !plainWord(kv.as.User) || (kv.as.Group != "" && !plainWord(kv.as.Group)):
			v.add(pos, what, kv.kw, "%s user %q group %q: want a user name and an optional group name, without blanks or quotes",
				kv.kw, kv.as.User, kv.as.Group)
		}
	}
}

// plainWord reports whether s is read back as one word after a command
// line: not empty, no blanks, quotes, braces, comment characters or
// backslashes.
func plainWord(s string) bool {
	return s != "" && !strings.ContainsAny(s, blanks+"{}#!\"\\'")
}

func (v *checker) syncGroups() {
	insts := map[string]*Instance{}
	for _, in := range v.cfg.Instances {
		if in != nil {
			insts[in.Name] = in
		}
	}
	owner := map[string]*SyncGroup{}
	names := map[string]bool{}
	for _, g := range v.cfg.SyncGroups {
		what := fmt.Sprintf("vrrp_sync_group %q", g.Name)
		if names[g.Name] {
			v.add(g.Pos, what, "vrrp_sync_group", "is defined twice")
		}
		names[g.Name] = true
		if len(g.Members) == 0 {
			v.add(g.Pos, what, "group", "needs a group naming at least one vrrp_instance")
		}
		for _, m := range g.Members {
			in, ok := insts[m]
			switch {
			case !ok:
				v.add(g.Pos, what, "group", "member %q is not a defined vrrp_instance", m)
				continue
			case owner[m] != nil:
				v.add(g.Pos, what, "group", "vrrp_instance %q is already in vrrp_sync_group %q", m, owner[m].Name)
				continue
			}
			owner[m] = g
			v.syncWeights(in, g, what)
		}
		v.tracks(g.TrackScripts, g.Pos, what)
		v.notify(g.Notify, g.Pos, what)
	}
}

// syncWeights rejects weighted tracking in a sync group member, which
// keepalived ignores (sync_group_tracking_weight is not supported).
func (v *checker) syncWeights(in *Instance, g *SyncGroup, what string) {
	for _, t := range in.TrackScripts {
		w := t.Weight
		if sc, ok := v.cfg.Scripts[t.Name]; ok && sc != nil && !t.HasWeight {
			w = sc.Weight
		}
		if w != 0 {
			v.add(cmp.Or(t.Pos, in.Pos), what, "track_script", "member vrrp_instance %q tracks script %q with weight %d, which keepalived ignores in a sync group; use weight 0",
				in.Name, t.Name, w)
		}
	}
	for _, t := range in.TrackInterfaces {
		if t.Weight != 0 {
			v.add(cmp.Or(t.Pos, in.Pos), what, "track_interface", "member vrrp_instance %q tracks interface %s with weight %d, which keepalived ignores in a sync group; use weight 0",
				in.Name, t.Name, t.Weight)
		}
	}
}
