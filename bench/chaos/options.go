package main

import (
	"time"

	"github.com/vipstack/vipstack/internal/chaos"
)

// options configure one chaos run.
type options struct {
	Seed    uint64
	Faults  int
	Nodes   int
	Advert  time.Duration
	Verbose bool
	Bin     string
	Prefix  string // namespace prefix; default "vx"
	// Weights restricts the fault kinds (nil: chaos.DefaultWeights).
	Weights map[chaos.Kind]int
}

// result is a finished run.
type result struct {
	Report   chaos.Report
	Injected map[chaos.Kind]int
	Skipped  []string
	Failed   []string // injections that did not work
}

// OK reports whether the run found nothing wrong.
func (r result) OK() bool { return len(r.Report.Violations) == 0 && len(r.Failed) == 0 }
