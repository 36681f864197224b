package ipfailover

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/vipstack/vipstack/internal/script"
)

// Variable names, as OpenShift's ipfailover image reads them.
const (
	EnvConfigName    = "OPENSHIFT_HA_CONFIG_NAME"
	EnvVirtualIPs    = "OPENSHIFT_HA_VIRTUAL_IPS"
	EnvVIPGroups     = "OPENSHIFT_HA_VIP_GROUPS"
	EnvInterface     = "OPENSHIFT_HA_NETWORK_INTERFACE"
	EnvMonitorPort   = "OPENSHIFT_HA_MONITOR_PORT"
	EnvReplicaCount  = "OPENSHIFT_HA_REPLICA_COUNT"
	EnvVRIDOffset    = "OPENSHIFT_HA_VRRP_ID_OFFSET"
	EnvUseUnicast    = "OPENSHIFT_HA_USE_UNICAST"
	EnvUnicastPeers  = "OPENSHIFT_HA_UNICAST_PEERS"
	EnvIptablesChain = "OPENSHIFT_HA_IPTABLES_CHAIN"
	// EnvNftablesRule is the current image's name for the firewall switch
	// (settings.sh: "OPENSHIFT_HA_NFTABLES_RULE is the preferred env var
	// name", OPENSHIFT_HA_IPTABLES_CHAIN deprecated): when set, whatever
	// its value, the rule goes in a table of the pool's own.
	EnvNftablesRule  = "OPENSHIFT_HA_NFTABLES_RULE"
	EnvCheckScript   = "OPENSHIFT_HA_CHECK_SCRIPT"
	EnvNotifyScript  = "OPENSHIFT_HA_NOTIFY_SCRIPT"
	EnvCheckInterval = "OPENSHIFT_HA_CHECK_INTERVAL"
	EnvPreemption    = "OPENSHIFT_HA_PREEMPTION"
	EnvExcludedVRIDs = "OPENSHIFT_HA_EXCLUDED_VRRP_IDS"
	// EnvExcludedVRIDsImage is the name the image's scripts actually read
	// (without the OPENSHIFT_ prefix); both are accepted.
	EnvExcludedVRIDsImage = "HA_EXCLUDED_VRRP_IDS"
)

// envPrefix starts every variable of the family; an unknown one is an error.
const envPrefix = "OPENSHIFT_HA_"

// Var describes one configuration variable and its flag.
type Var struct {
	Name    string // environment variable
	Flag    string // equivalent flag of `vipstack ipfailover`, without dashes ("" if none)
	Default string // as the image defaults it ("" = unset)
	Usage   string
	// Ignored variables are accepted (an ipfailover pod spec may carry
	// them) but have no effect here; a warning says so.
	Ignored bool
}

