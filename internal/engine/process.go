package engine

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/procwatch"
)

// processPoll is how often a vrrp_track_process scans /proc (see package
// procwatch for why it polls): a process that starts or ends is seen
// within this, plus its fork_delay or terminate_delay.
const processPoll = 500 * time.Millisecond

// ProcessCounter counts the running processes m matches, as
// procwatch.Count does on /proc (Options.Processes).
type ProcessCounter func(m procwatch.Matcher) (int, error)

// countProcesses is Options.Processes, or the count of /proc.
func (o Options) countProcesses() ProcessCounter {
	if o.Processes != nil {
		return o.Processes
	}
	return func(m procwatch.Matcher) (int, error) { return procwatch.Count("/proc", m) }
}

// processTrackName is the name under which the tracker of vrrp_track_process
// name runs, beside the vrrp_scripts, in the status and the log.
func processTrackName(name string) string { return "track_process " + name }

// addProcessTracks runs each tracked vrrp_track_process as a native check
// beside the vrrp_scripts: a Script with a Probe that counts the matching
// processes, and each instance's track_process entries as track_script
// entries naming it. Weights, reverse, FAULT at weight 0, the wait for a
// first result and the status then work as for a script, which is how
// keepalived applies them too.
func addProcessTracks(cfg *keepalived.Config, clk clock.Clock, count ProcessCounter) error {
	for _, in := range cfg.Instances {
		for _, t := range in.TrackProcesses {
			tp := cfg.Processes[t.Name]
			if tp == nil {
				continue
			}
			name := processTrackName(t.Name)
			if prev, taken := cfg.Scripts[name]; taken && prev.Probe == nil {
				return fmt.Errorf("%s: vrrp_script %q has the name vipstack gives vrrp_track_process %s", prev.Pos, name, t.Name)
			}
			if _, ok := cfg.Scripts[name]; !ok {
				cfg.Scripts[name] = &keepalived.Script{
					Name: name, Pos: tp.Pos, Command: "(track_process " + tp.Process + ")",
					Interval: processPoll, Timeout: processPoll, Rise: 1, Fall: 1,
					Weight: tp.Weight, WeightReverse: tp.WeightReverse,
					Probe: &processCheck{tp: tp, clk: clk, count: count, deb: &procwatch.Debounce{
						ForkDelay: tp.ForkDelay, TerminateDelay: tp.TerminateDelay}},
				}
			}
			t.Name = name
			in.TrackScripts = append(in.TrackScripts, t)
		}
		in.TrackProcesses = nil
	}
	return nil
}

// processCheck is the probe of one vrrp_track_process.
type processCheck struct {
	tp    *keepalived.TrackProcess
	clk   clock.Clock
	count ProcessCounter

	mu  sync.Mutex
	deb *procwatch.Debounce
}

// Probe counts the matching processes and fails unless the debounced
// quorum holds.
func (c *processCheck) Probe(context.Context) error {
	tp := c.tp
	m := procwatch.Matcher{Process: tp.Process, Params: tp.Params, ParamMatch: tp.ParamMatch, FullCommand: tp.FullCommand}
	n, err := c.count(m)
	if err != nil {
		return err
	}
	q := procwatch.Quorum{Min: tp.Quorum, Max: tp.QuorumMax}
	c.mu.Lock()
	up := c.deb.Step(q.Holds(n), c.clk.Now())
	c.mu.Unlock()
	if up {
		return nil
	}
	want := fmt.Sprintf("%d..%d", q.Min, q.Max)
	if q.Max < 0 {
		want = fmt.Sprintf("at least %d", q.Min)
	}
	what := tp.Process
	if len(tp.Params) > 0 {
		what = strings.Join(slices.Concat([]string{tp.Process}, tp.Params), " ")
	}
	return fmt.Errorf("tracked process %s quorum not achieved: %d running %q, want %s", tp.Name, n, what, want)
}
