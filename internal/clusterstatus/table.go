package clusterstatus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the view for a person: one block of rows per VIP (its
// holder, then each node's state, effective and base priority and failing
// checks), the reasons under it, then the BGP VIPs (the nodes announcing
// each, every node's route and sessions), then the nodes, then what is
// wrong.
func WriteTable(w io.Writer, v View) error {
	reached := 0
	for _, n := range v.Nodes {
		if n.Reachable {
			reached++
		}
	}
	fmt.Fprintf(w, "%s: %d nodes, %d answered\n\n", v.Source, len(v.Nodes), reached)
	// A cluster whose every VIP is announced by BGP has no VRRP table.
	if len(v.VIPs) > 0 || len(v.BGP) == 0 {
		if err := writeVRRP(w, v.VIPs); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	if len(v.BGP) > 0 {
		if err := writeBGP(w, v.BGP); err != nil {
			return err
		}
		fmt.Fprintln(w)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tROLE\tADDRESS\tANSWER")
	for _, n := range v.Nodes {
		answer := "ok"
		if !n.Reachable {
			answer = "UNREACHABLE: " + n.Error
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", n.Name, dash(n.Role), n.Address, answer)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if v.OK() {
		fmt.Fprintln(w, "ok: every VIP has one holder and every node answered")
		return nil
	}
	if len(v.Problems) == 1 {
		fmt.Fprintln(w, "1 problem:")
	} else {
		fmt.Fprintf(w, "%d problems:\n", len(v.Problems))
	}
	for _, p := range v.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
	return nil
}

// writeVRRP prints one block of rows per VRRP VIP with the reasons under
// each member.
func writeVRRP(w io.Writer, vips []VIP) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "VIP\tINSTANCE\tVRID\tHOLDER\tNODE\tSTATE\tPRIORITY\tFAILING CHECKS")
	var notes [][]string // per table row after the header
	for _, x := range vips {
		head := fmt.Sprintf("%s\t%s\t%d\t%s", dash(strings.Join(x.Addresses, ",")), instanceName(x), x.VRID, holder(x))
		if len(x.Members) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\n", head)
			notes = append(notes, nil)
			continue
		}
		for i, m := range x.Members {
			if i > 0 {
				head = "\t\t\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", head, m.Node, m.State, priority(m), failing(m))
			notes = append(notes, memberNotes(m))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := strings.SplitAfter(table.String(), "\n")
	fmt.Fprint(w, rows[0])
	for i, n := range notes {
		fmt.Fprint(w, rows[i+1])
		for _, line := range n {
			fmt.Fprintf(w, "    %s\n", line)
		}
	}
	return nil
}

// writeBGP prints the VIPs announced by BGP: the nodes announcing each,
// then each node's route and sessions, with why a route is not
// announced, or is demoted, under its row.
func writeBGP(w io.Writer, vips []BGPVIP) error {
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "BGP VIP\tROLE\tANNOUNCED BY\tNODE\tROUTE\tSESSIONS UP")
	var notes []string // per table row after the header
	for _, x := range vips {
		by := strings.Join(x.Announcers, ",")
		if by == "" {
			by = "NONE"
		}
		head := fmt.Sprintf("%s\t%s\t%s", x.Address, dash(x.Role), by)
		if len(x.Members) == 0 {
			fmt.Fprintf(tw, "%s\t-\t-\t-\n", head)
			notes = append(notes, "")
			continue
		}
		for i, m := range x.Members {
			if i > 0 {
				head = "\t\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", head, m.Node, m.Route, dash(m.Sessions))
			note := ""
			if (m.Route == RouteNotAnnounced || m.Route == RouteDemoted) && m.Reason != "" {
				note = m.Node + ": " + m.Reason
			}
			notes = append(notes, note)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	rows := strings.SplitAfter(table.String(), "\n")
	fmt.Fprint(w, rows[0])
	for i, n := range notes {
		fmt.Fprint(w, rows[i+1])
		if n != "" {
			fmt.Fprintf(w, "    %s\n", n)
		}
	}
	return nil
}

// WriteJSON writes the view as indented JSON.
func WriteJSON(w io.Writer, v View) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func instanceName(x VIP) string {
	if x.Service != "" {
		return x.Instance + " (" + x.Service + ")"
	}
	return x.Instance
}

// holder is the HOLDER column: the one node, or what is wrong.
func holder(x VIP) string {
	switch len(x.Holders) {
	case 0:
		return "NONE"
	case 1:
		return x.Holders[0]
	}
	return fmt.Sprintf("%d HOLDERS: %s", len(x.Holders), strings.Join(x.Holders, ","))
}

func priority(m Member) string {
	if m.State == Unreachable {
		return "-"
	}
	if m.Effective == m.Base {
		return fmt.Sprint(m.Effective)
	}
	return fmt.Sprintf("%d (base %d)", m.Effective, m.Base)
}

func failing(m Member) string {
	if len(m.Failing) == 0 {
		return "-"
	}
	var names []string
	for _, c := range m.Failing {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}

// memberNotes are the lines under a member's row: its fault and why each
// failing check fails.
func memberNotes(m Member) []string {
	var out []string
	if m.Fault != "" {
		out = append(out, m.Node+" fault: "+m.Fault)
	}
	if m.State == "MASTER" && m.LastReason != "" {
		out = append(out, m.Node+" "+m.LastReason)
	}
	for _, c := range m.Failing {
		if c.Reason != "" {
			out = append(out, fmt.Sprintf("%s %s failing: %s", m.Node, c.Name, c.Reason))
		}
	}
	return out
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
