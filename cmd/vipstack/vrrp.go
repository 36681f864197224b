package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/version"
)

// vrrpFlags are the flags of `vipstack vrrp`.
type vrrpFlags struct {
	cfgPath, configID, metricsAddr, statusAddr, stateDir string
	check, noSuper                                       bool
	log                                                  *slog.Logger
	logFlags                                             *logLevelFlag
	kaCompat                                             *kaCompatFlags
	pprof                                                pprofFlag
}

func runVRRP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseVRRPFlags(args, stderr)
	if !ok {
		return code
	}
	log := f.log
	if f.check {
		return checkVRRP(f, stdout, stderr)
	}
	if f.statusAddr != "" {
		if err := requireLoopback(f.statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack vrrp: --status-addr %q: %v\n", f.statusAddr, err)
			return 2
		}
	}
	ledger, err := netif.LedgerIn(f.stateDir, "vrrp")
	if err != nil {
		fmt.Fprintf(stderr, "vipstack vrrp: %v\n", err)
		return 1
	}
	if supervise.IsCleanup() {
		// A small supervisor's clean-up after its engine died: the
		// ledger's VIPs, whatever the file now says.
		sweepLedger(log, ledger)
		return 0
	}
	if supervising(f.noSuper) {
		// Validate first, so a bad file fails here and not in a restart loop.
		if _, err := engine.CheckID(f.cfgPath, f.configID); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
		execSmallSupervisor(log, f.logFlags.spec(), nil)
	}
	if code, ran := superviseSelf(ctx, log, stderr, "vrrp", args, f.noSuper, func() { sweepLedger(log, ledger) }); ran {
		return code
	}
	if !f.pprof.serve(ctx, "vipstack vrrp", log, stderr) {
		return 1
	}
	reg, announced := metrics.NewRegistry(), make(chan struct{}, 1)
	e, cfg, err := engine.New(engine.Options{ConfigPath: f.cfgPath, ConfigID: f.configID, Logger: log, Registry: reg, Ledger: ledger, Announced: announced})
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	stopEndpoints, ok := startEndpoints("vipstack vrrp", stderr, f.metricsAddr, reg, f.statusAddr, func() any { return map[string]any{"instances": e.Status()} })
	if !ok {
		return 1
	}
	defer stopEndpoints()
	stopKACompat, err := f.kaCompat.start(log, e.Status, cfg, reg)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack vrrp: --keepalived-exporter-compat: %v\n", err)
		return 1
	}
	defer stopKACompat()
	hup := make(chan os.Signal, 1)
	notifyReload(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			log.Info("SIGHUP: reloading", "file", f.cfgPath)
			if err := e.Reload(); err != nil {
				log.Error("reload failed", "err", err)
			}
		}
	}()
	log.Info("vipstack vrrp starting", "version", version.String(), "config", f.cfgPath, "ledger", ledger.Path)
	settleAtRest(ctx, log, e.Started(), f.pprof.addr != "", announced)
	if err := e.Run(ctx); err != nil {
		log.Error("vipstack vrrp failed", "err", err)
		return 1
	}
	log.Info("vipstack vrrp stopped")
	return 0
}

func parseVRRPFlags(args []string, stderr io.Writer) (f vrrpFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack vrrp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.cfgPath, "f", "/etc/keepalived/keepalived.conf", "keepalived.conf to run")
	fs.BoolVar(&f.check, "check", false, "validate the configuration and exit as keepalived -t does: 0 clean, 5 errors or warnings, 6 scripts without enable_script_security")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9650); empty: off")
	fs.StringVar(&f.statusAddr, "status-addr", "", "serve JSON status on this loopback address (e.g. 127.0.0.1:9651); empty: off")
	fs.StringVar(&f.stateDir, "state-dir", "/run/vipstack", "directory for the ledger of held VIPs (crash clean-up)")
	fs.BoolVar(&f.noSuper, "no-supervisor", false, "run the engine in this process, without the supervisor that removes VIPs at once if the engine crashes")
	fs.StringVar(&f.cfgPath, "config-file", "/etc/keepalived/keepalived.conf", "same as -f")
	f.logFlags = addLogLevel(fs, "vipstack vrrp", "")
	f.pprof.add(fs)
	fs.StringVar(&f.configID, "i", "", "config ID, as keepalived's -i: lines \"@ID ...\" are read only with this ID, \"@^ID ...\" only without it (default: the host name)")
	fs.StringVar(&f.configID, "config-id", "", "same as -i")
	f.kaCompat = addKACompatFlags(fs)
	if code, ok := parseNoArgs(fs, args, stderr); !ok {
		return f, code, false
	}
	if f.log, ok = f.logFlags.logger(stderr); !ok {
		return f, 2, false
	}
	if !f.pprof.check("vipstack vrrp", stderr) {
		return f, 2, false
	}
	return f, 0, true
}

// checkVRRP is `vipstack vrrp --check`: keepalived -t's checks and exit
// codes.
func checkVRRP(f vrrpFlags, stdout, stderr io.Writer) int {
	cfg, err := engine.CheckID(f.cfgPath, f.configID)
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
		fmt.Fprintf(stdout, "%s: configuration is valid (%d instances, %d scripts)\n", f.cfgPath, len(cfg.Instances), len(cfg.Scripts))
	} else {
		fmt.Fprintf(stdout, "%s: configuration is valid with %d warnings (%d instances, %d scripts); exit %d, as keepalived -t\n",
			f.cfgPath, len(warnings), len(cfg.Instances), len(cfg.Scripts), code)
	}
	return code
}

// sweepLedger removes every VIP recorded in the ledger: the supervisor's
// clean-up after an engine crash.
func sweepLedger(log *slog.Logger, l netif.Ledger) {
	h, err := netif.Open()
	if err != nil {
		log.Error("supervisor: cannot open netlink to remove VIPs", "err", err)
		return
	}
	defer h.Close()
	removed, err := h.Sweep(l)
	for _, v := range removed {
		log.Info("supervisor: removed VIP of the crashed engine", "vip", v.Prefix, "dev", v.Dev)
	}
	if err != nil {
		log.Error("supervisor: removing VIPs failed", "ledger", l.Path, "err", err)
	}
}

// requireLoopback rejects listen addresses that are not on loopback.
func requireLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if host == "localhost" {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		return errors.New("the status endpoint listens on loopback only (127.0.0.1:PORT or [::1]:PORT)")
	}
	return nil
}
