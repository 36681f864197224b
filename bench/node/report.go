package main

import (
	"fmt"
	"io"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
)

// The benchmark's cluster: the demo cluster's addresses with three masters
// (testnet gives host i the address 198.18.0.(10+i), so master-N is host
// N+1).
const (
	clusterName = "managed"
	zone        = "managed.example.com"
	apiVIP      = "198.18.0.5"
	ingressA    = "198.18.0.7" // the first Ingress VIP
	ingressB    = "198.18.0.8" // what the reload trials switch to and back
	upstreamDNS = "198.18.0.53"
	masters     = 3
)

// extraNode is a worker the reload trials add.
type extraNode struct {
	Name string
	IP   netip.Addr
}

// clusterSpec is what the cluster file says; the reload trials change it.
type clusterSpec struct {
	Ingress netip.Addr
	Workers []extraNode
}

// masterIP is master-i's address.
func masterIP(i int) netip.Addr { return netip.AddrFrom4([4]byte{198, 18, 0, byte(11 + i)}) }

// YAML renders the cluster file.
func (s clusterSpec) YAML() []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# bench/node: the demo cluster's addresses with three masters.\n")
	fmt.Fprintf(&b, "name: %s\nbaseDomain: example.com\n", clusterName)
	fmt.Fprintf(&b, "apiVIPs: [%s]\ningressVIPs: [%s]\n", apiVIP, s.Ingress)
	fmt.Fprintf(&b, "machineNetworks: [198.18.0.0/24]\nupstreamDNS: [%s]\nnodes:\n", upstreamDNS)
	for i := range masters {
		fmt.Fprintf(&b, "  - {name: master-%d, role: master, ips: [%s]}\n", i, masterIP(i))
	}
	for _, w := range s.Workers {
		fmt.Fprintf(&b, "  - {name: %s, role: worker, ips: [%s]}\n", w.Name, w.IP)
	}
	return []byte(b.String())
}

// keepalivedPrio matches keepalived's (2.2) log line for a tracked
// script changing an instance's priority.
var keepalivedPrio = regexp.MustCompile(`\((\w+)\) Changing effective priority from \d+ to (\d+)`)

// effectivePriorities returns the last effective priority keepalived
// logged for each instance; an instance whose priority never changed is
// absent.
func effectivePriorities(log string) map[string]int {
	out := map[string]int{}
	for _, m := range keepalivedPrio.FindAllStringSubmatch(log, -1) {
		p, _ := strconv.Atoi(m[2])
		out[m[1]] = p
	}
	return out
}

