package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vipstack/vipstack/internal/vrrp"
)

// Role is a node's role.
type Role string

const (
	Bootstrap Role = "bootstrap"
	Master    Role = "master"
	Worker    Role = "worker"
)

// File is cluster.yaml as written.
type File struct {
	Name            string   `yaml:"name"`
	BaseDomain      string   `yaml:"baseDomain"`
	APIVIPs         []string `yaml:"apiVIPs"`
	IngressVIPs     []string `yaml:"ingressVIPs"`
	DNSVIP          string   `yaml:"dnsVIP,omitempty"`
	MachineNetworks []string `yaml:"machineNetworks"`
	UpstreamDNS     []string `yaml:"upstreamDNS,omitempty"`
	Nodes           []struct {
		Name string   `yaml:"name"`
		Role string   `yaml:"role"`
		IPs  []string `yaml:"ips"`
		// RouterID is the node's BGP identifier (bgp); default: its
		// first IPv4 address.
		RouterID string `yaml:"routerID,omitempty"`
	} `yaml:"nodes"`
	// Membership names the live sources of nodes besides nodes (file
	// membership.go); with one, nodes may be left out.
	Membership *struct {
		Kubernetes bool `yaml:"kubernetes,omitempty"`
		MDNS       bool `yaml:"mdns,omitempty"`
	} `yaml:"membership,omitempty"`
	VRRP *struct {
		Version        int    `yaml:"version,omitempty"`
		AdvertInterval string `yaml:"advertInterval,omitempty"`
		Unicast        *bool  `yaml:"unicast,omitempty"`
		Interface      string `yaml:"interface,omitempty"`
		// Per-instance overrides of the derived VRID, priority and
		// password (a cluster whose IDs came from an older installer).
		API     *OverrideFile `yaml:"api,omitempty"`
		Ingress *OverrideFile `yaml:"ingress,omitempty"`
		DNS     *OverrideFile `yaml:"dns,omitempty"`
	} `yaml:"vrrp,omitempty"`
	LoadBalancer *struct {
		MachineConfig bool `yaml:"machineConfig,omitempty"`
	} `yaml:"loadBalancer,omitempty"`
	// BGP announces VIPs to routers instead of holding them by VRRP
	// (bgp.go).
	BGP   *BGPFile `yaml:"bgp,omitempty"`
	Ports *struct {
		API             int `yaml:"api,omitempty"`
		LB              int `yaml:"lb,omitempty"`
		IngressHealth   int `yaml:"ingressHealth,omitempty"`
		MachineConfig   int `yaml:"machineConfig,omitempty"`
		LBMachineConfig int `yaml:"lbMachineConfig,omitempty"`
		Status          int `yaml:"status,omitempty"`
	} `yaml:"ports,omitempty"`
}

// OverrideFile is one VRRP instance's overrides as written.
type OverrideFile struct {
	VRID     int    `yaml:"vrid,omitempty"`
	Priority int    `yaml:"priority,omitempty"`
	Password string `yaml:"password,omitempty"`
}

// Cluster is a validated cluster file with defaults filled in.
type Cluster struct {
	Name            string
	BaseDomain      string
	APIVIPs         []netip.Addr
	IngressVIPs     []netip.Addr
	DNSVIP          netip.Addr // zero when not set
	MachineNetworks []netip.Prefix
	UpstreamDNS     []netip.AddrPort
	// Nodes are the nodes the file lists (Listed) and, in a cluster
	// from WithNodes, those live sources report.
	Nodes []Node
	// Listed are the nodes the file lists.
	Listed     []Node
	Membership Membership
	VRRP       VRRP
	Ports      Ports
	// BalanceMachineConfig runs the machine-config server's port
	// (ports.machineConfig) through the masters' load balancer, as the API.
	BalanceMachineConfig bool
	// BGP says which VIPs are announced by BGP and to whom (bgp.go).
	BGP BGP
}

// Node is one node of the cluster.
type Node struct {
	Name string
	Role Role
	IPs  []netip.Addr
	// RouterID is the node's BGP identifier when the file sets one.
	RouterID netip.Addr
}

// Equal reports whether n and m are the same node with the same role and
// addresses, in the same order.
func (n Node) Equal(m Node) bool {
	return n.Name == m.Name && n.Role == m.Role && slices.Equal(n.IPs, m.IPs) && n.RouterID == m.RouterID
}

