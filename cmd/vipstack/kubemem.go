package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"runtime/debug"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/k8s/memidle"
)

// defaultMemoryLimit is --memory-limit's default for vipstack controller
// and vipstack agent: the Go runtime's memory (heap, stacks, its own) of
// either stays under it with 1,000 Services, with room (docs/design/memory.md).
const defaultMemoryLimit = "40Mi"

// kubeMemFlags are the memory and profiling flags of vipstack controller
// and vipstack agent.
type kubeMemFlags struct {
	limit      string
	limitBytes int64 // 0: none
	limitSet   bool  // given on the command line
	pprofAddr  string
}

func (m *kubeMemFlags) add(fs *flag.FlagSet) {
	fs.StringVar(&m.limit, "memory-limit", defaultMemoryLimit, "soft limit of the Go runtime's memory (heap, stacks; not the executable's pages), a Kubernetes quantity such as 64Mi: the collector runs more often near it, and at most half the CPU when the live heap needs more; 0: none. Raise it for clusters with many thousands of Services. $GOMEMLIMIT wins unless this flag is given")
	fs.StringVar(&m.pprofAddr, "pprof-addr", "", "address serving Go's profiles under /debug/pprof/ (loopback only, e.g. 127.0.0.1:6060); empty: off")
}

// check reads the flags after fs was parsed.
func (m *kubeMemFlags) check(cmd string, fs *flag.FlagSet, stderr io.Writer) bool {
	fs.Visit(func(f *flag.Flag) { m.limitSet = m.limitSet || f.Name == "memory-limit" })
	q, err := resource.ParseQuantity(m.limit)
	if err != nil || q.Sign() < 0 {
		fmt.Fprintf(stderr, "%s: --memory-limit %q: want a size such as 40Mi or 64M (a Kubernetes quantity), or 0 for none\n", cmd, m.limit)
		return false
	}
	m.limitBytes = q.Value()
	if m.pprofAddr != "" {
		if daemon.RequireLoopback(m.pprofAddr) != nil {
			fmt.Fprintf(stderr, "%s: --pprof-addr %q: want a loopback address, 127.0.0.1:PORT or [::1]:PORT (profiles show what the process holds)\n", cmd, m.pprofAddr)
			return false
		}
	}
	return true
}

// start sets the soft memory limit (unless $GOMEMLIMIT is set and the
// flag is not), and gives back what each later burst of work leaves
// (memidle) until ctx ends.
func (m *kubeMemFlags) start(ctx context.Context, log *slog.Logger, env func(string) string) {
	if limit := m.effectiveLimit(env); limit != 0 {
		if limit < 0 {
			limit = math.MaxInt64
		}
		debug.SetMemoryLimit(limit)
		log.Debug("Go memory limit", "bytes", limit)
	}
	go memidle.Run(ctx, memidle.Options{Logger: log})
}

// effectiveLimit is the limit to set: 0 to leave the runtime's (from
// $GOMEMLIMIT), -1 for none.
func (m *kubeMemFlags) effectiveLimit(env func(string) string) int64 {
	switch {
	case !m.limitSet && env("GOMEMLIMIT") != "":
		return 0
	case m.limitBytes == 0:
		return -1
	}
	return m.limitBytes
}
