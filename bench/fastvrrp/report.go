package main

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// advert is the advertisement interval measured.
const advert = 10 * time.Millisecond

// backupPriority is the backup's priority in each pair.
const backupPriority = 100

// slack is what the crash bound allows beyond Master_Down_Interval.
const slack = 10 * time.Millisecond

// crashBound is 3 x advert + skew + 10 ms for the backup at
// backupPriority (RFC 5798 section 6.1).
func crashBound() time.Duration {
	return 3*advert + time.Duration(256-backupPriority)*advert/256 + slack
}

// nGapBounds is the number of bounds of the gap histogram.
const nGapBounds = 8

// gapBounds are the upper bounds of the gap histogram's buckets; the last
// bucket is everything longer. 46 ms is the backup's Master_Down_Interval
// plus 10 ms: a gap that long lets it take over.
func gapBounds() [nGapBounds]time.Duration {
	return [...]time.Duration{
		10500 * time.Microsecond, 11 * time.Millisecond, 12 * time.Millisecond, 15 * time.Millisecond,
		20 * time.Millisecond, 30 * time.Millisecond, 36 * time.Millisecond, 46 * time.Millisecond,
	}
}

// pairResult is one implementation's pair over the run.
type pairResult struct {
	Impl string
	RT   int // vrrp_rt_priority; 0 none
	// FalseFailovers counts the runs of advertisements from the backup
	// while the master lived (each a takeover the master then ended).
	FalseFailovers int
	MaxGap         time.Duration // the master's longest silence in the soak
	Adverts        int           // the master's advertisements in the soak
	Gaps           []int         // the master's gaps in the soak, by gapBounds
	Killed         int           // VRRP processes of the pair that died in the soak
	// LongGaps counts the master's gaps over 46 ms in the soak, Shared
	// those of them that overlap one of the other implementation's master
	// at the same settings.
	LongGaps, Shared int
	Crashes          []time.Duration
	CrashErrs        []string
	// MasterCPU and BackupCPU are the CPU time of each node's processes
	// over the soak (reaped children included: an engine the kernel
	// killed), in per cent of one CPU.
	MasterCPU, BackupCPU float64
}

// Label names the pair in tables: the implementation and its
// vrrp_rt_priority.
func (p pairResult) Label() string {
	if p.RT == 0 {
		return p.Impl + ", no rt priority"
	}
	return fmt.Sprintf("%s, rt priority %d", p.Impl, p.RT)
}

// median of ds; 0 for none.
func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func msf(d time.Duration) string { return fmt.Sprintf("%.1f", float64(d)/float64(time.Millisecond)) }

// verdicts are the targets for vipstack, with keepalived's figures
// beside them for reference.
func verdicts(vs, ka pairResult, soak time.Duration) []string {
	out := []string{fmt.Sprintf("%s  vipstack false failovers in %v under load: %d (want 0; keepalived: %d)",
		verdict(vs.FalseFailovers == 0 && vs.Adverts > 0), soak, vs.FalseFailovers, ka.FalseFailovers)}
	if len(vs.Crashes) == 0 {
		return append(out, fmt.Sprintf("MISS  vipstack crash failover: no trial measured (%d failed)", len(vs.CrashErrs)))
	}
	m := median(vs.Crashes)
	ok := m <= crashBound() && len(vs.CrashErrs) == 0
	return append(out, fmt.Sprintf("%s  vipstack crash failover median %s ms, max %s ms, %d failed (want median <= %s ms, 3 x advert + skew + 10 ms; keepalived median %s ms)",
		verdict(ok), msf(m), msf(slices.Max(vs.Crashes)), len(vs.CrashErrs), msf(crashBound()), msf(median(ka.Crashes))))
}

// reportOpts are the run's settings the report names.
type reportOpts struct {
	rt, rlimit, load int
	soak             time.Duration
}

