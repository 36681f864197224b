package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimits checks every size limit of the cluster file at the limit
// (accepted) and one past it (rejected with the file, the field, the size
// and the limit).
func TestLimits(t *testing.T) {
	nodes := func(n int) string {
		var b strings.Builder
		b.WriteString("nodes:\n  - {name: m0, role: master, ips: [198.18.0.11]}\n")
		for i := 1; i < n; i++ {
			fmt.Fprintf(&b, "  - {name: w%d, role: worker, ips: ['198.18.%d.%d']}\n", i, 1+i/250, 1+i%250)
		}
		return b.String()
	}
	base := func(api, ingress, nodeList string) string {
		return "name: c1\nbaseDomain: example.com\napiVIPs: [" + api + "]\ningressVIPs: [" + ingress + "]\n" +
			"machineNetworks: [198.18.0.0/15]\n" + nodeList
	}
	vips := func(n, third int) string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf("198.19.%d.%d", third, i+1))
		}
		return strings.Join(s, ", ")
	}
	nodeIPs := func(n int) string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf("198.18.0.%d", 11+i))
		}
		return "nodes:\n  - {name: m0, role: master, ips: [" + strings.Join(s, ", ") + "]}\n"
	}
	nets := func(field string, n int) string {
		var s []string
		for i := range n {
			s = append(s, fmt.Sprintf("198.18.%d.0/24", i))
		}
		if field == "upstreamDNS" {
			for i := range s {
				s[i] = fmt.Sprintf("198.18.0.%d", i+100)
			}
		}
		return field + ": [" + strings.Join(s, ", ") + "]\n"
	}
	one := nodes(1)
	// baseDomain of 61+1+... characters: "c1." plus it must stay <= 253.
	domain := func(n int) string { // a baseDomain of n characters
		var labels []string
		for n > 0 {
			l := min(n, 63)
			if n-l == 1 { // never leave a single character for a lone dot
				l--
			}
			labels = append(labels, strings.Repeat("a", l))
			n -= l + 1
		}
		return strings.Join(labels, ".")
	}
	for _, tc := range []struct {
		name string
		yaml string
		want string // "" = accepted
	}{
		{name: "nodes at the limit", yaml: base("198.19.0.1", "198.19.0.2", nodes(MaxNodes))},
		{name: "nodes past the limit", yaml: base("198.19.0.1", "198.19.0.2", nodes(MaxNodes+1)),
			want: "c.yaml: nodes: 1001 entries, more than the 1000 accepted"},
		{name: "apiVIPs at the limit", yaml: base(vips(MaxVIPs, 0), "198.19.1.1", one)},
		{name: "apiVIPs past the limit", yaml: base(vips(MaxVIPs+1, 0), "198.19.1.1", one),
			want: "c.yaml: apiVIPs: 33 entries, more than the 32 accepted"},
		{name: "ingressVIPs past the limit", yaml: base("198.19.0.1", vips(MaxVIPs+1, 1), one),
			want: "c.yaml: ingressVIPs: 33 entries, more than the 32 accepted"},
		{name: "node addresses at the limit", yaml: base("198.19.0.1", "198.19.0.2", nodeIPs(MaxNodeIPs))},
		{name: "node addresses past the limit", yaml: base("198.19.0.1", "198.19.0.2", nodeIPs(MaxNodeIPs+1)),
			want: "c.yaml: nodes[0].ips: 17 entries, more than the 16 accepted"},
		{name: "machineNetworks past the limit", yaml: strings.Replace(base("198.18.0.5", "198.18.0.7", one), "machineNetworks: [198.18.0.0/15]\n", nets("machineNetworks", MaxNetworks+1), 1),
			want: "c.yaml: machineNetworks: 65 entries, more than the 64 accepted"},
		{name: "upstreamDNS at the limit", yaml: base("198.19.0.1", "198.19.0.2", one) + nets("upstreamDNS", MaxNetworks)},
		{name: "upstreamDNS past the limit", yaml: base("198.19.0.1", "198.19.0.2", one) + nets("upstreamDNS", MaxNetworks+1),
			want: "c.yaml: upstreamDNS: 65 entries, more than the 64 accepted"},
		{name: "domain at the limit", yaml: strings.Replace(base("198.19.0.1", "198.19.0.2", one), "example.com", domain(maxDomain-3), 1)},
		{name: "domain past the limit", yaml: strings.Replace(base("198.19.0.1", "198.19.0.2", one), "example.com", domain(maxDomain-2), 1),
			want: "is 254 characters, more than the 253 a domain name may have"},
		{name: "interface at the limit", yaml: base("198.19.0.1", "198.19.0.2", one) + "vrrp: {interface: " + strings.Repeat("e", maxIfName) + "}\n"},
		{name: "interface past the limit", yaml: base("198.19.0.1", "198.19.0.2", one) + "vrrp: {interface: " + strings.Repeat("e", maxIfName+1) + "}\n",
			want: `c.yaml: vrrp.interface: "eeeeeeeeeeeeeeee" is not an interface name (1 to 15 characters`},
		{name: "interface with a blank", yaml: base("198.19.0.1", "198.19.0.2", one) + "vrrp: {interface: 'eth0 x'}\n",
			want: `c.yaml: vrrp.interface: "eth0 x" is not an interface name`},
		{name: "LB on the monitor port", yaml: base("198.19.0.1", "198.19.0.2", one) + "ports: {lb: 50936}\n",
			want: "c.yaml: ports.lb: 50936 is also the port of the load balancer's monitor; every service of a node needs its own port"},
		{name: "API on the LB port", yaml: base("198.19.0.1", "198.19.0.2", one) + "ports: {api: 9445}\n",
			want: "c.yaml: ports.lb: 9445 is also the port of ports.api"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && err == nil:
				t.Fatalf("accepted; want an error containing %q", tc.want)
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

// TestFileSizeLimit checks that a cluster file one byte over MaxFileSize is
// refused by Parse and Load, naming the file, its size and the limit, and
// that Load does not read a device past the limit.
func TestFileSizeLimit(t *testing.T) {
	// A valid file padded with a comment to exactly the limit is accepted.
	atLimit := []byte(good + "#")
	atLimit = append(atLimit, []byte(strings.Repeat("x", MaxFileSize-len(atLimit)-1)+"\n")...)
	if _, err := Parse("c.yaml", atLimit); err != nil {
		t.Fatalf("a file of exactly %d bytes is rejected: %v", MaxFileSize, err)
	}
	over := append(atLimit, '\n')
	want := fmt.Sprintf("c.yaml: %d bytes is larger than the %d accepted for a cluster file", MaxFileSize+1, MaxFileSize)
	if _, err := Parse("c.yaml", over); err == nil || err.Error() != want {
		t.Fatalf("Parse of %d bytes: %v; want %q", len(over), err, want)
	}
	p := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(p, over, 0o644); err != nil {
		t.Fatal(err)
	}
	want = fmt.Sprintf("%s: %d bytes is larger than the %d accepted for a cluster file", p, MaxFileSize+1, MaxFileSize)
	if _, err := Load(p); err == nil || err.Error() != want {
		t.Fatalf("Load: %v; want %q", err, want)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		want = fmt.Sprintf("/dev/zero: more than the %d bytes accepted for a cluster file", MaxFileSize)
		if _, err := Load("/dev/zero"); err == nil || err.Error() != want {
			t.Fatalf("Load(/dev/zero): %v; want %q", err, want)
		}
	}
}

// TestErrorLinesNameTheFile checks that every line of a rejection starts
// with the file name, including YAML syntax errors and several field
// errors at once.
func TestErrorLinesNameTheFile(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want string
	}{
		{name: "syntax error", yaml: "name: [\n", want: "c.yaml:1: did not find expected node content"},
		{name: "error on the first line", yaml: "%x\n", want: "c.yaml:1: found unknown directive name"},
		{name: "unknown alias", yaml: "name: c1\nbaseDomain: *dom\n", want: "c.yaml:2: unknown anchor 'dom' referenced"},
		{name: "empty", yaml: "", want: "c.yaml: empty file; want a cluster description (name, baseDomain, apiVIPs, ingressVIPs, machineNetworks, nodes)"},
		{name: "wrong type", yaml: "nodes: 3\n", want: `c.yaml:1: nodes: bad value "3"; accepted: a list of nodes`},
		{name: "several field errors", yaml: strings.NewReplacer("name: c1", "name: C1", "role: worker", "role: infra").Replace(good),
			want: "c.yaml: name: \"C1\" is not a DNS label (lower-case letters, digits and '-', at most 63)\n" +
				"c.yaml: nodes[1].role: \"infra\" is not a role (accepted: bootstrap, master, worker)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("c.yaml", []byte(tc.yaml))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant it to start with:\n%s", err, tc.want)
			}
			for _, l := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(l, "c.yaml:") {
					t.Errorf("line %q does not name the file", l)
				}
			}
		})
	}
}