// Vars returns every variable `vipstack ipfailover` accepts, in the order
// the documentation lists them. The flag names are those of
// `oc adm ipfailover` where it has one.
func Vars() []Var {
	vars := []Var{
		{Name: EnvConfigName, Flag: "config-name", Default: "OpenShift-IPFailover", Usage: "name of the pool: VRRP instance names, the VRRPv2 password, the firewall rule's comment"},
		{Name: EnvVirtualIPs, Flag: "virtual-ips", Usage: "the VIPs: addresses and ranges separated by commas or spaces, e.g. 10.1.1.1-10,10.1.2.5 or fd00::1f39-1f3b (required)"},
		{Name: EnvVIPGroups, Flag: "virtual-ip-groups", Usage: "number of VRRP instances the VIPs are spread over (default: replicas x (replicas-1), at most one per VIP)"},
		{Name: EnvInterface, Flag: "interface", Usage: "interface for VRRP and the VIPs (default: the one the route lookup towards the VIPs picks; with BGP, towards the first peer)"},
		{Name: EnvMonitorPort, Flag: "watch-port", Default: "80", Usage: "TCP port that must answer on the node for it to hold VIPs; 0 turns the check off"},
		{Name: EnvReplicaCount, Flag: "replicas", Default: "1", Usage: "number of nodes in the pool (ranks in multicast mode)"},
		{Name: EnvVRIDOffset, Flag: "vrrp-id-offset", Default: "10", Usage: "VRIDs start at offset+1 (0..254); when set, VRIDs heard from other routers are reported but not avoided"},
		{Name: EnvUseUnicast, Flag: "use-unicast", Default: "false", Usage: "send VRRP to OPENSHIFT_HA_UNICAST_PEERS instead of multicast (true needs the peers)"},
		{Name: EnvUnicastPeers, Flag: "unicast-peers", Usage: "addresses of every node of the pool, comma separated; when set, VRRP is unicast to them"},
		{Name: EnvIptablesChain, Flag: "iptables-chain", Usage: "nftables chain (e.g. INPUT of iptables-nft's filter table) that gets the rule admitting VRRP multicast; empty: a table of our own"},
		{Name: EnvNftablesRule, Usage: "the current image's name for the firewall switch: when set, whatever the value, the rule goes in the pool's own table and OPENSHIFT_HA_IPTABLES_CHAIN is ignored"},
		{Name: EnvCheckScript, Flag: "check-script", Usage: "script run every check interval instead of the port check; non-zero exit: the node holds no VIPs"},
		{Name: EnvNotifyScript, Flag: "notify-script", Usage: "script run on every state change with keepalived's arguments: INSTANCE name state priority"},
		{Name: EnvCheckInterval, Flag: "check-interval", Default: "2", Usage: "seconds between checks (port or script); fractions allowed"},
		{Name: EnvPreemption, Flag: "preemption-strategy", Default: "preempt_delay 300", Usage: "nopreempt, preempt, or preempt_delay SECONDS (0..1000)"},
		{Name: EnvExcludedVRIDs, Flag: "excluded-vrrp-ids", Usage: "VRIDs never used, separated by spaces or commas (HA_EXCLUDED_VRRP_IDS is read too)"},
		{Name: EnvExcludedVRIDsImage, Usage: "same as OPENSHIFT_HA_EXCLUDED_VRRP_IDS, the name the image's scripts read"},
	}
	return append(append(vars, bgpVars()...), []Var{
		{Name: "OPENSHIFT_HA_SELECTOR", Usage: "node selector of `oc adm ipfailover`; no effect on the node", Ignored: true},
		{Name: "OPENSHIFT_HA_ADMIN_EMAILS", Usage: "keepalived e-mail notification; not supported", Ignored: true},
		{Name: "OPENSHIFT_HA_SMTP_SERVER", Usage: "keepalived e-mail notification; not supported", Ignored: true},
	}...)
}

// Input is the raw configuration: variables from the environment and from
// flags. Flags win over the environment; an empty value means unset, as
// the image's `${VAR:-default}` reads it.
type Input struct {
	// Env holds the environment; only OPENSHIFT_HA_* and
	// HA_EXCLUDED_VRRP_IDS are looked at (EnvFrom filters os.Environ).
	Env map[string]string
	// Flags holds values given as flags, keyed by variable name.
	Flags map[string]string
	// FlagNames names every variable by its flag in errors, also when it
	// is unset: for a command line that reads no environment (`vipstack
	// manifest ipfailover`).
	FlagNames bool
}

// EnvFrom picks the variables of the family out of environ ("KEY=value"
// entries, as os.Environ returns).
func EnvFrom(environ []string) map[string]string {
	out := map[string]string{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(k, envPrefix) || k == EnvExcludedVRIDsImage) {
			out[k] = v
		}
	}
	return out
}

