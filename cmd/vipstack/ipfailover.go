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
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/ipfailover"
	"github.com/vipstack/vipstack/internal/ipfailover/bgpmode"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/supervise"
	"github.com/vipstack/vipstack/internal/version"
)

const ipfailoverUsage = `Usage: vipstack ipfailover [flags] [NAME]

Runs this node's part of an IP failover pool, configured like OpenShift's
ipfailover image: by the OPENSHIFT_HA_* environment variables or the
equivalent flags (flags win). NAME is the same as --config-name.

Variables and flags:
`

// ipfailoverFlags are the flags of `vipstack ipfailover` beyond the
// pool's variables.
type ipfailoverFlags struct {
	opts                              ipfailover.Options // but the registry and the ledger
	flagVals                          map[string]string  // the variables given as flags, by name
	printConfig, noSuper              bool
	metricsAddr, statusAddr, stateDir string
	log                               *slog.Logger
	logFlags                          *daemon.LogFlags
	pprof                             daemon.Profiles
}

func runIPFailover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseIPFailoverFlags(args, stderr)
	if !ok {
		return code
	}
	log, spec := f.log, f.opts.Spec
	if f.printConfig {
		return printIPFailoverConfig(ctx, f.opts, stdout, stderr)
	}
	ledger, err := netif.LedgerIn(f.stateDir, "ipfailover-"+spec.ConfigName)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return 1
	}
	fw := ipfailover.NewFirewall(spec)
	onCrash := func() {
		daemon.SweepLedger(log, ledger)
		if spec.Unicast() || spec.BGP != nil {
			return // no rule in unicast or BGP mode
		}
		if err := fw.Remove(); err != nil {
			log.Error("supervisor: removing the firewall rule failed", "err", err)
		}
	}
	if supervise.IsCleanup() {
		// A small supervisor's clean-up after its pool's process died;
		// the supervisor holds the pool's name.
		onCrash()
		return 0
	}
	reg := metrics.NewRegistry()
	opts := f.opts
	announced := make(chan struct{}, 1)
	opts.Registry, opts.Ledger, opts.Announced = reg, ledger, announced
	pool, err := ipfailover.New(opts)
	if err != nil {
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
		if supervising(f.noSuper) {
			execSmallSupervisor(log, f.logFlags.Spec(), claim)
		}
	}
	// The configuration and the options were checked above, so a bad
	// variable or flag fails here (exit 2) and not in a restart loop.
	if code, ran := superviseSelf(ctx, log, stderr, "ipfailover", args, f.noSuper, onCrash); ran {
		return code
	}
	if !f.pprof.Serve(ctx, "vipstack ipfailover", log, stderr) {
		return 1
	}
	stopEndpoints, ok := daemon.StartEndpoints("vipstack ipfailover", stderr, f.metricsAddr, reg, f.statusAddr, func() any { return pool.Status() })
	if !ok {
		return 1
	}
	defer stopEndpoints()
	defer ignoreSIGHUP(log)()
	log.Info("vipstack ipfailover starting", "version", version.String(), "config", spec.ConfigName, "vips", len(spec.VIPs),
		"ledger", ledger.Path, "variables", setVars(f.flagVals))
	daemon.SettleAtRest(ctx, log, pool.Running(), f.pprof.Addr != "", announced)
	if err := pool.Run(ctx); err != nil {
		log.Error("vipstack ipfailover failed", "err", err)
		return exitCodeOf(err)
	}
	log.Info("vipstack ipfailover stopped")
	return 0
}

