package lbdaemon

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lb"
	"github.com/vipstack/vipstack/internal/lb/httploop"
	"github.com/vipstack/vipstack/internal/lb/relay"
	"github.com/vipstack/vipstack/internal/lbcli"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/lbkernel"
	"github.com/vipstack/vipstack/internal/lbproc"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/serve"
)

// Options configure Start.
type Options struct {
	// ConfigPath is the configuration file as given: reloads read it.
	ConfigPath string
	// Redirect is the VIP:PORT whose TCP traffic goes to the first
	// frontend's port while a server is UP (checked by
	// redirect.CheckVIP); the zero value is no redirect.
	Redirect         netip.AddrPort
	ListenersPerBind int
	// MetricsAddr serves Prometheus metrics; "" is off.
	MetricsAddr string
	Logger      *slog.Logger
	// Clock times the redirect's move on reloads; nil is the real clock.
	Clock   clock.Clock
	Version string
	// Datapath is --datapath: relay ("" too), kernel or auto
	// (internal/lbkernel).
	Datapath lbkernel.Mode
	// HTTPEngine is --http-engine: std ("" too), loop or auto
	// (internal/lb/httploop).
	HTTPEngine httploop.Mode
}

// FlagError is a start refused for the command line with the
// configuration file: a usage error, not a failure.
type FlagError struct{ msg string }

func (e *FlagError) Error() string { return e.msg }

// Daemon is a running load balancer process.
type Daemon struct {
	opts     Options
	log      *slog.Logger
	clk      clock.Clock
	lb       *lb.LB
	rd       *redirect.Follower // nil without a redirect
	rdPort   uint16             // where rd delivers
	rdRuns   bool               // rd.Run started: Stop may wait for it
	sockets  *lbcli.Sockets
	root     *os.Root // the root before the chroot; nil without one
	cfgAbs   string   // ConfigPath made absolute before the chroot
	running  *lbconfig.Config
	metrics  *reloadMetrics
	registry *metrics.Registry
	closers  []func()       // run in reverse by Close
	kp       *lbkernel.Path // nil with --datapath relay
	kpRuns   bool           // kp.Run started
}

// Start runs cfg (loaded from opts.ConfigPath) as haproxy starts: the
// runtime API's sockets and the listeners open, the pidfile is written,
// the process enters the chroot and becomes the configured user and
// group, then the redirect and the metrics endpoint start. On error
// nothing is left running; a *FlagError is a usage error.
func Start(cfg *lbconfig.Config, opts Options) (*Daemon, error) {
	d := &Daemon{opts: opts, log: opts.Logger, clk: opts.Clock, running: cfg}
	if d.clk == nil {
		d.clk = clock.Real{}
	}
	for _, w := range cfg.Warnings {
		d.log.Warn(w)
	}
	ids, err := lbproc.LookupIDs(cfg.User, cfg.Group)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.ConfigPath, err)
	}
	if ids.UID > 0 && opts.Redirect.IsValid() {
		return nil, &FlagError{fmt.Sprintf("--redirect changes nftables while it runs, which user %s in %s would no longer allow (accepted: --redirect without user/group, or user/group without --redirect)", cfg.User, opts.ConfigPath)}
	}
	d.setLimits(cfg)
	if err := d.prepareRedirect(cfg); err != nil {
		return nil, err
	}
	plan, err := d.prepareKernel(cfg, ids)
	if err != nil {
		return nil, err
	}
	if err := d.startLB(cfg); err != nil {
		d.Close()
		return nil, err
	}
	if err := d.startKernel(plan); err != nil {
		d.shutdown(0)
		d.Close()
		return nil, err
	}
	if err := d.becomeProcess(cfg, ids); err != nil {
		d.shutdown(0)
		d.Close()
		return nil, err
	}
	if d.rd != nil {
		d.rdRuns = true
		go d.rd.Run()
	}
	if d.kp != nil {
		d.kpRuns = true
		go d.kp.Run()
	}
	if err := d.serveMetrics(); err != nil {
		d.shutdown(0)
		d.Close()
		return nil, err
	}
	return d, nil
}

