package main

import (
	"context"
	"fmt"
	"io"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/ipfailover/bgpmode"
	"github.com/vipstack/vipstack/internal/ipfailoverd"
	"github.com/vipstack/vipstack/internal/supervise"
)

// runIPFailover is `vipstack ipfailover`. Under a supervisor, a pool run
// by VRRP runs from the initialisation (internal/ipfailoverd/early), not
// from here; one announced by BGP runs from here.
func runIPFailover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := ipfailoverd.ParseFlags(args, stderr)
	if !ok {
		return code
	}
	log, spec := f.Log, f.Opts.Spec
	f.LogWarnings()
	f.Opts.BGP = bgpmode.Mode{}
	if f.PrintConfig {
		return printIPFailoverConfig(ctx, f.Opts, stdout, stderr)
	}
	ledger, code, ok := f.Ledger(stderr)
	if !ok {
		return code
	}
	onCrash := ipfailoverd.CrashCleanup(log, spec, ledger)
	if supervise.IsCleanup() {
		// A small supervisor's clean-up after its pool's process died;
		// the supervisor holds the pool's name.
		onCrash()
		return 0
	}
	// The configuration and the options are checked here, so a bad
	// variable or flag fails here (exit 2) and not in a restart loop.
	if _, err := ipfailover.New(f.Opts); err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return 2
	}
	if !supervise.IsChild() {
		// The process that lives as long as the pool here (the
		// supervisor, or the pool itself without one) holds the name.
		claim, err := ipfailover.Claim(spec.ConfigName)
		if err != nil {
			fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
			return 1
		}
		defer claim.Close()
		if supervising(f.NoSuper) {
			spec := f.LogFlags.Spec()
			spec.StartGC = daemon.StartGC
			execSmallSupervisor(log, spec, claim)
		}
	}
	if code, ran := superviseSelf(ctx, log, stderr, ipfailoverd.Command, args, f.NoSuper, onCrash); ran {
		return code
	}
	return ipfailoverd.Run(ctx, f, ledger, stderr)
}

// printIPFailoverConfig is --print-config.
func printIPFailoverConfig(ctx context.Context, opts ipfailover.Options, stdout, stderr io.Writer) int {
	pool, err := ipfailover.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return 2
	}
	text, err := pool.Prepare(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return ipfailoverd.ExitCode(err)
	}
	fmt.Fprint(stdout, text)
	return 0
}