// VRRP settings shared by every instance.
type VRRP struct {
	Version        int           // 2 or 3, the IPv4 instances' (IPv6 ones run 3); default 2 (3 without IPv4 VIPs)
	AdvertInterval time.Duration // default 1s
	Unicast        bool          // default true
	Interface      string        // "" = the interface that routes to the machine network
	// Overrides of the derived settings of the API, Ingress and DNS
	// instances; a zero field keeps the derived value.
	API, Ingress, DNS Override
}

// Override replaces an instance's derived settings: VRID (1..255),
// Priority (1..254, every node's base priority for that instance but the
// bootstrap node's) and Password (the VRRPv2 auth_pass). Zero values keep
// what is derived.
type Override struct {
	VRID     uint8
	Priority uint8
	Password string
}

// Ports the node services use. Validate keeps them apart from each other
// and from the ports vipstack node binds itself (DNSPort, DNSHealthPort,
// LBMonitorPort, LBStatsPort, DefaultMetricsPort, DefaultStatusPort).
type Ports struct {
	API, LB, IngressHealth, MachineConfig int
	// LBMachineConfig is where the load balancer takes the
	// machine-config server's connections when BalanceMachineConfig is
	// set (default 22625).
	LBMachineConfig int
	// Status is where every node serves its status, read-only, on its
	// own addresses to the other nodes of the file, for `vipstack status
	// --cluster`; 0 (the default): the status stays on loopback only.
	Status int
}

// Families returns the address families of addrs (4, 6) in the order of
// their first appearance: the first is the primary family.
func Families(addrs []netip.Addr) []int {
	var out []int
	for _, a := range addrs {
		f := 6
		if a.Is4() {
			f = 4
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func familyNames(fams []int) string {
	s := make([]string, len(fams))
	for i, f := range fams {
		s[i] = "IPv" + strconv.Itoa(f)
	}
	return strings.Join(s, ", ")
}

// VersionFor is the VRRP version of the instance that holds VIPs of a's
// family: 3 for IPv6, the configured version for IPv4.
func (c *Cluster) VersionFor(a netip.Addr) int {
	if a.Is6() {
		return 3
	}
	return c.VRRP.Version
}

// Domain is the cluster's DNS domain, "<name>.<baseDomain>".
func (c *Cluster) Domain() string { return c.Name + "." + c.BaseDomain }

// NodeByName returns the named node.
func (c *Cluster) NodeByName(name string) (Node, bool) {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n, true
		}
	}
	return Node{}, false
}

// Limits on what a cluster file may hold. Every one is reported with the
// file or field, the size found and the limit.
const (
	// MaxFileSize bounds the cluster file.
	MaxFileSize = 1 << 20
	// MaxNodes bounds nodes: every node of a VRRP instance is a unicast
	// peer of every other, so adverts grow with the square of the count.
	MaxNodes = 1000
	// MaxVIPs bounds each of apiVIPs and ingressVIPs: one VRRP instance
	// carries a list, and its advertisement must fit in an IPv6 minimum
	// MTU of 1280 bytes (32 x 16 bytes of addresses does).
	MaxVIPs = 32
	// MaxNodeIPs bounds the addresses of one node.
	MaxNodeIPs = 16
	// MaxNetworks bounds machineNetworks and upstreamDNS.
	MaxNetworks = 64
	// maxDomain is the longest domain name, "<name>.<baseDomain>" (RFC 1035
	// section 2.3.4, without the trailing dot).
	maxDomain = 253
	// maxIfName is the longest Linux interface name (IFNAMSIZ - 1).
	maxIfName = 15
)

// Load reads and validates a cluster file.
func Load(path string) (*Cluster, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load cluster file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() > MaxFileSize {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d accepted for a cluster file", path, st.Size(), MaxFileSize)
	}
	// Read at most one byte more than the limit: a file that grows after
	// the Stat, a FIFO or a device is refused without being read whole.
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("load cluster file %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: more than the %d bytes accepted for a cluster file", path, MaxFileSize)
	}
	return Parse(path, data)
}

var (
	yamlField = regexp.MustCompile(`^line (\d+): field (\S+) not found in type `)
	yamlLine  = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
)

