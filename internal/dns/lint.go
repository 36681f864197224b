package dns

import (
	"bytes"
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"text/template"

	"github.com/coredns/caddy/caddyfile"
	"github.com/coredns/coredns/plugin/pkg/parse"
	"github.com/coredns/coredns/plugin/pkg/transport"
	"github.com/miekg/dns"
)

// lint refuses what the standard plugins accept without a word and then
// serve wrongly, or report without a line. Each check names the file, the
// line, the bad value and what would be accepted:
//
//   - a server block port outside 0-65535 (CoreDNS says "invalid port" only
//     when it starts, without a line);
//   - a forward target that looks like an IP address but is none, such as
//     198.18.0.300: CoreDNS takes it for a host name, looks it up through
//     the system resolver (which on a cluster node may be this very DNS) and
//     fails with "failed to resolve", without a line;
//   - a hosts inline entry whose address does not parse: CoreDNS drops the
//     line silently, as in /etc/hosts, and the name is forwarded upstream;
//   - a template answer, additional or authority line that does not render
//     as a resource record: CoreDNS sets it up and answers SERVFAIL for
//     every name the template matches (api, *.apps in the seeds). Only the
//     lines that use no more than .Name, .Zone, .Class and .Type are
//     checked; the others depend on the query (.Match, .Group, .Remote,
//     ...) and are left to CoreDNS.
func lint(cf Corefile, blocks []caddyfile.ServerBlock) error {
	if err := lintKeys(cf); err != nil {
		return err
	}
	for _, b := range blocks {
		for _, check := range []struct {
			directive string
			f         func(*caddyfile.Dispenser) error
		}{{"forward", lintForward}, {"hosts", lintHosts}, {"template", lintTemplate}} {
			toks := b.Tokens[check.directive]
			if len(toks) == 0 {
				continue
			}
			d := caddyfile.NewDispenserTokens(cf.name(), toks)
			for d.Next() {
				if err := check.f(&d); err != nil {
					return fmt.Errorf("dns: %w", err)
				}
			}
		}
	}
	return nil
}

// lintKeys checks the port of every server block key.
func lintKeys(cf Corefile) error {
	d := caddyfile.NewDispenser(cf.name(), bytes.NewReader(cf.Contents))
	depth := 0
	for d.Next() {
		switch d.Val() {
		case "{":
			depth++
			continue
		case "}":
			depth--
			continue
		}
		if depth > 0 {
			continue
		}
		// Outside any block: a server block key (Validate has already
		// refused directives there).
		for _, key := range strings.Split(d.Val(), ",") {
			_, host := parse.Transport(key)
			i := strings.LastIndex(host, ":")
			if i < 0 || strings.HasSuffix(host, "]") {
				continue
			}
			port := host[i+1:]
			if _, err := strconv.ParseUint(port, 10, 16); err != nil {
				return fmt.Errorf("dns: %s:%d: server block %q: port %q; want a number from 0 to 65535, e.g. .:53 or example.com:1053", d.File(), d.Line(), key, port)
			}
		}
	}
	return nil
}

// lintForward checks the targets of one forward directive.
func lintForward(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 2 {
		return nil // forward's own setup says what is missing
	}
	for _, to := range args[1:] {
		trans, host := parse.Transport(to)
		if trans == transport.UNIX {
			continue
		}
		if h, port, err := net.SplitHostPort(host); err == nil {
			if _, err := strconv.ParseUint(port, 10, 16); err != nil {
				return fmt.Errorf("%s:%d: forward: %q: port %q; want a number from 1 to 65535, e.g. 198.18.0.1:53", d.File(), d.Line(), to, port)
			}
			host = h
		}
		host = strings.Trim(host, "[]")
		if i := strings.IndexByte(host, '%'); i >= 0 {
			host = host[:i] // an IPv6 zone, or a TLS server name
		}
		if _, err := netip.ParseAddr(host); err == nil || !looksLikeIP(host) {
			continue
		}
		return fmt.Errorf("%s:%d: forward: %q is not an IP address; want an IPv4 or IPv6 address with an optional port (198.18.0.1, 198.18.0.1:53, [fd00::1]:53, tls://198.18.0.1), a resolv.conf path or a host name",
			d.File(), d.Line(), to)
	}
	return nil
}

