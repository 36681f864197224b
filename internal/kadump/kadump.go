package kadump

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"
)

// A Dump is what the three files say: the router and each instance and
// tracked script, in the order they are written.
type Dump struct {
	RouterID  string
	Instances []Instance
	Scripts   []Script
}

// An Instance is one vrrp_instance as keepalived's dumps show it.
type Instance struct {
	Name  string
	State string // INIT, BACKUP, MASTER or FAULT
	// WantState is keepalived's wantstate; vipstack has none of its own
	// and reports the state (what keepalived shows once a transition has
	// settled).
	WantState      string
	Version        int // 2 or 3
	Interface      string
	Source         netip.Addr // zero when the interface has no address
	UnicastPeers   []netip.Addr
	LastTransition time.Time // zero: never changed state
	VRID           int
	BasePriority   int
	Effective      int
	// MasterPriority is the priority in the master's advertisements
	// (keepalived's master_priority; 0 when none was seen).
	MasterPriority int
	AdvertInterval time.Duration
	Accept         bool
	Preempt        bool
	PreemptDelay   time.Duration
	AuthPass       bool // authentication PASS (VRRPv2 only)
	GARPDelay      time.Duration
	GARPRepeat     int
	GARPRefresh    time.Duration
	GARPRefreshRep int
	VIPs           []VIP
	ExcludedVIPs   []VIP
	TrackScripts   []TrackRef
	Stats          Stats
}

// A VIP is one virtual address with the device it lives on.
type VIP struct {
	Prefix netip.Prefix
	Dev    string
	Scope  string // "" means global
	// Set is true while the address is on the interface (keepalived's
	// " set" suffix): for a master.
	Set bool
}

// A TrackRef is a script an instance tracks, with the weight it applies.
type TrackRef struct {
	Name   string
	Weight int
}

// Stats are keepalived's per-instance counters (vrrp_stats), in the order
// keepalived.stats shows them.
type Stats struct {
	AdvertRcvd, AdvertSent      uint64
	BecomeMaster, ReleaseMaster uint64
	PacketLenErr, IPTTLErr      uint64
	InvalidTypeRcvd             uint64
	AdvertIntervalErr           uint64
	AddrListErr                 uint64
	InvalidAuthType             uint64
	AuthTypeMismatch            uint64
	AuthFailure                 uint64
	PriZeroRcvd, PriZeroSent    uint64
}

// A Script is one vrrp_script and its latest result.
type Script struct {
	Name     string
	Command  string
	Interval time.Duration
	Timeout  time.Duration
	Weight   int
	Rise     int
	Fall     int
	Good     bool
	Tracking []TrackRef // instances tracking it, with their weights
}

// text is the VIP as keepalived 2.2.7 prints it in keepalived.data and in
// the JSON "vips" list: the address, its length unless it is the whole
// address, the device, the scope, IPv6's lifetime and " set" when held.
func (v VIP) text() string {
	var b strings.Builder
	a := v.Prefix.Addr()
	b.WriteString(a.String())
	if v.Prefix.Bits() != a.BitLen() {
		fmt.Fprintf(&b, "/%d", v.Prefix.Bits())
	}
	scope := v.Scope
	if scope == "" {
		scope = "global"
	}
	fmt.Fprintf(&b, " dev %s scope %s", v.Dev, scope)
	if a.Is6() {
		b.WriteString(" preferred_lft forever")
	}
	if v.Set {
		b.WriteString(" set")
	}
	return b.String()
}

// stateNum is keepalived's number for a state (VRRP_STATE_INIT 0,
// BACKUP 1, MASTER 2, FAULT 3), as the JSON dump writes it.
func stateNum(s string) (int, error) {
	switch s {
	case "INIT":
		return 0, nil
	case "BACKUP":
		return 1, nil
	case "MASTER":
		return 2, nil
	case "FAULT":
		return 3, nil
	}
	return 0, fmt.Errorf("kadump: state %q: want INIT, BACKUP, MASTER or FAULT", s)
}

func (in Instance) check() error {
	if _, err := stateNum(in.State); err != nil {
		return fmt.Errorf("instance %s: %w", in.Name, err)
	}
	if in.WantState != "" {
		if _, err := stateNum(in.WantState); err != nil {
			return fmt.Errorf("instance %s: wantstate: %w", in.Name, err)
		}
	}
	return nil
}

func (in Instance) wantState() string {
	if in.WantState == "" {
		return in.State
	}
	return in.WantState
}

func onOff(b bool, on, off string) string {
	if b {
		return on
	}
	return off
}

