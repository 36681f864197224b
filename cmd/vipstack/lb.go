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
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lb"
	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbcli"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/lbproc"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/serve"
	"github.com/vipstack/vipstack/internal/version"
)

func runLB(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack lb", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath     = fs.String("f", "/etc/haproxy/haproxy.cfg", "haproxy.cfg (or the YAML form, *.yaml/*.yml) to run")
		check       = fs.Bool("check", false, "validate the configuration and exit (non-zero on error), like haproxy -c")
		metricsAddr = fs.String("metrics-addr", "", "serve Prometheus metrics on this address (e.g. 127.0.0.1:9652); empty: off")
		redirectTo  = fs.String("redirect", "", "while a server is UP, redirect TCP traffic for this VIP:PORT (e.g. 198.18.0.5:6443) to the first frontend's port with nftables; empty: off")
		drain       = fs.Duration("drain-timeout", 10*time.Second, "on SIGTERM (also after SIGUSR1's soft stop), how long connections may take to finish before they are closed")
		watch       = fs.Duration("watch-interval", time.Second, "how often to check the configuration file for changes (mtime and size) and reload; 0: only on SIGHUP")
		perBind     = fs.Int("listeners-per-bind", 1, "SO_REUSEPORT sockets (each with its own accept loop) per frontend bind")
	)
	fs.BoolVar(check, "c", false, "same as --check")
	logLevel := addLogLevel(fs, "vipstack lb", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "vipstack lb: unexpected arguments %q\n", fs.Args())
		return 2
	}
	level, ok := logLevel.level(stderr)
	if !ok {
		return 2
	}
	if *drain < 0 || *watch < 0 || *perBind < 1 {
		fmt.Fprintf(stderr, "vipstack lb: --drain-timeout and --watch-interval must not be negative, --listeners-per-bind must be at least 1\n")
		return 2
	}
	var vip netip.AddrPort
	if *redirectTo != "" {
		var err error
		if vip, err = netip.ParseAddrPort(*redirectTo); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect %q: %v (accepted: VIP:PORT such as 198.18.0.5:6443 or [fd00::5]:6443)\n", *redirectTo, err)
			return 2
		}
		// Refused here, not by the first Enable: that would leave the
		// balancer running with a redirect that fails every second.
		if err := redirect.CheckVIP(vip); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect: %v\n", err)
			return 2
		}
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	cfg, err := loadLBConfig(*cfgPath)
	if *check {
		if err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
		for _, w := range cfg.Warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		// haproxy -c resolves user and group names too.
		if _, err := lbproc.LookupIDs(cfg.User, cfg.Group); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", *cfgPath, err)
			return 1
		}
		if vip.IsValid() {
			if _, err := redirectPort(cfg, vip); err != nil {
				fmt.Fprintf(stderr, "vipstack lb: --redirect: %v\n", err)
				return 1
			}
		}
		fmt.Fprintln(stdout, "Configuration file is valid")
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return 1
	}
	for _, w := range cfg.Warnings {
		log.Warn(w)
	}
	ids, err := lbproc.LookupIDs(cfg.User, cfg.Group)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack lb: %s: %v\n", *cfgPath, err)
		return 1
	}
	if ids.UID > 0 && vip.IsValid() {
		fmt.Fprintf(stderr, "vipstack lb: --redirect changes nftables while it runs, which user %s in %s would no longer allow (accepted: --redirect without user/group, or user/group without --redirect)\n", cfg.User, *cfgPath)
		return 2
	}
	if cfg.NbThread > 0 {
		runtime.GOMAXPROCS(cfg.NbThread)
	}
	raise := relay.RaiseFileLimit
	if cfg.UlimitN > 0 {
		// haproxy's ulimit-n: that limit, not the highest allowed.
		raise = func() (uint64, uint64, error) { return relay.SetFileLimit(uint64(cfg.UlimitN)) }
	}
	if soft, hard, err := raise(); err != nil {
		log.Warn("could not set the open file limit", "err", err, "soft", soft, "hard", hard, "ulimit-n", cfg.UlimitN)
	} else {
		log.Debug("open file limit", "soft", soft, "hard", hard)
		if need := fdsNeeded(cfg); uint64(need) > soft {
			log.Warn("maxconn allows more connections than the open file limit can hold (2 sockets each); beyond it accepts and connects fail",
				"maxconn", cfg.MaxConn, "global_maxconn", cfg.GlobalMaxConn, "frontends", len(cfg.Frontends), "fds_needed", need, "limit", soft)
		}
	}

	var rd *redirect.Follower
	var rdPort uint16
	if vip.IsValid() {
		port, err := redirectPort(cfg, vip)
		if err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect: %v\n", err)
			return 1
		}
		// nftables must answer before anything starts: otherwise the
		// balancer would run without its redirect, retrying every
		// second. Listing tables changes nothing and needs the same
		// privilege (CAP_NET_ADMIN) and kernel support as the redirect.
		if _, err := redirect.New(vip, port).Enabled(); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --redirect: nftables is not usable: %v (accepted: a process with CAP_NET_ADMIN in the network namespace, on a kernel with nf_tables)\n", err)
			return 1
		}
		// It runs once the configuration is applied: a start that fails
		// (its ports held by another balancer, say) must not remove the
		// table of the VIP, which is that balancer's.
		rd = redirect.NewFollower(redirect.New(vip, port), log.With("redirect", vip.String()), nil)
		rdPort = port
	}

	reg := prometheus.NewRegistry()
	reloadMetrics, err := newLBReloadMetrics(reg)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack lb: metrics: %v\n", err)
		return 1
	}
	opts := lb.Options{Logger: log, Registry: reg, ListenersPerBind: *perBind, Version: version.String()}
	if rd != nil {
		opts.OnHealthy = rd.Set
	}
	l, err := lb.New(opts)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
		return 1
	}
	// The runtime API's sockets open before the configuration applies,
	// so that one that cannot be opened stops the start with nothing
	// listening (haproxy fails to start then too).
	sockets := lbcli.NewSockets(l, version.String(), time.Now(), log.With("part", "runtime-api"))
	defer sockets.Close()
	sockChange, err := sockets.Prepare(cfg.StatsSockets)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
		return 1
	}
	if err := l.Apply(cfg); err != nil {
		sockChange.Abort()
		fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
		return 1
	}
	sockChange.Commit()
	// As haproxy: the pidfile is written, then the process becomes
	// user and group, once every socket of the file is open.
	if cfg.PIDFile != "" {
		if err := lbproc.WritePIDFile(cfg.PIDFile, os.Getpid()); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
			shutdownLB(l, nil, 0, log)
			return 1
		}
	}
	// After the chroot, the configuration (on reload) and the pidfile
	// (at exit) are reached through the former root, as haproxy's master
	// process reaches them from outside.
	var root *os.Root
	cfgAbs, err := filepath.Abs(*cfgPath) // before the chroot moves "/"
	if err != nil {
		cfgAbs = *cfgPath
	}
	if cfg.Chroot != "" {
		if root, err = lbproc.Chroot(cfg.Chroot); err != nil {
			fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
			shutdownLB(l, nil, 0, log)
			return 1
		}
		defer root.Close()
		log.Info("chrooted: log sockets and files are now found under the new root; reloads read the configuration through the former root (SIGHUP only: the file watcher is off)",
			"chroot", cfg.Chroot)
	}
	if cfg.PIDFile != "" {
		defer func() {
			err := lbproc.RemovePIDFile(cfg.PIDFile, os.Getpid())
			if root != nil {
				err = root.Remove(strings.TrimPrefix(filepath.Clean(cfg.PIDFile), "/"))
			}
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				log.Warn("could not remove the pidfile", "err", err)
			}
		}()
	}
	if err := lbproc.Drop(ids); err != nil {
		fmt.Fprintf(stderr, "vipstack lb: %v\n", err)
		shutdownLB(l, nil, 0, log)
		return 1
	}
	if ids.UID >= 0 || ids.GID >= 0 {
		log.Info("running as the configuration's user and group; a reload can no longer open ports below 1024 or sockets where only root may write",
			"uid", ids.UID, "gid", ids.GID)
	}
	if rd != nil {
		go rd.Run()
	}
	if *metricsAddr != "" {
		s, err := serve.Metrics(*metricsAddr, reg)
		if err != nil {
			fmt.Fprintf(stderr, "vipstack lb: --metrics-addr: %v\n", err)
			shutdownLB(l, rd, 0, log)
			return 1
		}
		defer s.Close()
	}

	// reload applies the file as it is now, or nothing.
	running := cfg
	reload := func() error {
		next, err := loadLBConfigIn(root, *cfgPath, cfgAbs)
		if err != nil {
			return err
		}
		for _, w := range next.Warnings {
			log.Warn(w)
		}
		if next.PIDFile != running.PIDFile || next.User != running.User || next.Group != running.Group || next.NbThread != running.NbThread || next.Chroot != running.Chroot {
			log.Warn("pidfile, user, group, chroot and nbthread apply at start: restart vipstack lb for the new ones")
		}
		var port uint16
		if rd != nil {
			// Refused before anything changes: applied, it would
			// leave the VIP redirected to a port nobody serves.
			if port, err = redirectPort(next, vip); err != nil {
				return fmt.Errorf("--redirect: %w", err)
			}
		}
		change, err := sockets.Prepare(next.StatsSockets)
		if err != nil {
			return err
		}
		moving := rd != nil && port != rdPort
		first := next
		if moving {
			// The frontend keeps its old port too until the redirect
			// has moved: applied at once, VIP:6443 would point at a
			// closed port until the redirect's table is replaced, and
			// its clients be refused.
			first = alsoOnPort(next, port, running, rdPort)
		}
		err = l.Apply(first)
		if err != nil && first != next {
			// The old port is taken in the new configuration: move
			// without the overlap.
			log.Warn("cannot keep the old port open while the redirect moves", "port", rdPort, "err", err)
			first = next
			err = l.Apply(next)
		}
		if err != nil {
			change.Abort()
			return err
		}
		change.Commit()
		running = next
		if moving {
			log.Info("the redirect follows the frontend to its new port", "old", rdPort, "new", port)
			moved := rd.Retarget(redirect.New(vip, port))
			old := rdPort
			rdPort = port
			select {
			case <-moved:
			case <-time.After(retargetWait):
				log.Warn("the redirect did not move to the new port in time; closing the old one", "wait", retargetWait)
			}
			if first != next {
				if err := l.Apply(next); err != nil {
					return fmt.Errorf("closing the old port %d: %w", old, err)
				}
			}
		}
		return nil
	}

	reloads := make(chan string, 1)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	// SIGUSR1 is haproxy's soft stop: stop listening, let connections
	// end by themselves, send haproxy's "Proxy NAME stopped" lines.
	usr1 := make(chan os.Signal, 1)
	signal.Notify(usr1, syscall.SIGUSR1)
	defer signal.Stop(usr1)
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	go func() {
		for {
			select {
			case <-watchCtx.Done():
				return
			case <-hup:
				requestReload(reloads, "SIGHUP")
			}
		}
	}()
	if *watch > 0 && root == nil {
		go watchFile(watchCtx, clock.Real{}, *cfgPath, *watch, func() { requestReload(reloads, "file changed") }, log)
	}

	log.Info("vipstack lb running", "version", version.String(), "config", *cfgPath)
	for {
		select {
		case <-ctx.Done():
			log.Info("draining", "timeout", *drain)
			shutdownLB(l, rd, *drain, log)
			log.Info("vipstack lb stopped")
			return 0
		case <-usr1:
			log.Info("soft stop (SIGUSR1): not accepting connections; those open run to their end (SIGTERM or SIGINT gives them --drain-timeout)")
			softStopLB(ctx, l, rd, *drain, log)
			log.Info("vipstack lb stopped")
			return 0
		case why := <-reloads:
			log.Info("reloading", "reason", why, "config", *cfgPath)
			if err := reload(); err != nil {
				log.Error("reload failed: keeping the running configuration", "err", err)
				reloadMetrics.refused()
				continue
			}
			reloadMetrics.applied()
		}
	}
}

// lbReloadMetrics count the reloads of `vipstack lb`: a refused one
// leaves an older configuration in force, which only the log said.
type lbReloadMetrics struct {
	total  *prometheus.CounterVec
	lastOK prometheus.Gauge
}

func newLBReloadMetrics(reg prometheus.Registerer) (*lbReloadMetrics, error) {
	m := &lbReloadMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "vipstack_lb_reloads_total",
			Help: "Configuration reloads (SIGHUP or a changed file) by result: applied, or refused (the running configuration stays in force).",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vipstack_lb_config_last_reload_successful",
			Help: "1 when the last reload was applied (or none was tried), 0 when it was refused and the file on disk is not the configuration in force.",
		}),
	}
	m.total.WithLabelValues("applied")
	m.total.WithLabelValues("refused")
	m.lastOK.Set(1)
	for _, c := range []prometheus.Collector{m.total, m.lastOK} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *lbReloadMetrics) applied() {
	m.total.WithLabelValues("applied").Inc()
	m.lastOK.Set(1)
}

func (m *lbReloadMetrics) refused() {
	m.total.WithLabelValues("refused").Inc()
	m.lastOK.Set(0)
}

// loadLBConfig reads the YAML form for *.yaml and *.yml, haproxy.cfg
// otherwise; both return a validated model.
// loadLBConfigIn is loadLBConfig through root (the filesystem root before
// a chroot), nil for the current one.
func loadLBConfigIn(root *os.Root, path, abs string) (*lbconfig.Config, error) {
	if root == nil {
		return loadLBConfig(path)
	}
	data, err := root.ReadFile(strings.TrimPrefix(abs, "/"))
	if err != nil {
		return nil, fmt.Errorf("load haproxy config (through the root before chroot): %w", err)
	}
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		return lbconfig.ParseYAML(path, data)
	}
	return haproxycfg.ParseWith(path, data, haproxycfg.Options{LookupHost: haproxycfg.SystemLookup})
}

func loadLBConfig(path string) (*lbconfig.Config, error) {
	if strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml") {
		return lbconfig.LoadYAML(path)
	}
	return haproxycfg.Load(path)
}

// fdsNeeded estimates the file descriptors the configuration's connection
// limits allow: two sockets per connection, plus a margin for listeners,
// checks and pipes.
func fdsNeeded(cfg *lbconfig.Config) int {
	conns := cfg.MaxConn * len(cfg.Frontends)
	if cfg.GlobalMaxConn > 0 {
		conns = min(conns, cfg.GlobalMaxConn)
	}
	return 2*conns + 256
}

// v6OnlyDefault says whether IPv6 wildcard sockets take IPv6 only unless
// told otherwise (net.ipv6.bindv6only = 1): then `bind :::PORT` without
// v4v6 does not receive IPv4. Where it cannot be read, it is taken as set.
func v6OnlyDefault() bool {
	b, err := os.ReadFile("/proc/sys/net/ipv6/bindv6only")
	return err != nil || strings.TrimSpace(string(b)) != "0"
}

// redirectPort is where the redirect of vip sends traffic: the port of the
// first frontend bind that receives it. The redirect rewrites the
// destination to one of the node's own addresses (127.0.0.1 or ::1 for
// local clients, the address of the interface a remote client comes in
// on), so only a wildcard bind of vip's family receives it: 0.0.0.0 or
// `::: v4v6` for an IPv4 VIP (or `:::` alone while the kernel makes IPv6
// wildcards dual-stack by default), :: for an IPv6 one. A bind to one address
// would leave the VIP refusing every connection.
// retargetWait bounds how long a reload that moves the frontend keeps its
// old port open for the redirect to move.
const retargetWait = 5 * time.Second

// alsoOnPort returns next with the running configuration's wildcard binds
// on old (those the redirect delivers to now, see redirectPort) added, as
// they are, to the frontend of next that has a wildcard bind on port.
func alsoOnPort(next *lbconfig.Config, port uint16, running *lbconfig.Config, old uint16) *lbconfig.Config {
	wild := func(b lbconfig.Bind, p uint16) bool {
		a := b.Addr.Addr()
		return a.IsValid() && a.IsUnspecified() && b.Addr.Port() == p
	}
	var keep []lbconfig.Bind
	for _, fe := range running.Frontends {
		for _, b := range fe.Binds {
			if wild(b, old) {
				keep = append(keep, b)
			}
		}
	}
	both := *next
	both.Frontends = slices.Clone(next.Frontends)
	for i, fe := range both.Frontends {
		if slices.ContainsFunc(fe.Binds, func(b lbconfig.Bind) bool { return wild(b, port) }) {
			both.Frontends[i].Binds = append(slices.Clone(fe.Binds), keep...)
			break
		}
	}
	return &both
}

func redirectPort(cfg *lbconfig.Config, vip netip.AddrPort) (uint16, error) {
	v4 := vip.Addr().Unmap().Is4()
	var seen []string
	for _, f := range cfg.Frontends {
		for i, b := range f.Binds {
			a := b.Addr.Addr()
			if a.IsValid() && a.IsUnspecified() && b.Addr.Port() != 0 && (a.Is6() && (!v4 || b.V4V6 || !v6OnlyDefault()) || a.Is4() && v4) {
				return b.Addr.Port(), nil
			}
			what := b.Addr.String()
			if !a.IsValid() {
				what = b.Host
			} else if b.V4V6 {
				what += " v4v6"
			}
			if src := cfg.Source[lbconfig.BindKey("frontend "+f.Name, i)]; src != "" {
				what += " (" + src + ")"
			}
			seen = append(seen, "frontend "+f.Name+" "+what)
		}
	}
	want := "bind :PORT, 0.0.0.0:PORT or :::PORT v4v6"
	if !v4 {
		want = "bind :::PORT"
	}
	return 0, fmt.Errorf("no frontend listens on every local %s address, where the redirect of %s delivers (to 127.0.0.1/::1 for local clients, to the receiving interface's address for others); binds: %s (accepted: %s)",
		map[bool]string{true: "IPv4", false: "IPv6"}[v4], vip, strings.Join(seen, ", "), want)
}

func requestReload(ch chan string, why string) {
	select {
	case ch <- why:
	default: // one is already pending; it will read the newest file
	}
}

// shutdownLB takes the redirect down first (clients of the VIP then reach
// the node's own API server directly), then drains.
func shutdownLB(l *lb.LB, rd *redirect.Follower, drain time.Duration, log *slog.Logger) {
	if rd != nil {
		rd.Stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	if err := l.Shutdown(ctx); err != nil {
		log.Warn("drain timed out; closed the remaining connections", "timeout", drain)
	}
}

// softStopLB is haproxy's soft stop (SIGUSR1): the redirect goes, the LB
// stops accepting and sends its "Proxy NAME stopped" lines, and the
// connections run to their end, however long they take, as in haproxy
// without hard-stop-after; once ctx is done (SIGTERM, SIGINT), they have
// drain more, after which the LB closes them as haproxy's hard-stop-after
// does ("Proxy NAME hard-stopped ..." lines).
func softStopLB(ctx context.Context, l *lb.LB, rd *redirect.Follower, drain time.Duration, log *slog.Logger) {
	if rd != nil {
		rd.Stop()
	}
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if hs := l.HardStopAfter(); hs > 0 {
		// haproxy's hard-stop-after: the connections still open then
		// are closed.
		t := time.AfterFunc(hs, func() {
			log.Info("hard-stop-after: closing the remaining connections", "after", hs)
			cancel()
		})
		defer t.Stop()
	}
	go func() {
		select {
		case <-sctx.Done():
			return
		case <-ctx.Done():
		}
		log.Info("draining", "timeout", drain)
		t := time.NewTimer(drain)
		defer t.Stop()
		select {
		case <-sctx.Done():
		case <-t.C:
			cancel()
		}
	}()
	if err := l.SoftStop(sctx); err != nil {
		log.Warn("drain timed out; closed the remaining connections", "timeout", drain)
	}
}

// watchFile calls changed when path's modification time or size changes,
// checking every interval.
func watchFile(ctx context.Context, clk clock.Clock, path string, interval time.Duration, changed func(), log *slog.Logger) {
	stamp := func() (time.Time, int64, bool) {
		fi, err := os.Stat(path)
		if err != nil {
			return time.Time{}, 0, false
		}
		return fi.ModTime(), fi.Size(), true
	}
	mt, size, ok := stamp()
	for {
		t := clk.NewTimer(interval)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		nmt, nsize, nok := stamp()
		if !nok {
			if ok {
				log.Warn("configuration file unreadable; keeping the running configuration", "config", path)
			}
			ok = false
			continue
		}
		if !ok || !nmt.Equal(mt) || nsize != size {
			mt, size, ok = nmt, nsize, true
			changed()
		}
	}
}