// Spec is a validated pool configuration, with the image's defaults filled
// in.
type Spec struct {
	ConfigName string
	// VIPs in the order given (ranges expanded); one address family.
	VIPs []netip.Addr
	// VIPGroups is the number of groups asked for; 0 = automatic.
	VIPGroups int
	// Interface is "" when it must be found by route lookup.
	Interface string
	// MonitorPort is 0 when the port check is off.
	MonitorPort  int
	ReplicaCount int
	VRIDOffset   int
	// OffsetFixed is set when the offset was given (variable or flag):
	// VRIDs heard on the link are then reported, not avoided.
	OffsetFixed bool
	// Peers, when not empty, make VRRP unicast (as in the image, where
	// the peer list alone selects unicast).
	Peers []netip.Addr
	// CheckScript is the command line and Check its words; empty when
	// not set.
	CheckScript  string
	Check        []string
	NotifyScript string
	// CheckInterval is the period of the port check or check script.
	CheckInterval time.Duration
	Preempt       bool
	PreemptDelay  time.Duration
	ExcludedVRIDs []int // sorted, unique
	IptablesChain string
	// ScriptEnv holds the variables given ("NAME=value", flags as their
	// variable), for the check script: keepalived runs scripts with its
	// environment, so the image's check scripts can read the pod's
	// OPENSHIFT_HA_* variables; vipstack passes scripts only these.
	ScriptEnv []string
	// BGP, when set (OPENSHIFT_HA_BGP_ASN), announces the VIPs by BGP
	// from every node whose check passes instead of running VRRP.
	BGP *BGPSettings
	// Warnings are notes about accepted input (ignored variables, a
	// clamped group count), each naming the variable.
	Warnings []string

	// family is the VIPs' family once VIPs is released (withoutVIPs).
	family int
}

// Family returns 4 or 6, the address family of the VIPs.
func (s *Spec) Family() int {
	if s.family != 0 {
		return s.family
	}
	if len(s.VIPs) > 0 && s.VIPs[0].Is6() {
		return 6
	}
	return 4
}

// withoutVIPs returns a copy of s without its list of VIPs, whose family
// it keeps: for a pool whose engine holds the VIPs in its configuration
// from then on. At 10,000 VIPs the list is 0.24 MB kept for nothing.
func (s *Spec) withoutVIPs() *Spec {
	c := *s
	c.family, c.VIPs = s.Family(), nil
	return &c
}

// Unicast reports whether VRRP goes to the peers instead of multicast.
func (s *Spec) Unicast() bool { return len(s.Peers) > 0 }

// Limits on what Parse accepts.
const (
	// MaxVIPs bounds the expanded VIP list (a typo like 10.0.0.0-10.255.0.0
	// must not allocate millions of addresses).
	MaxVIPs = 65536
	// MaxReplicas bounds the replica count: ranks need distinct priorities.
	MaxReplicas = 200
	// MaxValueLen bounds the value of one variable (or flag), in bytes: a
	// long VIP list of ranges fits, a runaway one does not reach the
	// parsers.
	MaxValueLen = 64 << 10
	// maxPreemptDelay is keepalived's upper bound for preempt_delay.
	maxPreemptDelay  = 1000 * time.Second
	maxCheckInterval = time.Hour
)

