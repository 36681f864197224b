package ipfailoverd

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
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/cleanup"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/version"
)

// Command is the subcommand's name, as in `vipstack ipfailover`.
const Command = "ipfailover"

const usage = `Usage: vipstack ipfailover [flags] [NAME]

Runs this node's part of an IP failover pool, configured like OpenShift's
ipfailover image: by the OPENSHIFT_HA_* environment variables or the
equivalent flags (flags win). NAME is the same as --config-name.

Variables and flags:
`

// Flags are the flags of `vipstack ipfailover`.
type Flags struct {
	// Opts are the pool's, but for the registry and the ledger, which
	// Run sets; Opts.BGP is left to the caller (ipfailover/bgpmode's, or
	// nil: a pool announced by BGP is refused).
	Opts ipfailover.Options
	// FlagVals are the pool's variables given as flags, by name.
	FlagVals                          map[string]string
	PrintConfig, NoSuper              bool
	MetricsAddr, StatusAddr, StateDir string
	Log                               *slog.Logger
	LogFlags                          *daemon.LogFlags
	Profiles                          daemon.Profiles
}

// ParseFlags parses the flags of `vipstack ipfailover` and the pool's
// variables (flags win over the environment); false means exit with code
// (it said why on stderr). The pool's warnings are left to LogWarnings.
func ParseFlags(args []string, stderr io.Writer) (f Flags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack ipfailover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	byFlag := addVars(fs)
	var (
		vrrpVersion  = fs.Int("vrrp-version", 0, "VRRP version: 2 or 3 (default: 2, the image's, for IPv4 VIPs; 3 for IPv6, as keepalived runs them)")
		advert       = fs.Duration("advert-int", time.Second, "VRRP advertisement interval (v2: whole seconds; v3: from 10ms)")
		announceRate = fs.Int("announce-rate", 1000, "gratuitous ARPs / unsolicited NAs per second and per group taken over, for the repeats: the first of each VIP leaves at once (0: unlimited, as keepalived)")
		vridProbe    = fs.Duration("vrid-probe", 3*time.Second, "listen this long on the link for VRIDs in use before starting (0: do not)")
		nodes        = fs.String("node-addresses", "", "multicast mode: addresses of every node of the pool, comma separated, for exact ranks (unicast uses OPENSHIFT_HA_UNICAST_PEERS)")
		keepRoutes   = fs.Bool("bgp-stop-keeps-routes", false, "BGP mode: on SIGTERM, exit without withdrawing the routes, for a planned restart (the routers keep them by graceful restart, OPENSHIFT_HA_BGP_GRACEFUL_RESTART)")
	)
	fs.BoolVar(&f.PrintConfig, "print-config", false, "resolve the interface, listen for VRIDs, print the keepalived.conf this node would run, and exit")
	fs.StringVar(&f.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9650); empty: off")
	fs.StringVar(&f.StatusAddr, "status-addr", "", "serve JSON status on this loopback address (e.g. 127.0.0.1:9651); empty: off")
	fs.StringVar(&f.StateDir, "state-dir", "/run/vipstack", "directory for the ledger of held VIPs (crash clean-up)")
	fs.BoolVar(&f.NoSuper, "no-supervisor", false, "run without the supervisor that removes the VIPs (and the firewall rule) at once if the pool's process dies")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	f.LogFlags = daemon.AddLogFlags(fs, "vipstack ipfailover", "")
	f.Profiles.Add(fs)
	if err := fs.Parse(args); err != nil {
		return f, daemon.ParseExit(err), false
	}
	if !f.Profiles.Check("vipstack ipfailover", stderr) {
		return f, 2, false
	}
	if f.FlagVals, ok = flagVars(fs, byFlag, stderr); !ok {
		return f, 2, false
	}
	if f.Log, ok = f.LogFlags.Logger(stderr); !ok {
		return f, 2, false
	}
	spec, err := ipfailover.Parse(ipfailover.Input{Env: ipfailover.EnvFrom(os.Environ()), Flags: f.FlagVals})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return f, 2, false
	}
	f.Opts = ipfailover.Options{Spec: spec, Version: *vrrpVersion, AdvertInterval: *advert, AnnounceRate: *announceRate,
		VRIDProbe: *vridProbe, BGPStopKeepsRoutes: *keepRoutes, Logger: f.Log}
	if *keepRoutes && (spec.BGP == nil || spec.BGP.GracefulRestart == 0) {
		fmt.Fprintf(stderr, "vipstack ipfailover: --bgp-stop-keeps-routes needs BGP with graceful restart (%s and %s): without it the routers drop the routes when the sessions close\n",
			ipfailover.EnvBGPASN, ipfailover.EnvBGPGracefulRestart)
		return f, 2, false
	}
	if f.Opts.Nodes, ok = checkOptions(*nodes, *announceRate, *vridProbe, f.StatusAddr, stderr); !ok {
		return f, 2, false
	}
	return f, 0, true
}

