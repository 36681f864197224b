package demo

import (
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/vipstack/vipstack/internal/node"
)

// Observation is what the live view knows at one moment: each node's VRRP
// instances as its status endpoint reports them.
type Observation struct {
	Elapsed time.Duration
	Nodes   []NodeObs
}

// NodeObs is one node in an Observation.
type NodeObs struct {
	Name string
	Addr netip.Addr
	// Gone says why the node has no status ("powered off", "starting",
	// "stopped"); empty while its agent answers.
	Gone string
	Inst map[string]InstObs // by VIP kind
	// Left lists the VIP kinds whose address is still on the interface of
	// a node whose agent does not answer (killed with nothing left to
	// remove it): hosts may still send there.
	Left []string
	// Stray lists the VIP kinds whose address is on the interface of a
	// node whose agent answers but does not report MASTER for it: the
	// kernel and the agent disagree, and the VIP may be on two nodes.
	Stray []string
}

// InstObs is one VRRP instance of a node.
type InstObs struct {
	State    string   // MASTER, BACKUP, FAULT, INIT
	Priority int      // effective
	Down     []string // the failing checks, as the view names them
	Fault    string
	Reason   string // why it entered its state
}

// checkLabel names a failing check for a person.
func checkLabel(source string) string {
	switch strings.TrimPrefix(source, "script ") {
	case "chk_ocp_lb":
		return "LB down"
	case "chk_ocp_both":
		return "API down"
	case "chk_ingress":
		return "router down"
	case "chk_dns":
		return "DNS down"
	}
	return source + " down"
}

// ObserveNode turns a node's status into its row of the view.
func ObserveNode(name string, addr netip.Addr, s node.Status) NodeObs {
	n := NodeObs{Name: name, Addr: addr, Inst: map[string]InstObs{}}
	for _, in := range s.VRRP {
		k := kindOf(in.Name)
		if k == "" {
			continue
		}
		o := InstObs{State: in.State, Priority: in.Effective, Fault: in.Fault}
		for _, c := range in.Contributions {
			if !c.OK && (c.Weight != 0 || c.Fault) {
				o.Down = append(o.Down, checkLabel(c.Source))
			}
		}
		if in.LastTransition != nil {
			o.Reason = in.LastTransition.Reason
		}
		n.Inst[k] = o
	}
	return n
}

// Holders returns the nodes that report MASTER for kind, and those whose
// interface has its address although their agent does not answer or does
// not report MASTER for it (the view reads both, so that it never shows
// one holder while the kernel has the address on several nodes).
func (o Observation) Holders(kind string) []string {
	var out []string
	for _, n := range o.Nodes {
		switch {
		case n.Gone == "" && n.Inst[kind].State == "MASTER":
			out = append(out, n.Name)
		case n.Gone == "" && slices.Contains(n.Stray, kind):
			out = append(out, n.Name+" (not MASTER, yet the address is on its interface)")
		case n.Gone != "" && slices.Contains(n.Left, kind):
			out = append(out, n.Name+" (its agent is gone; the address is still on its interface)")
		}
	}
	return out
}

func holderText(h []string) string {
	switch len(h) {
	case 0:
		return "nobody"
	case 1:
		return h[0]
	}
	return strings.Join(h, "+") + " (SEVERAL CLAIM IT)"
}

const indent = "         "

// Table renders the observation without its time: a line naming each
// VIP's holder, then one row per node with each instance's effective
// priority (* marks the holder) and the checks that fail.
func (o Observation) Table() string {
	var b strings.Builder
	var heads []string
	for _, v := range VIPs() {
		heads = append(heads, fmt.Sprintf("%s VIP on %s", v.Kind, holderText(o.Holders(v.Kind))))
	}
	b.WriteString(strings.Join(heads, ", ") + "\n")
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, indent+"node")
	for _, v := range VIPs() {
		fmt.Fprintf(tw, "\t%s %s", v.Kind, v.Addr)
	}
	fmt.Fprintln(tw)
	for _, n := range o.Nodes {
		fmt.Fprint(tw, indent+n.Name)
		if n.Gone != "" {
			fmt.Fprintf(tw, "\t(%s)\t\t\n", n.Gone)
			continue
		}
		for _, v := range VIPs() {
			in, ok := n.Inst[v.Kind]
			fmt.Fprint(tw, "\t"+cell(in, ok))
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	return strings.TrimRight(b.String(), "\n")
}

func cell(in InstObs, ok bool) string {
	if !ok {
		return "-"
	}
	mark := " "
	switch in.State {
	case "MASTER":
		mark = "*"
	case "FAULT":
		return "FAULT " + in.Fault
	case "INIT":
		return " init"
	}
	s := fmt.Sprintf("%s%d", mark, in.Priority)
	if len(in.Down) > 0 {
		s += " " + strings.Join(in.Down, ", ")
	}
	return s
}

var ipv4Text = regexp.MustCompile(`\b\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}\b`)

// Moves lists, for each VIP whose holders differ between prev and cur, a
// line saying from whom to whom it moved and why (the new holder's reason,
// with node addresses replaced by names).
func Moves(prev, cur Observation) []string {
	names := map[string]string{}
	for _, n := range cur.Nodes {
		names[n.Addr.String()] = n.Name
	}
	var out []string
	for _, v := range VIPs() {
		was, now := prev.Holders(v.Kind), cur.Holders(v.Kind)
		if strings.Join(was, ",") == strings.Join(now, ",") {
			continue
		}
		line := fmt.Sprintf("%s VIP %s: %s -> %s", v.Kind, v.Addr, holderText(was), holderText(now))
		if len(now) == 1 {
			for _, n := range cur.Nodes {
				if n.Name == now[0] && n.Inst[v.Kind].Reason != "" {
					r := ipv4Text.ReplaceAllStringFunc(n.Inst[v.Kind].Reason, func(a string) string {
						if name, ok := names[a]; ok {
							return name
						}
						return a
					})
					line += " (" + r + ")"
				}
			}
		}
		out = append(out, line)
	}
	return out
}

// stamp formats an elapsed time for the left margin.
func stamp(d time.Duration) string {
	return fmt.Sprintf("%7s", fmt.Sprintf("+%.1fs", d.Seconds()))
}

// Legend explains the view's numbers.
const Legend = `How to read the view: each VIP goes to the node with the highest priority
(* marks the holder; at equal priorities the holder keeps it, and if several
claim it at once the higher address wins). As in OpenShift's keepalived.conf:
  API VIP      bootstrap 70; master 40, +20 while its load balancer answers,
               +5 while its LB or its API answers (so 65 < 70 until the
               bootstrap leaves, and a master with a working LB beats one
               without)
  DNS VIP      bootstrap 70; master 40, +20 while its DNS answers
  Ingress VIP  20, +50 while the node's router answers
Failing checks are named next to the priority.`
