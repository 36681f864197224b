package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/redirect"
	"github.com/vipstack/vipstack/internal/version"
)

// vipList is a repeatable --vip flag.
type vipList []netip.AddrPort

func (v *vipList) String() string {
	s := make([]string, len(*v))
	for i, a := range *v {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

func (v *vipList) Set(s string) error {
	a, err := netip.ParseAddrPort(s)
	if err != nil {
		return fmt.Errorf("%q is not VIP:PORT (accepted: 198.18.0.5:6443 or [fd00::5]:6443)", s)
	}
	if err := redirect.CheckVIP(a); err != nil {
		return err
	}
	*v = append(*v, a)
	return nil
}

// runRedirect is OpenShift's haproxy-monitor for a node that runs haproxy
// (or any balancer with a monitor URI): while the monitor answers 200, an
// nftables table sends each VIP:PORT to the balancer's port on this node;
// otherwise the VIP's traffic goes to this node's own port (the API
// server). `vipstack render` puts it beside haproxy in the haproxy pod.
func runRedirect(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack redirect", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var vips vipList
	fs.Var(&vips, "vip", "VIP:PORT whose TCP traffic goes to --to-port while the monitor answers 200 (repeat for each VIP, e.g. both families)")
	var (
		toPort   = fs.Int("to-port", 0, "the balancer's port on this node (the frontend's bind port, e.g. 9445)")
		monitor  = fs.String("monitor", "", "the balancer's monitor URL (e.g. http://127.0.0.1:50936/haproxy_ready)")
		interval = fs.Duration("interval", time.Second, "how often to ask the monitor")
	)
	logLevel := daemon.AddLogFlags(fs, "vipstack redirect", "")
	if err := fs.Parse(args); err != nil {
		return daemon.ParseExit(err)
	}
	_, levelOK := logLevel.Logger(io.Discard) // said last, below
	u, uerr := url.Parse(*monitor)
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "vipstack redirect: unexpected arguments %q\n", fs.Args())
		return 2
	case len(vips) == 0:
		fmt.Fprintln(stderr, "vipstack redirect: --vip is required (accepted: VIP:PORT, repeatable)")
		return 2
	case *toPort < 1 || *toPort > 65535:
		fmt.Fprintf(stderr, "vipstack redirect: --to-port %d: want 1..65535\n", *toPort)
		return 2
	case uerr != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		fmt.Fprintf(stderr, "vipstack redirect: --monitor %q: want an http:// or https:// URL\n", *monitor)
		return 2
	case *interval < 100*time.Millisecond:
		fmt.Fprintf(stderr, "vipstack redirect: --interval %v: want 100ms or more\n", *interval)
		return 2
	case !levelOK:
		logLevel.Logger(stderr) // says what is accepted
		return 2
	}
	log, _ := logLevel.Logger(stderr)
	var followers []*redirect.Follower
	for _, v := range vips {
		r := redirect.New(v, uint16(*toPort))
		if _, err := r.Enabled(); err != nil {
			fmt.Fprintf(stderr, "vipstack redirect: nftables is not usable: %v (accepted: a process with CAP_NET_ADMIN in the network namespace, on a kernel with nf_tables)\n", err)
			return 1
		}
		followers = append(followers, redirect.NewFollower(r, log.With("redirect", v.String()), nil))
	}
	for _, f := range followers {
		go f.Run()
	}
	log.Info("vipstack redirect running", "version", version.String(), "vips", vips.String(), "to_port", *toPort, "monitor", *monitor)
	redirect.Watch(ctx, clock.Real{}, *monitor, *interval, func(healthy bool) {
		for _, f := range followers {
			f.Set(healthy)
		}
	}, log)
	for _, f := range followers {
		f.Stop() // removes the tables
	}
	log.Info("vipstack redirect stopped: redirects removed")
	return 0
}