// LogWarnings logs what ParseFlags found questionable in the pool's
// variables.
func (f Flags) LogWarnings() {
	for _, w := range f.Opts.Spec.Warnings {
		f.Log.Warn(w)
	}
}

// Ledger opens the ledger of the pool's held VIPs in --state-dir; false
// means exit with code.
func (f Flags) Ledger(stderr io.Writer) (l netif.Ledger, code int, ok bool) {
	l, err := netif.LedgerIn(f.StateDir, "ipfailover-"+f.Opts.Spec.ConfigName)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return l, 1, false
	}
	return l, 0, true
}

// CrashCleanup is what the supervisor does when the pool's process dies:
// it removes the ledger's VIPs and, in multicast mode, the firewall rule.
func CrashCleanup(log *slog.Logger, spec *ipfailover.Spec, ledger netif.Ledger) func() {
	fw := ipfailover.NewFirewall(spec)
	return func() {
		cleanup.Ledger(log, ledger)
		if spec.Unicast() || spec.BGP != nil {
			return // no rule in unicast or BGP mode
		}
		if err := fw.Remove(); err != nil {
			log.Error("supervisor: removing the firewall rule failed", "err", err)
		}
	}
}

// Run runs this node's part of the pool until ctx ends, and returns the
// exit code.
func Run(ctx context.Context, f Flags, ledger netif.Ledger, stderr io.Writer) int {
	log, spec := f.Log, f.Opts.Spec
	procs := runtime.GOMAXPROCS(0)
	if spec.BGP == nil {
		// The pool's configuration is this command's, without realtime
		// priority (see OneProcessor). A BGP speaker was not measured
		// on one processor.
		procs = daemon.OneProcessor(os.Getenv)
	}
	daemon.HeapSamplingAtRest(f.Profiles.Addr != "")
	// work tells the trim at rest of bursts that allocate too little to
	// count (daemon.SettleAtRest): announcements and answered scrapes.
	reg, work := metrics.NewRegistry(), make(chan struct{}, 1)
	opts := f.Opts
	opts.Registry, opts.Ledger, opts.Announced = reg, ledger, work
	// The pool owns the settings from here on, and lets their list of
	// VIPs go once its engine holds them; f lives on the heap, kept by
	// the profiles' server when it runs, and must not keep them.
	f.Opts.Spec = nil
	pool, err := ipfailover.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return 2
	}
	if !f.Profiles.Serve(ctx, "vipstack ipfailover", log, stderr) {
		return 1
	}
	stopEndpoints, ok := daemon.StartEndpoints("vipstack ipfailover", stderr, f.MetricsAddr, reg, f.StatusAddr, func() any { return pool.Status() }, serve.Served(work))
	if !ok {
		return 1
	}
	defer stopEndpoints()
	defer ignoreSIGHUP(log)()
	log.Info("vipstack ipfailover starting", "version", version.String(), "config", spec.ConfigName, "vips", len(spec.VIPs),
		"ledger", ledger.Path, "variables", setVars(f.FlagVals), "processors", procs)
	daemon.SettleAtRest(ctx, log, pool.Running(), f.Profiles.Addr != "", work)
	if err := pool.Run(ctx); err != nil {
		log.Error("vipstack ipfailover failed", "err", err)
		return ExitCode(err)
	}
	log.Info("vipstack ipfailover stopped")
	return 0
}

