package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/vipstack/vipstack/internal/cleanup"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/vrrpd"
)

// runVRRP is `vipstack vrrp`. Under a supervisor, the engine runs from
// the initialisation (internal/vrrpd/early), not from here.
func runVRRP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := vrrpd.ParseFlags(args, stderr)
	if !ok {
		return code
	}
	log := f.Log
	if f.Check {
		return checkVRRP(f, stdout, stderr)
	}
	ledger, code, ok := f.Ledger(stderr)
	if !ok {
		return code
	}
	if supervise.IsCleanup() {
		// A small supervisor's clean-up after its engine died: the
		// ledger's VIPs, whatever the file now says.
		cleanup.Ledger(log, ledger)
		return 0
	}
	if supervising(f.NoSuper) {
		// Validate first, so a bad file fails here and not in a restart loop.
		if _, err := engine.CheckID(f.ConfigPath, f.ConfigID); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
		spec := f.LogFlags.Spec()
		spec.Ledgers = []string{ledger.Path} // released from the initialisation after a crash
		spec.StartGC = daemon.StartGC
		execSmallSupervisor(log, spec, nil)
	}
	if code, ran := superviseSelf(ctx, log, stderr, vrrpd.Command, args, f.NoSuper, func() { cleanup.Ledger(log, ledger) }); ran {
		return code
	}
	return vrrpd.Run(ctx, f, ledger, stderr)
}

// checkVRRP is `vipstack vrrp --check`: keepalived -t's checks and exit
// codes.
func checkVRRP(f vrrpd.Flags, stdout, stderr io.Writer) int {
	cfg, err := engine.CheckID(f.ConfigPath, f.ConfigID)
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return engine.CheckExit(nil, err, nil)
	}
	exists := func(name string) bool { _, err := net.InterfaceByName(name); return err == nil }
	warnings := append(cfg.Warnings, engine.MissingInterfaces(cfg, exists)...)
	for _, u := range engine.UnsafeScripts(cfg) {
		warnings = append(warnings, fmt.Sprintf("%s: unsafe permissions found for script %s: %v; it runs as root anyway, as in keepalived without enable_script_security",
			u.UsedBy, u.Err.Path, u.Err.Err))
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	code := engine.CheckExit(cfg, nil, warnings)
	if code == engine.CheckClean {
		fmt.Fprintf(stdout, "%s: configuration is valid (%d instances, %d scripts)\n", f.ConfigPath, len(cfg.Instances), len(cfg.Scripts))
	} else {
		fmt.Fprintf(stdout, "%s: configuration is valid with %d warnings (%d instances, %d scripts); exit %d, as keepalived -t\n",
			f.ConfigPath, len(warnings), len(cfg.Instances), len(cfg.Scripts), code)
	}
	return code
}
