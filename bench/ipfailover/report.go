package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// variant is one way of running the pool.
type variant struct {
	Name string // as printed and matched by -only
	Impl string // "keepalived" or "vipstack"
	// AnnounceRate is vipstack's --announce-rate (per group and second;
	// 0: unlimited).
	AnnounceRate int
}

// trialResult is what one trial measured.
type trialResult struct {
	Variant string
	// Rest, per node: CPU percent of one core, resident and proportional
	// set sizes.
	CPU []float64
	RSS []float64 // MiB
	PSS []float64 // MiB
	// VRRPPerSecond is what the client heard on the link at rest.
	VRRPPerSecond float64
	// Held is how many VIPs each node held at rest.
	Held []int
	// Moved is how many VIPs the killed node held.
	Moved int
	// First and Last are the times from the kill to the first and the
	// last gratuitous ARP from a survivor for one of the moved VIPs.
	First, Last time.Duration
	// Heard is how many gratuitous ARPs for the moved VIPs (every copy)
	// the client received from the kill until the announcements ended;
	// Peak the most of them in any 100 ms, per second: what a switch's
	// CPU would have to take. SoftnetDrops is the machine's input backlog
	// drops over the same time.
	Heard        int
	Peak         float64
	SoftnetDrops uint64
	// Answered is how many VIPs exactly one live node answered an ARP
	// request for afterwards; Twice how many got answers from two.
	Answered, Twice int
	// Unsettled, when set, says the pool never reached "every VIP held
	// once, announcements over" within the time limit; nothing else was
	// measured.
	Unsettled string
}

// summary is the medians of a variant's trials.
type summary struct {
	Variant       string
	Trials        int
	CPU, RSS, PSS float64 // mean over nodes, median over trials
	VRRPPerSecond float64
	Moved         int
	First, Last   time.Duration
	Heard         int     // median
	Peak          float64 // median
	SoftnetDrops  uint64  // the worst trial
	Answered      int     // the worst trial
	Twice         int     // the worst trial
	Lasts         []time.Duration
	Unsettled     int // trials that never settled (left out of the medians)
}

func summarize(name string, rs []trialResult) summary {
	s := summary{Variant: name, Trials: len(rs), Answered: math.MaxInt}
	var cpu, rss, pss, vrrp, heard, peak []float64
	var first, last []time.Duration
	var settled []trialResult
	for _, r := range rs {
		if r.Unsettled != "" {
			s.Unsettled++
			continue
		}
		settled = append(settled, r)
	}
	s.Trials = len(settled)
	rs = settled
	for _, r := range rs {
		cpu = append(cpu, mean(r.CPU))
		rss = append(rss, mean(r.RSS))
		pss = append(pss, mean(r.PSS))
		vrrp = append(vrrp, r.VRRPPerSecond)
		heard = append(heard, float64(r.Heard))
		peak = append(peak, r.Peak)
		s.SoftnetDrops = max(s.SoftnetDrops, r.SoftnetDrops)
		first = append(first, r.First)
		last = append(last, r.Last)
		s.Moved = max(s.Moved, r.Moved)
		s.Answered = min(s.Answered, r.Answered)
		s.Twice = max(s.Twice, r.Twice)
	}
	if len(rs) == 0 {
		s.Answered = 0
	}
	s.CPU, s.RSS, s.PSS, s.VRRPPerSecond = median(cpu), median(rss), median(pss), median(vrrp)
	s.Heard, s.Peak = int(median(heard)), median(peak)
	s.First, s.Last = medianD(first), medianD(last)
	s.Lasts = last
	return s
}

func mean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	t := 0.0
	for _, x := range v {
		t += x
	}
	return t / float64(len(v))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func medianD(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}