// setLimits applies nbthread and raises the open file limit (to
// ulimit-n when the configuration sets it), warning
// when maxconn allows more connections than it can hold.
func (d *Daemon) setLimits(cfg *lbconfig.Config) {
	if cfg.NbThread > 0 {
		runtime.GOMAXPROCS(cfg.NbThread)
	}
	raise := relay.RaiseFileLimit
	if cfg.UlimitN > 0 {
		// haproxy's ulimit-n: that limit, not the highest allowed.
		raise = func() (uint64, uint64, error) { return relay.SetFileLimit(uint64(cfg.UlimitN)) }
	}
	soft, hard, err := raise()
	if err != nil {
		d.log.Warn("could not set the open file limit", "err", err, "soft", soft, "hard", hard, "ulimit-n", cfg.UlimitN)
		return
	}
	d.log.Debug("open file limit", "soft", soft, "hard", hard)
	if need := fdsNeeded(cfg); uint64(need) > soft {
		d.log.Warn("maxconn allows more connections than the open file limit can hold (2 sockets each); beyond it accepts and connects fail",
			"maxconn", cfg.MaxConn, "global_maxconn", cfg.GlobalMaxConn, "frontends", len(cfg.Frontends), "fds_needed", need, "limit", soft)
	}
}

// prepareRedirect makes the redirect's Follower, not running yet.
func (d *Daemon) prepareRedirect(cfg *lbconfig.Config) error {
	vip := d.opts.Redirect
	if !vip.IsValid() {
		return nil
	}
	port, err := redirect.Port(cfg, vip)
	if err != nil {
		return fmt.Errorf("--redirect: %w", err)
	}
	// nftables must answer before anything starts: otherwise the
	// balancer would run without its redirect, retrying every second.
	// Listing tables changes nothing and needs the same privilege
	// (CAP_NET_ADMIN) and kernel support as the redirect.
	if _, err := redirect.New(vip, port).Enabled(); err != nil {
		return fmt.Errorf("--redirect: nftables is not usable: %w (accepted: a process with CAP_NET_ADMIN in the network namespace, on a kernel with nf_tables)", err)
	}
	// It runs once the configuration is applied: a start that fails
	// (its ports held by another balancer, say) must not remove the
	// table of the VIP, which is that balancer's.
	d.rd = redirect.NewFollower(redirect.New(vip, port), d.log.With("redirect", vip.String()), nil)
	d.rdPort = port
	return nil
}

// prepareKernel plans the kernel data path for cfg (nil with --datapath
// relay): a frontend --datapath kernel cannot serve, a user that could not
// change nftables or an nftables that does not answer stops the start
// before anything listens.
func (d *Daemon) prepareKernel(cfg *lbconfig.Config, ids lbproc.IDs) (*lbkernel.Plan, error) {
	if d.opts.Datapath == "" || d.opts.Datapath == lbkernel.Relay {
		return nil, nil
	}
	if ids.UID > 0 {
		return nil, &FlagError{fmt.Sprintf("--datapath %s changes nftables while it runs (a server's check), which user %s in %s would no longer allow (accepted: --datapath relay with user/group, or no user/group)", d.opts.Datapath, cfg.User, d.opts.ConfigPath)}
	}
	d.kp = lbkernel.NewPath(d.opts.Datapath, d.log)
	plan, err := d.kp.Build(cfg)
	if err != nil {
		return nil, err
	}
	if err := d.kp.Table.Usable(); err != nil {
		return nil, fmt.Errorf("--datapath %s: nftables is not usable: %w (accepted: a process with CAP_NET_ADMIN in the network namespace, on a kernel with nf_tables)", d.opts.Datapath, err)
	}
	return plan, nil
}

// startKernel installs the plan's table once the LB runs, with the
// servers usable now; a table a killed balancer left goes with it.
func (d *Daemon) startKernel(plan *lbkernel.Plan) error {
	if d.kp == nil {
		return nil
	}
	d.kp.Attach(d.lb)
	d.closers = append(d.closers, func() { d.kp.Close(d.kpRuns) })
	if err := d.kp.Install(plan); err != nil {
		return fmt.Errorf("--datapath %s: %w", d.opts.Datapath, err)
	}
	if err := d.registry.Register(d.kp); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	return nil
}

