package dns

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"syscall"

	"github.com/coredns/caddy"
	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/plugin"
	"github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/transport"
)

// listenAt is one address a server block of a Corefile listens on.
type listenAt struct {
	// addr is host:port exactly as CoreDNS listens on it, with Go's "udp"
	// and "tcp" networks: ":53" (no bind: every address, IPv4 and IPv6),
	// "198.18.0.10:53", "[fd00::10]:53".
	addr string
	// networks are the sockets CoreDNS opens there, each with
	// SO_REUSEPORT: "udp" and "tcp" for dns://, "tcp" for tls://, https://
	// and grpc://, "udp" for quic:// and https3://.
	networks []string
	where    string // file:line: server block "KEY" (and its bind line)
}

// transportListens gives, for each transport a server block key may name,
// the networks its server listens on and its default port, as CoreDNS's
// dnsserver does (register.go; each server's Listen and ListenPacket).
var transportListens = map[string]struct {
	networks []string
	port     string
}{
	transport.DNS:    {[]string{"udp", "tcp"}, transport.Port},
	transport.TLS:    {[]string{"tcp"}, transport.TLSPort},
	transport.GRPC:   {[]string{"tcp"}, transport.GRPCPort},
	transport.HTTPS:  {[]string{"tcp"}, transport.HTTPSPort},
	transport.QUIC:   {[]string{"udp"}, transport.QUICPort},
	transport.HTTPS3: {[]string{"udp"}, transport.HTTPSPort},
}

// listenAddrs returns where cf's server blocks will listen, each address
// and network once, in the order of the file. It follows CoreDNS: a block
// listens on every address of every key's port (default: its transport's,
// 53 for dns://), the addresses being those its bind directives name (IP
// addresses, or the addresses of the interfaces named, less those after
// except) or, with no bind, the wildcard. What does not parse is left out:
// CoreDNS's own setup refuses it, with its message.
func listenAddrs(cf Corefile) []listenAt {
	blocks, err := caddyfile.Parse(cf.name(), bytes.NewReader(cf.Contents), nil)
	if err != nil {
		return nil
	}
	lines := keyLines(cf, len(blocks))
	ifaces, _ := net.Interfaces() // as the bind plugin: without them, names are not addresses
	var out []listenAt
	seen := map[string]bool{}
	for i, b := range blocks {
		hosts := []string{""}
		where := fmt.Sprintf("%s:%d: server block %q", cf.name(), lines[i], strings.Join(b.Keys, " "))
		if toks := b.Tokens["bind"]; len(toks) > 0 {
			var ok bool
			if hosts, ok = bindHosts(cf, toks, ifaces); !ok {
				continue
			}
			where += fmt.Sprintf(" (its bind, line %d)", toks[0].Line)
		}
		for _, k := range b.Keys {
			trans, k1 := parse.Transport(k)
			tl, ok := transportListens[trans]
			if !ok {
				continue // unix://: a path, no port
			}
			_, port, err := plugin.SplitHostPort(k1)
			if err != nil {
				continue
			}
			if port == "" {
				port = tl.port
				if trans == transport.DNS {
					port = dnsserver.Port // the -dns.port flag's, 53 unless set
				}
			}
			for _, h := range hosts {
				// As dnsserver.groupConfigsByListenAddr names the address.
				a, err := net.ResolveTCPAddr("tcp", net.JoinHostPort(h, port))
				if err != nil {
					continue
				}
				var nets []string
				for _, n := range tl.networks {
					if !seen[n+" "+a.String()] {
						seen[n+" "+a.String()] = true
						nets = append(nets, n)
					}
				}
				if len(nets) > 0 {
					out = append(out, listenAt{addr: a.String(), networks: nets, where: where})
				}
			}
		}
	}
	return out
}

// keyLines returns the line of each server block's first key. Blocks are
// delimited by braces, except a file's single block, which may go without.
func keyLines(cf Corefile, n int) []int {
	lines := make([]int, n)
	d := caddyfile.NewDispenser(cf.name(), bytes.NewReader(cf.Contents))
	depth, i, first := 0, 0, 0
	for d.Next() {
		if i == 0 && first == 0 {
			first = d.Line()
		}
		switch v := d.Val(); {
		case v == "{":
			if depth == 0 && i < n {
				i++
			}
			depth++
		case v == "}":
			depth--
		case depth == 0 && i < n && lines[i] == 0:
			lines[i] = d.Line()
		}
	}
	if n == 1 {
		lines[0] = first
	}
	return lines
}

// bindHosts returns the addresses a block's bind directives give, as the
// bind plugin computes them; ok is false when they do not parse.
func bindHosts(cf Corefile, toks []caddyfile.Token, ifaces []net.Interface) (hosts []string, ok bool) {
	d := caddyfile.NewDispenserTokens(cf.name(), toks)
	for d.Next() {
		addrs := d.RemainingArgs()
		var except []string
		for d.NextBlock() {
			if d.Val() != "except" {
				return nil, false
			}
			except = d.RemainingArgs()
		}
		ips, ok1 := bindIPs(addrs, ifaces)
		ex, ok2 := bindIPs(except, ifaces)
		if len(addrs) == 0 || !ok1 || !ok2 {
			return nil, false
		}
		for _, ip := range ips {
			if !slices.Contains(ex, ip) {
				hosts = append(hosts, ip)
			}
		}
	}
	return hosts, true
}

