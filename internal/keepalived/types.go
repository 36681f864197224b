package keepalived

import (
	"encoding/json"
	"iter"
	"math"
	"net/netip"
	"strconv"
	"time"
	"unique"

	"github.com/vipstack/vipstack/internal/track"
	"github.com/vipstack/vipstack/internal/vrrp/fsm"
)

// Pos is a position in a configuration file.
type Pos struct {
	File string
	Line int
}

// String returns "file:line", or just the file when Line is 0 (an error
// about the whole file).
func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return p.File + ":" + strconv.Itoa(p.Line)
}

// Config is a parsed and validated keepalived.conf.
type Config struct {
	Global  GlobalDefs
	Scripts map[string]*Script // vrrp_script by name
	// Processes are the vrrp_track_process blocks by name.
	Processes  map[string]*TrackProcess `json:",omitempty"`
	Instances  []*Instance              // file order
	SyncGroups []*SyncGroup
	Warnings   []string // non-fatal notes, each "file:line: ..."
	Files      []string // every file read (main + includes), for reload watching
	// Comment, when set, is written by Format as "#" lines at the top.
	// The reader never sets it (nor the Comment of a Script or Instance).
	Comment string `json:",omitempty"`
}

// GlobalDefs holds the supported global_defs settings, with keepalived's
// defaults filled in.
type GlobalDefs struct {
	RouterID                string
	EnableScriptSecurity    bool
	ScriptUser, ScriptGroup string
	VRRPVersion             int // 2 or 3 (default 2)
	GARPMasterDelay         time.Duration
	GARPMasterRepeat        int
	GARPMasterRefresh       time.Duration
	GARPMasterRefreshRepeat int
	GARPInterval            time.Duration
	GNAInterval             time.Duration
	MaxAutoPriority         int // -1 when not set
	StartupDelay            time.Duration
	// Scheduling of the VRRP process, as OpenShift's current template sets
	// it against split brain from CPU starvation: RTPriority is
	// vrrp_rt_priority (SCHED_RR 1..99, 0 when not set), NoSwap
	// vrrp_no_swap (memory locked), RLimitRTTime vrrp_rlimit_rttime (the
	// CPU time in microseconds a realtime thread may use without blocking,
	// RLIMIT_RTTIME; 0 when not set). CheckerRLimitRTTime and
	// BFDRLimitRTTime are keepalived's checker and BFD processes', which
	// vipstack does not have: recorded, no effect.
	RTPriority int
	// Nice is vrrp_priority, the VRRP process's nice value (-20..19, 0 when
	// not set); keepalived ignores it under vrrp_rt_priority, and so does
	// vipstack.
	Nice                                 int
	NoSwap                               bool
	RLimitRTTime                         int
	CheckerRLimitRTTime, BFDRLimitRTTime int
	// CheckerNoSwap is checker_no_swap: recorded, no effect (keepalived's
	// checker process runs only for virtual_server, which vipstack refuses).
	CheckerNoSwap bool
	// DefaultInterface is default_interface: recorded, no effect. keepalived
	// 2.2.7 uses it only for static_ipaddress and static_routes, which
	// vipstack refuses (an instance without interface is refused by
	// keepalived too: measured, "(VI_1) Unknown interface!").
	DefaultInterface string
	// SMTP alerts (see Instance.SMTPAlert). SMTPServer is "host:port"
	// (port 25 unless given), "" when not set; SMTPHeloName is "" for the
	// host name; SMTPConnectTimeout is 0 when not set (keepalived: 30 s).
	NotificationEmail     []string
	NotificationEmailFrom string
	SMTPServer            string
	SMTPHeloName          string
	SMTPConnectTimeout    time.Duration
	NoEmailFaults         bool
	// McastGroup4 and McastGroup6 are vrrp_mcast_group4 and
	// vrrp_mcast_group6: the group multicast instances send to and join.
	// The zero Addr means the default, 224.0.0.18 and ff02::12.
	McastGroup4, McastGroup6 netip.Addr `json:",omitzero"`
	// CheckUnicastSrc is vrrp_check_unicast_src: check_unicast_src for
	// every instance.
	CheckUnicastSrc bool `json:",omitempty"`
}