// startLB makes the balancer and applies cfg.
func (d *Daemon) startLB(cfg *lbconfig.Config) error {
	reg := metrics.NewRegistry()
	var err error
	if d.metrics, err = newReloadMetrics(reg); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	opts := lb.Options{Logger: d.log, Registry: reg, ListenersPerBind: d.opts.ListenersPerBind, Version: d.opts.Version, HTTPEngine: d.opts.HTTPEngine}
	if d.rd != nil {
		opts.OnHealthy = d.rd.Set
	}
	if d.kp != nil {
		opts.OnServers = d.kp.Notify
		opts.KernelSessions = d.kp.Sessions
	}
	if d.lb, err = lb.New(opts); err != nil {
		return err
	}
	d.registry = reg
	// The runtime API's sockets open before the configuration applies,
	// so that one that cannot be opened stops the start with nothing
	// listening (haproxy fails to start then too).
	d.sockets = lbcli.NewSockets(d.lb, d.opts.Version, d.clk.Now(), d.log.With("part", "runtime-api"))
	d.closers = append(d.closers, d.sockets.Close)
	change, err := d.sockets.Prepare(cfg.StatsSockets)
	if err != nil {
		return err
	}
	if err := d.lb.Apply(cfg); err != nil {
		change.Abort()
		return err
	}
	change.Commit()
	return nil
}

// becomeProcess writes the pidfile, enters the chroot and becomes the
// configuration's user and group, as haproxy does once every socket of
// the file is open.
func (d *Daemon) becomeProcess(cfg *lbconfig.Config, ids lbproc.IDs) error {
	if cfg.PIDFile != "" {
		if err := lbproc.WritePIDFile(cfg.PIDFile, os.Getpid()); err != nil {
			return err
		}
	}
	// After the chroot, the configuration (on reload) and the pidfile
	// (at exit) are reached through the former root, as haproxy's master
	// process reaches them from outside.
	var err error
	if d.cfgAbs, err = filepath.Abs(d.opts.ConfigPath); err != nil { // before the chroot moves "/"
		d.cfgAbs = d.opts.ConfigPath
	}
	if cfg.Chroot != "" {
		if d.root, err = lbproc.Chroot(cfg.Chroot); err != nil {
			return err
		}
		d.closers = append(d.closers, func() { d.root.Close() })
		d.log.Info("chrooted: log sockets and files are now found under the new root; reloads read the configuration through the former root (SIGHUP only: the file watcher is off)",
			"chroot", cfg.Chroot)
	}
	if cfg.PIDFile != "" {
		d.closers = append(d.closers, func() { d.removePIDFile(cfg.PIDFile) })
	}
	if err := lbproc.Drop(ids); err != nil {
		return err
	}
	if ids.UID >= 0 || ids.GID >= 0 {
		d.log.Info("running as the configuration's user and group; a reload can no longer open ports below 1024 or sockets where only root may write",
			"uid", ids.UID, "gid", ids.GID)
	}
	return nil
}

func (d *Daemon) removePIDFile(path string) {
	err := lbproc.RemovePIDFile(path, os.Getpid())
	if d.root != nil {
		err = d.root.Remove(strings.TrimPrefix(filepath.Clean(path), "/"))
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		d.log.Warn("could not remove the pidfile", "err", err)
	}
}

func (d *Daemon) serveMetrics() error {
	if d.opts.MetricsAddr == "" {
		return nil
	}
	s, err := serve.Metrics(d.opts.MetricsAddr, d.registry)
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	d.closers = append(d.closers, func() { s.Close() })
	return nil
}

// Chrooted says whether the process entered a chroot: the file watcher
// cannot see the configuration then (reloads read it through the former
// root on SIGHUP).
func (d *Daemon) Chrooted() bool { return d.root != nil }

// Close releases what the process holds once the balancer stopped: the
// metrics endpoint, the pidfile, the former root and the runtime API's
// sockets.
func (d *Daemon) Close() {
	for i := len(d.closers) - 1; i >= 0; i-- {
		d.closers[i]()
	}
	d.closers = nil
}
