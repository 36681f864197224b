package main

import (
	"fmt"
	"math"
	"time"
)

// Metric is what is sampled of a process.
type Metric int

// The sampled metrics.
const (
	RSS        Metric = iota // resident set size, bytes (VmRSS)
	Goroutines               // go_goroutines from the metrics endpoint
	FDs                      // entries of /proc/PID/fd
	numMetrics
)

func (m Metric) String() string {
	switch m {
	case RSS:
		return "RSS"
	case Goroutines:
		return "goroutines"
	case FDs:
		return "fds"
	}
	return fmt.Sprintf("Metric(%d)", int(m))
}

// floor is the least growth over a run that counts against a metric,
// whatever the noise: a Go runtime's heap settles in steps of a few
// megabytes, and a goroutine or a descriptor that starts lazily after the
// warm-up (a reconnect, a keep-alive) is one step, not a leak.
func (m Metric) floor() float64 {
	switch m {
	case RSS:
		return 8 << 20
	case Goroutines:
		return 10
	default:
		return 8
	}
}

// format prints a value of the metric.
func (m Metric) format(v float64) string {
	if m == RSS {
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.1f", v)
}

// Sample is one reading of a process at offset At from the start.
type Sample struct {
	At    time.Duration
	Value float64
}

// Fit is the least-squares line through a series of samples and what
// scatters around it.
type Fit struct {
	N        int
	Span     time.Duration // from the first sample to the last
	PerHour  float64       // slope, units per hour
	Growth   float64       // PerHour over Span: what the line gained over the run
	Min, Max float64       // the samples' spread
	Resid    float64       // standard deviation of the residuals about the line
}

// fitLine fits y = a + b·t (t in hours) by least squares.
func fitLine(xs []Sample) Fit {
	f := Fit{N: len(xs)}
	if len(xs) == 0 {
		return f
	}
	f.Min, f.Max = xs[0].Value, xs[0].Value
	var st, sy float64
	for _, s := range xs {
		st += s.At.Hours()
		sy += s.Value
		f.Min, f.Max = min(f.Min, s.Value), max(f.Max, s.Value)
	}
	n := float64(len(xs))
	mt, my := st/n, sy/n
	var stt, sty float64
	for _, s := range xs {
		dt := s.At.Hours() - mt
		stt += dt * dt
		sty += dt * (s.Value - my)
	}
	f.Span = xs[len(xs)-1].At - xs[0].At
	if stt > 0 {
		f.PerHour = sty / stt
	}
	f.Growth = f.PerHour * f.Span.Hours()
	var ss float64
	for _, s := range xs {
		r := s.Value - (my + f.PerHour*(s.At.Hours()-mt))
		ss += r * r
	}
	if len(xs) > 2 {
		f.Resid = math.Sqrt(ss / (n - 2))
	}
	return f
}

// noise is what the growth is judged against: three standard deviations
// of the residuals, and at least the metric's floor.
func noise(m Metric, f Fit) float64 { return max(3*f.Resid, m.floor()) }

// Grows reports whether the line gained more over the run than the noise:
// a leak. Too few samples (under 5) judge nothing.
func Grows(m Metric, f Fit) bool { return f.N >= 5 && f.Growth > noise(m, f) }