// Script is a vrrp_script block.
type Script struct {
	Name string
	Pos  Pos
	// Command is the script line as written, without its outer quotes.
	Command string
	// Args is Command split like keepalived does: on whitespace, honouring
	// single and double quotes and backslash escapes.
	Args              []string
	Interval, Timeout time.Duration // Timeout defaults to Interval
	Weight            int
	WeightReverse     bool
	Rise, Fall        int
	User, Group       string
	InitFail          bool
	// Probe, when set, is run natively instead of executing Args. It is
	// never set by the reader: vipstack's own generated configurations
	// (ipfailover, the node agent) use it for checks that need no fork.
	Probe track.Check `json:"-"`
	// Comment, when set, is written by Format above the block.
	Comment string `json:",omitempty"`
	// TieBreak is not keepalived syntax (Format does not write it):
	// vipstack node sets it from the cluster file, so that a master's
	// priority 0 moves the VIPs once (see fsm.TieBreak).
	TieBreak fsm.TieBreak `json:",omitzero"`
}

// Instance is a vrrp_instance block, with defaults and global settings
// resolved.
type Instance struct {
	Name            string
	Pos             Pos
	InitialState    string // "MASTER" or "BACKUP" (default BACKUP)
	Interface       string
	VRID            uint8
	Priority        uint8
	AdvertInterval  time.Duration
	Version         int  // resolved: instance value, else global, else 2 (3 for IPv6)
	Preempt         bool // default true; false with nopreempt
	PreemptDelay    time.Duration
	AuthType        string // "" or "PASS"
	AuthPass        string // as written; only the first 8 bytes go on the wire
	VIPs            []VIP
	ExcludedVIPs    []VIP
	UnicastSrcIP    netip.Addr // zero if unset
	UnicastPeers    []netip.Addr
	TrackScripts    []TrackScript
	TrackInterfaces []TrackInterface
	// TrackProcesses are the track_process entries, each naming a
	// vrrp_track_process (Weight overrides its weight when HasWeight).
	TrackProcesses []TrackScript `json:",omitempty"`
	// Notify is nil when the instance runs no notify script, as most
	// do: a Notify takes 240 bytes, a third of an Instance, at 1,000
	// instances a quarter of a megabyte for the engine's life
	// (docs/design/memory.md). Notifies reads it either way.
	Notify *Notify `json:",omitempty"`
	// GARP settings, resolved: instance value, else global.
	GARPMasterDelay         time.Duration
	GARPMasterRepeat        int
	GARPMasterRefresh       time.Duration
	GARPMasterRefreshRepeat int
	DontTrackPrimary        bool
	Accept                  bool // default true; false with no_accept
	// SMTPAlert, resolved as keepalived 2.2.7 does: the instance's
	// smtp_alert, else global smtp_alert_vrrp, else global smtp_alert,
	// else off. An alert mail goes to Global.NotificationEmail on each
	// change to MASTER, BACKUP, FAULT (unless no_email_faults) and STOP.
	SMTPAlert bool
	// CheckUnicastSrc is check_unicast_src: unicast adverts whose source is
	// not one of UnicastPeers are dropped (keepalived: "unicast source
	// address ... not a unicast peer"). vipstack drops them whether it is
	// set or not (docs/design/vrrp.md); with no unicast_peer it does
	// nothing, as in keepalived.
	CheckUnicastSrc bool `json:",omitempty"`
	// UseVMAC is use_vmac: the instance's VIPs live on a macvlan
	// interface with the virtual router MAC (see netif.VMAC) named
	// VMACName, "" for keepalived's default "vrrp.VRID"; adverts go out
	// of it too, or of Interface with VMACXmitBase (vmac_xmit_base).
	UseVMAC      bool   `json:",omitempty"`
	VMACName     string `json:",omitempty"`
	VMACXmitBase bool   `json:",omitempty"`
	// Comment, when set, is written by Format above the block.
	Comment string `json:",omitempty"`
	// TieBreak is not keepalived syntax (Format does not write it):
	// vipstack node sets it from the cluster file, so that a master's
	// priority 0 moves the VIPs once (see fsm.TieBreak).
	TieBreak fsm.TieBreak `json:",omitzero"`
}