// Parse decodes and validates data read from name. Every line of an error
// starts with name, and with the line number where the YAML decoder gives
// one: "name:LINE: message" or "name: message".
func Parse(name string, data []byte) (*Cluster, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%s: %d bytes is larger than the %d accepted for a cluster file", name, len(data), MaxFileSize)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f File
	if err := dec.Decode(&f); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			return nil, errors.New(strings.Join(typeErrorLines(name, data, te.Errors, typeProblems(data)), "\n"))
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file; want a cluster description (name, baseDomain, apiVIPs, ingressVIPs, machineNetworks, nodes)", name)
		}
		return nil, errors.New(yamlMessage(name, data, err.Error()))
	}
	if ps := typeProblems(data); len(ps) > 0 {
		return nil, errors.New(strings.Join(typeErrorLines(name, data, nil, ps), "\n"))
	}
	c, err := f.Validate()
	if err != nil {
		lines := strings.Split(err.Error(), "\n")
		for i, l := range lines {
			lines[i] = name + ": " + l
		}
		return nil, &fileError{msg: strings.Join(lines, "\n"), err: err}
	}
	return c, nil
}

// fileError is Validate's error with the file name on every line.
type fileError struct {
	msg string
	err error
}

func (e *fileError) Error() string { return e.msg }
func (e *fileError) Unwrap() error { return e.err }