// stamp is keepalived's "seconds.micro (Day Mon dd hh:mm:ss.micro yyyy)".
func stamp(t time.Time) string {
	if t.IsZero() {
		return "0.000000 (Thu Jan  1 00:00:00.000000 1970)"
	}
	t = t.UTC()
	return fmt.Sprintf("%d.%06d (%s.%06d %d)", t.Unix(), t.Nanosecond()/1000, t.Format("Mon Jan _2 15:04:05"), t.Nanosecond()/1000, t.Year())
}

func secs(d time.Duration) int { return int(d / time.Second) }

// WriteData writes keepalived.data (keepalived's SIGUSR1 dump): a short
// global section, the VRRP topology and the VRRP scripts. keepalived-
// exporter reads from it each instance's State, Wantstate, Interface,
// Gratuitous ARP delay, Virtual Router ID and Virtual IP list, and each
// script's Status and State.
func WriteData(w io.Writer, d Dump) error {
	for _, in := range d.Instances {
		if err := in.check(); err != nil {
			return err
		}
	}
	b := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	p("------< Global definitions >------")
	p(" Network namespace = (default)")
	p(" Router ID = %s", d.RouterID)
	p(" VRRP IPv4 mcast group = 224.0.0.18")
	p(" VRRP IPv6 mcast group = ff02::12")
	p(" Dump written by = vipstack (keepalived 2.2.7 format)")
	p("------< VRRP Topology >------")
	for _, in := range d.Instances {
		p(" VRRP Instance = %s", in.Name)
		p("   VRRP Version = %d", in.Version)
		if in.Source.Is6() || (len(in.VIPs) > 0 && in.VIPs[0].Prefix.Addr().Is6()) {
			p("   Using Native IPv6")
		}
		p("   State = %s", in.State)
		if len(in.UnicastPeers) > 0 {
			p("   Flags:")
			p("     Using unicast")
		} else {
			p("   Flags: none")
		}
		p("   Wantstate = %s", in.wantState())
		p("   Number of config faults = 0")
		p("   Last transition = %s", stamp(in.LastTransition))
		p("   Interface = %s", in.Interface)
		if in.Source.IsValid() {
			p("   Using src_ip = %s", in.Source)
		}
		if len(in.UnicastPeers) > 0 {
			// keepalived names no multicast address for unicast; its
			// peers follow the VIPs.
		} else if in.Source.Is6() {
			p("   Multicast address ff02::12")
		} else {
			p("   Multicast address 224.0.0.18")
		}
		p("   Gratuitous ARP delay = %d", secs(in.GARPDelay))
		p("   Gratuitous ARP repeat = %d", in.GARPRepeat)
		p("   Gratuitous ARP refresh = %d", secs(in.GARPRefresh))
		p("   Gratuitous ARP refresh repeat = %d", in.GARPRefreshRep)
		p("   Virtual Router ID = %d", in.VRID)
		p("   Priority = %d", in.BasePriority)
		p("   Effective priority = %d", in.Effective)
		p("   Total priority = %d", in.Effective)
		if in.Version == 3 {
			p("   Advert interval = %d milli-sec", in.AdvertInterval.Milliseconds())
		} else {
			p("   Advert interval = %d sec", secs(in.AdvertInterval))
		}
		p("   Accept = %s", onOff(in.Accept, "enabled", "disabled"))
		p("   Preempt = %s", onOff(in.Preempt, "enabled", "disabled"))
		if in.PreemptDelay > 0 {
			p("   Preempt delay = %g secs", in.PreemptDelay.Seconds())
		}
		if in.Version == 2 {
			p("   Authentication type = %s", onOff(in.AuthPass, "SIMPLE_PASSWORD", "none"))
		}
		if len(in.VIPs) > 0 {
			p("   Virtual IP (%d):", len(in.VIPs))
			for _, v := range in.VIPs {
				p("     %s", v.text())
			}
		}
		if len(in.ExcludedVIPs) > 0 {
			p("   Virtual IP Excluded :")
			for _, v := range in.ExcludedVIPs {
				p("     %s", v.text())
			}
		}
		if len(in.UnicastPeers) > 0 {
			p("   Unicast TTL = 255")
			p("   Check unicast src : no")
			p("   Unicast Peer :")
			for _, a := range in.UnicastPeers {
				p("     %s min_ttl 0 max_ttl 255", a)
			}
			p("   Unicast checksum compatibility = no")
		}
		if len(in.TrackScripts) > 0 {
			p("   Tracked scripts :")
			for _, t := range in.TrackScripts {
				p("     %s weight %d", t.Name, t.Weight)
			}
		}
		p("   Using smtp notification = no")
	}
	if len(d.Scripts) > 0 {
		p("------< VRRP Scripts >------")
		for _, s := range d.Scripts {
			p(" VRRP Script = %s", s.Name)
			p("   Command = '%s'", s.Command)
			p("   Interval = %d sec", secs(s.Interval))
			p("   Timeout = %d sec", secs(s.Timeout))
			p("   Weight = %d", s.Weight)
			p("   Rise = %d", s.Rise)
			p("   Fall = %d", s.Fall)
			p("   Result = %d", map[bool]int{false: 0, true: 1}[s.Good])
			p("   Status = %s", onOff(s.Good, "GOOD", "BAD"))
			p("   Tracking instances :")
			for _, t := range s.Tracking {
				p("     %s, weight %d", t.Name, t.Weight)
			}
			// keepalived's script state: vipstack does not report a
			// probe in flight, so the state is the one between runs.
			p("   State = idle")
		}
	}
	return b.Flush()
}

