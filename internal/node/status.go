package node

import (
	"bytes"
	"cmp"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/vipstack/vipstack/internal/engine"
	lbstats "github.com/vipstack/vipstack/internal/lb/stats"
)

// Status is what the node agent's status endpoint serves and `vipstack
// status` prints.
type Status struct {
	Node      string                  `json:"node"`
	Role      string                  `json:"role"`
	Interface string                  `json:"interface"`
	Started   time.Time               `json:"started"`
	Now       time.Time               `json:"now"`                             // when the agent answered, for the ages of what it reports
	Loaded    time.Time               `json:"cluster_file_loaded"`             // the version in force
	Rejected  *Rejection              `json:"cluster_file_rejected,omitempty"` // a later version, refused
	LoadError string                  `json:"cluster_file_error,omitempty"`    // Rejected.Error, for readers of this field
	VRRP      []engine.InstanceStatus `json:"vrrp"`
	// Stalled says why the VRRP engine's loop counts as wedged
	// (engine.Stalled), "" while it answers.
	Stalled string            `json:"vrrp_stalled,omitempty"`
	LB      *lbstats.Snapshot `json:"lb,omitempty"`
	// Redirects are the API VIP redirects to the load balancer (masters):
	// whether each is in effect, and why not.
	Redirects []RedirectStatus `json:"redirects,omitempty"`
	DNS       *DNSStatus       `json:"dns,omitempty"`
	// BGP is the speaker of a node that announces VIPs by BGP.
	BGP *BGPStatus `json:"bgp,omitempty"`
}

// Unhealthy is why the node is not live, "" when it is: its VRRP
// engine's loop is wedged (Stalled), or its BGP speaker is wedged or
// stopped (BGPStatus.Unhealthy). The status endpoint then answers 503,
// which fails the node pod's liveness probe.
func (s Status) Unhealthy() string {
	if s.Stalled != "" {
		return "vrrp: " + s.Stalled
	}
	return s.BGP.Unhealthy()
}

