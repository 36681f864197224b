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
	rep.Para("vipstack upgrade: %d masters and %d workers running `vipstack node`, VRRP adverts every %v; %d new TCP connections/s to each VIP; every node's binary replaced (SIGTERM, then the other build started) one at a time, old to new, then new to old; the next node once every VIP kept one holder for %v. Holders read every 20 ms.",
		o.Masters, o.Workers, o.Advert, o.Rate, o.Settle)
	h := []string{"node", "build", "took"}
	for _, t := range r.Targets {
		h = append(h, t.Kind+" moves", t.Kind+" no holder", t.Kind+" failed")
	}
	tab := benchdoc.Table{Header: h}
	for _, s := range r.Steps {
		row := []string{s.Node, s.From + " to " + s.To, fmt.Sprintf("%.1f s", s.Took.Seconds())}
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
			errs = append(errs, s.Node+" ("+s.From+" to "+s.To+"): "+e)
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
