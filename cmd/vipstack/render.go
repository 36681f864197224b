package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/render"
	"github.com/vipstack/vipstack/internal/version"
)

// runRender is `vipstack render`: it writes one node's static pods (and the
// upstream daemons' equivalents) rendered from the cluster file.
func runRender(_ context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("vipstack render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cfgPath     = fs.String("config", "", "cluster file (cluster.yaml) to render from (required)")
		node        = fs.String("node", "", "node to render for, by its name in the cluster file (required)")
		out         = fs.String("out", "", "directory to write into; created if missing, refused if not empty unless --force (required)")
		image       = fs.String("image", version.Image(), "image of the vipstack node pod (default: this build's)")
		kaImage     = fs.String("keepalived-image", render.DefaultKeepalivedImage, "image of the upstream keepalived pod")
		hapImage    = fs.String("haproxy-image", render.DefaultHAProxyImage, "image of the upstream haproxy pod")
		dnsImage    = fs.String("coredns-image", render.DefaultCoreDNSImage, "image of the upstream CoreDNS pod")
		namespace   = fs.String("namespace", render.DefaultNamespace, "namespace of the static pods (their mirror pods need it to exist)")
		clusterPath = fs.String("cluster-path", render.DefaultConfigPath, "where the cluster file is on the node; the vipstack pod mounts it read-only")
		statusPort  = fs.Int("status-port", render.DefaultStatusPort, "loopback port of vipstack node's /status, read by the pod's liveness probe")
		iface       = fs.String("interface", "", "interface carrying VRRP in the upstream keepalived.conf (default: the cluster file's vrrp.interface)")
		noUpstream  = fs.Bool("no-upstream", false, "render only the vipstack node pod, not the upstream keepalived, haproxy and CoreDNS equivalents")
		force       = fs.Bool("force", false, "write into a non-empty --out directory, replacing the rendered files")
	)
	if code, ok := daemon.ParseNoArgs(fs, args, stderr); !ok {
		return code
	}
	for _, req := range []struct{ flag, v string }{{"--config", *cfgPath}, {"--node", *node}, {"--out", *out}} {
		if req.v == "" {
			fmt.Fprintf(stderr, "vipstack render: %s is required\n\nUsage: vipstack render --config cluster.yaml --node NAME --out DIR [flags]\n", req.flag)
			fs.PrintDefaults()
			return 2
		}
	}

	c, err := cluster.Load(*cfgPath)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack render: --config: %v\n", err)
		return 1
	}
	files, err := render.Files(c, *node, render.Options{
		Image: *image, KeepalivedImage: *kaImage, HAProxyImage: *hapImage, CoreDNSImage: *dnsImage,
		Namespace: *namespace, ConfigPath: *clusterPath, StatusPort: *statusPort,
		Interface: *iface, NoUpstream: *noUpstream,
	})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack render: %s: %v\n", *cfgPath, err)
		if errors.Is(err, render.ErrNoInterface) {
			fmt.Fprintf(stderr, "vipstack render: pass --interface NAME, or --no-upstream for the vipstack pod alone\n")
		}
		return 1
	}
	written, err := render.WriteDir(*out, files, *force)
	for _, p := range written {
		fmt.Fprintf(stdout, "wrote %s\n", p)
	}
	if err != nil {
		fmt.Fprintf(stderr, "vipstack render: %v\n", err)
		if errors.Is(err, render.ErrDirNotEmpty) {
			fmt.Fprintf(stderr, "vipstack render: pass --force to write into it anyway\n")
		}
		return 1
	}
	fmt.Fprintf(stdout, "\nOn node %s:\n", *node)
	fmt.Fprintf(stdout, "  copy %s to %s\n", *cfgPath, *clusterPath)
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	slices.Sort(rels)
	for _, rel := range rels {
		fmt.Fprintf(stdout, "  install %s as %s\n", rel, render.HostPath(rel))
	}
	if !*noUpstream {
		fmt.Fprintf(stdout, "Install either vipstack/ (vipstack's own pod) or upstream/ (keepalived, haproxy, CoreDNS), not both.\n")
	}
	return 0
}
