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
	"path/filepath"
	"strings"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/version"
)

func runVRRP(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack vrrp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath     = fs.String("f", "/etc/keepalived/keepalived.conf", "keepalived.conf to run")
		check       = fs.Bool("check", false, "validate the configuration and exit as keepalived -t does: 0 clean, 5 errors or warnings, 6 scripts without enable_script_security")
		metricsAddr = fs.String("metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9650); empty: off")
		statusAddr  = fs.String("status-addr", "", "serve JSON status on this loopback address (e.g. 127.0.0.1:9651); empty: off")
		stateDir    = fs.String("state-dir", "/run/vipstack", "directory for the ledger of held VIPs (crash clean-up)")
		noSuper     = fs.Bool("no-supervisor", false, "run the engine in this process, without the supervisor that removes VIPs at once if the engine crashes")
	)
	fs.StringVar(cfgPath, "config-file", "/etc/keepalived/keepalived.conf", "same as -f")
	logLevel := addLogLevel(fs, "vipstack vrrp", "")
	configID := fs.String("i", "", "config ID, as keepalived's -i: lines \"@ID ...\" are read only with this ID, \"@^ID ...\" only without it (default: the host name)")
	fs.StringVar(configID, "config-id", "", "same as -i")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vipstack vrrp: unexpected arguments %q\n", fs.Args())
		return 2
	}
	log, ok := logLevel.logger(stderr)
	if !ok {
		return 2
	}

	if *check {
		cfg, err := engine.CheckID(*cfgPath, *configID)
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
			fmt.Fprintf(stdout, "%s: configuration is valid (%d instances, %d scripts)\n", *cfgPath, len(cfg.Instances), len(cfg.Scripts))
		} else {
			fmt.Fprintf(stdout, "%s: configuration is valid with %d warnings (%d instances, %d scripts); exit %d, as keepalived -t\n",
				*cfgPath, len(warnings), len(cfg.Instances), len(cfg.Scripts), code)
		}
		return code
	}
	if *statusAddr != "" {
		if err := requireLoopback(*statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack vrrp: --status-addr %q: %v\n", *statusAddr, err)
			return 2
		}
	}
	ledger, err := ledgerPath(*stateDir)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack vrrp: %v\n", err)
		return 1
	}
	if !*noSuper && !supervise.IsChild() {
		// Validate first, so a bad file fails here and not in a restart loop.
		if _, err := engine.CheckID(*cfgPath, *configID); err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
	}
	if code, ran := superviseSelf(ctx, log, stderr, "vrrp", args, *noSuper, func() { sweepLedger(log, netif.Ledger{Path: ledger}) }); ran {
		return code
	}
	reg := prometheus.NewRegistry()
	e, cfg, err := engine.New(engine.Options{ConfigPath: *cfgPath, ConfigID: *configID, Logger: log, Registry: reg, Ledger: netif.Ledger{Path: ledger}})
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	stopEndpoints, ok := startEndpoints("vipstack vrrp", stderr, *metricsAddr, reg, *statusAddr, func() any { return map[string]any{"instances": e.Status()} })
	if !ok {
		return 1
	}
	defer stopEndpoints()

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			log.Info("SIGHUP: reloading", "file", *cfgPath)
			if err := e.Reload(); err != nil {
				log.Error("reload failed", "err", err)
			}
		}
	}()
	log.Info("vipstack vrrp starting", "version", version.String(), "config", *cfgPath, "ledger", ledger)
	if err := e.Run(ctx); err != nil {
		log.Error("vipstack vrrp failed", "err", err)
		return 1
	}
	log.Info("vipstack vrrp stopped")
	return 0
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

// ledgerPath names the ledger after the network namespace, so processes in
// different namespaces on one host do not share it.
func ledgerPath(dir string) (string, error) {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		ns = "net"
	}
	ns = strings.NewReplacer(":", "", "[", "-", "]", "").Replace(ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return filepath.Join(dir, "vrrp-"+ns+".vips"), nil
}
