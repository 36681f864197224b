package cluster

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The YAML decoder's type errors ("line 9: cannot unmarshal !!str `yes
// please` into bool") name neither the field nor what it accepts. Parse
// replaces them with what typeProblems finds by walking the document
// beside the File type: "file:9: vrrp.unicast: bad value "yes please";
// accepted: true or false".

// typeProblem is one value of the document that does not fit its field.
type typeProblem struct {
	line int // where the value is written (an alias: where it is used)
	at   int // where the value is (an alias: its anchor's line)
	msg  string
}

// maxWalk bounds the nodes typeProblems visits, aliases followed, so that
// a document of aliases of aliases costs no more than this.
const maxWalk = 1 << 20

// typeProblems parses data and reports every value that does not decode
// into its field of File, or that the decoder would change to fit (a
// float in an int field), in the order of the document.
func typeProblems(data []byte) []typeProblem {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil
	}
	w := walker{budget: maxWalk}
	w.walk(doc.Content[0], reflect.TypeFor[File](), "", "")
	return w.problems
}

type walker struct {
	budget   int
	problems []typeProblem
}

// walk checks n, the YAML of a value of type t. path names the value as
// Validate's errors do (nodes[1].ips[0]); pattern is path without the
// indexes (nodes[].ips[]), for accepted.
func (w *walker) walk(n *yaml.Node, t reflect.Type, path, pattern string) {
	if w.budget--; w.budget < 0 {
		return
	}
	line := n.Line
	for n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return // the field keeps its zero value, as with the decoder
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	bad := func() {
		msg := fmt.Sprintf("bad value %s; accepted: %s", shown(n), accepted(pattern, t))
		if path != "" { // "" is the whole document
			msg = path + ": " + msg
		}
		w.problems = append(w.problems, typeProblem{line: line, at: n.Line, msg: msg})
	}
	switch t.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			bad()
			return
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			f, ok := fieldByYAMLName(t, k.Value)
			if !ok {
				continue // the decoder reports unknown fields
			}
			name := k.Value
			if path != "" {
				name = path + "." + k.Value
			}
			pat := k.Value
			if pattern != "" {
				pat = pattern + "." + k.Value
			}
			w.walk(v, f.Type, name, pat)
		}
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad()
			return
		}
		for i, v := range n.Content {
			w.walk(v, t.Elem(), path+"["+strconv.Itoa(i)+"]", pattern+"[]")
		}
	default:
		if n.Kind != yaml.ScalarNode {
			bad()
			return
		}
		// The decoder truncates a float into an int field (9445.5 is
		// 9445); a file that says 9445.5 means something else.
		if (t.Kind() == reflect.Int || t.Kind() == reflect.Uint32) && n.ShortTag() == "!!float" {
			bad()
			return
		}
		if err := n.Decode(reflect.New(t).Interface()); err != nil {
			bad()
		}
	}
}

// fieldByYAMLName returns the field of struct t that YAML calls name.
func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for f := range t.Fields() {
		if n, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); n == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// shown is a value as an error shows it: a scalar quoted (its first 40
// bytes), a list or a mapping by its kind.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "(a list)"
	case yaml.MappingNode:
		return "(a mapping)"
	}
	if v := n.Value; len(v) > 40 {
		return strconv.Quote(v[:40]) + "..."
	}
	return strconv.Quote(n.Value)
}