// Parse validates in and fills in the defaults. Every rejection names the
// variable (or flag), the bad value and what is accepted; all of them are
// reported at once.
func Parse(in Input) (*Spec, error) {
	p := parser{known: map[string]Var{}}
	for _, v := range Vars() {
		p.known[v.Name] = v
	}
	in, p.oversized = withoutOversized(in, p.known)
	p.in = in
	p.errs = append(p.errs, p.oversized...)
	var unknown []string
	for k := range in.Env {
		if _, ok := p.known[k]; !ok && strings.HasPrefix(k, envPrefix) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	for _, k := range unknown {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: unknown variable of the OPENSHIFT_HA_ family (known: %s)", k, in.Env[k], strings.Join(p.names(), ", ")))
	}
	for k := range in.Flags {
		if _, ok := p.known[k]; !ok {
			p.errs = append(p.errs, fmt.Errorf("flag for %s: unknown variable", k))
		}
	}

	s := &Spec{}
	for _, v := range Vars() {
		if v.Ignored {
			if val, src := p.get(v.Name); val != "" {
				s.Warnings = append(s.Warnings, fmt.Sprintf("%s is accepted but has no effect here: %s", src, v.Usage))
			}
		}
	}

	s.ConfigName, _ = p.get(EnvConfigName)
	if src := p.source(EnvConfigName); !quotable(s.ConfigName) || scrub(s.ConfigName) == "" {
		p.bad(src, s.ConfigName, "a name with at least one letter, digit, '-' or '_' and no double quotes, newlines or trailing backslash")
	}

	if val, src := p.get(EnvVirtualIPs); val == "" {
		if len(p.oversized) == 0 { // an oversized list is not a missing one
			p.errs = append(p.errs, fmt.Errorf("%s is required: the VIPs, e.g. 10.1.1.1-10,10.1.2.5", p.source(EnvVirtualIPs)))
		}
	} else if vips, err := ExpandVIPs(val); err != nil {
		p.errs = append(p.errs, fmt.Errorf("%s=%q: %w", src, val, err))
	} else {
		s.VIPs = vips
	}

	if val, src := p.get(EnvVIPGroups); val != "" {
		n, err := strconv.Atoi(strings.TrimSpace(val))
		switch {
		case err != nil || n < 0:
			p.bad(src, val, "a whole number of groups (0 or unset: automatic)")
		case len(s.VIPs) > 0 && n > len(s.VIPs):
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s=%d: more groups than the %d VIPs; using %d (one VIP each)", src, n, len(s.VIPs), len(s.VIPs)))
			s.VIPGroups = len(s.VIPs)
		default:
			s.VIPGroups = n
		}
	}

	s.Interface, _ = p.get(EnvInterface)
	if src := p.source(EnvInterface); s.Interface != "" && !validIfName(s.Interface) {
		p.bad(src, s.Interface, "an interface name of 1 to 15 characters without '/', ':' or spaces")
	}

	s.MonitorPort = p.intIn(EnvMonitorPort, 0, 65535, "a TCP port number from 0 (no check) to 65535")
	s.ReplicaCount = p.intIn(EnvReplicaCount, 0, MaxReplicas, fmt.Sprintf("a number of nodes from 1 to %d (0 counts as 1, as in the image)", MaxReplicas))
	if s.ReplicaCount == 0 {
		s.ReplicaCount = 1
	}
	s.VRIDOffset = p.intIn(EnvVRIDOffset, 0, 254, "a VRID offset from 0 to 254 (VRIDs start at offset+1)")
	if val, _ := p.get(EnvVRIDOffset); val != "" && p.given(EnvVRIDOffset) {
		s.OffsetFixed = true
	}

	useUnicast := false
	if val, src := p.get(EnvUseUnicast); val != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(val))
		if err != nil {
			p.bad(src, val, "true or false")
		}
		useUnicast = b
	}
	if val, src := p.get(EnvUnicastPeers); val != "" {
		peers, err := parseAddrList(val)
		if err != nil {
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %w", src, val, err))
		}
		s.Peers = peers
	}
	if useUnicast && len(s.Peers) == 0 {
		p.errs = append(p.errs, fmt.Errorf("%s=true needs %s: the addresses of the pool's nodes, comma separated", p.source(EnvUseUnicast), p.source(EnvUnicastPeers)))
	}
	if len(s.VIPs) > 0 {
		for _, a := range s.Peers {
			if a.Is4() != s.VIPs[0].Is4() {
				p.errs = append(p.errs, fmt.Errorf("%s: peer %s is not of the VIPs' address family (IPv%d)", p.source(EnvUnicastPeers), a, s.Family()))
				break
			}
		}
	}

	if val, src := p.get(EnvCheckScript); val != "" {
		argv, err := script.Split(val)
		switch {
		case err != nil:
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %w", src, val, err))
		case len(argv) == 0 || !strings.HasPrefix(argv[0], "/") || strings.Contains(val, "\"") || hasControl(val):
			p.bad(src, val, "the full path of a script in the node's (pod's) file system, e.g. /etc/keepalive/mycheckscript.sh, without double quotes, newlines or other control characters")
		default:
			s.CheckScript, s.Check = val, argv
		}
	}
	if val, src := p.get(EnvNotifyScript); val != "" {
		argv, err := script.Split(val)
		switch {
		case err != nil:
			p.errs = append(p.errs, fmt.Errorf("%s=%q: %w", src, val, err))
		case len(argv) == 0 || !strings.HasPrefix(argv[0], "/") || strings.Contains(val, "\"") || hasControl(val):
			p.bad(src, val, "the full path of a script in the node's (pod's) file system, without double quotes, newlines or other control characters")
		default:
			s.NotifyScript = val
		}
	}

	if val, src := p.get(EnvCheckInterval); val != "" {
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		d := time.Duration(f * float64(time.Second))
		if err != nil || math.IsNaN(f) || d < 10*time.Millisecond || d > maxCheckInterval {
			p.bad(src, val, "seconds between checks, from 0.01 to 3600 (e.g. 2 or 0.5)")
		} else {
			s.CheckInterval = d
		}
	}

	if val, src := p.get(EnvPreemption); val != "" {
		preempt, delay, err := parsePreemption(val)
		if err != nil {
			p.bad(src, val, err.Error())
		}
		s.Preempt, s.PreemptDelay = preempt, delay
	}

	for _, name := range []string{EnvExcludedVRIDsImage, EnvExcludedVRIDs} {
		val, src := p.get(name)
		if val == "" {
			continue
		}
		for _, f := range strings.FieldsFunc(val, listSep) {
			n, err := strconv.Atoi(f)
			if err != nil || n < 1 || n > 255 {
				p.bad(src, val, fmt.Sprintf("VRIDs from 1 to 255 separated by spaces or commas (%q is not one)", f))
				break
			}
			if !slices.Contains(s.ExcludedVRIDs, n) {
				s.ExcludedVRIDs = append(s.ExcludedVRIDs, n)
			}
		}
	}
	sort.Ints(s.ExcludedVRIDs)
	p.parseBGP(s)

	s.IptablesChain, _ = p.get(EnvIptablesChain)
	switch src := p.source(EnvIptablesChain); {
	case p.given(EnvNftablesRule):
		// The current image reads "${OPENSHIFT_HA_NFTABLES_RULE:-${OPENSHIFT_HA_IPTABLES_CHAIN:-""}}"
		// only for being set, and then adds its rule in a table of its
		// own: the chain's name plays no part.
		if s.IptablesChain != "" {
			s.Warnings = append(s.Warnings, fmt.Sprintf("%s=%q is ignored: %s is set, so the rule goes in the pool's own table (inet %s), as the image then puts it in its own (inet keepalived)",
				src, s.IptablesChain, EnvNftablesRule, NewFirewall(&Spec{ConfigName: s.ConfigName}).Table()))
		}
		s.IptablesChain = ""
	case s.IptablesChain != "" && !validChain(s.IptablesChain):
		p.bad(src, s.IptablesChain, "a chain name of up to 28 letters, digits, '_', '-' or '.' (e.g. INPUT)")
	}

	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	for _, v := range Vars() {
		if p.given(v.Name) {
			val, _ := p.get(v.Name)
			s.ScriptEnv = append(s.ScriptEnv, v.Name+"="+val)
		}
	}
	return s, nil
}