// Family returns 4 or 6, the address family of the instance's
// virtual_ipaddress entries (4 when it has none).
func (in *Instance) Family() int {
	if len(in.VIPs) > 0 && in.VIPs[0].Prefix.Addr().Is6() {
		return 6
	}
	return 4
}

// VIP is one virtual_ipaddress or virtual_ipaddress_excluded entry: its
// address and where it was written, and its options (Options). It is
// compared with ==, as its fields are.
//
// A node of 10,000 VIPs keeps one of each for its life: the options and
// the file it was written in are one interned value (unique.Handle)
// shared by every VIP that has the same, and its line is a number of 32
// bits, so a VIP takes 48 bytes where its options as fields made it 136
// and its position as a Pos 64 (docs/design/memory.md).
type VIP struct {
	Prefix netip.Prefix // address with its length (default /32 or /128)
	line   int32
	extra  unique.Handle[vipExtra] // zero: no option set, no file
}

// vipExtra is what a VIP shares with others written like it: its options
// and its file.
type vipExtra struct {
	VIPOptions
	file string
}

// Pos returns where v was written.
func (v VIP) Pos() Pos {
	return Pos{File: v.extras().file, Line: int(v.line)}
}

// SetPos records where v was written.
func (v *VIP) SetPos(p Pos) { v.set(p, v.Options()) }

// set records where v was written and its options at once: one value
// interned where SetPos and SetOptions make one each (the parser, for
// every VIP of the file).
func (v *VIP) set(p Pos, o VIPOptions) {
	v.line = int32(min(max(p.Line, 0), math.MaxInt32))
	v.setExtras(vipExtra{VIPOptions: o, file: p.File})
}

func (v VIP) extras() vipExtra {
	if v.extra == (unique.Handle[vipExtra]{}) {
		return vipExtra{}
	}
	return v.extra.Value()
}

func (v *VIP) setExtras(x vipExtra) {
	if x == (vipExtra{}) {
		v.extra = unique.Handle[vipExtra]{}
		return
	}
	v.extra = unique.Make(x)
}

// VIPOptions are what a VIP's entry sets beside its address.
type VIPOptions struct {
	Dev           string // "" means the instance interface
	Label, Scope  string
	Broadcast     netip.Addr
	NoDAD         bool
	NoPrefixRoute bool
}

// MakeVIP returns the VIP of p with the options o.
func MakeVIP(p netip.Prefix, o VIPOptions) VIP {
	v := VIP{Prefix: p}
	v.SetOptions(o)
	return v
}

// Options returns what v's entry sets beside its address.
func (v VIP) Options() VIPOptions { return v.extras().VIPOptions }

// SetOptions replaces v's options with o.
func (v *VIP) SetOptions(o VIPOptions) {
	x := v.extras()
	x.VIPOptions = o
	v.setExtras(x)
}

// Dev is the interface the VIP goes on; "" means the instance's.
func (v VIP) Dev() string { return v.Options().Dev }

// Equal reports whether v and w are the same entry (v == w), for
// comparisons that look into the fields of what holds VIPs.
func (v VIP) Equal(w VIP) bool { return v == w }

// SameEntry reports whether v and w are the same entry wherever each was
// written: == but for their positions.
func (v VIP) SameEntry(w VIP) bool {
	return v.Prefix == w.Prefix && v.Options() == w.Options()
}

// vipJSON is a VIP's JSON form: its fields as they were before the
// options were interned, so the form is unchanged.
type vipJSON struct {
	Prefix        netip.Prefix
	Dev           string
	Label, Scope  string
	Broadcast     netip.Addr
	NoDAD         bool
	NoPrefixRoute bool
	Pos           Pos
}

