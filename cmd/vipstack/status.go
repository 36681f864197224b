package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/node"
)

// printStatus prints the answer of a status endpoint for `vipstack
// status`. Every subcommand with a --status-addr serves its own shape:
// `vipstack node` a node.Status, `vipstack vrrp` {"instances": [...]},
// `vipstack ipfailover` an ipfailover.Status, `vipstack agent` an
// agent.Status; each is told apart by a key only it has. JSON output is
// the answer as served, indented.
func printStatus(w io.Writer, body []byte, format string, now time.Time) error {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(body, &keys); err != nil {
		return err
	}
	if format == "json" {
		var out bytes.Buffer
		if err := json.Indent(&out, body, "", "  "); err != nil {
			return err
		}
		out.WriteByte('\n')
		_, err := w.Write(out.Bytes())
		return err
	}
	has := func(k string) bool { _, ok := keys[k]; return ok }
	switch {
	case has("config_name"):
		var s ipfailover.Status
		if err := json.Unmarshal(body, &s); err != nil {
			return err
		}
		return writeIPFailoverTable(w, s)
	case has("plan"):
		var s agent.Status
		if err := json.Unmarshal(body, &s); err != nil {
			return err
		}
		for _, warn := range s.Warnings {
			fmt.Fprintf(w, "warning: %s\n", warn)
		}
		return node.WriteTable(w, node.Status{Node: s.Node, Role: "vipstack agent", Interface: interfaces(s.Instances), Now: now, VRRP: s.Instances, BGP: s.BGP})
	case has("instances") && !has("node"):
		var s struct {
			Instances []engine.InstanceStatus `json:"instances"`
			Stalled   string                  `json:"vrrp_stalled"`
		}
		if err := json.Unmarshal(body, &s); err != nil {
			return err
		}
		host, _ := os.Hostname()
		return node.WriteTable(w, node.Status{Node: host, Role: "vipstack vrrp", Interface: interfaces(s.Instances), Now: now, VRRP: s.Instances, Stalled: s.Stalled})
	}
	var s node.Status
	if err := json.Unmarshal(body, &s); err != nil {
		return err
	}
	if s.LB != nil {
		// The last check's text as the stats CSV's last_chk gives it,
		// haproxy's ("SSL handshake failure" for a failed check-ssl
		// handshake, nothing after a passed check), not the TLS
		// library's reason the node's JSON keeps in check_info.
		for _, b := range s.LB.Backends {
			for i := range b.Servers {
				b.Servers[i].CheckInfo = b.Servers[i].LastCheck()
			}
		}
	}
	return node.WriteTable(w, s)
}

// interfaces lists the instances' interfaces, for a table's header.
func interfaces(in []engine.InstanceStatus) string {
	var out []string
	for _, i := range in {
		if i.Interface != "" && !slices.Contains(out, i.Interface) {
			out = append(out, i.Interface)
		}
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ",")
}

// writeIPFailoverTable prints a pool's status for a person: the node's
// place in the pool, then one line per group with its notes under it.
func writeIPFailoverTable(w io.Writer, s ipfailover.Status) error {
	if s.Mode == "bgp" {
		return writeIPFailoverBGP(w, s)
	}
	fmt.Fprintf(w, "ipfailover %s: %s, %d VIPs in %d groups, %s on %s from %s\n", s.ConfigName, s.Phase, s.VIPs, len(s.Groups), s.Mode, s.Interface, s.Address)
	if s.Stalled != "" {
		fmt.Fprintf(w, "NOT LIVE: vrrp: %s\n", s.Stalled)
	}
	fmt.Fprintf(w, "rank %d of ranks 0..%d: %s\n", s.Ranks.Self, s.Ranks.Count-1, s.Ranks.Basis)
	fmt.Fprintf(w, "holding %d VIPs; VIPs each rank is preferred master for: %v\n", s.Held, s.Share)
	switch {
	case strings.HasPrefix(s.Check, "none"):
		fmt.Fprintf(w, "check: %s\n", s.Check)
	case s.CheckPassedAtStart:
		fmt.Fprintf(w, "check: %s (passed at start)\n", s.Check)
	default:
		fmt.Fprintf(w, "check: %s (failed at start: no VIP until it passes)\n", s.Check)
	}
	if s.Error != "" {
		fmt.Fprintf(w, "error: %s\n", s.Error)
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	for _, f := range s.Findings {
		fmt.Fprintf(w, "VRID finding: %s\n", f)
	}
	switch {
	case s.FirewallError != "":
		fmt.Fprintf(w, "firewall: %s\n", s.FirewallError)
	case len(s.Firewall) > 0:
		fmt.Fprintf(w, "firewall: rule in %s, %d packets admitted\n", strings.Join(s.Firewall, ", "), s.FirewallPackets)
	}
	fmt.Fprintln(w)
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tSTATE\tVRID\tVIPS\tPREFERRED\tMASTER\tPRIORITY")
	notes := make([][]string, len(s.Groups))
	for i, g := range s.Groups {
		state, master := g.State, g.Master
		if state == "" {
			state = "-"
		}
		if master == "" {
			master = "-"
		}
		pref := "no"
		if g.Preferred {
			pref = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%d (effective %d)\n", g.Name, state, g.VRID, g.VIPs, pref, master, g.Priority, g.Effective)
		if g.Fault != "" {
			notes[i] = append(notes[i], "fault: "+g.Fault)
		}
		for _, c := range g.Conflicts {
			notes[i] = append(notes[i], fmt.Sprintf("conflict with %s (%s): %s, %d packets", c.Peer, c.Kind, c.Detail, c.Count))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := strings.SplitAfter(table.String(), "\n") // the header, then one row per group
	fmt.Fprint(w, rows[0])
	for i := range s.Groups {
		fmt.Fprint(w, rows[i+1])
		for _, n := range notes[i] {
			fmt.Fprintf(w, "    %s\n", n)
		}
	}
	return nil
}

// writeIPFailoverBGP prints a pool announced by BGP: the check that
// decides this node's announcements, then the speaker's peers and routes.
func writeIPFailoverBGP(w io.Writer, s ipfailover.Status) error {
	fmt.Fprintf(w, "ipfailover %s: %s, %d VIPs announced by BGP on %s from %s\n", s.ConfigName, s.Phase, s.VIPs, s.Interface, s.Address)
	fmt.Fprintf(w, "announcing %d VIPs\ncheck: %s\n", s.Held, s.Check)
	if s.Error != "" {
		fmt.Fprintf(w, "error: %s\n", s.Error)
	}
	for _, warn := range s.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	if s.BGP != nil {
		node.WriteBGP(w, s.BGP)
	}
	return nil
}