// yamlMessage turns one of the YAML decoder's messages about data into
// "name:LINE: message", one line. The decoder leaves the line out when its
// mark is on the first line, and for an unknown alias (found here by its
// text); only "excessive aliasing", about the whole document, gets
// "name: message".
func yamlMessage(name string, data []byte, msg string) string {
	msg = strings.ReplaceAll(strings.TrimPrefix(msg, "yaml: "), "\n", " ")
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		return fmt.Sprintf("%s:%s: %s", name, m[1], m[2])
	}
	if strings.Contains(msg, "excessive aliasing") {
		return name + ": " + msg
	}
	line := 1
	if a, ok := strings.CutPrefix(msg, "unknown anchor '"); ok {
		a, _, _ = strings.Cut(a, "'")
		if i := bytes.Index(data, []byte("*"+a)); i >= 0 {
			line += bytes.Count(data[:i], []byte("\n"))
		}
	}
	return fmt.Sprintf("%s:%d: %s", name, line, msg)
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// Validate is the one conversion from a File to a Cluster. Every error
// names the field, the bad value and what is accepted.
func (f *File) Validate() (*Cluster, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	c := &Cluster{Name: f.Name, BaseDomain: strings.TrimSuffix(f.BaseDomain, ".")}
	if !dnsLabel.MatchString(f.Name) {
		bad("name: %q is not a DNS label (lower-case letters, digits and '-', at most 63)", f.Name)
	}
	// Lists longer than their limit are reported and not read further, so
	// a hostile file cannot make the error list grow with it. f is a copy
	// from here on: the caller's File is left as it was.
	cp := *f
	cp.Nodes = slices.Clone(f.Nodes)
	f = &cp
	tooMany := func(field string, n, limit int) bool {
		if n > limit {
			bad("%s: %d entries, more than the %d accepted", field, n, limit)
			return true
		}
		return false
	}
	if tooMany("nodes", len(f.Nodes), MaxNodes) {
		f.Nodes = nil
	}
	if tooMany("apiVIPs", len(f.APIVIPs), MaxVIPs) {
		f.APIVIPs = nil
	}
	if tooMany("ingressVIPs", len(f.IngressVIPs), MaxVIPs) {
		f.IngressVIPs = nil
	}
	if tooMany("machineNetworks", len(f.MachineNetworks), MaxNetworks) {
		f.MachineNetworks = nil
	}
	if tooMany("upstreamDNS", len(f.UpstreamDNS), MaxNetworks) {
		f.UpstreamDNS = nil
	}
	for i := range f.Nodes {
		if tooMany(fmt.Sprintf("nodes[%d].ips", i), len(f.Nodes[i].IPs), MaxNodeIPs) {
			f.Nodes[i].IPs = nil
		}
	}
	if c.BaseDomain == "" {
		bad("baseDomain: required (e.g. example.com)")
	} else {
		for _, l := range strings.Split(c.BaseDomain, ".") {
			if !dnsLabel.MatchString(l) {
				bad("baseDomain: %q is not a domain name", f.BaseDomain)
				break
			}
		}
		if n := len(c.Domain()); n > maxDomain {
			bad("baseDomain: %q: the cluster domain %s.%s is %d characters, more than the %d a domain name may have", f.BaseDomain, f.Name, c.BaseDomain, n, maxDomain)
		}
	}
	for i, s := range f.MachineNetworks {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			bad("machineNetworks[%d]: %q is not a CIDR (e.g. 198.18.0.0/24)", i, s)
			continue
		}
		c.MachineNetworks = append(c.MachineNetworks, p.Masked())
	}
	if len(f.MachineNetworks) == 0 {
		bad("machineNetworks: at least one CIDR is required")
	}
	// hostable reports what keeps a from being an address of a node or,
	// with vip, a VIP: "" when nothing does. A VIP is also not
	// link-local: only its own link reaches one (an IPv6 one only with a
	// zone, which DNS answers cannot carry), and the API VIP's redirect
	// refuses it (redirect.CheckVIP), so a master would retry it forever.
	hostable := func(a netip.Addr, vip bool) string {
		switch {
		case a.Is4In6():
			return fmt.Sprintf("%s is an IPv4-mapped IPv6 address, which never appears on the wire (accepted: %s)", a, a.Unmap())
		case a.IsUnspecified() || a.IsMulticast() || a.IsLoopback():
			return fmt.Sprintf("%s is not a unicast address a host can hold (accepted: a unicast address, not unspecified, multicast or loopback)", a)
		case vip && a.IsLinkLocalUnicast():
			return fmt.Sprintf("%s is a link-local address: only its own link reaches it (accepted: a unicast address that is not link-local)", a)
		}
		return ""
	}
	parseList := func(field string, in []string, required, vip bool) []netip.Addr {
		var out []netip.Addr
		if required && len(in) == 0 {
			bad("%s: at least one address is required", field)
		}
		for i, s := range in {
			a, err := netip.ParseAddr(s)
			if err != nil || a.Zone() != "" {
				bad("%s[%d]: %q is not an IP address", field, i, s)
				continue
			}
			if why := hostable(a, vip); why != "" {
				bad("%s[%d]: %s", field, i, why)
				continue
			}
			out = append(out, a)
		}
		return out
	}
	// A VIP list may hold both families (OpenShift's dual-stack apiVIPs
	// and ingressVIPs): each family is its own VRRP instance, the first
	// entry's family the primary one.
	c.APIVIPs = parseList("apiVIPs", f.APIVIPs, true, true)
	c.IngressVIPs = parseList("ingressVIPs", f.IngressVIPs, true, true)
	if fa, fi := Families(c.APIVIPs), Families(c.IngressVIPs); len(fa) > 0 && len(fi) > 0 && !slices.Equal(fa, fi) {
		bad("ingressVIPs: families %s, but apiVIPs has %s; in a dual-stack cluster both lists hold the same families with the same one first (OpenShift pairs apiVIPs[i] with ingressVIPs[i])",
			familyNames(fi), familyNames(fa))
	}
	if f.DNSVIP != "" {
		if a, err := netip.ParseAddr(f.DNSVIP); err != nil || a.Zone() != "" {
			bad("dnsVIP: %q is not an IP address", f.DNSVIP)
		} else if why := hostable(a, true); why != "" {
			bad("dnsVIP: %s", why)
		} else {
			c.DNSVIP = a
		}
	}
	for i, s := range f.UpstreamDNS {
		ap, err := netip.ParseAddrPort(s)
		if err != nil {
			a, err2 := netip.ParseAddr(s)
			if err2 != nil {
				bad("upstreamDNS[%d]: %q is not an IP address or IP:port", i, s)
				continue
			}
			ap = netip.AddrPortFrom(a, 53)
		}
		c.UpstreamDNS = append(c.UpstreamDNS, ap)
	}

	seen := map[string]int{}
	owner := map[netip.Addr]string{}
	for i, n := range f.Nodes {
		node := Node{Name: n.Name, Role: Role(n.Role)}
		if !dnsLabel.MatchString(n.Name) {
			bad("nodes[%d].name: %q is not a DNS label (lower-case letters, digits and '-')", i, n.Name)
		}
		if j, dup := seen[n.Name]; dup {
			bad("nodes[%d].name: %q is already the name of nodes[%d]", i, n.Name, j)
		}
		seen[n.Name] = i
		switch node.Role {
		case Bootstrap, Master, Worker:
		default:
			bad("nodes[%d].role: %q is not a role (accepted: bootstrap, master, worker)", i, n.Role)
		}
		node.IPs = parseList(fmt.Sprintf("nodes[%d].ips", i), n.IPs, true, false)
		for _, a := range node.IPs {
			if o, dup := owner[a]; dup {
				bad("nodes[%d].ips: %s is also an address of node %s", i, a, o)
			}
			owner[a] = n.Name
		}
		if n.RouterID != "" {
			if a, err := netip.ParseAddr(n.RouterID); err != nil || !a.Is4() || a.IsUnspecified() {
				bad("nodes[%d].routerID: %q is not an IPv4 address other than 0.0.0.0 (BGP identifiers are 4 bytes)", i, n.RouterID)
			} else {
				node.RouterID = a
			}
		}
		c.Nodes = append(c.Nodes, node)
	}
	if m := f.Membership; m != nil {
		c.Membership = Membership{Kubernetes: m.Kubernetes, MDNS: m.MDNS}
	}
	live := c.Membership.Live()
	if len(f.Nodes) == 0 && !live {
		bad("nodes: at least one node is required (or a live source to learn them from: membership.kubernetes or membership.mdns)")
	}
	masters := 0
	for _, n := range c.Nodes {
		if n.Role == Master {
			masters++
		}
	}
	if len(f.Nodes) > 0 && masters == 0 && !live {
		bad("nodes: no node has role master (or a live source to learn them from: membership.kubernetes or membership.mdns)")
	}
	// A node runs an instance per family of the VIPs its role holds, and
	// sends from (and to) its address of that family.
	for i, n := range c.Nodes {
		var vips []netip.Addr
		switch n.Role {
		case Bootstrap:
			vips = c.APIVIPs
		case Master:
			vips = slices.Concat(c.APIVIPs, c.IngressVIPs)
		case Worker:
			vips = c.IngressVIPs
		}
		for _, v := range vips {
			if _, ok := addrOfFamily(n.IPs, v); !ok && len(n.IPs) > 0 {
				bad("nodes[%d].ips: node %s (%s) has no %s address, and it runs the instance of VIP %s; a node needs an address of each family its VIPs use",
					i, n.Name, n.Role, family(v), v)
				break
			}
		}
	}
	nodeIdx := map[string]int{}
	for i, n := range c.Nodes {
		nodeIdx[n.Name] = i
	}
	validateBGP(f, c, nodeIdx, bad)
	checkVIP := func(field string, a netip.Addr) {
		in := c.BGP.Announced[a] // a routed VIP lives outside the nodes' subnets
		for _, p := range c.MachineNetworks {
			in = in || p.Contains(a)
		}
		if !in && len(c.MachineNetworks) > 0 {
			bad("%s: %s is outside every machine network (%s)", field, a, joinPrefixes(c.MachineNetworks))
		}
		if o, ok := owner[a]; ok {
			bad("%s: %s is also an address of node %s", field, a, o)
		}
	}
	vipSeen := map[netip.Addr]string{}
	addVIP := func(field string, a netip.Addr) {
		checkVIP(field, a)
		if other, dup := vipSeen[a]; dup {
			bad("%s: %s is already %s", field, a, other)
		}
		vipSeen[a] = field
	}
	for i, a := range c.APIVIPs {
		addVIP(fmt.Sprintf("apiVIPs[%d]", i), a)
	}
	for i, a := range c.IngressVIPs {
		addVIP(fmt.Sprintf("ingressVIPs[%d]", i), a)
	}
	if c.DNSVIP.IsValid() {
		addVIP("dnsVIP", c.DNSVIP)
	}
	// Every node's cluster DNS listens on port 53 of all its addresses,
	// the VIPs it holds included: an upstream there is the cluster DNS
	// itself, and every name it forwards would come back to it.
	for i, u := range c.UpstreamDNS {
		if u.Port() != DNSPort {
			continue
		}
		a := u.Addr().Unmap()
		what := ""
		if o, ok := owner[a]; ok {
			what = "an address of node " + o
		} else if v, ok := vipSeen[a]; ok {
			what = v
		} else if a.IsUnspecified() {
			what = "every address of the node itself"
		}
		if what != "" {
			bad("upstreamDNS[%d]: %s is %s, where the cluster DNS listens: queries forwarded there come back to it (a loop); want the resolvers outside the cluster that it forwards other names to", i, u, what)
		}
	}

	// The version is the IPv4 instances'; IPv6 instances always run
	// VRRPv3 (version 2 is IPv4 only), as keepalived switches them. A
	// cluster without IPv4 VIPs defaults to 3.
	c.VRRP = VRRP{Version: 2, AdvertInterval: time.Second, Unicast: true}
	fams := Families(slices.Concat(c.APIVIPs, c.IngressVIPs))
	has4, has6 := slices.Contains(fams, 4), slices.Contains(fams, 6)
	if !has4 && has6 {
		c.VRRP.Version = 3
	}
	if v := f.VRRP; v != nil {
		if v.Version != 0 {
			if v.Version != 2 && v.Version != 3 {
				bad("vrrp.version: %d is not a VRRP version (accepted: 2, 3)", v.Version)
			}
			c.VRRP.Version = v.Version
		}
		if v.AdvertInterval != "" {
			d, err := time.ParseDuration(v.AdvertInterval)
			if err != nil || d <= 0 {
				bad("vrrp.advertInterval: %q is not a duration (e.g. 1s, 100ms)", v.AdvertInterval)
			} else {
				c.VRRP.AdvertInterval = d
			}
		}
		if v.Unicast != nil {
			c.VRRP.Unicast = *v.Unicast
		}
		if v.Interface != "" && !validIfName(v.Interface) {
			bad("vrrp.interface: %q is not an interface name (1 to %d characters, no '/', ':', blanks or quotes)", v.Interface, maxIfName)
		} else {
			c.VRRP.Interface = v.Interface
		}
		c.VRRP.API = override("vrrp.api", v.API, bad)
		c.VRRP.Ingress = override("vrrp.ingress", v.Ingress, bad)
		c.VRRP.DNS = override("vrrp.dns", v.DNS, bad)
	}
	ids := c.VRIDs()
	if ids.API == ids.Ingress || (c.DNSVIP.IsValid() && (ids.DNS == ids.API || ids.DNS == ids.Ingress)) {
		bad("vrrp: the API, Ingress and DNS instances have virtual router IDs %d, %d and %d; each instance on the interface needs its own (set vrrp.api.vrid, vrrp.ingress.vrid or vrrp.dns.vrid apart)", ids.API, ids.Ingress, ids.DNS)
	}
	runs2 := c.VRRP.Version == 2 && has4
	runs3 := c.VRRP.Version == 3 || has6
	switch {
	case c.VRRP.Version == 2 && !has4 && has6:
		bad("vrrp.version: 2 cannot carry IPv6 VIPs and this cluster has no IPv4 VIP; use version 3 (in a dual-stack cluster, 2 is the IPv4 instances' version and the IPv6 ones run 3)")
	case runs2 && vrrp.CheckAdvertInterval(2, c.VRRP.AdvertInterval) != nil:
		bad("vrrp.advertInterval: %v", vrrp.CheckAdvertInterval(2, c.VRRP.AdvertInterval))
	case runs3 && vrrp.CheckAdvertInterval(3, c.VRRP.AdvertInterval) != nil:
		bad("vrrp.advertInterval: %v", vrrp.CheckAdvertInterval(3, c.VRRP.AdvertInterval))
	}

	c.Ports = Ports{API: 6443, LB: 9445, IngressHealth: 1936, MachineConfig: 22623, LBMachineConfig: DefaultLBMachineConfigPort}
	if lb := f.LoadBalancer; lb != nil {
		c.BalanceMachineConfig = lb.MachineConfig
	}
	if p := f.Ports; p != nil {
		set := func(field string, v int, dst *int) {
			if v == 0 {
				return
			}
			if v < 1 || v > 65535 {
				bad("ports.%s: %d is not a port (1..65535)", field, v)
				return
			}
			*dst = v
		}
		set("api", p.API, &c.Ports.API)
		set("lb", p.LB, &c.Ports.LB)
		set("ingressHealth", p.IngressHealth, &c.Ports.IngressHealth)
		set("machineConfig", p.MachineConfig, &c.Ports.MachineConfig)
		set("lbMachineConfig", p.LBMachineConfig, &c.Ports.LBMachineConfig)
		if p.LBMachineConfig != 0 && !c.BalanceMachineConfig {
			bad("ports.lbMachineConfig: %d is only used with loadBalancer.machineConfig: true", p.LBMachineConfig)
		}
		set("status", p.Status, &c.Ports.Status)
	}
	// A master binds every one of these ports (TCP; the cluster DNS also
	// UDP), so no two may be equal. The listeners set SO_REUSEPORT, so a
	// second bind of a port succeeds and the two services split its
	// connections: the DNS over TCP and the load balancer's checks break,
	// or a service shadows the API server or the router.
	users := append(c.ServicePorts(),
		ServicePort{"vipstack node's default --metrics-addr", DefaultMetricsPort},
		ServicePort{"vipstack node's default --status-addr", DefaultStatusPort},
		ServicePort{"vipstack agent's default --status-addr", DefaultAgentStatusPort},
		ServicePort{"vipstack agent's default --metrics-addr", DefaultAgentMetricsPort},
		ServicePort{"vipstack agent's default --health-addr", DefaultAgentHealthPort})
	for i, u := range users {
		for j, o := range users[:i] {
			if u.Port != o.Port {
				continue
			}
			field, other, self := u.Owner, o.Owner, i
			if !strings.HasPrefix(field, "ports.") { // name the setting the file can change
				field, other, self = other, field, j
			}
			bad("%s: %d is also the port of %s; every service of a node needs its own port (accepted: 1..65535 except %s)",
				field, u.Port, other, joinInts(portsExcept(users, self)))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	sort.SliceStable(c.Nodes, func(i, j int) bool { return c.Nodes[i].Name < c.Nodes[j].Name })
	c.Listed = c.Nodes
	return c, nil
}

// ServicePort is a port that one of a node's services binds.
type ServicePort struct {
	Owner string // the setting or service, as an error names it
	Port  int
}

// ServicePorts lists the ports a master's services bind: those the file
// sets and the fixed ones (not the node agent's own endpoints, which its
// flags set).
func (c *Cluster) ServicePorts() []ServicePort {
	out := []ServicePort{
		{"ports.api", c.Ports.API}, {"ports.lb", c.Ports.LB}, {"ports.ingressHealth", c.Ports.IngressHealth},
		{"ports.machineConfig", c.Ports.MachineConfig},
		{"the cluster DNS (UDP and TCP)", DNSPort}, {"the DNS health check", DNSHealthPort},
		{"the load balancer's monitor", LBMonitorPort}, {"the load balancer's stats page", LBStatsPort},
	}
	if c.BalanceMachineConfig {
		out = append(out, ServicePort{"ports.lbMachineConfig", c.Ports.LBMachineConfig})
	}
	if c.Ports.Status != 0 {
		out = append(out, ServicePort{"ports.status", c.Ports.Status})
	}
	return out
}

// CheckEndpoints checks that the node agent's own endpoints (its
// --metrics-addr and --status-addr, as eps) use ports that none of the
// cluster's services binds, nor each other. The file alone is checked
// against their defaults; this is for the ports a node was started with.
func (c *Cluster) CheckEndpoints(eps []ServicePort) error {
	users := append(c.ServicePorts(), eps...)
	first := len(users) - len(eps)
	var errs []error
	for i := first; i < len(users); i++ {
		for _, o := range users[:i] {
			if users[i].Port != o.Port {
				continue
			}
			errs = append(errs, fmt.Errorf("%s: port %d is also the port of %s; every service of a node needs its own port (accepted: 1..65535 except %s)",
				users[i].Owner, users[i].Port, o.Owner, joinInts(portsExcept(users, i))))
			break
		}
	}
	return errors.Join(errs...)
}

// portsExcept returns the ports of every user but users[self], sorted and
// once each.
func portsExcept(users []ServicePort, self int) []int {
	var taken []int
	for k, t := range users {
		if k != self && !slices.Contains(taken, t.Port) {
			taken = append(taken, t.Port)
		}
	}
	slices.Sort(taken)
	return taken
}

// validIfName reports whether s can name a Linux network interface.
func validIfName(s string) bool {
	return len(s) <= maxIfName && s != "." && s != ".." && !strings.ContainsAny(s, "/: \t\n\r\x00\"'{}#!")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

func joinPrefixes(ps []netip.Prefix) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.String()
	}
	return strings.Join(s, ", ")
}
