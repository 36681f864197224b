package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/vipstack/vipstack/internal/cluster"
)

// Corefile renders the cluster DNS for stock CoreDNS, in seed 000's shape:
// errors, bufsize 512, health on cluster.DNSHealthPort, forward to the
// cluster's upstreamDNS (sequentially, as the seed), cache 30, reload,
// template blocks answering *.apps with the Ingress VIPs and api and
// api-int with the API VIPs, and a hosts block with every node. It uses
// only CoreDNS's in-tree plugins, so a stock CoreDNS runs it.
//
// Unlike the seed, the template regular expressions are anchored and their
// dots escaped (the seed's ".*.apps.DOMAIN" also matches "myapps.DOMAIN"
// and "api.DOMAIN" matches "xapi.DOMAIN"), and every name gets both an A
// and an AAAA
// template, each answering that family's VIPs or nothing (NODATA), so no
// VIP name is ever forwarded upstream.
//
// With no upstreamDNS the forward line reads /etc/resolv.conf, which in the
// CoreDNS pod (dnsPolicy Default) is the node's: that node must not resolve
// through this CoreDNS, or queries loop.
func Corefile(c *cluster.Cluster) ([]byte, error) {
	dom := c.Domain()
	var b bytes.Buffer
	w := func(indent int, format string, a ...any) {
		b.WriteString(strings.Repeat("    ", indent))
		fmt.Fprintf(&b, format, a...)
		b.WriteByte('\n')
	}
	w(0, "# Corefile rendered by `vipstack render`: the DNS of cluster %s.", dom)
	w(0, "# `vipstack node` serves the same names from live state (the clusterdns plugin).")
	w(0, ". {")
	w(1, "errors")
	w(1, "bufsize 512")
	w(1, "health :%d", cluster.DNSHealthPort)
	if len(c.UpstreamDNS) == 0 {
		w(1, "# upstreamDNS is not set in the cluster file: the pod's resolv.conf (the node's).")
		w(1, "forward . /etc/resolv.conf {")
	} else {
		up := make([]string, len(c.UpstreamDNS))
		for i, a := range c.UpstreamDNS {
			up[i] = dnsAddr(a)
		}
		w(1, "forward . %s {", strings.Join(up, " "))
	}
	w(2, "policy sequential")
	w(1, "}")
	w(1, "cache 30")
	w(1, "reload")
	quoted := regexp.QuoteMeta(dom + ".")
	for _, t := range []struct {
		match string
		vips  []netip.Addr
	}{
		{`^.+\.apps\.` + quoted + `$`, c.IngressVIPs},
		{`^api\.` + quoted + `$`, c.APIVIPs},
		{`^api-int\.` + quoted + `$`, c.APIVIPs},
	} {
		for _, typ := range []string{"A", "AAAA"} {
			w(1, "template IN %s %s {", typ, dom)
			w(2, "match %s", t.match)
			for _, v := range t.vips {
				if v.Is4() == (typ == "A") {
					w(2, "answer \"{{ .Name }} 60 IN %s %s\"", typ, v)
				}
			}
			w(2, "fallthrough")
			w(1, "}")
		}
	}
	w(1, "hosts {")
	for _, n := range c.Nodes {
		for _, a := range n.IPs {
			w(2, "%s %s %s.%s", a, n.Name, n.Name, dom)
		}
	}
	w(2, "fallthrough")
	w(1, "}")
	w(0, "}")
	return b.Bytes(), nil
}

// dnsAddr writes an upstream the way forward takes it: the bare address
// for port 53, else ADDR:PORT ([ADDR]:PORT for IPv6).
func dnsAddr(a netip.AddrPort) string {
	if a.Port() == 53 {
		return a.Addr().String()
	}
	return a.String()
}