type parser struct {
	in        Input
	known     map[string]Var
	errs      []error
	oversized []error // values longer than MaxValueLen, left out of in
}

// withoutOversized returns in without the values longer than MaxValueLen
// and an error for each, naming the variable (or flag), the length and the
// limit, not the value. in itself is not modified.
func withoutOversized(in Input, known map[string]Var) (Input, []error) {
	var errs []error
	filter := func(m map[string]string, name func(string) string) map[string]string {
		var out map[string]string
		for k, v := range m {
			if len(v) <= MaxValueLen || name(k) == "" {
				continue
			}
			if out == nil {
				out = maps.Clone(m)
			}
			delete(out, k)
			errs = append(errs, fmt.Errorf("%s: the value is %d bytes, more than the %d accepted", name(k), len(v), MaxValueLen))
		}
		if out == nil {
			return m
		}
		return out
	}
	in.Flags = filter(in.Flags, func(k string) string {
		if f := known[k].Flag; f != "" {
			return "--" + f
		}
		return "flag for " + k
	})
	in.Env = filter(in.Env, func(k string) string {
		if strings.HasPrefix(k, envPrefix) || k == EnvExcludedVRIDsImage {
			return k
		}
		return "" // not of the family: not looked at
	})
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return in, errs
}

func (p *parser) names() []string {
	var out []string
	for _, v := range Vars() {
		out = append(out, v.Name)
	}
	return out
}

