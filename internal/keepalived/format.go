package keepalived

import (
	"cmp"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Format writes c as keepalived.conf text that Parse reads back into the
// same model (positions, Warnings and Files aside): the one writer of
// keepalived.conf text for the configurations vipstack generates.
//
// It writes every field of the model that keepalived.conf can say (not
// Warnings, Files or a Script's native Probe). A setting equal to keepalived's
// default is left out, except the ones a reader looks for first (state,
// priority, advert_int, and a vrrp_script's interval, weight, rise and
// fall). Resolved values are written where they differ from what the
// reader would resolve without them: an instance's version where it is
// not implied by vrrp_version and its addresses, its garp_master_*
// settings where they differ from global_defs'. UnicastSrcIP is written as
// unicast_src_ip, Notify.Any as notify. Scripts come first, in Pos order
// then by name, because keepalived only finds a vrrp_script defined above
// the track_script naming it. The Comment fields become "#" lines above
// their block.
//
// Values are written so that the reader's lexer gives them back: a word
// with blanks, braces or comment characters is double-quoted, and script
// and notify command lines are quoted with the escapes keepalived's
// command splitting undoes. Format does not validate: run Validate first
// for a configuration built in code.
func Format(c *Config) []byte {
	var w writer
	w.comment(0, c.Comment)
	w.global(&c.Global)
	scripts := slices.SortedFunc(maps.Values(c.Scripts), func(a, b *Script) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Name, b.Name))
	})
	for _, sc := range scripts {
		w.script(sc)
	}
	processes := slices.SortedFunc(maps.Values(c.Processes), func(a, b *TrackProcess) int {
		return cmp.Or(cmp.Compare(a.Pos.File, b.Pos.File), cmp.Compare(a.Pos.Line, b.Pos.Line), cmp.Compare(a.Name, b.Name))
	})
	for _, tp := range processes {
		w.trackProcess(tp)
	}
	for _, in := range c.Instances {
		w.instance(&c.Global, in)
	}
	for _, g := range c.SyncGroups {
		w.syncGroup(g)
	}
	return []byte(w.b.String())
}

type writer struct {
	b strings.Builder
	// commented is set after a comment, which sticks to what follows.
	commented bool
}