// MarshalJSON writes v with its options as fields of its own.
func (v VIP) MarshalJSON() ([]byte, error) {
	o := v.Options()
	return json.Marshal(vipJSON{Prefix: v.Prefix, Dev: o.Dev, Label: o.Label, Scope: o.Scope,
		Broadcast: o.Broadcast, NoDAD: o.NoDAD, NoPrefixRoute: o.NoPrefixRoute, Pos: v.Pos()})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (v *VIP) UnmarshalJSON(b []byte) error {
	var j vipJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*v = MakeVIP(j.Prefix, VIPOptions{Dev: j.Dev, Label: j.Label, Scope: j.Scope, Broadcast: j.Broadcast,
		NoDAD: j.NoDAD, NoPrefixRoute: j.NoPrefixRoute})
	v.SetPos(j.Pos)
	return nil
}

// TrackScript is one track_script entry. HasWeight is set when the entry
// overrides the script's own weight.
type TrackScript struct {
	Name      string
	Weight    int
	HasWeight bool
	Pos       Pos
}

// TrackInterface is one track_interface entry.
type TrackInterface struct {
	Name   string
	Weight int
	Pos    Pos
}

// Notify holds notify script command lines, as written without outer quotes.
// Any is the plain `notify` keyword. Each may name the user (and group) it
// runs as after the command, as in keepalived ("notify_master /x root
// root"); the zero RunAs means script_user's.
type Notify struct {
	Master, Backup, Fault, Stop, Any string

	MasterAs, BackupAs, FaultAs, StopAs, AnyAs RunAs `json:",omitzero"`
}

// RunAs is the user and optional group a script runs as; "" for User means
// global_defs script_user's.
type RunAs struct {
	User, Group string
}

// SyncGroup is a vrrp_sync_group block.
type SyncGroup struct {
	Name         string
	Pos          Pos
	Members      []string
	TrackScripts []TrackScript
	Notify       Notify
}

// Error is one rejection of the configuration.
type Error struct {
	Pos     Pos
	Keyword string // the keyword concerned, "" when none applies
	Msg     string
}

// Error returns "file:line: msg", or msg alone for a configuration built
// in code, which has no position (its Msg names the block).
func (e *Error) Error() string {
	if e.Pos == (Pos{}) {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}

// AllVIPs yields in's VIPs, then its excluded VIPs, without copying them
// into one list.
func (in *Instance) AllVIPs() iter.Seq[VIP] {
	return func(yield func(VIP) bool) {
		for _, list := range [2][]VIP{in.VIPs, in.ExcludedVIPs} {
			for _, v := range list {
				if !yield(v) {
					return
				}
			}
		}
	}
}

// NumVIPs is how many VIPs AllVIPs yields.
func (in *Instance) NumVIPs() int { return len(in.VIPs) + len(in.ExcludedVIPs) }

// Notifies returns in's notify scripts: the zero Notify when it has none.
func (in *Instance) Notifies() Notify {
	if in.Notify == nil {
		return Notify{}
	}
	return *in.Notify
}

// Script returns the command line run on entering state (MASTER, BACKUP,
// FAULT or STOP; "" for the plain notify script) and the user it runs as.
func (n Notify) Script(state string) (string, RunAs) {
	switch state {
	case "MASTER":
		return n.Master, n.MasterAs
	case "BACKUP":
		return n.Backup, n.BackupAs
	case "FAULT":
		return n.Fault, n.FaultAs
	case "STOP":
		return n.Stop, n.StopAs
	case "":
		return n.Any, n.AnyAs
	}
	return "", RunAs{}
}

// VMACInterface is the name of the instance's VMAC interface: VMACName,
// else keepalived's default "vrrp.VRID". "" without use_vmac.
func (in *Instance) VMACInterface() string {
	switch {
	case !in.UseVMAC:
		return ""
	case in.VMACName != "":
		return in.VMACName
	}
	return "vrrp." + strconv.Itoa(int(in.VRID))
}
