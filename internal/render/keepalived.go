package render

import (
	"bytes"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
)

// Programs the upstream check scripts run. keepalived executes a script
// without a shell, and with enable_script_security it runs it only when
// the program and every directory above it are writable by root alone.
const (
	timeoutProgram = "/usr/bin/timeout"
	curlProgram    = "/usr/bin/curl"
	shellProgram   = "/bin/sh"
)

// authPassLen is the length of VRRPv2's Authentication Data field (8
// octets, RFC 2338): keepalived sends the first 8 characters of auth_pass.
const authPassLen = 8

// safeURL is what a check URL may contain: it is written inside a
// double-quoted keepalived string and, for checks with several URLs, inside
// a single-quoted shell word.
var safeURL = regexp.MustCompile(`^https?://[A-Za-z0-9.:\[\]/_?=&%-]+$`)

// CheckCommand is the command line that runs check c the way the native
// check does: it succeeds when any of c.URLs answers 2xx (redirects
// followed, TLS not verified for https, as the seeds' curl -kLfs) within
// c.Timeout. One URL is one curl; several are curls joined with || by
// /bin/sh.
func CheckCommand(c cluster.CheckSpec) (string, error) {
	if len(c.URLs) == 0 {
		return "", fmt.Errorf("check %s has no URL", c.Name)
	}
	curls := make([]string, len(c.URLs))
	for i, u := range c.URLs {
		if !safeURL.MatchString(u) {
			return "", fmt.Errorf("check %s: URL %q has characters a keepalived script line cannot carry (accepted: http(s)://host:port/path with letters, digits and ./:_?=&%%-)", c.Name, u)
		}
		flags := "-Lfs"
		if strings.HasPrefix(u, "https:") {
			flags = "-kLfs"
		}
		curls[i] = curlProgram + " -o /dev/null " + flags + " " + u
	}
	cmd := curls[0]
	if len(curls) > 1 {
		cmd = shellProgram + " -c '" + strings.Join(curls, " || ") + "'"
	}
	switch {
	case c.Timeout < 0:
		return "", fmt.Errorf("check %s: timeout %v is negative", c.Name, c.Timeout)
	case c.Timeout > 0:
		cmd = timeoutProgram + " " + seconds(c.Timeout) + " " + cmd
	}
	return cmd, nil
}

// seconds formats d in seconds, with a fraction only when needed ("2",
// "1.9", "0.1").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// KeepalivedConf renders plan p of cluster c as a keepalived.conf for
// keepalived 2.2 with VRRP on iface: the same instances, priorities,
// peers and checks that `vipstack node` runs natively, each check a
// vrrp_script running CheckCommand.
func KeepalivedConf(c *cluster.Cluster, p *cluster.Plan, iface string) ([]byte, error) {
	if !validIfName(iface) {
		return nil, fmt.Errorf("interface %q is not an interface name (at most 15 characters, no '/', ':' or blanks)", iface)
	}
	var b bytes.Buffer
	w := func(indent int, format string, a ...any) {
		b.WriteString(strings.Repeat("    ", indent))
		fmt.Fprintf(&b, format, a...)
		b.WriteByte('\n')
	}
	w(0, "# keepalived.conf for node %s (%s) of cluster %s, rendered by `vipstack render`.", p.Node.Name, p.Node.Role, c.Domain())
	w(0, "# `vipstack node` runs the same VRRP instances and checks natively.")
	w(0, "global_defs {")
	w(1, "router_id %s", p.Node.Name)
	w(1, "enable_script_security")
	w(1, "script_user root")
	if c.VRRP.Version == 3 {
		w(1, "vrrp_version 3")
	}
	// OpenShift's current template runs the VRRP process at realtime
	// priority with its memory locked, so that a loaded node still
	// sends its adverts in time (a late one lets a backup take over).
	w(1, "vrrp_rt_priority 50")
	w(1, "vrrp_no_swap")
	w(1, "vrrp_rlimit_rttime 100000")
	w(1, "checker_rlimit_rttime 100000")
	w(1, "bfd_rlimit_rttime 100000")
	w(0, "}")

	defined := map[string]bool{}
	for _, ch := range p.Checks {
		defined[ch.Name] = true
	}
	used := map[string]bool{}
	for _, in := range p.Instances {
		for _, name := range in.Checks {
			if !defined[name] {
				return nil, fmt.Errorf("instance %s tracks check %q, which the plan does not define", in.Name, name)
			}
			used[name] = true
		}
	}
	for _, ch := range p.Checks {
		if !used[ch.Name] {
			continue
		}
		cmd, err := CheckCommand(ch)
		if err != nil {
			return nil, err
		}
		if ch.Interval < time.Second || ch.Interval%time.Second != 0 {
			return nil, fmt.Errorf("check %s: interval %v: keepalived 2.2 takes whole seconds (1s or more)", ch.Name, ch.Interval)
		}
		b.WriteByte('\n')
		w(0, "# %s adds %d to the priority while %s answers.", ch.Name, ch.Weight, strings.Join(ch.URLs, " or "))
		w(0, "vrrp_script %s {", ch.Name)
		w(1, "script \"%s\"", cmd) // CheckCommand holds no '"' or '\\'

		w(1, "interval %s", seconds(ch.Interval))
		w(1, "weight %d", ch.Weight)
		w(1, "rise %d", max(ch.Rise, 1))
		w(1, "fall %d", max(ch.Fall, 1))
		w(0, "}")
	}

	for _, in := range p.Instances {
		if len(in.VIPs) == 0 {
			return nil, fmt.Errorf("instance %s has no VIP", in.Name)
		}
		b.WriteByte('\n')
		w(0, "vrrp_instance %s {", in.Name)
		w(1, "state BACKUP")
		w(1, "interface %s", iface)
		w(1, "virtual_router_id %d", in.VRID)
		w(1, "priority %d", in.Priority)
		w(1, "advert_int %s", seconds(c.VRRP.AdvertInterval))
		if in.Version != 0 && in.Version != c.VRRP.Version {
			// A dual-stack cluster's IPv6 instance beside VRRPv2 IPv4
			// ones: keepalived would switch it to 3 by itself; say so.
			w(1, "version %d", in.Version)
		}
		if len(in.Peers) > 0 {
			w(1, "unicast_src_ip %s", in.Source)
			w(1, "unicast_peer {")
			for _, a := range in.Peers {
				w(2, "%s", a)
			}
			w(1, "}")
		}
		if in.AuthPass != "" {
			w(1, "authentication {")
			w(2, "auth_type PASS")
			pass := in.AuthPass
			if len(pass) > authPassLen {
				// What goes on the wire; written in full, keepalived
				// truncates it with a warning that fails `keepalived -t`.
				w(2, "# %s, cut to the %d characters VRRPv2 carries", pass, authPassLen)
				pass = pass[:authPassLen]
			}
			w(2, "auth_pass %s", pass)
			w(1, "}")
		}
		w(1, "virtual_ipaddress {")
		for _, v := range in.VIPs {
			if v.Is4() {
				// As OpenShift's current template; an address label is
				// IPv4's alone, and keepalived warns about one on IPv6.
				w(2, "%s label vip", netip.PrefixFrom(v, v.BitLen()))
			} else {
				w(2, "%s", netip.PrefixFrom(v, v.BitLen()))
			}
		}
		w(1, "}")
		if len(in.Checks) > 0 {
			w(1, "track_script {")
			for _, name := range in.Checks {
				w(2, "%s", name)
			}
			w(1, "}")
		}
		w(0, "}")
	}
	return b.Bytes(), nil
}
