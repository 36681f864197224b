// Package cleanup releases what a crashed engine held on its node: the
// VIPs its ledgers record and the API VIP redirects of a node agent. A
// supervisor runs it after each crash of its child (supervise's OnCrash).
// The small supervisor runs it in a short-lived process of the same
// binary (supervise.EnvCleanup), which does it from its initialisation
// (FromSupervisor, package cleanup/early) when the supervisor's Spec
// names what to release: before the Kubernetes, CoreDNS and GoBGP
// packages initialise, which under load took longer than the release
// (docs/design/memory.md).
package cleanup

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/vipstack/vipstack/internal/logfmt"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/supervise"
)

// Ledger removes every VIP recorded in l and logs what it removed.
func Ledger(log *slog.Logger, l netif.Ledger) {
	h, err := netif.Open()
	if err != nil {
		log.Error("supervisor: cannot open netlink to remove VIPs", "err", err)
		return
	}
	defer h.Close()
	removed, err := h.Sweep(l)
	logRemoved(log, removed)
	if err != nil {
		log.Error("supervisor: removing VIPs failed", "ledger", l.Path, "err", err)
	}
}

// Redirects deletes the API VIP redirects (redirect.Sweep): after the
// node agent died they point at a load balancer that no longer runs.
func Redirects(log *slog.Logger) {
	if names, err := redirect.Sweep(); err != nil {
		log.Error("supervisor: removing the API VIP redirects failed", "err", err)
	} else if len(names) > 0 {
		log.Info("supervisor: removed the crashed agent's redirects", "tables", names)
	}
}

// FromSupervisor releases what the Spec of a small supervisor's clean-up
// process names (supervise.CleanupSpec) and returns the exit code; ok is
// false, and nothing happens, in any other process, and in a clean-up
// whose supervisor named nothing (the command then releases, from main).
func FromSupervisor() (code int, ok bool) {
	spec, ok, err := supervise.CleanupSpec()
	if !ok {
		return 0, false
	}
	if err != nil {
		os.Stderr.WriteString("vipstack: " + supervise.EnvCleanup + ": " + err.Error() + "\n")
		return 1, true
	}
	log, err := logger(spec, os.Stderr)
	if err != nil {
		os.Stderr.WriteString("vipstack: " + supervise.EnvCleanup + ": " + err.Error() + "\n")
		return 1, true
	}
	for _, p := range spec.Ledgers {
		Ledger(log, netif.Ledger{Path: p})
	}
	if spec.Redirects {
		Redirects(log)
	}
	return 0, true
}

// logger logs on w as the command that started the supervisor does on
// stderr (daemon.LogFlags.Logger, with the Spec's attributes).
func logger(spec supervise.Spec, w io.Writer) (*slog.Logger, error) {
	l, err := logfmt.ParseLevel(spec.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("log level %w", err)
	}
	h, err := logfmt.NewHandler(w, spec.LogFormat, l)
	if err != nil {
		return nil, fmt.Errorf("log format %w", err)
	}
	args := make([]any, len(spec.LogAttrs))
	for i, a := range spec.LogAttrs {
		args[i] = a
	}
	return slog.New(h).With(args...), nil
}

// sweepLogged is how many removed VIPs Ledger logs one by one at info;
// past it, a line for them all (with the first ones) at info, and each at
// debug: the clean-up after an engine holding 10,000 VIPs wrote 10,000
// lines.
const sweepLogged = 16

func logRemoved(log *slog.Logger, removed []netif.VIP) {
	if len(removed) <= sweepLogged {
		for _, v := range removed {
			log.Info("supervisor: removed VIP of the crashed engine", "vip", v.Prefix, "dev", v.Dev)
		}
		return
	}
	first := make([]string, 0, sweepLogged)
	for _, v := range removed[:sweepLogged] {
		first = append(first, v.Prefix.String()+" dev "+v.Dev)
	}
	log.Info("supervisor: removed VIPs of the crashed engine", "count", len(removed), "first", strings.Join(first, ", "))
	for _, v := range removed {
		log.Debug("supervisor: removed VIP of the crashed engine", "vip", v.Prefix, "dev", v.Dev)
	}
}
