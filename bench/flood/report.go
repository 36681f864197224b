package main

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// Implementation names.
const (
	implKeepalived = "keepalived"
	implHAProxy    = "haproxy"
	implVipstack   = "vipstack"
)

// userHZ is the unit of utime and stime in /proc/PID/stat (USER_HZ, 100 on
// every Linux architecture Go supports).
const userHZ = 100

// procStat is what bench/flood reads from one /proc/PID/stat line.
type procStat struct {
	PGrp int
	CPU  time.Duration // utime + stime
}

// parseStat parses a /proc/PID/stat line. The command name (field 2) is in
// parentheses and may hold spaces, so fields are counted from its end.
func parseStat(line string) (procStat, error) {
	i := strings.LastIndexByte(line, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc stat line %q: no command name in parentheses", line)
	}
	f := strings.Fields(line[i+1:])
	// f[0] is field 3 (state): pgrp is field 5, utime 14, stime 15.
	if len(f) < 13 {
		return procStat{}, fmt.Errorf("/proc stat line %q: %d fields after the command, want at least 13", line, len(f))
	}
	pgrp, err1 := strconv.Atoi(f[2])
	ut, err2 := strconv.ParseInt(f[11], 10, 64)
	st, err3 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return procStat{}, fmt.Errorf("/proc stat line %q: %w", line, err)
	}
	return procStat{PGrp: pgrp, CPU: time.Duration(ut+st) * time.Second / userHZ}, nil
}

// parseStatusKB returns the value in bytes of a "Name:   123 kB" line of
// /proc/PID/status.
func parseStatusKB(status, name string) (uint64, error) {
	for _, line := range strings.Split(status, "\n") {
		rest, ok := strings.CutPrefix(line, name+":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status %s: %q, want \"<n> kB\"", name, rest)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status %s: %w", name, err)
		}
		return kb << 10, nil
	}
	return 0, fmt.Errorf("/proc status: no %s line", name)
}

// frontendRow is the FRONTEND row of one proxy in haproxy's stats CSV
// (which vipstack's stats page writes in the same column order).
type frontendRow struct {
	Scur, Smax, Slim int
}

// parseStatsCSV returns the FRONTEND row of proxy px from a stats CSV.
func parseStatsCSV(text, px string) (frontendRow, error) {
	text = strings.TrimPrefix(text, "# ")
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord = -1
	head, err := r.Read()
	if err != nil {
		return frontendRow{}, fmt.Errorf("stats CSV header: %w", err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[h] = i
	}
	for _, c := range []string{"pxname", "svname", "scur", "smax", "slim"} {
		if _, ok := col[c]; !ok {
			return frontendRow{}, fmt.Errorf("stats CSV: no %s column in %v", c, head)
		}
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return frontendRow{}, fmt.Errorf("stats CSV: no FRONTEND row for %s", px)
		}
		if err != nil {
			return frontendRow{}, fmt.Errorf("stats CSV: %w", err)
		}
		if len(rec) <= col["slim"] || rec[col["pxname"]] != px || rec[col["svname"]] != "FRONTEND" {
			continue
		}
		num := func(c string) int { n, _ := strconv.Atoi(rec[col[c]]); return n }
		return frontendRow{Scur: num("scur"), Smax: num("smax"), Slim: num("slim")}, nil
	}
}

// percentile returns the p-th percentile (0..100, nearest rank) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s))+0.999999) - 1
	return s[min(max(rank, 0), len(s)-1)]
}

// ratio formats a/b with two decimals, or "-" when b is zero.
func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// vrrpFigures are one implementation's figures under the VRRP flood.
type vrrpFigures struct {
	Impl                   string
	Sent                   int
	Flood                  time.Duration // how long the flood took
	MasterCPU, BackupCPU   time.Duration // during the flood
	MasterIdle, BackupIdle time.Duration // during as long a window before it
	Samples, Violations    int           // VIP samples every 10 ms; samples where the master did not hold both VIPs alone
	Moved                  [2]int        // samples where VI_1's, VI_2's VIP was not on the master alone
	Counted                float64       // drops the master counted (vipstack only; -1 unknown)
}

// lbFigures are one balancer's figures with the slow clients.
type lbFigures struct {
	Impl             string
	Conns, Admitted  int // clients connected; greeted by the backend
	BaseRSS, RSS     uint64
	HWM              uint64
	Stats            frontendRow
	TrickledBytesOut int // bytes the clients trickled
}

// dnsFigures are the DNS server's figures under dnsperf.
type dnsFigures struct {
	QPS                  float64
	Completed, Lost      string
	Health, HealthFailed int
	IdleP50, IdleP99     time.Duration // health latency before the flood
	P50, P99             time.Duration // under the flood
	Queries, QueryFailed int
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }

func mib(b uint64) string { return fmt.Sprintf("%.1f", float64(b)/(1<<20)) }

func printVRRP(w io.Writer, figs []vrrpFigures) error {
	var rep benchdoc.Report
	vrrpReport(&rep, figs)
	return rep.Text(w)
}

func vrrpReport(rep *benchdoc.Report, figs []vrrpFigures) {
	tb := benchdoc.Table{Header: []string{"VRRP flood", "packets", "seconds", "master CPU s", "backup CPU s", "idle master+backup CPU s", "VIP samples", "mastership moved: any", "VI_1 (multicast)", "VI_2 (unicast)"}}
	var vs, ka *vrrpFigures
	for i := range figs {
		f := &figs[i]
		tb.Add(f.Impl, fmt.Sprint(f.Sent), fmt.Sprintf("%.1f", f.Flood.Seconds()), fmt.Sprintf("%.2f", f.MasterCPU.Seconds()), fmt.Sprintf("%.2f", f.BackupCPU.Seconds()),
			fmt.Sprintf("%.2f", (f.MasterIdle+f.BackupIdle).Seconds()), fmt.Sprint(f.Samples), fmt.Sprint(f.Violations), fmt.Sprint(f.Moved[0]), fmt.Sprint(f.Moved[1]))
		switch f.Impl {
		case implVipstack:
			vs = f
		case implKeepalived:
			ka = f
		}
	}
	rep.Table(tb)
	if vs != nil && vs.Counted >= 0 {
		rep.Para("vipstack's master counted %.0f dropped packets of %d sent (the rest never reached its socket or were its own).", vs.Counted, vs.Sent)
	}
	if vs != nil && ka != nil {
		rep.Para("CPU under the flood, vipstack/keepalived: master %s, master+backup %s.",
			ratio(vs.MasterCPU.Seconds(), ka.MasterCPU.Seconds()), ratio((vs.MasterCPU+vs.BackupCPU).Seconds(), (ka.MasterCPU+ka.BackupCPU).Seconds()))
	}
}

func printLB(w io.Writer, figs []lbFigures) error {
	var rep benchdoc.Report
	lbReport(&rep, figs)
	return rep.Text(w)
}

func lbReport(rep *benchdoc.Report, figs []lbFigures) {
	tb := benchdoc.Table{Header: []string{"slow clients", "connected", "greeted", "scur", "smax", "slim", "RSS before MiB", "RSS MiB", "peak RSS MiB", "KiB per connection"}}
	var vs, hp *lbFigures
	for i := range figs {
		f := &figs[i]
		per := "-"
		if f.Conns > 0 && f.RSS > f.BaseRSS {
			per = fmt.Sprintf("%.1f", float64(f.RSS-f.BaseRSS)/1024/float64(f.Conns))
		}
		tb.Add(f.Impl, fmt.Sprint(f.Conns), fmt.Sprint(f.Admitted), fmt.Sprint(f.Stats.Scur), fmt.Sprint(f.Stats.Smax), fmt.Sprint(f.Stats.Slim),
			mib(f.BaseRSS), mib(f.RSS), mib(f.HWM), per)
		switch f.Impl {
		case implVipstack:
			vs = f
		case implHAProxy:
			hp = f
		}
	}
	rep.Table(tb)
	if vs != nil && hp != nil {
		rep.Para("RSS with the clients connected, vipstack/haproxy: %s (peak %s; growth over the idle process %s).",
			ratio(float64(vs.RSS), float64(hp.RSS)), ratio(float64(vs.HWM), float64(hp.HWM)),
			ratio(float64(vs.RSS)-float64(vs.BaseRSS), float64(hp.RSS)-float64(hp.BaseRSS)))
	}
}

func printDNS(w io.Writer, f dnsFigures) error {
	var rep benchdoc.Report
	dnsReport(&rep, f)
	return rep.Text(w)
}

func dnsReport(rep *benchdoc.Report, f dnsFigures) {
	tb := benchdoc.Table{Header: []string{"DNS flood", "dnsperf QPS", "completed", "lost", "health probes (failed)", "health p50 ms", "health p99 ms", "idle p50 ms", "idle p99 ms", "real queries (failed)"}}
	tb.Add("vipstack dns", fmt.Sprintf("%.0f", f.QPS), f.Completed, f.Lost, fmt.Sprintf("%d (%d)", f.Health, f.HealthFailed),
		ms(f.P50), ms(f.P99), ms(f.IdleP50), ms(f.IdleP99), fmt.Sprintf("%d (%d)", f.Queries, f.QueryFailed))
	rep.Table(tb)
}
