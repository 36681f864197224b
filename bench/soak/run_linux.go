package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/peers"
)

// options configure one soak.
type options struct {
	Duration, Warmup, Interval, FaultEvery time.Duration
	Parts                                  []string
	VIPs, IPFNodes, Masters, K8sNodes      int
	Rate                                   int // the lb's new connections per second
	Bin                                    string
	Prefix                                 string
	Verbose                                bool
	Log                                    io.Writer // progress lines; nil: none
}

var allParts = []string{"node", "k8s", "ipfailover", "lb"}

// stepTimeout bounds one fault or reload step.
const stepTimeout = 30 * time.Second

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.DurationVar(&o.Duration, "duration", time.Hour, "how long to run, warm-up included")
	fs.DurationVar(&o.Warmup, "warmup", 5*time.Minute, "samples before this are not fitted")
	fs.DurationVar(&o.Interval, "interval", 10*time.Second, "sampling period")
	fs.DurationVar(&o.FaultEvery, "fault-every", 30*time.Second, "period of each part's faults and reloads")
	parts := fs.String("parts", strings.Join(allParts, ","), "parts to run (comma-separated): "+strings.Join(allParts, ", "))
	fs.IntVar(&o.VIPs, "vips", 10000, "VIPs in the ipfailover pool (250 per /24 from 198.18.16.0)")
	fs.IntVar(&o.IPFNodes, "ipf-nodes", 3, "ipfailover nodes")
	fs.IntVar(&o.Masters, "masters", 3, "masters of the node part's cluster")
	fs.IntVar(&o.K8sNodes, "k8s-nodes", 3, "agents of the k8s part")
	fs.IntVar(&o.Rate, "rate", 100, "new connections per second to the lb")
	fs.StringVar(&o.Bin, "vipstack", "", "vipstack binary (default: build ./cmd/vipstack)")
	fs.StringVar(&o.Prefix, "prefix", "vsok", "network namespace name prefix")
	fs.BoolVar(&o.Verbose, "v", false, "narrate every step and sample")
	markdown := fs.String("markdown", "", "write the results into the soak block of this Markdown `file` (docs/benchmarks.md)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	o.Parts = strings.Split(*parts, ",")
	if err := o.validate(); err != nil || fs.NArg() > 0 {
		if err == nil {
			err = fmt.Errorf("unexpected arguments %q", fs.Args())
		}
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 2
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(stderr, "soak: needs root (network namespaces, raw sockets): sudo go run ./bench/soak")
		return 2
	}
	if o.Verbose {
		o.Log = stdout
	}
	facts := benchdoc.Collect("./bench/soak", args)
	if o.Bin == "" {
		dir, err := os.MkdirTemp("", "vsok-bin-")
		if err != nil {
			fmt.Fprintln(stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		fmt.Fprintln(stdout, "building ./cmd/vipstack")
		if o.Bin, err = peers.BuildVipstack(dir); err != nil {
			fmt.Fprintf(stderr, "soak: %v\n", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, o)
	if err != nil {
		fmt.Fprintf(stderr, "soak: %v\n", err)
		return 1
	}
	rep := res.report()
	_ = rep.Text(stdout)
	if *markdown != "" {
		if err := benchdoc.Write(*markdown, "soak", facts, rep); err != nil {
			fmt.Fprintf(stderr, "soak: -markdown: %v\n", err)
			return 1
		}
	}
	if !res.OK() {
		return 1
	}
	return 0
}

func (o options) validate() error {
	for _, p := range o.Parts {
		if !slices.Contains(allParts, p) {
			return fmt.Errorf("-parts: %q: want some of %s", p, strings.Join(allParts, ", "))
		}
	}
	switch {
	case o.Interval <= 0 || o.FaultEvery <= 0:
		return errors.New("-interval and -fault-every must be positive")
	case o.Warmup < 0 || o.Duration < o.Warmup+5*o.Interval:
		return fmt.Errorf("-duration %v leaves fewer than 5 samples after -warmup %v at -interval %v", o.Duration, o.Warmup, o.Interval)
	case o.VIPs < 6 || o.VIPs > 10000:
		return fmt.Errorf("-vips %d: want 6 to 10000", o.VIPs)
	case o.IPFNodes < 2 || o.IPFNodes > 6:
		return fmt.Errorf("-ipf-nodes %d: want 2 to 6", o.IPFNodes)
	case o.Masters < 2 || o.Masters > 3:
		return fmt.Errorf("-masters %d: want 2 or 3", o.Masters)
	case o.K8sNodes < 2 || o.K8sNodes > 6:
		return fmt.Errorf("-k8s-nodes %d: want 2 to 6", o.K8sNodes)
	case o.Rate < 1 || o.Rate > 1000:
		return fmt.Errorf("-rate %d: want 1 to 1000", o.Rate)
	}
	return nil
}

// subject is a process sampled throughout.
type subject struct {
	Part, Name string
	pid        func() int
	// metrics returns the text of the process's metrics endpoint; nil: it
	// serves none (no goroutine count).
	metrics func(ctx context.Context) (string, error)
}

// step is one of a part's periodic faults and reloads.
type step struct {
	Name string
	Do   func(ctx context.Context) error
}

// part is one soaked component, started and ready.
type part struct {
	Name     string
	Subjects []subject
	Steps    []step
	// Notes returns lines for the report at the end (the lb's load).
	Notes func() []string
	// Problems returns what went wrong besides growth (the load failed).
	Problems func() []string
	Close    func()
}

// series is one subject's samples of one metric.
type series struct {
	Part, Proc string
	Metric     Metric
	Samples    []Sample // after the warm-up
	First      float64  // the first sample, warm-up included
	Restarts   int
	Misses     int // samples that could not be read
}

// result is a finished soak.
type result struct {
	O      options
	Series []*series
	Steps  map[string]int // steps taken, by part
	Failed []string       // steps that failed
	Notes  []string
	Probs  []string
	Took   time.Duration
}

// OK reports whether nothing grew, restarted or failed.
func (r result) OK() bool { return len(r.Leaks()) == 0 && len(r.Failed) == 0 && len(r.Probs) == 0 }

// Leaks lists the series that grew beyond their noise or restarted.
func (r result) Leaks() []string {
	var out []string
	for _, s := range r.Series {
		f := fitLine(s.Samples)
		if Grows(s.Metric, f) {
			out = append(out, fmt.Sprintf("%s %s: %s grew %s over %v (noise %s)", s.Part, s.Proc, s.Metric,
				s.Metric.format(f.Growth), f.Span.Round(time.Second), s.Metric.format(noise(s.Metric, f))))
		}
		if s.Restarts > 0 && s.Metric == FDs {
			out = append(out, fmt.Sprintf("%s %s: replaced %d times (a new PID)", s.Part, s.Proc, s.Restarts))
		}
	}
	return out
}

func logf(o options, format string, args ...any) {
	if o.Log != nil {
		fmt.Fprintf(o.Log, "%s  %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
	}
}

// Run starts the parts, runs them for o.Duration under their steps,
// sampling every o.Interval, and tears everything down.
func Run(ctx context.Context, o options) (result, error) {
	res := result{O: o, Steps: map[string]int{}}
	var ps []*part
	defer func() {
		for i := len(ps) - 1; i >= 0; i-- {
			ps[i].Close()
		}
	}()
	for _, name := range o.Parts {
		logf(o, "starting %s", name)
		var p *part
		var err error
		switch name {
		case "node":
			p, err = startNode(ctx, o)
		case "k8s":
			p, err = startK8s(ctx, o)
		case "ipfailover":
			p, err = startIPFailover(ctx, o)
		case "lb":
			p, err = startLB(ctx, o)
		}
		if err != nil {
			return res, fmt.Errorf("%s: %w", name, err)
		}
		ps = append(ps, p)
		logf(o, "%s ready", name)
	}
	start := time.Now()
	// A step runs under outer, not under the run's deadline: a step begun
	// just before the end finishes (or fails on its own), rather than
	// failing because the deadline was near (client-go's rate limiter
	// refuses to wait past a deadline before the context has ended).
	outer := ctx
	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()

	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, p := range ps {
		if len(p.Steps) == 0 {
			continue
		}
		wg.Go(func() {
			t := time.NewTicker(o.FaultEvery)
			defer t.Stop()
			for i := 0; ; i++ {
				select {
				case <-ctx.Done():
					return
				case <-t.C:
				}
				s := p.Steps[i%len(p.Steps)]
				logf(o, "%s: %s", p.Name, s.Name)
				sctx, scancel := context.WithTimeout(outer, stepTimeout)
				err := s.Do(sctx)
				scancel()
				mu.Lock()
				res.Steps[p.Name]++
				if err != nil && outer.Err() == nil {
					res.Failed = append(res.Failed, fmt.Sprintf("%s: %s: %v", p.Name, s.Name, err))
				}
				mu.Unlock()
			}
		})
	}

	type key struct {
		part, proc string
		m          Metric
	}
	byKey := map[key]*series{}
	lastPid := map[key]int{}
	get := func(k key) *series {
		s := byKey[k]
		if s == nil {
			s = &series{Part: k.part, Proc: k.proc, Metric: k.m, First: -1}
			byKey[k] = s
			res.Series = append(res.Series, s)
		}
		return s
	}
	tick := time.NewTicker(o.Interval)
	defer tick.Stop()
	for ctx.Err() == nil {
		at := time.Since(start)
		for _, p := range ps {
			for _, sub := range p.Subjects {
				pid, vals := sampleProc(sub)
				for m := Metric(0); m < numMetrics; m++ {
					if m == Goroutines && sub.metrics == nil {
						continue
					}
					k := key{p.Name, sub.Name, m}
					s := get(k)
					v, ok := vals[m]
					if !ok {
						s.Misses++
						continue
					}
					if lastPid[k] != 0 && pid != lastPid[k] {
						s.Restarts++
						s.Samples = nil // a new process: its own series
					}
					lastPid[k] = pid
					if s.First < 0 {
						s.First = v
					}
					if at >= o.Warmup {
						s.Samples = append(s.Samples, Sample{At: at, Value: v})
					}
				}
				if o.Verbose {
					logf(o, "sample %s %s: pid %d rss %.1f MiB fds %.0f goroutines %.0f", p.Name, sub.Name,
						pid, vals[RSS]/(1<<20), vals[FDs], vals[Goroutines])
				}
			}
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	wg.Wait()
	res.Took = time.Since(start)
	for _, p := range ps {
		if p.Notes != nil {
			res.Notes = append(res.Notes, p.Notes()...)
		}
		if p.Problems != nil {
			res.Probs = append(res.Probs, p.Problems()...)
		}
	}
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return res, err // interrupted
	}
	return res, nil
}

// sampleProc reads one subject: its PID and every metric it could read.
func sampleProc(sub subject) (int, map[Metric]float64) {
	vals := map[Metric]float64{}
	pid := sub.pid()
	if pid <= 0 {
		return 0, vals
	}
	if kib, err := vmRSS(pid); err == nil {
		vals[RSS] = float64(kib) * 1024
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		vals[FDs] = float64(len(ents))
	}
	if sub.metrics != nil {
		// Not the run's context: a sample taken as the run ends is read whole.
		mctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		text, err := sub.metrics(mctx)
		cancel()
		if err == nil {
			if g, ok := gauge(text, "go_goroutines"); ok {
				vals[Goroutines] = g
			}
		}
	}
	if now := sub.pid(); now != pid { // replaced while being read
		return now, map[Metric]float64{}
	}
	return pid, vals
}

// vmRSS reads VmRSS (KiB) from /proc/PID/status.
func vmRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no VmRSS", pid)
}

// gauge finds an unlabelled sample of name in Prometheus text.
func gauge(text, name string) (float64, bool) {
	for l := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(l, name+" ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
		return v, err == nil
	}
	return 0, false
}

// httpGet fetches url with dial, on a connection of its own that is
// closed afterwards (the sampler should not hold a descriptor of the
// process it samples).
func httpGet(ctx context.Context, dial func(ctx context.Context, network, addr string) (net.Conn, error), url string) (string, error) {
	tr := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return string(b), err
}