// accepted says what the field at pattern accepts.
func accepted(pattern string, t reflect.Type) string {
	switch pattern {
	case "name":
		return "a DNS label, e.g. ocp4"
	case "baseDomain":
		return "a domain name, e.g. example.com"
	case "apiVIPs", "ingressVIPs":
		return "a list of IP addresses, e.g. [198.18.0.5]"
	case "apiVIPs[]", "ingressVIPs[]", "dnsVIP":
		return "an IP address, e.g. 198.18.0.5"
	case "machineNetworks":
		return "a list of CIDRs, e.g. [198.18.0.0/24]"
	case "machineNetworks[]":
		return "a CIDR, e.g. 198.18.0.0/24"
	case "upstreamDNS":
		return "a list of IP addresses or IP:port, e.g. [198.18.0.53]"
	case "upstreamDNS[]":
		return "an IP address or IP:port, e.g. 198.18.0.53"
	case "nodes":
		return "a list of nodes, e.g. [{name: master-0, role: master, ips: [198.18.0.11]}]"
	case "nodes[]":
		return "a node, e.g. {name: master-0, role: master, ips: [198.18.0.11]}"
	case "nodes[].name":
		return "a DNS label, e.g. master-0"
	case "nodes[].role":
		return "bootstrap, master or worker"
	case "nodes[].ips":
		return "a list of IP addresses, e.g. [198.18.0.11]"
	case "nodes[].ips[]":
		return "an IP address, e.g. 198.18.0.11"
	case "bgp.asn", "bgp.peers[].asn":
		return "an AS number, 1..4294967295"
	case "bgp.announce":
		return "a list of roles (api, ingress, dns) or VIP addresses, e.g. [api]"
	case "nodes[].routerID", "bgp.peers[].address", "bgp.peers[].source":
		return "an IP address, e.g. 198.18.0.11"
	case "bgp.peers[].holdTime", "bgp.peers[].keepalive", "bgp.peers[].connectRetry", "bgp.peers[].gracefulRestart", "bgp.peers[].bfd.interval":
		return "a duration, e.g. 90s or 300ms"
	case "bgp.peers[].families":
		return "a list of ipv4, ipv6"
	case "bgp.peers[].families[]":
		return "ipv4 or ipv6"
	case "bgp.announce[]":
		return "api, ingress, dns or a VIP address"
	case "bgp.peers":
		return "a list of peers, e.g. [{address: 198.18.1.1, asn: 64500}]"
	case "bgp.peers[].nodes":
		return "a list of node names, e.g. [master-0]"
	case "bgp.peers[].nodes[]":
		return "a node name, e.g. master-0"
	case "bgp.peers[].port":
		return "a port, 1..65535 (default 179)"
	case "bgp.peers[].multihop":
		return "an eBGP multihop TTL, 1..255 (0: directly connected)"
	case "bgp.peers[].password", "bgp.peers[].bfd.password":
		return "a password (TCP MD5 up to 80 bytes; BFD simple password up to 16)"
	case "bgp.peers[].bfd.multiplier":
		return "a detection multiplier, 1..255"
	case "bgp.peers[].bfd.keyID":
		return "a BFD key ID, 0..255"
	case "bgp.onCheckFailure":
		return "demote (the default) or withdraw"
	case "bgp.demote.prepend":
		return "a number of AS-path prepends, 1..10 (eBGP peers only)"
	case "bgp.demote.localPref":
		return "a LOCAL_PREF below 100, e.g. 50 (iBGP peers only)"
	case "bgp.demote.med":
		return "a MED, e.g. 100 (above the route's 0)"
	case "vrrp.version":
		return "2 or 3"
	case "vrrp.advertInterval":
		return "a duration, e.g. 1s or 100ms"
	case "vrrp.interface":
		return "an interface name, e.g. eth0"
	case "ports.api", "ports.lb", "ports.ingressHealth", "ports.machineConfig", "ports.lbMachineConfig", "ports.status":
		return "a port, 1..65535"
	case "vrrp.api.vrid", "vrrp.ingress.vrid", "vrrp.dns.vrid":
		return "a virtual router ID, 1..255"
	case "vrrp.api.priority", "vrrp.ingress.priority", "vrrp.dns.priority":
		return "a priority, 1..254"
	case "vrrp.api.password", "vrrp.ingress.password", "vrrp.dns.password":
		return "a VRRPv2 password, e.g. ocp4_api_vip (keepalived sends the first 8 characters)"
	}
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int:
		return "an integer"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Struct:
		var names []string
		for f := range t.Fields() {
			if n, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); n != "" && n != "-" {
				names = append(names, n)
			}
		}
		return "a mapping of " + strings.Join(names, ", ")
	}
	return t.String()
}

var yamlTypeLine = regexp.MustCompile(`^line (\d+): `)

// typeErrorLines turns the decoder's type errors about data and
// typeProblems' problems into "name:LINE: message" lines, in the order of
// the document: an unknown field as "unknown field", a value that does not
// fit its field with the field and what it accepts. A decoder message
// about a line with no problem is kept as it is.
func typeErrorLines(name string, data []byte, errs []string, problems []typeProblem) []string {
	type line struct {
		n    int
		text string
	}
	var out []line
	for _, e := range errs {
		if m := yamlField.FindStringSubmatch(e); m != nil {
			n, _ := strconv.Atoi(m[1])
			out = append(out, line{n, fmt.Sprintf("%s:%s: unknown field %q", name, m[1], m[2])})
			continue
		}
		n := 0
		if m := yamlTypeLine.FindStringSubmatch(e); m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		found := false
		for _, p := range problems {
			found = found || p.at == n
		}
		if !found {
			out = append(out, line{n, yamlMessage(name, data, e)})
		}
	}
	for _, p := range problems {
		out = append(out, line{p.line, fmt.Sprintf("%s:%d: %s", name, p.line, p.msg)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].n < out[j].n })
	msgs := make([]string, len(out))
	for i, l := range out {
		msgs[i] = l.text
	}
	return msgs
}
