//go:build linux

package main

import (
	"fmt"
	"strings"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

func (r result) report() *benchdoc.Report {
	rep := &benchdoc.Report{}
	o := r.O
	var rounds []string
	for _, ph := range o.Phases {
		rounds = append(rounds, fmt.Sprintf("%s %s to %s", ph.Style, ph.From, ph.To))
	}
	rep.Para("vipstack upgrade: %d masters and %d workers running `vipstack node`, VRRP adverts every %v; %d new TCP connections/s to each VIP; every node's binary replaced one at a time (SIGTERM, and once the agent has exited the other build started), in rounds: %s; the next node once every VIP kept one holder for %v. Holders read every 20 ms. systemd: the build installed over the node's one path (renamed over it), the service restarted; static-pod: the new image's own path, the agent process 1 of a PID namespace of its own.",
		o.Masters, o.Workers, o.Advert, o.Rate, strings.Join(rounds, ", "), o.Settle)
	h := []string{"node", "style", "build", "took"}
	for _, t := range r.Targets {
		h = append(h, t.Kind+" moves", t.Kind+" no holder", t.Kind+" failed")
	}
	tab := benchdoc.Table{Header: h}
	for _, s := range r.Steps {
		row := []string{s.Node, s.Style, s.From + " to " + s.To, fmt.Sprintf("%.1f s", s.Took.Seconds())}
		for i := range r.Targets {
			m := s.Moves[i]
			moves := fmt.Sprintf("%d (%s)", m.Moves, strings.Join(m.Path, " to "))
			row = append(row, moves, fmt.Sprintf("%d ms", m.None*20), fmt.Sprint(s.Failed[i]))
		}
		tab.Add(row...)
	}
	rep.Table(tab)
	var totals []string
	for i, t := range r.Targets {
		if i < len(r.OKConns) {
			totals = append(totals, fmt.Sprintf("%s %s: %d connected, %d failed", t.Kind, t.Addr, r.OKConns[i], r.BadConns[i]))
		}
	}
	rep.List(totals)
	var errs []string
	for _, s := range r.Steps {
		for _, e := range s.Errors {
			errs = append(errs, s.Node+" ("+s.Style+", "+s.From+" to "+s.To+"): "+e)
		}
	}
	if len(errs) > 0 {
		rep.Para("First connection errors of each replacement:")
		rep.List(errs)
	}
	if r.OK() {
		rep.Para("PASS: no failed connection, no VIP moved twice by a replacement.")
	} else {
		rep.Para("MISS: the target is no failed connection and no VIP moved twice by one replacement.")
	}
	return rep
}