func median[T int64 | float64 | time.Duration](xs []T) T {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// usage is what one daemon (or a sum of daemons) used at rest.
type usage struct {
	Name  string
	Procs int
	// RSS (VmRSS), its anonymous and file-backed parts (RssAnon,
	// RssFile: the executable's and libraries' pages) and PSS are MiB
	// summed over the daemon's processes, one value per sample (samples
	// of every round, in order).
	RSS, Anon, File, PSS []float64
	// PerProc is the median RSS of each process (MiB), main process
	// first; empty for a sum.
	PerProc []float64
	// CPU is user+system seconds (reaped children included) per window,
	// one value per round.
	CPU    []float64
	Window time.Duration
}

// total adds parts sample by sample (they were sampled at the same
// instants) and round by round.
func total(name string, parts []usage) usage {
	t := usage{Name: name}
	for _, p := range parts {
		t.Procs += p.Procs
		t.Window = p.Window
		t.RSS = addInto(t.RSS, p.RSS)
		t.Anon = addInto(t.Anon, p.Anon)
		t.File = addInto(t.File, p.File)
		t.PSS = addInto(t.PSS, p.PSS)
		t.CPU = addInto(t.CPU, p.CPU)
	}
	return t
}

func addInto(dst, src []float64) []float64 {
	for len(dst) < len(src) {
		dst = append(dst, 0)
	}
	for i, v := range src {
		dst[i] += v
	}
	return dst
}

// cpuPercent is the median CPU time as a share of one CPU over the window.
func (u usage) cpuPercent() float64 {
	if u.Window <= 0 {
		return 0
	}
	return 100 * median(u.CPU) / u.Window.Seconds()
}

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// printRest prints part 1: one row per daemon, the trio's total and the
// ratios vipstack / trio, then the verdicts.
func printRest(w io.Writer, vip usage, trio []usage) {
	var rep benchdoc.Report
	restReport(&rep, vip, trio)
	_ = rep.Text(w)
}

// restReport adds part 1 to rep.
func restReport(rep *benchdoc.Report, vip usage, trio []usage) {
	sum := total("upstream total", trio)
	tb := benchdoc.Table{Header: []string{"master-0 runs", "procs", "RSS MiB median [min..max]", "anon", "file", "PSS MiB",
		"CPU s in " + fmtSeconds(vip.Window), "CPU %", "RSS per process MiB"}}
	row := func(u usage) {
		var per []string
		for _, p := range u.PerProc {
			per = append(per, strconv.FormatFloat(p, 'f', 1, 64))
		}
		lo, hi := minMax(u.RSS)
		tb.Add(u.Name, strconv.Itoa(u.Procs), fmt.Sprintf("%.1f [%.1f..%.1f]", median(u.RSS), lo, hi),
			fmt.Sprintf("%.1f", median(u.Anon)), fmt.Sprintf("%.1f", median(u.File)), fmt.Sprintf("%.1f", median(u.PSS)),
			fmt.Sprintf("%.2f", median(u.CPU)), fmt.Sprintf("%.2f", u.cpuPercent()), strings.Join(per, " + "))
	}
	row(vip)
	for _, u := range trio {
		row(u)
	}
	row(sum)
	r := func(f func(usage) []float64) string {
		return fmt.Sprintf("%.2f", ratio(median(f(vip)), median(f(sum))))
	}
	tb.Add("vipstack / upstream", "",
		r(func(u usage) []float64 { return u.RSS }), r(func(u usage) []float64 { return u.Anon }),
		r(func(u usage) []float64 { return u.File }), r(func(u usage) []float64 { return u.PSS }),
		r(func(u usage) []float64 { return u.CPU }))
	rep.Table(tb)
	rep.Para("(RSS = VmRSS summed over the daemon's processes, sampled %d times: anon (heap, stacks) + file (executable and "+
		"libraries); PSS counts pages shared between them once; CPU = utime+stime with reaped children over the window, "+
		"median over %d round(s); the memory of keepalived's short-lived check scripts is not counted)",
		len(vip.RSS), len(vip.CPU))
	rep.List([]string{
		verdict("RSS at rest", "vipstack/upstream", ratio(median(vip.RSS), median(sum.RSS)), rssTarget),
		verdict("CPU at rest", "vipstack/upstream", ratio(median(vip.CPU), median(sum.CPU)), 1),
	})
}

// rssTarget is issue 32's: vipstack node at most half the trio's RSS.
const rssTarget = 0.5

func verdict(what, name string, r, want float64) string {
	v := "PASS"
	if r > want {
		v = "MISS"
	}
	return fmt.Sprintf("%s  %s: %s = %.3f (want <= %.3f)", v, what, name, r, want)
}

func minMax(xs []float64) (lo, hi float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	return slices.Min(xs), slices.Max(xs)
}

func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// latencyRow is one measured reload figure: per trial, the time from the
// rename of the cluster file to the observation; a negative time means
// not observed before the trial's deadline.
type latencyRow struct {
	Change, Observed, Trigger string
	Times                     []time.Duration
}

// seen returns the observed times.
func (r latencyRow) seen() []time.Duration {
	var out []time.Duration
	for _, t := range r.Times {
		if t >= 0 {
			out = append(out, t)
		}
	}
	return out
}

// printLatency prints part 2.
func printLatency(w io.Writer, rows []latencyRow) { _ = latencyTable(rows).WriteText(w) }

// latencyTable is part 2: per change and trigger, the time to see it.
func latencyTable(rows []latencyRow) benchdoc.Table {
	tb := benchdoc.Table{Header: []string{"change", "observed", "trigger", "ms median [min..max]", "per trial"}}
	for _, r := range rows {
		var per []string
		for _, t := range r.Times {
			if t < 0 {
				per = append(per, "-")
			} else {
				per = append(per, strconv.FormatInt(t.Milliseconds(), 10))
			}
		}
		s := r.seen()
		fig := "not observed"
		if len(s) > 0 {
			fig = fmt.Sprintf("%d [%d..%d]", median(s).Milliseconds(), slices.Min(s).Milliseconds(), slices.Max(s).Milliseconds())
			if len(s) < len(r.Times) {
				fig += fmt.Sprintf(" (%d of %d)", len(s), len(r.Times))
			}
		}
		tb.Add(r.Change, r.Observed, r.Trigger, fig, strings.Join(per, " "))
	}
	return tb
}
