package redirect

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// Port is where the redirect of vip sends traffic: the port of the first
// frontend bind of cfg that receives it. The redirect rewrites the
// destination to one of the node's own addresses (127.0.0.1 or ::1 for
// local clients, the address of the interface a remote client comes in
// on), so only a wildcard bind of vip's family receives it: 0.0.0.0 or
// `::: v4v6` for an IPv4 VIP (or `:::` alone while the kernel makes IPv6
// wildcards dual-stack by default), :: for an IPv6 one. A bind to one
// address would leave the VIP refusing every connection.
func Port(cfg *lbconfig.Config, vip netip.AddrPort) (uint16, error) {
	v4 := vip.Addr().Unmap().Is4()
	var seen []string
	for _, f := range cfg.Frontends {
		for i, b := range f.Binds {
			a := b.Addr.Addr()
			if a.IsValid() && a.IsUnspecified() && b.Addr.Port() != 0 && (a.Is6() && (!v4 || b.V4V6 || !V6OnlyDefault()) || a.Is4() && v4) {
				return b.Addr.Port(), nil
			}
			what := b.Addr.String()
			if b.Abstract != "" {
				what = "abns@" + b.Abstract
			} else if !a.IsValid() {
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

// V6OnlyDefault says whether IPv6 wildcard sockets take IPv6 only unless
// told otherwise (net.ipv6.bindv6only = 1): then `bind :::PORT` without
// v4v6 does not receive IPv4. Where it cannot be read, it is taken as set.
func V6OnlyDefault() bool {
	b, err := os.ReadFile("/proc/sys/net/ipv6/bindv6only")
	return err != nil || strings.TrimSpace(string(b)) != "0"
}
