package vrrpd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"syscall"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/kadump"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/version"
)

// Command is the subcommand's name, as in `vipstack vrrp`.
const Command = "vrrp"

// Flags are the flags of `vipstack vrrp`.
type Flags struct {
	ConfigPath, ConfigID, MetricsAddr, StatusAddr, StateDir string
	Check, NoSuper                                          bool
	Log                                                     *slog.Logger
	LogFlags                                                *daemon.LogFlags
	KACompat                                                *kadump.Flags
	Profiles                                                daemon.Profiles
}

// ParseFlags parses the flags of `vipstack vrrp`; false means exit with
// code (it said why on stderr).
func ParseFlags(args []string, stderr io.Writer) (f Flags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack vrrp", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.ConfigPath, "f", "/etc/keepalived/keepalived.conf", "keepalived.conf to run")
	fs.BoolVar(&f.Check, "check", false, "validate the configuration and exit as keepalived -t does: 0 clean, 5 errors or warnings, 6 scripts without enable_script_security")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9650); empty: off")
	fs.StringVar(&f.StatusAddr, "status-addr", "", "serve JSON status on this loopback address (e.g. 127.0.0.1:9651); empty: off")
	fs.StringVar(&f.StateDir, "state-dir", "/run/vipstack", "directory for the ledger of held VIPs (crash clean-up)")
	fs.BoolVar(&f.NoSuper, "no-supervisor", false, "run the engine in this process, without the supervisor that removes VIPs at once if the engine crashes")
	fs.StringVar(&f.ConfigPath, "config-file", "/etc/keepalived/keepalived.conf", "same as -f")
	f.LogFlags = daemon.AddLogFlags(fs, "vipstack vrrp", "")
	f.Profiles.Add(fs)
	fs.StringVar(&f.ConfigID, "i", "", "config ID, as keepalived's -i: lines \"@ID ...\" are read only with this ID, \"@^ID ...\" only without it (default: the host name)")
	fs.StringVar(&f.ConfigID, "config-id", "", "same as -i")
	f.KACompat = kadump.AddFlags(fs)
	if code, ok := daemon.ParseNoArgs(fs, args, stderr); !ok {
		return f, code, false
	}
	if f.Log, ok = f.LogFlags.Logger(stderr); !ok {
		return f, 2, false
	}
	if !f.Profiles.Check("vipstack vrrp", stderr) {
		return f, 2, false
	}
	return f, 0, true
}

// Ledger checks the flags a run needs beyond ParseFlags and opens the
// ledger of held VIPs in --state-dir; false means exit with code.
func (f Flags) Ledger(stderr io.Writer) (l netif.Ledger, code int, ok bool) {
	if f.StatusAddr != "" {
		if err := daemon.RequireLoopback(f.StatusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack vrrp: --status-addr %q: %v\n", f.StatusAddr, err)
			return l, 2, false
		}
	}
	l, err := netif.LedgerIn(f.StateDir, "vrrp")
	if err != nil {
		fmt.Fprintf(stderr, "vipstack vrrp: %v\n", err)
		return l, 1, false
	}
	return l, 0, true
}

// Run runs the engine on the flags' file until ctx ends, and returns the
// exit code.
func Run(ctx context.Context, f Flags, ledger netif.Ledger, stderr io.Writer) int {
	log := f.Log
	daemon.HeapSamplingAtRest(f.Profiles.Addr != "")
	if !f.Profiles.Serve(ctx, "vipstack vrrp", log, stderr) {
		return 1
	}
	// work tells the trim at rest of bursts that allocate too little to
	// count (daemon.SettleAtRest): announcements and answered scrapes.
	reg, work := metrics.NewRegistry(), make(chan struct{}, 1)
	e, cfg, err := engine.New(engine.Options{ConfigPath: f.ConfigPath, ConfigID: f.ConfigID, Logger: log, Registry: reg, Ledger: ledger, Announced: work})
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	stopEndpoints, ok := daemon.StartEndpoints("vipstack vrrp", stderr, f.MetricsAddr, reg, f.StatusAddr, func() any {
		return status{Instances: e.Status(), Stalled: e.Stalled()}
	}, serve.Served(work))
	if !ok {
		return 1
	}
	defer stopEndpoints()
	stopKACompat, err := f.KACompat.Start(log, e.Status, cfg, reg)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack vrrp: --keepalived-exporter-compat: %v\n", err)
		return 1
	}
	defer stopKACompat()
	defer reloadOnHUP(log, f.ConfigPath, e.Reload)()
	log.Info("vipstack vrrp starting", "version", version.String(), "config", f.ConfigPath, "ledger", ledger.Path, "processors", runtime.GOMAXPROCS(0))
	daemon.SettleAtRest(ctx, log, e.Started(), f.Profiles.Addr != "", work)
	if err := e.Run(ctx); err != nil {
		log.Error("vipstack vrrp failed", "err", err)
		return 1
	}
	log.Info("vipstack vrrp stopped")
	return 0
}

// reloadOnHUP calls reload on each SIGHUP until the returned func is
// called.
func reloadOnHUP(log *slog.Logger, path string, reload func() error) (stop func()) {
	hup := make(chan os.Signal, 1)
	daemon.NotifyReload(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			log.Info("SIGHUP: reloading", "file", path)
			if err := reload(); err != nil {
				log.Error("reload failed", "err", err)
			}
		}
	}()
	return func() { signal.Stop(hup) }
}

// FromSupervisor runs the engine when this process is the child a
// supervisor started for `vipstack vrrp` (supervise.EnvChild set in its
// environment, the command in its arguments); ok is false, and nothing
// happens, in any other process. Package vrrpd/early calls it from its
// initialisation.
func FromSupervisor() (code int, ok bool) {
	if !supervise.IsChild() || supervise.IsCleanup() || len(os.Args) < 2 || os.Args[1] != Command {
		return 0, false
	}
	supervise.TakeStartGC()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	f, code, ok := ParseFlags(os.Args[2:], os.Stderr)
	if !ok {
		return code, true
	}
	ledger, code, ok := f.Ledger(os.Stderr)
	if !ok {
		return code, true
	}
	return Run(ctx, f, ledger, os.Stderr), true
}

// status is what --status-addr serves: every instance, and why the
// engine's loop counts as wedged (engine.Stalled), which makes the
// endpoint answer 503 (serve.JSON).
type status struct {
	Instances []engine.InstanceStatus `json:"instances"`
	Stalled   string                  `json:"vrrp_stalled,omitempty"`
}

func (s status) Unhealthy() string {
	if s.Stalled == "" {
		return ""
	}
	return "vrrp: " + s.Stalled
}