// report is the run's result; res[0] and res[1] are vipstack's and
// keepalived's pairs at -rt-priority, which the verdicts compare.
func report(res []pairResult, o reportOpts, load string) *benchdoc.Report {
	var rep benchdoc.Report
	rt := "no vrrp_rt_priority"
	if o.rt > 0 {
		rt = fmt.Sprintf("vrrp_rt_priority %d (SCHED_RR) and vrrp_rlimit_rttime %d", o.rt, o.rlimit)
		if o.rlimit == 0 {
			rt = fmt.Sprintf("vrrp_rt_priority %d (SCHED_RR; keepalived's default vrrp_rlimit_rttime, 10000)", o.rt)
		}
	}
	rep.Para("VRRPv3 advert %v, pairs at 150/100, %s, %d busy loops beside them; soak %v (load average %s at its end), then kill -9 of the master (ms from its last advert to the backup's first, as the client's kernel received them):",
		advert, rt, o.load, o.soak, load)
	tb := benchdoc.Table{Header: []string{"pair", "false failovers", "master adverts", "longest master gap (ms)", "VRRP processes died", "crash failover median [min..max] (ms)", "failed crashes", "CPU in the soak, master / backup (% of a CPU)"}}
	for _, p := range res {
		crash := "-"
		if len(p.Crashes) > 0 {
			crash = fmt.Sprintf("%s [%s..%s]", msf(median(p.Crashes)), msf(slices.Min(p.Crashes)), msf(slices.Max(p.Crashes)))
		}
		tb.Add(p.Label(), fmt.Sprint(p.FalseFailovers), fmt.Sprint(p.Adverts), msf(p.MaxGap), fmt.Sprint(p.Killed), crash, fmt.Sprint(len(p.CrashErrs)),
			fmt.Sprintf("%.1f / %.1f", p.MasterCPU, p.BackupCPU))
	}
	rep.Table(tb)
	rep.Para("%s", cpuLine(res))
	rep.Para("The masters' gaps between adverts during the soak (count per bucket, ms; the last column counts the gaps over 46 ms that overlap one of the other implementation's master at the same settings: both silent at once):")
	rep.Table(gapTable(res))
	rep.List(verdicts(res[0], res[1], o.soak))
	var errs []string
	for _, p := range res {
		for _, e := range p.CrashErrs {
			errs = append(errs, p.Label()+": "+e)
		}
	}
	if len(errs) > 0 {
		rep.Para("Failed crash trials:")
		rep.List(errs)
	}
	return &rep
}

// cpuLine compares each vipstack pair's CPU in the soak with keepalived's
// at the same settings (no target: the issue sets none at this interval).
func cpuLine(res []pairResult) string {
	var parts []string
	for _, v := range res {
		if v.Impl != "vipstack" {
			continue
		}
		for _, k := range res {
			if k.Impl == "keepalived" && k.RT == v.RT && k.MasterCPU > 0 && k.BackupCPU > 0 {
				parts = append(parts, fmt.Sprintf("%s: master %.2f, backup %.2f", v.Label(), v.MasterCPU/k.MasterCPU, v.BackupCPU/k.BackupCPU))
			}
		}
	}
	if len(parts) == 0 {
		return "CPU in the soak, vipstack/keepalived: not measured."
	}
	return "CPU in the soak, vipstack/keepalived at the same settings (no target): " + strings.Join(parts, "; ") + "."
}

// gapTable is the masters' gap histograms, one row per pair.
func gapTable(res []pairResult) benchdoc.Table {
	h := []string{"master of"}
	lo := "0"
	for _, b := range gapBounds() {
		h = append(h, fmt.Sprintf("%s-%s", lo, msf(b)))
		lo = msf(b)
	}
	tb := benchdoc.Table{Header: append(h, "> "+lo, "of them shared")}
	for _, p := range res {
		row := []string{p.Label()}
		for i := range nGapBounds + 1 {
			n := 0
			if i < len(p.Gaps) {
				n = p.Gaps[i]
			}
			row = append(row, fmt.Sprint(n))
		}
		tb.Add(append(row, fmt.Sprint(p.Shared))...)
	}
	return tb
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}