// RedirectStatus is one API VIP's redirect to the load balancer's port.
type RedirectStatus struct {
	VIP    string `json:"vip"` // the address and port it captures
	ToPort uint16 `json:"to_port"`
	// Want is what the load balancer's health asks: "enable" (healthy),
	// "disable", or "" before its first verdict.
	Want     string `json:"want"`
	InEffect bool   `json:"in_effect"`
	// Failures counts the changes that failed in a row, Error the last
	// one's (both retried every second).
	Failures int    `json:"failures,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Rejection is a version of the cluster file the agent refused, until one
// is accepted again.
type Rejection struct {
	At    time.Time `json:"at"`
	Error string    `json:"error"`
}

// DNSStatus describes the node's cluster DNS.
type DNSStatus struct {
	Listening []string `json:"listening"`
	Zone      string   `json:"zone"`
	Nodes     int      `json:"nodes"`
}

// Status reports the node's state.
func (a *Agent) Status() Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := Status{Node: a.plan.Node.Name, Role: string(a.plan.Node.Role), Interface: a.iface,
		Started: a.started, Now: a.clk.Now(), Loaded: a.lastLoad, LoadError: a.loadErr}
	if a.loadErr != "" {
		s.Rejected = &Rejection{At: a.rejectedAt, Error: a.loadErr}
	}
	if a.vrrp != nil {
		s.VRRP, s.Stalled = a.vrrp.Status(), a.vrrp.Stalled()
	}
	if a.lb != nil {
		snap := a.lb.Snapshot()
		s.LB = &snap
	}
	s.Redirects = a.redirectStatus()
	if a.bgp != nil {
		s.BGP = a.bgp.Status()
	}
	if a.dnsSrv != nil {
		s.DNS = &DNSStatus{Zone: a.cluster.Domain(), Nodes: len(a.nodes.Nodes()), Listening: listening(a.dnsSrv.Addrs())}
	}
	return s
}

// redirectStatus reports the redirects, by VIP.
func (a *Agent) redirectStatus() []RedirectStatus {
	a.redirMu.Lock()
	defer a.redirMu.Unlock()
	var out []RedirectStatus
	for vip, f := range a.followers {
		st := f.f.State()
		out = append(out, RedirectStatus{VIP: vip.String(), ToPort: f.toPort, Want: st.Want, InEffect: st.InEffect,
			Failures: st.Failures, Error: st.Err})
	}
	slices.SortFunc(out, func(x, y RedirectStatus) int { return strings.Compare(x.VIP, y.VIP) })
	return out
}

// listening names the DNS server's sockets with their protocol ("udp
// [::]:53", "tcp [::]:53": a UDP and a TCP socket share an address), by
// address, UDP first.
func listening(addrs []net.Addr) []string {
	addrs = slices.Clone(addrs)
	slices.SortStableFunc(addrs, func(a, b net.Addr) int {
		return cmp.Or(strings.Compare(a.String(), b.String()), -strings.Compare(a.Network(), b.Network()))
	})
	var out []string
	for _, a := range addrs {
		out = append(out, a.Network()+" "+a.String())
	}
	return out
}

// WriteTable prints a status for a person: one line per VRRP instance
// (state, master, priority as base plus each check) with notes under it
// (its fault, why a check fails, since when it is in its state and why it
// entered it), then the LB backends and the DNS.
func WriteTable(w io.Writer, s Status) error {
	fmt.Fprintf(w, "node %s (%s) on %s\n\n", s.Node, s.Role, s.Interface)
	if s.Stalled != "" {
		fmt.Fprintf(w, "NOT LIVE: vrrp: %s\n\n", oneLine(s.Stalled))
	}
	if r := s.Rejected; r != nil {
		fmt.Fprintf(w, "cluster file rejected at %s; still running the one loaded at %s:\n%s\n\n",
			since(r.At, s.Now), since(s.Loaded, s.Now), r.Error)
	}
	// The table goes through a buffer so that each instance's notes can
	// follow its row without breaking the columns: why it is in fault,
	// why a check fails (now), and since when it is in its state and why
	// it entered it (the last transition's reason, which may no longer
	// hold: a backup whose checks recovered since outranks the priority
	// it lost with).
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTANCE\tSTATE\tVRID\tVIPS\tMASTER\tPRIORITY")
	notes := make([][]string, len(s.VRRP))
	for i, in := range s.VRRP {
		if in.Fault != "" {
			notes[i] = append(notes[i], "fault: "+oneLine(in.Fault))
		}
		prio := fmt.Sprintf("%d", in.BasePriority)
		for _, c := range in.Contributions {
			if c.Weight != 0 || c.Applied != 0 {
				prio += " " + contribution(c)
			}
			if !c.OK && c.Reason != "" {
				notes[i] = append(notes[i], strings.TrimPrefix(c.Source, "script ")+" failing: "+oneLine(c.Reason))
			}
		}
		prio += fmt.Sprintf(" = %d", in.Effective)
		master := in.Master
		if master == "" {
			master = "-"
		} else {
			master += fmt.Sprintf(" (prio %d)", in.MasterPriority)
		}
		if tr := in.LastTransition; tr != nil {
			notes[i] = append(notes[i], fmt.Sprintf("%s since %s: %s", tr.To, since(tr.At, s.Now), oneLine(tr.Reason)))
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", in.Name, in.State, in.VRID, strings.Join(in.VIPs, ","), master, prio)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := strings.SplitAfter(table.String(), "\n") // the header, then one row per instance
	fmt.Fprint(w, rows[0])
	for i := range s.VRRP {
		fmt.Fprint(w, rows[i+1])
		for _, n := range notes[i] {
			fmt.Fprintf(w, "    %s\n", n)
		}
	}
	if s.LB != nil {
		health := "healthy"
		if !s.LB.Healthy {
			health = "UNHEALTHY (no backend up)"
		}
		fmt.Fprintf(w, "\nload balancer: %s\n", health)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "BACKEND\tSERVER\tADDRESS\tSTATE\tSESSIONS\tLAST CHECK")
		for _, b := range s.LB.Backends {
			for _, sv := range b.Servers {
				check := printable(strings.TrimSpace(sv.CheckStatus + " " + sv.CheckInfo)) // no info after a passed check
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", b.Name, sv.Name, sv.Addr, sv.Status, sv.Sessions, check)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(s.Redirects) > 0 {
		fmt.Fprintln(w)
	}
	for _, r := range s.Redirects {
		fmt.Fprintf(w, "redirect %s to :%d: %s\n", r.VIP, r.ToPort, redirectState(r))
	}
	if s.DNS != nil {
		fmt.Fprintf(w, "\ndns: zone %s, %d nodes, listening on %s\n", s.DNS.Zone, s.DNS.Nodes, strings.Join(s.DNS.Listening, ", "))
	}
	if s.BGP != nil {
		WriteBGP(w, s.BGP)
	}
	return nil
}

// redirectState says whether a redirect is in effect and why not.
func redirectState(r RedirectStatus) string {
	switch {
	case r.Failures > 0:
		return fmt.Sprintf("FAILING to %s (%d tries in a row, retrying every 1s): %s", r.Want, r.Failures, printable(oneLine(r.Error)))
	case r.InEffect:
		return "in effect (the load balancer is healthy)"
	case r.Want == "enable":
		return "being installed (the load balancer is healthy)"
	case r.Want == "disable":
		return "off: the load balancer is not healthy; clients of the VIP reach this node's own API port"
	default:
		return "off: no verdict from the load balancer yet"
	}
}

// contribution is what a check or an interface adds to the priority now
// ("+5(chk_ocp_both ok)") and, when that is nothing, what it adds in its
// other state ("+0(chk_ocp_lb failing, +20 when ok)").
func contribution(c engine.Contribution) string {
	name := strings.TrimPrefix(c.Source, "script ")
	// A weight applies either while the check passes (adding) or while it
	// fails (subtracting; a negative or reversed weight), never both.
	w := max(c.Weight, -c.Weight)
	switch {
	case c.Applied != 0 && c.OK:
		return fmt.Sprintf("%+d(%s ok)", c.Applied, name)
	case c.Applied != 0:
		return fmt.Sprintf("%+d(%s failing)", c.Applied, name)
	case c.OK:
		return fmt.Sprintf("+0(%s ok, -%d when failing)", name, w)
	default:
		return fmt.Sprintf("+0(%s failing, +%d when ok)", name, w)
	}
}

// oneLine keeps a reason on its line of the table.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// since writes t for the table: the time of day and its age at now
// ("12:03:04 (3m ago)"), with the date when t is not of now's day, and
// without the age when now is unknown (an agent that does not send it).
func since(t, now time.Time) string {
	if now.IsZero() {
		return t.Format(time.DateTime)
	}
	layout := time.TimeOnly
	if now.In(t.Location()).Format(time.DateOnly) != t.Format(time.DateOnly) {
		layout = time.DateTime
	}
	d := max(now.Sub(t), 0)
	var age string
	switch {
	case d < time.Minute:
		age = fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		age = fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		age = fmt.Sprintf("%dh%dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	default:
		age = fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	}
	return fmt.Sprintf("%s (%s ago)", t.Format(layout), age)
}

// printable writes what a terminal would act on, in s (a check's text
// holds what a server answered: control characters, escape sequences,
// bytes that are not UTF-8), as <XX> per byte, the way haproxy writes
// such bytes in its log lines.
func printable(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && n == 1) || unicode.IsControl(r) {
			for _, c := range []byte(s[i : i+n]) {
				fmt.Fprintf(&b, "<%02X>", c)
			}
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}