// given reports whether the variable was set (not defaulted).
func (p *parser) given(name string) bool {
	if v, ok := p.in.Flags[name]; ok && v != "" {
		return true
	}
	return p.in.Env[name] != ""
}

// get returns the value (flag, else environment, else default) and how to
// name its source in an error.
func (p *parser) get(name string) (string, string) {
	if v, ok := p.in.Flags[name]; ok && v != "" {
		return v, p.source(name)
	}
	if v := p.in.Env[name]; v != "" {
		return v, name
	}
	return p.known[name].Default, p.source(name) + " (default)"
}

// source names where the value of name comes from: "--flag" when a flag
// gave it (or Input.FlagNames is set and it has a flag), else the variable.
func (p *parser) source(name string) string {
	if v, ok := p.in.Flags[name]; p.in.FlagNames || ok && v != "" {
		if f := p.known[name].Flag; f != "" {
			return "--" + f
		}
	}
	return name
}

func (p *parser) bad(src, val, want string) {
	src = strings.TrimSuffix(src, " (default)")
	p.errs = append(p.errs, fmt.Errorf("%s=%q: want %s", src, val, want))
}

func (p *parser) intIn(name string, lo, hi int, want string) int {
	val, src := p.get(name)
	if val == "" {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(val))
	if err != nil || n < lo || n > hi {
		p.bad(src, val, want)
		return 0
	}
	return n
}

// parsePreemption reads the image's preemption strategy: the keepalived
// keyword line it pastes into every instance.
func parsePreemption(v string) (preempt bool, delay time.Duration, err error) {
	f := strings.Fields(v)
	want := errors.New("nopreempt, preempt, or preempt_delay SECONDS with SECONDS from 0 to 1000")
	switch {
	case len(f) == 1 && f[0] == "nopreempt":
		return false, 0, nil
	case len(f) == 1 && f[0] == "preempt":
		return true, 0, nil
	case len(f) == 2 && f[0] == "preempt_delay":
		s, perr := strconv.ParseFloat(f[1], 64)
		d := time.Duration(s * float64(time.Second))
		if perr != nil || math.IsNaN(s) || d < 0 || d > maxPreemptDelay {
			return true, 0, want
		}
		return true, d, nil
	}
	return true, 0, want
}

func parseAddrList(v string) ([]netip.Addr, error) {
	var out []netip.Addr
	for _, f := range strings.FieldsFunc(v, listSep) {
		a, err := netip.ParseAddr(f)
		if err != nil || a.Zone() != "" || a.Is4In6() || !a.IsGlobalUnicast() {
			return nil, fmt.Errorf("%q is not a unicast IPv4 or IPv6 address (want e.g. 10.0.0.11,10.0.0.12)", f)
		}
		if slices.Contains(out, a) {
			return nil, fmt.Errorf("%s is listed twice", a)
		}
		out = append(out, a)
	}
	return out, nil
}

// quotable reports whether s can be written between double quotes as a
// literal keepalived.conf word (auth_pass): no double quote, no line break
// or NUL, and no backslash at the end (it would escape the closing quote).
func quotable(s string) bool {
	return !strings.ContainsAny(s, "\"\n\r\x00") && !strings.HasSuffix(s, `\`)
}

func validIfName(s string) bool {
	return len(s) <= 15 && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n\x00")
}

func validChain(s string) bool {
	if len(s) == 0 || len(s) > 28 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}

// scrub turns a name into the image's instance name stem: letters, digits
// and '_' only, '-' becoming '_'.
func scrub(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_':
			b.WriteRune(r)
		case r == '-':
			b.WriteByte('_')
		}
	}
	return b.String()
}

// hasControl reports whether s has a control character other than a tab:
// keepalived.conf cannot carry one through a script line unchanged.
func hasControl(s string) bool {
	for _, r := range s {
		if r != '\t' && unicode.IsControl(r) {
			return true
		}
	}
	return false
}

// listSep separates the entries of a list value (VIPs, peers, VRIDs):
// commas and white space, line ends included (a value read from a
// ConfigMap file ends with one).
func listSep(r rune) bool { return r == ',' || unicode.IsSpace(r) }
