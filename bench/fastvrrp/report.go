package main

import (
	"fmt"
	"slices"
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

// pairResult is one implementation's pair over the run.
type pairResult struct {
	Impl string
	// FalseFailovers counts the runs of advertisements from the backup
	// while the master lived (each a takeover the master then ended).
	FalseFailovers int
	MaxGap         time.Duration // the master's longest silence in the soak
	Adverts        int           // the master's advertisements in the soak
	Crashes        []time.Duration
	CrashErrs      []string
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

func report(vs, ka pairResult, soak time.Duration, load int) *benchdoc.Report {
	var rep benchdoc.Report
	rep.Para("VRRPv3 advert %v, pairs at 150/100, %d busy loops beside them; soak %v, then kill -9 of the master (ms from its last advert to the backup's first):", advert, load, soak)
	tb := benchdoc.Table{Header: []string{"pair", "false failovers", "master adverts", "longest master gap (ms)", "crash failover median [min..max] (ms)", "failed crashes"}}
	for _, p := range []pairResult{ka, vs} {
		crash := "-"
		if len(p.Crashes) > 0 {
			crash = fmt.Sprintf("%s [%s..%s]", msf(median(p.Crashes)), msf(slices.Min(p.Crashes)), msf(slices.Max(p.Crashes)))
		}
		tb.Add(p.Impl, fmt.Sprint(p.FalseFailovers), fmt.Sprint(p.Adverts), msf(p.MaxGap), crash, fmt.Sprint(len(p.CrashErrs)))
	}
	rep.Table(tb)
	rep.List(verdicts(vs, ka, soak))
	var errs []string
	for _, p := range []pairResult{ka, vs} {
		for _, e := range p.CrashErrs {
			errs = append(errs, p.Impl+": "+e)
		}
	}
	if len(errs) > 0 {
		rep.Para("Failed crash trials:")
		rep.List(errs)
	}
	return &rep
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}
