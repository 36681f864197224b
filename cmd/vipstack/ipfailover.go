package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/ipfailover"
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

func runIPFailover(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack ipfailover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	vars := ipfailover.Vars()
	byFlag := map[string]string{}
	for _, v := range vars {
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
	var (
		vrrpVersion  = fs.Int("vrrp-version", 0, "VRRP version: 2 or 3 (default: 2, the image's, for IPv4 VIPs; 3 for IPv6, as keepalived runs them)")
		advert       = fs.Duration("advert-int", time.Second, "VRRP advertisement interval (v2: whole seconds; v3: from 10ms)")
		announceRate = fs.Int("announce-rate", 1000, "gratuitous ARPs / unsolicited NAs per second and per group taken over (0: unlimited, as keepalived)")
		vridProbe    = fs.Duration("vrid-probe", 3*time.Second, "listen this long on the link for VRIDs in use before starting (0: do not)")
		nodes        = fs.String("node-addresses", "", "multicast mode: addresses of every node of the pool, comma separated, for exact ranks (unicast uses OPENSHIFT_HA_UNICAST_PEERS)")
		printConfig  = fs.Bool("print-config", false, "resolve the interface, listen for VRIDs, print the keepalived.conf this node would run, and exit")
		metricsAddr  = fs.String("metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9650); empty: off")
		statusAddr   = fs.String("status-addr", "", "serve JSON status on this loopback address (e.g. 127.0.0.1:9651); empty: off")
		stateDir     = fs.String("state-dir", "/run/vipstack", "directory for the ledger of held VIPs (crash clean-up)")
		noSuper      = fs.Bool("no-supervisor", false, "run without the supervisor that removes the VIPs (and the firewall rule) at once if the pool's process dies")
	)
	fs.Usage = func() {
		fmt.Fprint(stderr, ipfailoverUsage)
		fs.PrintDefaults()
	}
	logLevel := addLogLevel(fs, "vipstack ipfailover", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
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
		return 2
	}
	log, ok := logLevel.logger(stderr)
	if !ok {
		return 2
	}

	spec, err := ipfailover.Parse(ipfailover.Input{Env: ipfailover.EnvFrom(os.Environ()), Flags: flagVals})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return 2
	}
	for _, w := range spec.Warnings {
		log.Warn(w)
	}
	var nodeAddrs []netip.Addr
	if *nodes != "" {
		for _, f := range strings.FieldsFunc(*nodes, func(r rune) bool { return r == ',' || r == ' ' }) {
			a, err := netip.ParseAddr(f)
			if err != nil {
				fmt.Fprintf(stderr, "vipstack ipfailover: --node-addresses %q: %q is not an IP address\n", *nodes, f)
				return 2
			}
			nodeAddrs = append(nodeAddrs, a)
		}
	}
	if *announceRate < 0 {
		fmt.Fprintf(stderr, "vipstack ipfailover: --announce-rate %d: want 0 (unlimited) or more\n", *announceRate)
		return 2
	}
	if *vridProbe < 0 {
		fmt.Fprintf(stderr, "vipstack ipfailover: --vrid-probe %v: want 0 (off) or a positive duration\n", *vridProbe)
		return 2
	}
	if *statusAddr != "" {
		if err := requireLoopback(*statusAddr); err != nil {
			fmt.Fprintf(stderr, "vipstack ipfailover: --status-addr %q: %v\n", *statusAddr, err)
			return 2
		}
	}
	opts := ipfailover.Options{
		Spec:           spec,
		Version:        *vrrpVersion,
		AdvertInterval: *advert,
		AnnounceRate:   *announceRate,
		VRIDProbe:      *vridProbe,
		Nodes:          nodeAddrs,
		Logger:         log,
	}
	if *printConfig {
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

	ledger, err := ipfailoverLedger(*stateDir, spec.ConfigName)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack ipfailover: %v\n", err)
		return 1
	}
	reg := prometheus.NewRegistry()
	opts.Registry, opts.Ledger = reg, netif.Ledger{Path: ledger}
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
	}
	// The configuration and the options were checked above, so a bad
	// variable or flag fails here (exit 2) and not in a restart loop.
	fw := ipfailover.NewFirewall(spec)
	if code, ran := superviseSelf(ctx, log, stderr, "ipfailover", args, *noSuper, func() {
		sweepLedger(log, netif.Ledger{Path: ledger})
		if spec.Unicast() {
			return // no rule in unicast mode
		}
		if err := fw.Remove(); err != nil {
			log.Error("supervisor: removing the firewall rule failed", "err", err)
		}
	}); ran {
		return code
	}
	stopEndpoints, ok := startEndpoints("vipstack ipfailover", stderr, *metricsAddr, reg, *statusAddr, func() any { return pool.Status() })
	if !ok {
		return 1
	}
	defer stopEndpoints()
	// The configuration comes from the environment, which a running
	// process cannot be given again: SIGHUP (which would otherwise end the
	// process without releasing the VIPs) is logged and ignored.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			log.Info("SIGHUP ignored: the configuration comes from the environment; restart to change it")
		}
	}()
	log.Info("vipstack ipfailover starting", "version", version.String(), "config", spec.ConfigName, "vips", len(spec.VIPs),
		"ledger", ledger, "variables", setVars(flagVals))
	if err := pool.Run(ctx); err != nil {
		log.Error("vipstack ipfailover failed", "err", err)
		return exitCodeOf(err)
	}
	log.Info("vipstack ipfailover stopped")
	return 0
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

// ipfailoverLedger names the ledger after the pool and the network
// namespace, so it is shared with neither `vipstack vrrp` nor another pool.
func ipfailoverLedger(dir, config string) (string, error) {
	ns, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		ns = "net"
	}
	ns = strings.NewReplacer(":", "", "[", "-", "]", "").Replace(ns)
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, config)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	return filepath.Join(dir, "ipfailover-"+name+"-"+ns+".vips"), nil
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