// WriteStats writes keepalived.stats (keepalived's SIGUSR2 dump).
func WriteStats(w io.Writer, d Dump) error {
	b := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(b, format+"\n", a...) }
	for _, in := range d.Instances {
		s := in.Stats
		p("VRRP Instance: %s", in.Name)
		p("  Advertisements:")
		p("    Received: %d", s.AdvertRcvd)
		p("    Sent: %d", s.AdvertSent)
		p("  Became master: %d", s.BecomeMaster)
		p("  Released master: %d", s.ReleaseMaster)
		p("  Packet Errors:")
		p("    Length: %d", s.PacketLenErr)
		p("    TTL: %d", s.IPTTLErr)
		p("    Invalid Type: %d", s.InvalidTypeRcvd)
		p("    Advertisement Interval: %d", s.AdvertIntervalErr)
		p("    Address List: %d", s.AddrListErr)
		p("  Authentication Errors:")
		p("    Invalid Type: %d", s.InvalidAuthType)
		p("    Type Mismatch: %d", s.AuthTypeMismatch)
		p("    Failure: %d", s.AuthFailure)
		p("  Priority Zero:")
		p("    Received: %d", s.PriZeroRcvd)
		p("    Sent: %d", s.PriZeroSent)
	}
	return b.Flush()
}

// jsonData is the "data" object of keepalived 2.2.7's JSON dump, with its
// keys in keepalived's order.
type jsonData struct {
	IName              string   `json:"iname"`
	DontTrackPrimary   int      `json:"dont_track_primary"`
	SkipCheckAdvAddr   int      `json:"skip_check_adv_addr"`
	StrictMode         int      `json:"strict_mode"`
	VMACIfname         string   `json:"vmac_ifname"`
	IfpIfname          string   `json:"ifp_ifname"`
	MasterPriority     int      `json:"master_priority"`
	LastTransition     float64  `json:"last_transition"`
	GARPDelay          int      `json:"garp_delay"`
	GARPRefresh        int      `json:"garp_refresh"`
	GARPRep            int      `json:"garp_rep"`
	GARPRefreshRep     int      `json:"garp_refresh_rep"`
	GARPLowerPrioDelay int      `json:"garp_lower_prio_delay"`
	GARPLowerPrioRep   int      `json:"garp_lower_prio_rep"`
	LowerPrioNoAdvert  int      `json:"lower_prio_no_advert"`
	HigherPrioSendAdv  int      `json:"higher_prio_send_advert"`
	VRID               int      `json:"vrid"`
	BasePriority       int      `json:"base_priority"`
	EffectivePriority  int      `json:"effective_priority"`
	VIPSet             bool     `json:"vipset"`
	PromoteSecondaries bool     `json:"promote_secondaries"`
	AdverInt           float64  `json:"adver_int"`
	MasterAdverInt     float64  `json:"master_adver_int"`
	Accept             int      `json:"accept"`
	NoPreempt          bool     `json:"nopreempt"`
	PreemptDelay       int      `json:"preempt_delay"`
	State              int      `json:"state"`
	WantState          int      `json:"wantstate"`
	Version            int      `json:"version"`
	SMTPAlert          bool     `json:"smtp_alert"`
	NotifyDeleted      bool     `json:"notify_deleted"`
	VIPs               []string `json:"vips,omitempty"`
	EVIPs              []string `json:"evips,omitempty"`
	TrackScript        []string `json:"track_script,omitempty"`
	AuthType           int      `json:"auth_type"`
	AuthData           string   `json:"auth_data,omitempty"`
	UnicastPeers       []string `json:"unicast_peer,omitempty"`
}