// ratio formats a/b ("—" when b is 0).
func ratio(a, b float64) string {
	if b == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// printReport writes the comparison table for a terminal.
func printReport(w io.Writer, vips int, sums []summary) { _ = report(vips, sums).Text(w) }

// report is the comparison table: the first summary is the reference
// (keepalived) and every other one gets ratios against it; then each
// variant's trials.
func report(vips int, sums []summary) *benchdoc.Report {
	rep := &benchdoc.Report{}
	if len(sums) == 0 {
		return rep
	}
	tb := benchdoc.Table{Header: []string{"metric"}}
	for i, s := range sums {
		tb.Header = append(tb.Header, s.Variant)
		if i > 0 {
			tb.Header = append(tb.Header, "ratio")
		}
	}
	row := func(name string, f func(s summary) (string, float64)) {
		cells := []string{name}
		_, ref := f(sums[0])
		for i, s := range sums {
			text, v := f(s)
			cells = append(cells, text)
			if i > 0 {
				cells = append(cells, ratio(v, ref))
			}
		}
		tb.Add(cells...)
	}
	ms := func(d time.Duration) (string, float64) { return fmt.Sprintf("%d ms", d.Milliseconds()), float64(d) }
	row("kill to first VIP re-announced (median)", func(s summary) (string, float64) { return ms(s.First) })
	row("kill to every VIP re-announced (median)", func(s summary) (string, float64) { return ms(s.Last) })
	row("VIPs moved", func(s summary) (string, float64) { return fmt.Sprint(s.Moved), float64(s.Moved) })
	row("gratuitous ARPs heard for the moved VIPs", func(s summary) (string, float64) { return fmt.Sprint(s.Heard), float64(s.Heard) })
	row("their peak rate at the client (per s, over 100 ms)", func(s summary) (string, float64) { return fmt.Sprintf("%.0f", s.Peak), s.Peak })
	row("input backlog drops, machine-wide (worst trial)", func(s summary) (string, float64) {
		return fmt.Sprint(s.SoftnetDrops), float64(s.SoftnetDrops)
	})
	row("CPU per node at rest", func(s summary) (string, float64) { return fmt.Sprintf("%.2f %%", s.CPU), s.CPU })
	row("RSS per node at rest", func(s summary) (string, float64) { return fmt.Sprintf("%.1f MiB", s.RSS), s.RSS })
	row("PSS per node at rest", func(s summary) (string, float64) { return fmt.Sprintf("%.1f MiB", s.PSS), s.PSS })
	row("VRRP packets/s on the link", func(s summary) (string, float64) {
		return fmt.Sprintf("%.1f", s.VRRPPerSecond), s.VRRPPerSecond
	})
	row(fmt.Sprintf("VIPs answered once (of %d, worst trial)", vips), func(s summary) (string, float64) {
		return fmt.Sprint(s.Answered), float64(s.Answered)
	})
	row("VIPs answered twice (worst trial)", func(s summary) (string, float64) { return fmt.Sprint(s.Twice), float64(s.Twice) })
	rep.Table(tb)
	var lines []string
	for _, s := range sums {
		var l []string
		for _, d := range s.Lasts {
			l = append(l, fmt.Sprintf("%d", d.Milliseconds()))
		}
		line := fmt.Sprintf("%s: every VIP re-announced after %s ms in its %d trials", s.Variant, strings.Join(l, ", "), s.Trials)
		if s.Unsettled > 0 {
			line += fmt.Sprintf("; %d more trials never settled (every VIP held once) and are left out", s.Unsettled)
		}
		lines = append(lines, line)
	}
	rep.List(lines)
	rep.List(verdicts(sums))
	return rep
}

// verdicts judges issue 32's targets for each vipstack variant against
// keepalived (the first summary), on the medians: every VIP of the dead
// node re-announced no later, and the RSS and PSS per node at rest no
// larger.
func verdicts(sums []summary) []string {
	if len(sums) < 2 || sums[0].Trials == 0 {
		return nil
	}
	ref := sums[0]
	var out []string
	for _, s := range sums[1:] {
		if s.Trials == 0 {
			out = append(out, fmt.Sprintf("MISS  every VIP re-announced, RSS and PSS: %s has no settled trial", s.Variant))
			continue
		}
		r := float64(s.Last) / float64(ref.Last)
		out = append(out, fmt.Sprintf("%s  every VIP re-announced: %s/%s = %.2f (%d against %d ms; want <= 1.00)",
			verdict(r <= 1), s.Variant, ref.Variant, r, s.Last.Milliseconds(), ref.Last.Milliseconds()))
		for _, m := range []struct {
			name    string
			us, ref float64
		}{{"RSS", s.RSS, ref.RSS}, {"PSS", s.PSS, ref.PSS}} {
			if m.ref == 0 {
				out = append(out, fmt.Sprintf("MISS  %s per node at rest: %s's is not known", m.name, ref.Variant))
				continue
			}
			r := m.us / m.ref
			out = append(out, fmt.Sprintf("%s  %s per node at rest: %s/%s = %.2f (%.1f against %.1f MiB; want <= 1.00)",
				verdict(r <= 1), m.name, s.Variant, ref.Variant, r, m.us, m.ref))
		}
	}
	return out
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// peakRate is the most of times in any window w, per second.
func peakRate(times []time.Time, w time.Duration) float64 {
	s := slices.Clone(times)
	slices.SortFunc(s, func(a, b time.Time) int { return a.Compare(b) })
	most, j := 0, 0
	for i := range s {
		for s[i].Sub(s[j]) >= w {
			j++
		}
		most = max(most, i-j+1)
	}
	return float64(most) / w.Seconds()
}

// vipList is the pool's OPENSHIFT_HA_VIRTUAL_IPS: 250 VIPs per /24 from
// 198.18.16.1, in the image's last-octet range syntax.
func vipList(n int) string {
	var parts []string
	for net := 16; n > 0; net++ {
		k := min(n, 250)
		parts = append(parts, fmt.Sprintf("198.18.%d.1-%d", net, k))
		n -= k
	}
	return strings.Join(parts, ",")
}
