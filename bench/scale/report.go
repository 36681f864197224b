package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// result is one implementation's run.
type result struct {
	Impl     string
	Startup  time.Duration // process start to every VIP on the interfaces
	Restart  time.Duration // kill -9 of the VRRP process to every VIP on the interfaces again
	CPU      float64       // percent of one CPU at rest
	RSS, PSS float64       // MiB, the process group at the end of the rest window
	Procs    []string      // each process's memory then (describeProcs)
	Scraped  scrapes       // a second window, /metrics scraped (vipstack only)
	Err      string        // why there are no figures
}

// scrapes are the figures of the window with /metrics scraped.
type scrapes struct {
	N        int           // scrapes
	Bytes    int           // the last answer's, gzipped
	Slowest  time.Duration // the longest a scrape took
	CPU, RSS float64       // as result's, over and at the end of that window
	Procs    []string      // each process's memory at its end
}

// about describes the scrapes' answers.
func (s scrapes) about() string {
	return fmt.Sprintf("%.0f kB gzipped, the slowest in %.0f ms", float64(s.Bytes)/1e3, s.Slowest.Seconds()*1e3)
}

// report builds the table and the verdicts for keepalived's and vipstack's
// results.
func report(ka, vs result, instances, vips int, rest, scrape time.Duration) *benchdoc.Report {
	var rep benchdoc.Report
	rep.Para("%d vrrp_instances (VRRPv2, advert 1 s, %d per interface) and %d VIPs on one node; CPU at rest over %v after the second gratuitous ARP burst:", instances, vridsPerLink, vips, rest)
	tb := benchdoc.Table{Header: []string{"figure", "keepalived", "vipstack", "vipstack/keepalived", "target"}}
	type row struct {
		name   string
		k, v   float64
		format string
	}
	rows := []row{
		{"start-up to every VIP held (s)", ka.Startup.Seconds(), vs.Startup.Seconds(), "%.2f"},
		{"CPU at rest (% of one CPU)", ka.CPU, vs.CPU, "%.2f"},
		{"RSS (MiB)", ka.RSS, vs.RSS, "%.1f"},
		{"PSS (MiB)", ka.PSS, vs.PSS, "%.1f"},
	}
	if ka.Restart > 0 || vs.Restart > 0 {
		rows = append(rows, row{"kill -9 of the VRRP process to every VIP held again (s)", ka.Restart.Seconds(), vs.Restart.Seconds(), "%.2f"})
	}
	var verdicts []string
	for i, r := range rows {
		cell := func(x float64, res result) string {
			if res.Err != "" {
				return "failed"
			}
			return fmt.Sprintf(r.format, x)
		}
		ratio, target := "-", "<= 1.0"
		if i >= 3 {
			target = "(reported)"
		}
		switch {
		case ka.Err == "" && vs.Err == "" && r.k > 0:
			q := r.v / r.k
			ratio = fmt.Sprintf("%.2f", q)
			if i < 3 {
				verdicts = append(verdicts, fmt.Sprintf("%s  %s: %.2f of keepalived's (want <= 1.0)", verdict(q <= 1), r.name, q))
			}
		case ka.Err == "" && vs.Err == "" && i < 3:
			// keepalived's figure is 0 (CPU below one clock tick over
			// the window): only 0 is as good.
			verdicts = append(verdicts, fmt.Sprintf("%s  %s: %s against keepalived's 0 (want <= 1.0)", verdict(r.v <= 0), r.name, fmt.Sprintf(r.format, r.v)))
		case i < 3:
			verdicts = append(verdicts, fmt.Sprintf("MISS  %s: no figure to compare (%s)", r.name, failure(ka, vs)))
		}
		tb.Add(r.name, cell(r.k, ka), cell(r.v, vs), ratio, target)
	}
	if sc := vs.Scraped; sc.N > 0 {
		for _, r := range []struct{ name, v string }{
			{fmt.Sprintf("CPU, /metrics scraped every %v (%% of one CPU)", scrape), fmt.Sprintf("%.2f", sc.CPU)},
			{"RSS after those scrapes (MiB)", fmt.Sprintf("%.1f", sc.RSS)},
		} {
			tb.Add(r.name, "-", r.v, "-", "(reported: keepalived serves no metrics)")
		}
	}
	rep.Table(tb)
	rep.List(verdicts)
	for _, r := range []result{ka, vs} {
		if len(r.Procs) > 0 {
			rep.Para("%s's processes at the end of the window (MiB): %s.", r.Impl, strings.Join(r.Procs, "; "))
		}
	}
	if sc := vs.Scraped; sc.N > 0 {
		rep.Para("vipstack's, after the second window of %v with %d scrapes of /metrics (%s): %s.", rest, sc.N, sc.about(), strings.Join(sc.Procs, "; "))
	}
	return &rep
}

func failure(ka, vs result) string {
	switch {
	case ka.Err != "" && vs.Err != "":
		return "keepalived: " + ka.Err + "; vipstack: " + vs.Err
	case ka.Err != "":
		return "keepalived: " + ka.Err
	case vs.Err != "":
		return "vipstack: " + vs.Err
	}
	return ""
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}
