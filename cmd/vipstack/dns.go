package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/vipstack/vipstack/internal/cpusched"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/dns"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/version"
)

// runDNS is "vipstack dns": CoreDNS embedded with vipstack's clusterdns
// plugin, serving a Corefile until ctx ends. With -mdns-cluster it also
// publishes this node and browses the cluster's nodes over mDNS, feeding
// every clusterdns zone live.
//
// CoreDNS's own flags (-conf, -p, -version, ... registered on the standard
// flag set by coremain) play no part: this command parses its own flag set.
func runDNS(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseDNSFlags(args, stdout, stderr)
	if !ok {
		return code
	}
	cf, err := dns.ReadCorefile(f.conf)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack dns: %v\n", err)
		return 1
	}
	// CoreDNS' prometheus plugin serves the default registry, which has
	// the Go and process collectors; the build information joins them.
	if err := prometheus.Register(metrics.BuildInfo(version.Get())); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		fmt.Fprintf(stderr, "vipstack dns: %v\n", err)
		return 1
	}
	regs := dns.NewRegistries()
	srv, err := dns.NewServer(dns.Options{Registry: regs.For, Log: stderr})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack dns: %v\n", err)
		return 1
	}
	if f.check {
		warnings, err := srv.CheckPortable(cf)
		if err != nil {
			fmt.Fprintf(stderr, "%v\n", err)
			return 1
		}
		for _, w := range warnings {
			fmt.Fprintf(stderr, "warning: %s\n", w)
		}
		fmt.Fprintf(stdout, "%s: Corefile is valid\n", f.conf)
		return 0
	}
	// SIGUSR1 reloads, as in CoreDNS; so does SIGHUP, as in vipstack's
	// other commands (CoreDNS ignores it). Without this, SIGHUP would end
	// the process and SIGUSR1 would be dropped without a word.
	reload := make(chan os.Signal, 1)
	daemon.NotifyReload(reload, syscall.SIGUSR1, syscall.SIGHUP)
	defer signal.Stop(reload)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mdnsDone chan error // nil without -mdns-cluster: never ready
	if f.mdns != nil {
		mdnsDone = make(chan error, 1)
		go func() { mdnsDone <- regs.Feed(ctx, "mdns", f.mdns) }()
	}
	if err := srv.Start(cf); err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		cancel()
		if mdnsDone != nil {
			<-mdnsDone
		}
		return 1
	}
	fmt.Fprintf(stdout, "vipstack dns: serving %s on %s\n", f.conf, listenAddrs(srv.Addrs()))
	shortSlice(f.log, f.slice)
	daemon.TrimNow(f.log)
	return serveDNS(ctx, cancel, srv, reload, mdnsDone, f)
}

// dnsFlags are the flags of `vipstack dns`.
type dnsFlags struct {
	conf  string
	check bool
	mdns  *discovery.MDNS // nil without -mdns-cluster
	log   *slog.Logger
	slice time.Duration // -sched-slice; 0: the kernel's default
}

func parseDNSFlags(args []string, stdout, stderr io.Writer) (f dnsFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack dns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.conf, "conf", "Corefile", "Corefile to run")
	fs.BoolVar(&f.check, "check", false, "validate the Corefile and exit (non-zero on error)")
	fs.DurationVar(&f.slice, "sched-slice", defaultDNSSlice, "CPU time slice the server's threads ask the kernel for (Linux 6.12+ EEVDF; 100us to 100ms): a short one answers sooner on a busy CPU; 0 leaves the kernel's default")
	var (
		plugins  = fs.Bool("plugins", false, "list the plugins in the order queries pass through them, and exit")
		cluster  = fs.String("mdns-cluster", "", "publish this node and browse the cluster's nodes over mDNS (RFC 6762) under this cluster name; needs -node-name and -node-addr")
		nodeName = fs.String("node-name", "", "this node's short host name, for -mdns-cluster")
		nodeRole = fs.String("node-role", "master", "this node's role for -mdns-cluster: master, worker or bootstrap (masters are the etcd-N names)")
		iface    = fs.String("mdns-interface", "", "interface for mDNS (empty: every up multicast interface)")
		ocp      = fs.Bool("mdns-openshift", true, "with -mdns-cluster, also publish this node as OpenShift's mdns-publisher does (_workstation._tcp, and _etcd-server-ssl._tcp on masters) and accept the nodes it publishes, so that OpenShift nodes and vipstack nodes see each other during a migration; false: only _vipstack._tcp")
	)
	var nodeAddrs, exclude addrList
	fs.Var(&nodeAddrs, "node-addr", "this node's address to publish over mDNS; repeat or separate with commas; never a VIP")
	fs.Var(&exclude, "mdns-exclude", "address never to advertise or accept over mDNS (the VIPs); repeat or separate with commas")
	logLevel := daemon.AddLogFlags(fs, "vipstack dns", "debug, info, warn or error (vipstack's own messages)")
	if code, ok := daemon.ParseNoArgs(fs, args, stderr); !ok {
		return f, code, false
	}
	if *plugins {
		fmt.Fprintln(stdout, strings.Join(dns.Directives(), "\n"))
		return f, 0, false
	}
	if f.log, ok = logLevel.Logger(stderr); !ok {
		return f, 2, false
	}
	if f.slice != 0 && (f.slice < cpusched.MinSlice || f.slice > cpusched.MaxSlice) {
		fmt.Fprintf(stderr, "vipstack dns: -sched-slice %v: want 0 (the kernel's default) or %v to %v\n", f.slice, cpusched.MinSlice, cpusched.MaxSlice)
		return f, 2, false
	}
	if *cluster == "" {
		if *nodeName != "" || len(nodeAddrs) > 0 || len(exclude) > 0 || *iface != "" {
			fmt.Fprintln(stderr, "vipstack dns: -node-name, -node-addr, -mdns-interface and -mdns-exclude only apply with -mdns-cluster")
			return f, 2, false
		}
		return f, 0, true
	}
	if *nodeName == "" || len(nodeAddrs) == 0 {
		fmt.Fprintln(stderr, "vipstack dns: -mdns-cluster needs -node-name and at least one -node-addr")
		return f, 2, false
	}
	f.mdns = &discovery.MDNS{
		Cluster:   *cluster,
		Self:      discovery.Node{Name: *nodeName, Role: discovery.Role(*nodeRole), Addrs: nodeAddrs},
		Interface: *iface,
		Exclude:   exclude,
		OpenShift: *ocp,
		Logger:    f.log.With("source", "mdns"),
	}
	// Before serving (and in -check): a bad -node-role or an address
	// list left empty by -mdns-exclude would otherwise show only once
	// the DNS is up, as an exit.
	if err := f.mdns.Validate(); err != nil {
		fmt.Fprintf(stderr, "vipstack dns: %v\n", err)
		return f, 2, false
	}
	return f, 0, true
}