type jsonStats struct {
	AdvertRcvd        uint64 `json:"advert_rcvd"`
	AdvertSent        uint64 `json:"advert_sent"`
	BecomeMaster      uint64 `json:"become_master"`
	ReleaseMaster     uint64 `json:"release_master"`
	PacketLenErr      uint64 `json:"packet_len_err"`
	AdvertIntervalErr uint64 `json:"advert_interval_err"`
	IPTTLErr          uint64 `json:"ip_ttl_err"`
	InvalidTypeRcvd   uint64 `json:"invalid_type_rcvd"`
	AddrListErr       uint64 `json:"addr_list_err"`
	InvalidAuthType   uint64 `json:"invalid_authtype"`
	AuthTypeMismatch  uint64 `json:"authtype_mismatch"`
	AuthFailure       uint64 `json:"auth_failure"`
	PriZeroRcvd       uint64 `json:"pri_zero_rcvd"`
	PriZeroSent       uint64 `json:"pri_zero_sent"`
}

type jsonVRRP struct {
	Data  jsonData  `json:"data"`
	Stats jsonStats `json:"stats"`
}

// WriteJSON writes keepalived.json (keepalived's SIGRTMIN+2 dump with
// --enable-json): an array of {"data": ..., "stats": ...}, one per
// instance. keepalived escapes "/" as "\/"; so does this, so the bytes
// match as well as the values.
func WriteJSON(w io.Writer, d Dump) error {
	out := make([]jsonVRRP, 0, len(d.Instances))
	scripts := map[string]string{}
	for _, s := range d.Scripts {
		scripts[s.Name] = s.Command
	}
	for _, in := range d.Instances {
		st, err := stateNum(in.State)
		if err != nil {
			return fmt.Errorf("instance %s: %w", in.Name, err)
		}
		ws, err := stateNum(in.wantState())
		if err != nil {
			return fmt.Errorf("instance %s: wantstate: %w", in.Name, err)
		}
		adv := in.AdvertInterval.Seconds()
		jd := jsonData{
			IName: in.Name, IfpIfname: in.Interface,
			MasterPriority:     in.MasterPriority,
			LastTransition:     float64(in.LastTransition.UnixMicro()) / 1e6,
			GARPDelay:          secs(in.GARPDelay),
			GARPRefresh:        secs(in.GARPRefresh),
			GARPRep:            in.GARPRepeat,
			GARPRefreshRep:     in.GARPRefreshRep,
			GARPLowerPrioDelay: secs(in.GARPDelay),
			GARPLowerPrioRep:   in.GARPRepeat,
			VRID:               in.VRID, BasePriority: in.BasePriority, EffectivePriority: in.Effective,
			VIPSet:         in.State == "MASTER",
			AdverInt:       adv,
			MasterAdverInt: adv,
			Accept:         map[bool]int{false: 0, true: 1}[in.Accept],
			NoPreempt:      !in.Preempt,
			PreemptDelay:   secs(in.PreemptDelay),
			State:          st, WantState: ws, Version: in.Version,
		}
		if in.LastTransition.IsZero() {
			jd.LastTransition = 0
		}
		if in.AuthPass {
			jd.AuthType = 1
		}
		for _, v := range in.VIPs {
			jd.VIPs = append(jd.VIPs, v.text())
		}
		for _, v := range in.ExcludedVIPs {
			jd.EVIPs = append(jd.EVIPs, v.text())
		}
		for _, t := range in.TrackScripts {
			jd.TrackScript = append(jd.TrackScript, "'"+scripts[t.Name]+"'")
		}
		s := in.Stats
		out = append(out, jsonVRRP{Data: jd, Stats: jsonStats{
			AdvertRcvd: s.AdvertRcvd, AdvertSent: s.AdvertSent,
			BecomeMaster: s.BecomeMaster, ReleaseMaster: s.ReleaseMaster,
			PacketLenErr: s.PacketLenErr, AdvertIntervalErr: s.AdvertIntervalErr,
			IPTTLErr: s.IPTTLErr, InvalidTypeRcvd: s.InvalidTypeRcvd, AddrListErr: s.AddrListErr,
			InvalidAuthType: s.InvalidAuthType, AuthTypeMismatch: s.AuthTypeMismatch, AuthFailure: s.AuthFailure,
			PriZeroRcvd: s.PriZeroRcvd, PriZeroSent: s.PriZeroSent,
		}})
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return err
	}
	raw = []byte(strings.ReplaceAll(string(raw), "/", `\/`))
	_, err = w.Write(raw)
	return err
}