// looksLikeIP reports whether s can only have been meant as an address:
// it has a colon (no host name has), or it is digits and dots (no top-level
// domain is numeric).
func looksLikeIP(s string) bool {
	if strings.Contains(s, ":") {
		return true
	}
	last := s[strings.LastIndexByte(s, '.')+1:]
	return last != "" && strings.Trim(last, "0123456789") == "" && strings.Trim(s, "0123456789.") == ""
}

// hostsProperty reports whether v is one of the hosts plugin's block
// properties; any other line in its block is an inline entry, ADDRESS NAME...
func hostsProperty(v string) bool {
	switch v {
	case "fallthrough", "fallthrough_unsupported", "no_reverse", "ttl", "reload":
		return true
	}
	return false
}

// lintHosts checks the inline entries of one hosts directive.
func lintHosts(d *caddyfile.Dispenser) error {
	d.RemainingArgs()
	for d.NextBlock() {
		v := d.Val()
		line := d.Line()
		if hostsProperty(v) {
			d.RemainingArgs()
			continue
		}
		names := d.RemainingArgs()
		addr, _, _ := strings.Cut(v, "%")
		if _, err := netip.ParseAddr(addr); err != nil {
			return fmt.Errorf("%s:%d: hosts: %q is not an IP address, so CoreDNS would drop the line; want ADDRESS NAME... (e.g. 198.18.0.11 master-0 master-0.example.com) or one of fallthrough, no_reverse, reload, ttl",
				d.File(), line, v)
		}
		if len(names) == 0 {
			return fmt.Errorf("%s:%d: hosts: address %s without a name; want ADDRESS NAME..., e.g. %s master-0 master-0.example.com", d.File(), line, v, v)
		}
	}
	return nil
}

// templateSample is the part of the template plugin's data that does not
// depend on the query beyond its name and type.
type templateSample struct {
	Zone, Name, Class, Type string
}

// lintTemplate checks the records of one template directive.
func lintTemplate(d *caddyfile.Dispenser) error {
	args := d.RemainingArgs()
	if len(args) < 2 {
		return nil // template's own setup says what is missing
	}
	sample := templateSample{Zone: "example.com.", Class: strings.ToUpper(args[0]), Type: strings.ToUpper(args[1])}
	if len(args) > 2 && args[2] != "." {
		sample.Zone = dns.Fqdn(strings.ToLower(args[2]))
	}
	if sample.Type == "ANY" {
		sample.Type = "A"
	}
	sample.Name = sample.Zone
	for d.NextBlock() {
		section, line := d.Val(), d.Line()
		vals := d.RemainingArgs()
		switch section {
		case "answer", "additional", "authority":
		default:
			continue
		}
		for _, v := range vals {
			tmpl, err := template.New(section).Option("missingkey=error").Parse(v)
			if err != nil {
				continue // template's own setup reports syntax, with its functions
			}
			var b strings.Builder
			if err := tmpl.Execute(&b, sample); err != nil {
				continue // uses what only a query has (.Match, .Group, ...)
			}
			if rr, err := dns.NewRR(b.String()); err != nil || rr == nil {
				why := "it is empty"
				if err != nil {
					why = err.Error()
				}
				return fmt.Errorf("%s:%d: template: %s %q renders as %q, which is not a resource record (%s), so CoreDNS would answer SERVFAIL for every name the template matches; want e.g. \"{{ .Name }} 60 IN A 198.18.0.5\"",
					d.File(), line, section, v, b.String(), why)
			}
		}
	}
	return nil
}