// defaultDNSSlice is the slice `vipstack dns` asks for: the shortest the
// kernel takes. A query costs the server tens of microseconds, so it
// rarely runs out; what it buys is an earlier deadline each time a query
// wakes the server on a CPU another process keeps busy
// (docs/design/dns.md).
const defaultDNSSlice = cpusched.MinSlice

// shortSlice asks the kernel for slice on every thread of the process
// (none with 0). A kernel that keeps no slice per thread, or refuses,
// leaves the default: logged, not fatal.
func shortSlice(log *slog.Logger, slice time.Duration) {
	if slice == 0 {
		return
	}
	n, err := cpusched.SetSlice(slice)
	if err != nil {
		log.Info("CPU slice left at the kernel's default", "sched-slice", slice, "err", err)
		return
	}
	log.Debug("CPU slice set", "sched-slice", slice, "threads", n)
}

// serveDNS reloads srv on each signal from reload until ctx is done or
// the mDNS source (mdnsDone, nil without one) stops, then stops srv; it
// returns the exit code.
func serveDNS(ctx context.Context, cancel context.CancelFunc, srv dnsServer, reload <-chan os.Signal, mdnsDone chan error, f dnsFlags) int {
	log := f.log
	code := 0
serve:
	for {
		select {
		case <-ctx.Done():
			break serve
		case sig := <-reload:
			if err := srv.Reload(); err != nil {
				log.Error("reload refused", "signal", sig, "err", err)
				continue
			}
			log.Info("reloaded", "signal", sig, "conf", f.conf)
		case err := <-mdnsDone:
			mdnsDone = nil
			if ctx.Err() != nil {
				// The stop reached the mDNS source too, which ended at
				// once (a select picks either): a stop, not a failure.
				if err != nil && !errors.Is(err, context.Canceled) {
					log.Error("mdns source", "err", err)
					code = 1
				}
				break serve
			}
			// The mDNS source returns before ctx ends only on a configuration
			// or socket error: a DNS that silently lost its live state would be
			// worse than one that stops.
			log.Error("mdns source stopped; stopping", "err", err)
			code = 1
			break serve
		}
	}
	cancel()
	if err := srv.Stop(); err != nil {
		log.Error("stop", "err", err)
		code = 1
	}
	if mdnsDone != nil {
		if err := <-mdnsDone; err != nil && !errors.Is(err, context.Canceled) {
			log.Error("mdns source", "err", err)
			code = 1
		}
	}
	return code
}

// dnsServer is what serveDNS needs of the running CoreDNS (*dns.Server).
type dnsServer interface {
	Reload() error
	Stop() error
}

// addrList is a repeatable, comma-separated list of IP addresses.
type addrList []netip.Addr

func (l *addrList) String() string {
	s := make([]string, len(*l))
	for i, a := range *l {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

func (l *addrList) Set(v string) error {
	for _, f := range strings.Split(v, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil {
			return fmt.Errorf("%q is not an IP address; want e.g. 198.18.0.11 or fd00:bb::11", f)
		}
		*l = append(*l, a)
	}
	return nil
}

func listenAddrs(addrs []net.Addr) string {
	s := make([]string, len(addrs))
	for i, a := range addrs {
		s[i] = a.Network() + "/" + a.String()
	}
	return strings.Join(s, " ")
}