// line writes one line of words at indent. A line ending in a backslash
// gets a trailing blank, which the reader drops, so that the backslash is
// not read as a line continuation.
func (w *writer) line(indent int, words ...string) {
	w.b.WriteString(strings.Repeat("    ", indent))
	l := strings.Join(words, " ")
	w.b.WriteString(l)
	if strings.HasSuffix(l, `\`) {
		w.b.WriteByte(' ')
	}
	w.b.WriteByte('\n')
}

// comment writes text as "#" lines; a blank line separates it from what
// comes before.
func (w *writer) comment(indent int, text string) {
	if text == "" {
		return
	}
	if w.b.Len() > 0 {
		w.b.WriteByte('\n')
	}
	for _, l := range strings.Split(text, "\n") {
		w.line(indent, strings.TrimRight("# "+l, " "))
	}
	w.commented = true
}

// open starts a block; a blank line separates top-level blocks unless a
// comment for the block was just written.
func (w *writer) open(indent int, comment string, words ...string) {
	if comment != "" {
		w.comment(indent, comment)
	} else if indent == 0 && w.b.Len() > 0 && !w.commented {
		w.b.WriteByte('\n')
	}
	w.commented = false
	w.line(indent, append(words, "{")...)
}

func (w *writer) close(indent int) { w.line(indent, "}") }

// word writes s so that the reader's lexer reads it back as one word:
// as it is when it can be, else in double quotes.
func word(s string) string {
	switch {
	case s == "",
		strings.ContainsAny(s, blanks+"{}#!\"\n"),
		strings.ContainsAny(s[:1], "@$~"),
		strings.HasPrefix(s, "include"):
		return `"` + s + `"`
	}
	return s
}

// command writes a script or notify command line in double quotes. The
// reader splits it like keepalived, honouring backslash escapes inside
// quotes, so every byte that the lexer or the split would read otherwise
// (a quote, a backslash, a control character, a "$" before "{" or "_"
// that could spell one of keepalived's builtin definitions) is written as
// a three-digit octal escape.
func command(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i, c := range []byte(s) {
		builtin := c == '$' && i+1 < len(s) && (s[i+1] == '{' || s[i+1] == '_')
		if c < ' ' || c > '~' || c == '"' || c == '\\' || builtin {
			fmt.Fprintf(&b, `\%03o`, c)
			continue
		}
		b.WriteByte(c)
	}
	b.WriteByte('"')
	return b.String()
}

func secs(d time.Duration) string { return fmtSeconds(d) }

func wholeSecs(d time.Duration) string { return strconv.FormatInt(int64(d/time.Second), 10) }

func itoa(n int) string { return strconv.Itoa(n) }

func (w *writer) global(g *GlobalDefs) {
	smtpHost, smtpPort, err := net.SplitHostPort(g.SMTPServer)
	if err != nil {
		smtpHost, smtpPort = g.SMTPServer, "25"
	}
	scriptUser := []string{"script_user", word(g.ScriptUser)}
	if g.ScriptGroup != "" {
		scriptUser = append(scriptUser, word(g.ScriptGroup))
	}
	// Each setting is written when it differs from keepalived's default.
	settings := []struct {
		set   bool
		words []string
	}{
		{g.RouterID != "", []string{"router_id", word(g.RouterID)}},
		{g.EnableScriptSecurity, []string{"enable_script_security"}},
		{g.ScriptUser != "", scriptUser},
		{g.VRRPVersion == 3, []string{"vrrp_version 3"}},
		{g.RTPriority != 0, []string{"vrrp_rt_priority", itoa(g.RTPriority)}},
		{g.Nice != 0, []string{"vrrp_priority", itoa(g.Nice)}},
		{g.NoSwap, []string{"vrrp_no_swap"}},
		{g.RLimitRTTime != 0, []string{"vrrp_rlimit_rttime", itoa(g.RLimitRTTime)}},
		{g.CheckerRLimitRTTime != 0, []string{"checker_rlimit_rttime", itoa(g.CheckerRLimitRTTime)}},
		{g.BFDRLimitRTTime != 0, []string{"bfd_rlimit_rttime", itoa(g.BFDRLimitRTTime)}},
		{g.CheckerNoSwap, []string{"checker_no_swap"}},
		{g.GARPMasterDelay != 5*time.Second, []string{"vrrp_garp_master_delay", wholeSecs(g.GARPMasterDelay)}},
		{g.GARPMasterRepeat != 5, []string{"vrrp_garp_master_repeat", itoa(g.GARPMasterRepeat)}},
		{g.GARPMasterRefresh != 0, []string{"vrrp_garp_master_refresh", wholeSecs(g.GARPMasterRefresh)}},
		{g.GARPMasterRefreshRepeat != 1, []string{"vrrp_garp_master_refresh_repeat", itoa(g.GARPMasterRefreshRepeat)}},
		{g.GARPInterval != 0, []string{"vrrp_garp_interval", secs(g.GARPInterval)}},
		{g.GNAInterval != 0, []string{"vrrp_gna_interval", secs(g.GNAInterval)}},
		{g.MaxAutoPriority != -1, []string{"max_auto_priority", itoa(g.MaxAutoPriority)}},
		{g.StartupDelay != 0, []string{"vrrp_startup_delay", secs(g.StartupDelay)}},
		{g.DefaultInterface != "", []string{"default_interface", word(g.DefaultInterface)}},
		{g.NotificationEmailFrom != "", []string{"notification_email_from", word(g.NotificationEmailFrom)}},
		{g.SMTPServer != "", []string{"smtp_server", word(smtpHost), smtpPort}},
		{g.SMTPHeloName != "", []string{"smtp_helo_name", word(g.SMTPHeloName)}},
		{g.SMTPConnectTimeout != 0, []string{"smtp_connect_timeout", wholeSecs(g.SMTPConnectTimeout)}},
		{g.NoEmailFaults, []string{"no_email_faults"}},
		{g.McastGroup4.IsValid(), []string{"vrrp_mcast_group4", g.McastGroup4.String()}},
		{g.McastGroup6.IsValid(), []string{"vrrp_mcast_group6", g.McastGroup6.String()}},
		{g.CheckUnicastSrc, []string{"vrrp_check_unicast_src"}},
	}
	var body writer
	for _, s := range settings {
		if s.set {
			body.line(1, s.words...)
		}
	}
	if len(g.NotificationEmail) > 0 {
		body.line(1, "notification_email {")
		for _, e := range g.NotificationEmail {
			body.line(2, word(e))
		}
		body.line(1, "}")
	}
	if body.b.Len() == 0 {
		return
	}
	w.open(0, "", "global_defs")
	w.b.WriteString(body.b.String())
	w.close(0)
}

func (w *writer) script(sc *Script) {
	w.open(0, sc.Comment, "vrrp_script", word(sc.Name))
	w.line(1, "script", command(sc.Command))
	w.line(1, "interval", secs(sc.Interval))
	if sc.Timeout != sc.Interval {
		w.line(1, "timeout", secs(sc.Timeout))
	}
	if sc.WeightReverse {
		w.line(1, "weight", itoa(sc.Weight), "reverse")
	} else {
		w.line(1, "weight", itoa(sc.Weight))
	}
	w.line(1, "rise", itoa(sc.Rise))
	w.line(1, "fall", itoa(sc.Fall))
	switch {
	case sc.User != "" && sc.Group != "":
		w.line(1, "user", word(sc.User), word(sc.Group))
	case sc.User != "":
		w.line(1, "user", word(sc.User))
	}
	if sc.InitFail {
		w.line(1, "init_fail")
	}
	w.close(0)
}

// impliedVersion is the version the reader gives an instance that does
// not set one.
func impliedVersion(g *GlobalDefs, in *Instance) int {
	if g.VRRPVersion == 3 || in.Family() == 6 {
		return 3
	}
	return 2
}

func (w *writer) instance(g *GlobalDefs, in *Instance) {
	w.open(0, in.Comment, "vrrp_instance", word(in.Name))
	w.line(1, "state", in.InitialState)
	w.line(1, "interface", word(in.Interface))
	w.line(1, "virtual_router_id", itoa(int(in.VRID)))
	w.line(1, "priority", itoa(int(in.Priority)))
	w.line(1, "advert_int", secs(in.AdvertInterval))
	if in.Version != impliedVersion(g, in) {
		w.line(1, "version", itoa(in.Version))
	}
	if !in.Preempt {
		w.line(1, "nopreempt")
	}
	if in.PreemptDelay != 0 {
		w.line(1, "preempt_delay", secs(in.PreemptDelay))
	}
	if in.UnicastSrcIP.IsValid() {
		w.line(1, "unicast_src_ip", in.UnicastSrcIP.String())
	}
	if len(in.UnicastPeers) > 0 {
		w.line(1, "unicast_peer {")
		for _, a := range in.UnicastPeers {
			w.line(2, a.String())
		}
		w.line(1, "}")
	}
	if in.AuthType != "" || in.AuthPass != "" {
		w.line(1, "authentication {")
		if in.AuthType != "" {
			w.line(2, "auth_type", word(in.AuthType))
		}
		if in.AuthPass != "" {
			w.line(2, "auth_pass", word(in.AuthPass))
		}
		w.line(1, "}")
	}
	w.vips(in.VIPs, "virtual_ipaddress")
	w.vips(in.ExcludedVIPs, "virtual_ipaddress_excluded")
	if len(in.TrackInterfaces) > 0 {
		w.line(1, "track_interface {")
		for _, t := range in.TrackInterfaces {
			if t.Weight != 0 {
				w.line(2, word(t.Name), "weight", itoa(t.Weight))
			} else {
				w.line(2, word(t.Name))
			}
		}
		w.line(1, "}")
	}
	w.tracks(in.TrackScripts)
	w.trackList("track_process", in.TrackProcesses)
	w.notify(in.Notifies())
	if in.GARPMasterDelay != g.GARPMasterDelay {
		w.line(1, "garp_master_delay", wholeSecs(in.GARPMasterDelay))
	}
	if in.GARPMasterRepeat != g.GARPMasterRepeat {
		w.line(1, "garp_master_repeat", itoa(in.GARPMasterRepeat))
	}
	if in.GARPMasterRefresh != g.GARPMasterRefresh {
		w.line(1, "garp_master_refresh", wholeSecs(in.GARPMasterRefresh))
	}
	if in.GARPMasterRefreshRepeat != g.GARPMasterRefreshRepeat {
		w.line(1, "garp_master_refresh_repeat", itoa(in.GARPMasterRefreshRepeat))
	}
	if in.DontTrackPrimary {
		w.line(1, "dont_track_primary")
	}
	if !in.Accept {
		w.line(1, "no_accept")
	}
	if in.SMTPAlert {
		w.line(1, "smtp_alert")
	}
	if in.CheckUnicastSrc {
		w.line(1, "check_unicast_src")
	}
	switch {
	case in.UseVMAC && in.VMACName != "":
		w.line(1, "use_vmac", word(in.VMACName))
	case in.UseVMAC:
		w.line(1, "use_vmac")
	}
	if in.VMACXmitBase {
		w.line(1, "vmac_xmit_base")
	}
	w.close(0)
}

func (w *writer) vips(vips []VIP, kw string) {
	if len(vips) == 0 {
		return
	}
	w.line(1, kw, "{")
	for _, v := range vips {
		o := v.Options()
		words := []string{v.Prefix.String()}
		if o.Broadcast.IsValid() {
			words = append(words, "brd", o.Broadcast.String())
		}
		if o.Dev != "" {
			words = append(words, "dev", word(o.Dev))
		}
		if o.Scope != "" {
			words = append(words, "scope", o.Scope)
		}
		if o.Label != "" {
			words = append(words, "label", word(o.Label))
		}
		if o.NoDAD {
			words = append(words, "-nodad")
		}
		if o.NoPrefixRoute {
			words = append(words, "noprefixroute")
		}
		w.line(2, words...)
	}
	w.line(1, "}")
}

func (w *writer) tracks(ts []TrackScript) { w.trackList("track_script", ts) }

func (w *writer) trackList(kw string, ts []TrackScript) {
	if len(ts) == 0 {
		return
	}
	w.line(1, kw+" {")
	for _, t := range ts {
		if t.HasWeight {
			w.line(2, word(t.Name), "weight", itoa(t.Weight))
		} else {
			w.line(2, word(t.Name))
		}
	}
	w.line(1, "}")
}

func (w *writer) notify(n Notify) {
	for _, kv := range []struct {
		kw, cmd string
		as      RunAs
	}{
		{"notify_master", n.Master, n.MasterAs}, {"notify_backup", n.Backup, n.BackupAs}, {"notify_fault", n.Fault, n.FaultAs},
		{"notify_stop", n.Stop, n.StopAs}, {"notify", n.Any, n.AnyAs},
	} {
		if kv.cmd == "" {
			continue
		}
		words := []string{kv.kw, command(kv.cmd)}
		if kv.as.User != "" {
			words = append(words, kv.as.User)
			if kv.as.Group != "" {
				words = append(words, kv.as.Group)
			}
		}
		w.line(1, words...)
	}
}

func (w *writer) syncGroup(g *SyncGroup) {
	w.open(0, "", "vrrp_sync_group", word(g.Name))
	w.line(1, "group {")
	for _, m := range g.Members {
		w.line(2, word(m))
	}
	w.line(1, "}")
	w.tracks(g.TrackScripts)
	w.notify(g.Notify)
	w.close(0)
}