// bindIPs is the bind plugin's listIP: each argument is an interface name
// (all its addresses, IPv6 link-local ones with the interface as zone) or
// an IP address.
func bindIPs(args []string, ifaces []net.Interface) ([]string, bool) {
	var out []string
	for _, a := range args {
		isIface := false
		for _, ifi := range ifaces {
			if a != ifi.Name {
				continue
			}
			isIface = true
			addrs, err := ifi.Addrs()
			if err != nil {
				return nil, false
			}
			for _, ad := range addrs {
				ipn, ok := ad.(*net.IPNet)
				if !ok {
					continue
				}
				ipa, err := net.ResolveIPAddr("ip", ipn.IP.String())
				if err != nil {
					continue
				}
				if ipn.IP.To4() == nil && (ipn.IP.IsLinkLocalMulticast() || ipn.IP.IsLinkLocalUnicast()) && ipa.Zone == "" {
					ipa.Zone = ifi.Name
				}
				out = append(out, ipa.String())
			}
		}
		if !isIface {
			if net.ParseIP(a) == nil {
				return nil, false
			}
			out = append(out, a)
		}
	}
	return out, true
}

// heldAddrs returns the UDP and TCP addresses inst listens on.
func heldAddrs(inst *caddy.Instance) (udp, tcp []netip.AddrPort) {
	if inst == nil {
		return nil, nil
	}
	for _, sl := range inst.Servers() {
		if a, ok := sl.LocalAddr().(*net.UDPAddr); ok {
			udp = append(udp, a.AddrPort())
		}
		if a, ok := sl.Addr().(*net.TCPAddr); ok {
			tcp = append(tcp, a.AddrPort())
		}
	}
	return udp, tcp
}

// overlaps reports whether a socket bound to a and one bound to b would
// take some of the same packets: the same port, and the same address or a
// wildcard on either side. CoreDNS listens with Go's "udp" and "tcp"
// networks, whose wildcard sockets (":53", "0.0.0.0:53", "[::]:53") are
// all dual-stack [::], so a wildcard overlaps every address of both
// families.
func overlaps(a, b netip.AddrPort) bool {
	if a.Port() != b.Port() {
		return false
	}
	x, y := a.Addr().Unmap().WithZone(""), b.Addr().Unmap().WithZone("")
	return !x.IsValid() || !y.IsValid() || x.IsUnspecified() || y.IsUnspecified() || x == y
}

// checkListeners fails when another socket listens where a server block
// of cf would (dns://, tls://, https://, grpc://, quic://, https3://). CoreDNS sets SO_REUSEPORT on its listeners,
// and the kernel lets a socket of the same user that sets it too (a
// second vipstack dns, an older CoreDNS) bind the same address and port:
// both would then listen, the kernel splitting the queries between them;
// and a wildcard listener beside another's specific address (or the
// reverse) leaves that address's queries to the other. So every address
// is first bound, over UDP and over TCP, without SO_REUSEPORT, which fails
// if any socket listens on an overlapping address and port (measured in
// network namespaces: see TestRootPortHeldByAnother). A specific address
// is not disturbed by another process's listener on another specific
// address (systemd-resolved's 127.0.0.53:53 leaves bind 198.18.0.10 on
// port 53 alone); a wildcard is, as CoreDNS would be.
//
// Addresses overlapping one in heldUDP / heldTCP (what this process's
// running Corefile listens on, which a reload keeps or replaces) are not
// probed: the probe would find this process itself. Port 0 needs no probe.
func checkListeners(op string, cf Corefile, heldUDP, heldTCP []netip.AddrPort) error {
	for _, l := range listenAddrs(cf) {
		ta, err := net.ResolveTCPAddr("tcp", l.addr)
		if err != nil || ta.Port == 0 {
			continue
		}
		ap := ta.AddrPort()
		for _, network := range l.networks {
			held := heldUDP
			if network == "tcp" {
				held = heldTCP
			}
			if slices.ContainsFunc(held, func(h netip.AddrPort) bool { return overlaps(h, ap) }) {
				continue
			}
			err := probeListen(network, l.addr)
			if err == nil || !errors.Is(err, syscall.EADDRINUSE) {
				// Anything else (an address not on this host, a port below
				// 1024 without the capability) is CoreDNS's to report.
				continue
			}
			shown := l.addr
			if !ta.AddrPort().Addr().IsValid() || ta.IP.IsUnspecified() {
				shown += " (every address, IPv4 and IPv6)"
			}
			return fmt.Errorf("dns: %s %s: %s: %s %s: another process already listens on this address and port (%w); "+
				"accepted: an address and port no other process listens on: vipstack does not share them, "+
				"as CoreDNS would with SO_REUSEPORT (the kernel would split the queries between the two servers); "+
				"stop the other DNS server first, or bind this block to another address or port",
				op, cf.name(), l.where, network, shown, err)
		}
	}
	return nil
}

// probeListen binds addr as CoreDNS would, but without SO_REUSEPORT (Go
// sets it nowhere; it does set SO_REUSEADDR on TCP listeners, as it does
// on CoreDNS's, so a connection left in TIME_WAIT does not count), and
// closes it again.
func probeListen(network, addr string) error {
	if network == "udp" {
		pc, err := net.ListenPacket(network, addr)
		if err != nil {
			return err
		}
		return pc.Close()
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return err
	}
	return ln.Close()
}
