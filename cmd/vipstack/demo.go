package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/demo"
)

// runDemo is `vipstack demo`: a throwaway cluster in network namespaces
// that plays the VIPs' story and exits 0 only if every step held.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: vipstack demo [--keep] (as root)\n\n"+
			"Builds a throwaway cluster (a bootstrap node, 3 masters, 2 workers and a client) in network\n"+
			"namespaces, runs `vipstack node` on each node and plays the story of its virtual IPs with a\n"+
			"live view. Exits 0 when every step held; removes everything it built.\n\n")
		fs.PrintDefaults()
	}
	keep := fs.Bool("keep", false, "leave the cluster running after the story until Ctrl-C, for exploration")
	logLevel := fs.String("log-level", "info", "the node agents' --log-level (their logs go to files)")
	if err := fs.Parse(args); err != nil {
		return daemon.ParseExit(err)
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vipstack demo: unexpected argument %q\n", fs.Arg(0))
		fs.Usage()
		return 2
	}
	// main stops ctx on SIGINT and SIGTERM; a closed terminal (SIGHUP)
	// must also end the demo through its cleanup, not kill it.
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stop()
	bin, err := os.Executable()
	if err != nil {
		fmt.Fprintf(stderr, "vipstack demo: cannot find my own executable to run the node agents: %v\n", err)
		return 1
	}
	if _, err := demo.Run(ctx, demo.Options{Bin: bin, Out: stdout, Keep: *keep, LogLevel: *logLevel}); err != nil {
		fmt.Fprintf(stderr, "vipstack %v\n", err) // "vipstack demo: step 3/5 (...) did not hold: ..."
		return 1
	}
	return 0
}