// FromSupervisor runs the pool when this process is the child a
// supervisor started for `vipstack ipfailover` (supervise.EnvChild set in
// its environment, the command in its arguments) and the pool is run by
// VRRP, and the clean-up (CrashCleanup) when it is the process such a
// supervisor runs after its child died (supervise.IsCleanup), by VRRP or
// BGP; ok is false, and nothing happens, in any other process. A pool
// announced by BGP is left to the command, after the whole
// initialisation: its speaker is in packages that initialise later
// (package ipfailover/bgpmode). Package ipfailoverd/early calls it from
// its initialisation.
func FromSupervisor() (code int, ok bool) {
	cleanup := supervise.IsCleanup()
	if !cleanup && !supervise.IsChild() || len(os.Args) < 2 || os.Args[1] != Command {
		return 0, false
	}
	supervise.TakeStartGC() // also for a pool main runs (BGP): it sets its GOGC at rest too
	f, code, ok := ParseFlags(os.Args[2:], os.Stderr)
	if !ok {
		return code, true
	}
	if !cleanup && (f.Opts.Spec.BGP != nil || f.PrintConfig) {
		return 0, false
	}
	f.LogWarnings()
	ledger, code, ok := f.Ledger(os.Stderr)
	if !ok {
		return code, true
	}
	if cleanup {
		CrashCleanup(f.Log, f.Opts.Spec, ledger)()
		return 0, true
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return Run(ctx, f, ledger, os.Stderr), true
}

// addVars adds a flag for each pool variable that has one, and
// the image's short flags; it returns the variables' names by flag.
func addVars(fs *flag.FlagSet) map[string]string {
	byFlag := map[string]string{}
	for _, v := range ipfailover.Vars() {
		if v.Flag == "" {
			continue
		}
		usage := fmt.Sprintf("%s (%s", v.Usage, v.Name)
		if v.Default != "" {
			usage += fmt.Sprintf(", default %q", v.Default)
		}
		fs.String(v.Flag, "", usage+")")
		byFlag[v.Flag] = v.Name
	}
	for short, long := range map[string]string{"i": "interface", "w": "watch-port", "r": "replicas"} {
		fs.String(short, "", "same as --"+long)
		byFlag[short] = byFlag[long]
	}
	return byFlag
}

// flagVars returns the variables given as flags, and NAME, the
// one argument, as the configuration's name.
func flagVars(fs *flag.FlagSet, byFlag map[string]string, stderr io.Writer) (map[string]string, bool) {
	flagVals := map[string]string{}
	fs.Visit(func(f *flag.Flag) {
		if name, ok := byFlag[f.Name]; ok {
			flagVals[name] = f.Value.String()
		}
	})
	switch fs.NArg() {
	case 0:
	case 1:
		flagVals[ipfailover.EnvConfigName] = fs.Arg(0)
	default:
		fmt.Fprintf(stderr, "vipstack ipfailover: want at most one argument (the configuration NAME), got %q\n", fs.Args())
		return nil, false
	}
	return flagVals, true
}

// checkOptions checks the flags beyond the pool's variables and
// returns the --node-addresses.
func checkOptions(nodes string, announceRate int, vridProbe time.Duration, statusAddr string, stderr io.Writer) ([]netip.Addr, bool) {
	var nodeAddrs []netip.Addr
	if nodes != "" {
		for _, f := range strings.FieldsFunc(nodes, func(r rune) bool { return r == ',' || r == ' ' }) {
			a, err := netip.ParseAddr(f)
			if err != nil {
				fmt.Fprintf(stderr, "vipstack ipfailover: --node-addresses %q: %q is not an IP address\n", nodes, f)
				return nil, false
			}
			nodeAddrs = append(nodeAddrs, a)
		}
	}
	if announceRate < 0 {
		fmt.Fprintf(stderr, "vipstack ipfailover: --announce-rate %d: want 0 (unlimited) or more\n", announceRate)
		return nil, false
	}
	if vridProbe < 0 {
		fmt.Fprintf(stderr, "vipstack ipfailover: --vrid-probe %v: want 0 (off) or a positive duration\n", vridProbe)
		return nil, false
	}
	if statusAddr != "" {
		if err := daemon.RequireLoopback(statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack ipfailover: --status-addr %q: %v\n", statusAddr, err)
			return nil, false
		}
	}
	return nodeAddrs, true
}

// ignoreSIGHUP logs and ignores SIGHUP until the returned func is called:
// the configuration comes from the environment, which a running process
// cannot be given again, and SIGHUP would otherwise end the process
// without releasing the VIPs.
func ignoreSIGHUP(log *slog.Logger) (stop func()) {
	hup := make(chan os.Signal, 1)
	daemon.NotifyReload(hup, syscall.SIGHUP)
	go func() {
		for range hup {
			log.Info("SIGHUP ignored: the configuration comes from the environment; restart to change it")
		}
	}()
	return func() { signal.Stop(hup) }
}

// ExitCode is 2 for a configuration the node or the link cannot serve
// (a restart would fail the same way; the supervisor does not restart on
// 2), else 1.
func ExitCode(err error) int {
	var ce *ipfailover.ConfigError
	if errors.As(err, &ce) {
		return 2
	}
	return 1
}

// setVars lists the variables given in the environment or as flags, for
// the start-up log line.
func setVars(flags map[string]string) string {
	env := ipfailover.EnvFrom(os.Environ())
	var names []string
	for k := range env {
		names = append(names, k)
	}
	for k := range flags {
		if _, ok := env[k]; !ok {
			names = append(names, k)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}