func parseIPFailoverFlags(args []string, stderr io.Writer) (f ipfailoverFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack ipfailover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	byFlag := addIPFailoverVars(fs)
	var (
		vrrpVersion  = fs.Int("vrrp-version", 0, "VRRP version: 2 or 3 (default: 2, the image's, for IPv4 VIPs; 3 for IPv6, as keepalived runs them)")
		advert       = fs.Duration("advert-int", time.Second, "VRRP advertisement interval (v2: whole seconds; v3: from 10ms)")
		announceRate = fs.Int("announce-rate", 1000, "gratuitous ARPs / unsolicited NAs per second and per group taken over, for the repeats: the first of each VIP leaves at once (0: unlimited, as keepalived)")
		vridProbe    = fs.Duration("vrid-probe", 3*time.Second, "listen this long on the link for VRIDs in use before starting (0: do not)")
		nodes        = fs.String("node-addresses", "", "multicast mode: addresses of every node of the pool, comma separated, for exact ranks (unicast uses OPENSHIFT_HA_UNICAST_PEERS)")
		keepRoutes   = fs.Bool("bgp-stop-keeps-routes", false, "BGP mode: on SIGTERM, exit without withdrawing the routes, for a planned restart (the routers keep them by graceful restart, OPENSHIFT_HA_BGP_GRACEFUL_RESTART)")
	)
	fs.BoolVar(&f.printConfig, "print-config", false, "resolve the interface, listen for VRIDs, print the keepalived.conf this node would run, and exit")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9650); empty: off")
	fs.StringVar(&f.statusAddr, "status-addr", "", "serve JSON status on this loopback address (e.g. 127.0.0.1:9651); empty: off")
	fs.StringVar(&f.stateDir, "state-dir", "/run/vipstack", "directory for the ledger of held VIPs (crash clean-up)")
	fs.BoolVar(&f.noSuper, "no-supervisor", false, "run without the supervisor that removes the VIPs (and the firewall rule) at once if the pool's process dies")
	fs.Usage = func() {
		fmt.Fprint(stderr, ipfailoverUsage)
		fs.PrintDefaults()
	}
	f.logFlags = daemon.AddLogFlags(fs, "vipstack ipfailover", "")
	f.pprof.Add(fs)
	if err := fs.Parse(args); err != nil {
		return f, daemon.ParseExit(err), false
	}
	if !f.pprof.Check("vipstack ipfailover", stderr) {
		return f, 2, false
	}
	if f.flagVals, ok = ipfailoverFlagVars(fs, byFlag, stderr); !ok {
		return f, 2, false
	}
	if f.log, ok = f.logFlags.Logger(stderr); !ok {
		return f, 2, false
	}
	spec, err := ipfailover.Parse(ipfailover.Input{Env: ipfailover.EnvFrom(os.Environ()), Flags: f.flagVals})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return f, 2, false
	}
	for _, w := range spec.Warnings {
		f.log.Warn(w)
	}
	f.opts = ipfailover.Options{Spec: spec, Version: *vrrpVersion, AdvertInterval: *advert, AnnounceRate: *announceRate,
		VRIDProbe: *vridProbe, BGPStopKeepsRoutes: *keepRoutes, BGP: bgpmode.Mode{}, Logger: f.log}
	if *keepRoutes && (spec.BGP == nil || spec.BGP.GracefulRestart == 0) {
		fmt.Fprintf(stderr, "vipstack ipfailover: --bgp-stop-keeps-routes needs BGP with graceful restart (%s and %s): without it the routers drop the routes when the sessions close\n",
			ipfailover.EnvBGPASN, ipfailover.EnvBGPGracefulRestart)
		return f, 2, false
	}
	if f.opts.Nodes, ok = checkIPFailoverOptions(*nodes, *announceRate, *vridProbe, f.statusAddr, stderr); !ok {
		return f, 2, false
	}
	return f, 0, true
}

// addIPFailoverVars adds a flag for each pool variable that has one, and
// the image's short flags; it returns the variables' names by flag.
func addIPFailoverVars(fs *flag.FlagSet) map[string]string {
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

// ipfailoverFlagVars returns the variables given as flags, and NAME, the
// one argument, as the configuration's name.
func ipfailoverFlagVars(fs *flag.FlagSet, byFlag map[string]string, stderr io.Writer) (map[string]string, bool) {
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

// checkIPFailoverOptions checks the flags beyond the pool's variables and
// returns the --node-addresses.
func checkIPFailoverOptions(nodes string, announceRate int, vridProbe time.Duration, statusAddr string, stderr io.Writer) ([]netip.Addr, bool) {
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
		return exitCodeOf(err)
	}
	fmt.Fprint(stdout, text)
	return 0
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

// exitCodeOf is 2 for a configuration the node or the link cannot serve
// (a restart would fail the same way; the supervisor does not restart on
// 2), else 1.
func exitCodeOf(err error) int {
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
