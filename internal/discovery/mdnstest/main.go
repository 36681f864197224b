// Command mdnstest runs one discovery.MDNS source: it publishes a node over
// multicast DNS and prints, as one JSON line per change, the node set it
// sees. Tests and bench/dns start it inside a network namespace to play a
// peer node; SIGTERM or SIGINT makes it send its goodbye and exit 0, SIGKILL
// makes it vanish silently.
//
//	mdnstest -cluster c1 -name master-1 -role master -addr 198.18.0.12,fd00:bb::12 [-iface eth0] [-exclude VIP,...] [-ttl 15s]
//
// Output lines look like {"time":"...","nodes":[{"Name":"master-1","Role":"master","Addrs":["198.18.0.12"]}]}.
// Logs go to stderr.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/vipstack/vipstack/internal/discovery"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mdnstest:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("mdnstest", flag.ContinueOnError)
	cluster := fs.String("cluster", "", "cluster name")
	name := fs.String("name", "", "node name")
	role := fs.String("role", "master", "node role")
	addrs := fs.String("addr", "", "comma-separated node addresses to publish")
	exclude := fs.String("exclude", "", "comma-separated addresses never to publish (VIPs)")
	iface := fs.String("iface", "", "interface (default: all multicast interfaces)")
	ttl := fs.Duration("ttl", 0, "record TTL (default: discovery.MDNSDefaultTTL)")
	debug := fs.Bool("debug", false, "debug logging")
	if err := fs.Parse(args); err != nil {
		return err
	}
	self, err := parseAddrs("-addr", *addrs)
	if err != nil {
		return err
	}
	excl, err := parseAddrs("-exclude", *exclude)
	if err != nil {
		return err
	}
	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	m := &discovery.MDNS{
		Cluster:   *cluster,
		Self:      discovery.Node{Name: *name, Role: discovery.Role(*role), Addrs: self},
		Interface: *iface,
		Exclude:   excl,
		TTL:       *ttl,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	enc := json.NewEncoder(os.Stdout)
	return m.Run(ctx, func(nodes []discovery.Node) {
		_ = enc.Encode(struct {
			Time  time.Time        `json:"time"`
			Nodes []discovery.Node `json:"nodes"`
		}{time.Now(), nodes})
	})
}

func parseAddrs(flagName, s string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		a, err := netip.ParseAddr(f)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w; want comma-separated IP addresses", flagName, f, err)
		}
		out = append(out, a)
	}
	return out, nil
}
