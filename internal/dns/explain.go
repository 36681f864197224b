package dns

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/coredns/caddy/caddyfile"
)

// Plugin setup errors that stock CoreDNS reports without the line, the
// value or what it accepts. explain rewrites them to name all three; it
// runs only on an error CoreDNS returned, so it never refuses more than
// CoreDNS does.

// properties is, for plugins whose setup says no more than "Wrong argument
// count or unexpected line ending after 'X'" or "unknown property 'X'"
// for a property it does not know, the properties their block takes
// (CoreDNS 1.15's setup.go; TestPropertiesMatchCoreDNS checks them
// against the source).
var properties = map[string][]string{
	"cache": {"success", "denial", "prefetch", "serve_stale", "serve_stale_policy", "servfail", "disable", "keepttl"},
	"kubernetes": {"endpoint_pod_names", "pods", "namespaces", "endpoint", "tls", "labels", "namespace_labels",
		"fallthrough", "ttl", "noendpoints", "zonal", "ignore", "kubeconfig", "multicluster", "startup_timeout",
		"apiserver_qps", "apiserver_burst", "apiserver_max_inflight"},
}

// removed says, for properties older CoreDNS releases took and 1.15 does
// not, what became of them.
var removed = map[string]string{
	"kubernetes upstream":     "upstream is not in CoreDNS 1.8 or later: the kubernetes plugin resolves external names (CNAME targets) through this server itself; delete the line",
	"kubernetes resyncperiod": "resyncperiod is not in CoreDNS 1.8 or later: the plugin watches the API server; delete the line",
}

var (
	argErr      = regexp.MustCompile(`^plugin/([\w-]+): (.+):(\d+) - Error during parsing: Wrong argument count or unexpected line ending after '([^']*)'$`)
	unknownProp = regexp.MustCompile(`^plugin/([\w-]+): (.+):(\d+) - Error during parsing: unknown property '([^']*)'$`)
	errOnce     = regexp.MustCompile(`^plugin/([\w-]+): this plugin can only be used once per Server Block$`)
	noResolve   = regexp.MustCompile(`^plugin/forward: failed to resolve "([^"]+)": (.*)$`)
)

// explain returns err reworded where CoreDNS's own message lacks the line
// or what is accepted, or err itself.
func explain(cf Corefile, err error) error {
	msg := err.Error()
	if m := errOnce.FindStringSubmatch(msg); m != nil {
		if e := explainTwice(cf, m[1], msg); e != nil {
			return e
		}
		return err
	}
	if m := noResolve.FindStringSubmatch(msg); m != nil {
		if n := targetLine(cf, m[1]); n > 0 {
			return fmt.Errorf("%s:%d: forward: target %q does not resolve on this host (%s); CoreDNS looks up a target given by name when it starts and refuses the Corefile when the lookup fails (stock CoreDNS: %s)",
				cf.name(), n, m[1], m[2], msg)
		}
		return err
	}
	m := argErr.FindStringSubmatch(msg)
	if m == nil {
		m = unknownProp.FindStringSubmatch(msg)
	}
	if m == nil {
		return err
	}
	plugin, file, line, prop := m[1], m[2], m[3], m[4]
	accepted, ok := properties[plugin]
	if !ok || slices.Contains(accepted, prop) {
		return err // a known property with wrong arguments: CoreDNS's message stands
	}
	n, _ := strconv.Atoi(line)
	if !firstOnLine(cf, n, prop) {
		return err
	}
	why := "accepted in a " + plugin + " block: " + strings.Join(accepted, ", ")
	if r, ok := removed[plugin+" "+prop]; ok {
		why = r + "; " + why
	}
	return fmt.Errorf("%s:%s: %s: unknown property %q (%s); stock CoreDNS refuses it too (%s)", file, line, plugin, prop, why, msg)
}

// targetLine is the line of the first forward directive naming host as a
// target (tls://host, host:853, host%name, ...), or 0.
func targetLine(cf Corefile, host string) int {
	blocks, err := caddyfile.Parse(cf.name(), bytes.NewReader(cf.Contents), nil)
	if err != nil {
		return 0
	}
	for _, b := range blocks {
		for _, t := range b.Tokens["forward"] {
			to := t.Text
			if _, rest, ok := strings.Cut(to, "://"); ok {
				to = rest
			}
			to, _, _ = strings.Cut(to, "%")
			if to == host || strings.HasPrefix(to, host+":") {
				return t.Line
			}
		}
	}
	return 0
}

// firstOnLine reports whether the first token of line n of cf is tok: the
// name of a property, not an argument.
func firstOnLine(cf Corefile, n int, tok string) bool {
	d := caddyfile.NewDispenser(cf.name(), bytes.NewReader(cf.Contents))
	prev := 0
	for d.Next() {
		if d.Line() == n && prev != n {
			return d.Val() == tok
		}
		prev = d.Line()
	}
	return false
}

// explainTwice finds the server block in which plugin is used twice and
// names both lines.
func explainTwice(cf Corefile, plugin, msg string) error {
	blocks, err := caddyfile.Parse(cf.name(), bytes.NewReader(cf.Contents), nil)
	if err != nil {
		return nil
	}
	directive := plugin
	if plugin == "metrics" {
		directive = "prometheus" // the metrics plugin's directive
	}
	for _, b := range blocks {
		lines := directiveLines(b.Tokens[directive])
		if len(lines) < 2 {
			continue
		}
		return fmt.Errorf("%s:%d: %s is used a second time in the server block %s (first at line %d); CoreDNS takes it once per server block: keep one %s line, with the properties of both (stock CoreDNS: %s)",
			cf.name(), lines[1], directive, strings.Join(b.Keys, " "), lines[0], directive, msg)
	}
	return nil
}

// directiveLines returns the line of each use of a directive in its
// server block's tokens: a token opening a line outside any nested block.
func directiveLines(toks []caddyfile.Token) []int {
	var lines []int
	depth, prev := 0, 0
	for i, t := range toks {
		switch t.Text {
		case "{":
			depth++
		case "}":
			depth--
		default:
			if depth == 0 && (i == 0 || t.Line != prev) {
				lines = append(lines, t.Line)
			}
		}
		prev = t.Line
	}
	return lines
}
