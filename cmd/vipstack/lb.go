package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/filewatch"
	"github.com/vipstack/vipstack/internal/lb/httploop"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/lbdaemon"
	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/lbproc"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/version"
)

// lbFlags are the flags of `vipstack lb`.
type lbFlags struct {
	cfgPath, metricsAddr string
	check                bool
	redirect             netip.AddrPort // zero: off
	drain, watch         time.Duration
	perBind              int
	datapath             lbkernel.Mode
	httpEngine           httploop.Mode
	log                  *slog.Logger
}

func runLB(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseLBFlags(args, stderr)
	if !ok {
		return code
	}
	cfg, err := lbdaemon.Load(f.cfgPath)
	if f.check {
		return checkLB(cfg, err, f, stdout, stderr)
	}
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	d, err := lbdaemon.Start(cfg, lbdaemon.Options{ConfigPath: f.cfgPath, Redirect: f.redirect, ListenersPerBind: f.perBind,
		MetricsAddr: f.metricsAddr, Logger: f.log, Version: version.String(), Datapath: f.datapath,
		HTTPEngine: f.httpEngine})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
		if errors.As(err, new(*lbdaemon.FlagError)) {
			return 2
		}
		return 1
	}
	defer d.Close()

	reloads := make(chan string, 1)
	hup := make(chan os.Signal, 1)
	daemon.NotifyReload(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// SIGUSR1 is haproxy's soft stop: stop listening, let connections
	// end by themselves, send haproxy's "Proxy NAME stopped" lines.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go forwardSignal(watchCtx, hup, reloads, "SIGHUP")
	if f.watch > 0 && !d.Chrooted() {
		go filewatch.Watch(watchCtx, clock.Real{}, f.cfgPath, f.watch, func() { requestReload(reloads, "file changed") }, f.log)
	}
	f.log.Info("vipstack lb running", "version", version.String(), "config", f.cfgPath)
	daemon.TrimServing(ctx, f.log)
	d.Serve(ctx, reloads, usr1, f.drain)
	return 0
}

func parseLBFlags(args []string, stderr io.Writer) (f lbFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack lb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.cfgPath, "f", "/etc/haproxy/haproxy.cfg", "haproxy.cfg (or the YAML form, *.yaml/*.yml) to run")
	fs.BoolVar(&f.check, "check", false, "validate the configuration and exit (non-zero on error), like haproxy -c")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9652); empty: off")
	redirectTo := fs.String("redirect", "", "while a server is UP, redirect TCP traffic for this VIP:PORT (e.g. 198.18.0.5:6443) to the first frontend's port with nftables; empty: off")
	fs.DurationVar(&f.drain, "drain-timeout", 10*time.Second, "on SIGTERM (also after SIGUSR1's soft stop), how long connections may take to finish before they are closed")
	fs.DurationVar(&f.watch, "watch-interval", time.Second, "how often to check the configuration file for changes (mtime and size) and reload; 0: only on SIGHUP")
	fs.IntVar(&f.perBind, "listeners-per-bind", 1, "SO_REUSEPORT sockets (each with its own accept loop) per frontend bind")
	fs.BoolVar(&f.check, "c", false, "same as --check")
	datapath := fs.String("datapath", "relay", "how mode tcp frontends carry connections: relay (user space, every haproxy feature), kernel (nftables DNAT with user-space health checks; a frontend that needs user space refuses the start), auto (kernel where possible, relay elsewhere); see docs/lb-kernel.md")
	httpEngine := fs.String("http-engine", "std", "which engine serves mode http frontends: std (net/http, every supported haproxy feature), loop (own HTTP/1 event loops; a frontend using what the loop lacks refuses the start and reloads), auto (loop where possible, std elsewhere, one log line per frontend); see docs/lb.md")
	logLevel := daemon.AddLogFlags(fs, "vipstack lb", "")
	if code, ok := daemon.ParseNoArgs(fs, args, stderr); !ok {
		return f, code, false
	}
	if f.log, ok = logLevel.Logger(stderr); !ok {
		return f, 2, false
	}
	if f.drain < 0 || f.watch < 0 || f.perBind < 1 {
		fmt.Fprintf(stderr, "vipstack lb: --drain-timeout and --watch-interval must not be negative, --listeners-per-bind must be at least 1\n")
		return f, 2, false
	}
	var err error
	if f.datapath, err = lbkernel.ParseMode(*datapath); err != nil {
		fmt.Fprintf(stderr, "vipstack lb: --%v\n", err)
		return f, 2, false
	}
	if f.httpEngine, err = httploop.ParseMode(*httpEngine); err != nil {
		fmt.Fprintf(stderr, "vipstack lb: --%v\n", err)
		return f, 2, false
	}
	if *redirectTo != "" {
		if f.redirect, err = netip.ParseAddrPort(*redirectTo); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect %q: %v (accepted: VIP:PORT such as 198.18.0.5:6443 or [fd00::5]:6443)\n", *redirectTo, err)
			return f, 2, false
		}
		// Refused here, not by the first Enable: that would leave the
		// balancer running with a redirect that fails every second.
		if err := redirect.CheckVIP(f.redirect); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect: %v\n", err)
			return f, 2, false
		}
	}
	return f, 0, true
}

// checkLB is `vipstack lb --check`, as haproxy -c: the configuration as
// loaded (loadErr), its user and group, and the redirect's frontend.
func checkLB(cfg *lbconfig.Config, loadErr error, f lbFlags, stdout, stderr io.Writer) int {
	if loadErr != nil {
		fmt.Fprintf(stderr, "%v\n", loadErr)
		return 1
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}
	// haproxy -c resolves user and group names too.
	if _, err := lbproc.LookupIDs(cfg.User, cfg.Group); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", f.cfgPath, err)
		return 1
	}
	if _, err := lbkernel.Build(cfg, f.datapath); err != nil {
		fmt.Fprintf(stderr, "vipstack lb: --datapath %s: %v\n", f.datapath, err)
		return 1
	}
	if err := httploop.Check(cfg, f.httpEngine); err != nil {
		fmt.Fprintf(stderr, "vipstack lb: --http-engine %s: %v\n", f.httpEngine, err)
		return 1
	}
	if f.redirect.IsValid() {
		if _, err := redirect.Port(cfg, f.redirect); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect: %v\n", err)
			return 1
		}
	}
	fmt.Fprintln(stdout, "Configuration file is valid")
	return 0
}

// forwardSignal asks for a reload, for reason why, on each signal from
// sig until ctx is done.
func forwardSignal(ctx context.Context, sig <-chan os.Signal, reloads chan string, why string) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
			requestReload(reloads, why)
		}
	}
}

func requestReload(ch chan string, why string) {
	select {
	case ch <- why:
	default: // one is already pending; it will read the newest file
	}
}
