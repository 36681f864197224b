package render

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/keepalived"
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
// vrrp_script running CheckCommand. It builds the typed model, checks it
// with the reader's rules (Validate) and writes it with keepalived.Format.
func KeepalivedConf(c *cluster.Cluster, p *cluster.Plan, iface string) ([]byte, error) {
	if !validIfName(iface) {
		return nil, fmt.Errorf("interface %q is not an interface name (at most 15 characters, no '/', ':' or blanks)", iface)
	}
	cfg := keepalived.NewConfig()
	cfg.Comment = fmt.Sprintf("keepalived.conf for node %s (%s) of cluster %s, rendered by `vipstack render`.\n"+
		"`vipstack node` runs the same VRRP instances and checks natively.", p.Node.Name, p.Node.Role, c.Domain())
	g := &cfg.Global
	g.RouterID, g.EnableScriptSecurity, g.ScriptUser, g.VRRPVersion = p.Node.Name, true, "root", c.VRRP.Version
	// OpenShift's current template runs the VRRP process at realtime
	// priority with its memory locked, so that a loaded node still
	// sends its adverts in time (a late one lets a backup take over).
	g.RTPriority, g.NoSwap = 50, true
	g.RLimitRTTime, g.CheckerRLimitRTTime, g.BFDRLimitRTTime = 100000, 100000, 100000

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
		sc := keepalived.NewScript(ch.Name, cmd)
		sc.Comment = fmt.Sprintf("%s adds %d to the priority while %s answers.", ch.Name, ch.Weight, strings.Join(ch.URLs, " or "))
		sc.Interval, sc.Timeout = ch.Interval, ch.Interval
		sc.Weight, sc.Rise, sc.Fall = ch.Weight, max(ch.Rise, 1), max(ch.Fall, 1)
		cfg.Scripts[ch.Name] = sc
	}

	for _, in := range p.Instances {
		if len(in.VIPs) == 0 {
			return nil, fmt.Errorf("instance %s has no VIP", in.Name)
		}
		ki := cfg.NewInstance(in.Name)
		ki.Interface, ki.VRID, ki.Priority = iface, in.VRID, in.Priority
		// A dual-stack cluster's IPv6 instance beside VRRPv2 IPv4 ones
		// runs version 3, as keepalived switches it by itself.
		ki.AdvertInterval, ki.Version = c.VRRP.AdvertInterval, cmp.Or(in.Version, c.VRRP.Version)
		if len(in.Peers) > 0 {
			ki.UnicastSrcIP = in.Source
			ki.UnicastPeers = slices.Clone(in.Peers)
		}
		if in.AuthPass != "" {
			ki.AuthType, ki.AuthPass = "PASS", in.AuthPass
			if len(ki.AuthPass) > authPassLen {
				// What goes on the wire; written in full, keepalived
				// truncates it with a warning that fails `keepalived -t`.
				ki.Comment = fmt.Sprintf("auth_pass %s, cut to the %d characters VRRPv2 carries", ki.AuthPass, authPassLen)
				ki.AuthPass = ki.AuthPass[:authPassLen]
			}
		}
		for _, v := range in.VIPs {
			var o keepalived.VIPOptions
			if v.Is4() {
				// As OpenShift's current template; an address label is
				// IPv4's alone, and keepalived warns about one on IPv6.
				o.Label = "vip"
			}
			vip := keepalived.MakeVIP(netip.PrefixFrom(v, v.BitLen()), o)
			ki.VIPs = append(ki.VIPs, vip)
		}
		for _, name := range in.Checks {
			ki.TrackScripts = append(ki.TrackScripts, keepalived.TrackScript{Name: name})
		}
		cfg.Instances = append(cfg.Instances, ki)
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("keepalived.conf for node %s: %w", p.Node.Name, err)
	}
	return keepalived.Format(cfg), nil
}
