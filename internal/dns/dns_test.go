package dns

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/vipstack/vipstack/internal/discovery"
	"github.com/vipstack/vipstack/internal/dns/clusterdns"
)

func TestDirectives(t *testing.T) {
	// Stock CoreDNS's plugin.cfg order without route53, azure, clouddns,
	// dnssec and trace (Refused), clusterdns before cache, mdns after it.
	want := []string{
		"root", "metadata", "geoip", "cancel", "proxyproto", "quic", "grpc_server", "https", "https3",
		"timeouts", "multisocket", "reload", "nsid", "bufsize", "bind", "debug", "ready", "health",
		"pprof", "shed", "prometheus", "errors", "log", "dnstap", "local", "dns64", "siit", "any",
		"chaos", "loadbalance", "tsig", "rewrite", "autopath", "acl",
		"clusterdns", "cache", "mdns",
		"header", "tls", "minimal", "template", "transfer", "dynupdate", "hosts", "k8s_external",
		"kubernetes", "file", "auto", "secondary", "etcd", "loop", "forward", "grpc", "erratic",
		"whoami", "on", "sign", "view", "nomad",
	}
	if diff := cmp.Diff(want, Directives()); diff != "" {
		t.Errorf("Directives() (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Directives(), dnsserver.Directives); diff != "" {
		t.Errorf("CoreDNS runs another order than Directives() (-want +got):\n%s", diff)
	}

	// clusterdns's place, relative to the plugins it interacts with.
	pos := func(d string) int { return slices.Index(Directives(), d) }
	for _, rel := range []struct{ before, after, why string }{
		{"clusterdns", "cache", "live answers must not sit in the local cache"},
		{"clusterdns", "template", "clusterdns answers before the seeds' template lines"},
		{"clusterdns", "hosts", "clusterdns answers before the seeds' hosts lines"},
		{"clusterdns", "forward", "the cluster zone must not go upstream"},
		{"log", "clusterdns", "queries answered by clusterdns are logged"},
		{"errors", "clusterdns", "errors sees clusterdns's errors"},
		// OpenShift's build (openshift/coredns plugin.cfg): cache, mdns,
		// ..., template, hosts, ..., forward.
		{"cache", "mdns", "as in OpenShift's build: cache 30 holds mdns's answers"},
		{"mdns", "template", "as in OpenShift's build: names mdns passes on meet the templates"},
		{"mdns", "forward", "as in OpenShift's build: node names never go upstream"},
		{"acl", "clusterdns", "acl guards clusterdns's names as any other plugin's"},
		{"rewrite", "clusterdns", "clusterdns sees rewritten names, as stock plugins behind cache do"},
		{"loadbalance", "clusterdns", "loadbalance shuffles clusterdns's answers"},
		{"clusterdns", "file", "clusterdns answers before file zones for the same names"},
		{"clusterdns", "kubernetes", "clusterdns answers before the kubernetes plugin"},
		{"mdns", "file", "node names from mDNS before file zones"},
		{"template", "hosts", "CoreDNS's own order"},
		{"hosts", "forward", "CoreDNS's own order"},
	} {
		if b, a := pos(rel.before), pos(rel.after); b < 0 || a < 0 || b >= a {
			t.Errorf("%s (at %d) must come before %s (at %d): %s", rel.before, b, rel.after, a, rel.why)
		}
	}

	// Apart from clusterdns and mdns, the order is CoreDNS's own.
	var ours []string
	for _, d := range Directives() {
		if d != clusterdns.Name && d != "mdns" {
			ours = append(ours, d)
		}
	}
	var theirs []string
	for _, d := range upstreamOrder {
		if slices.Contains(ours, d) {
			theirs = append(theirs, d)
		}
	}
	if diff := cmp.Diff(theirs, ours); diff != "" {
		t.Errorf("standard plugins not in CoreDNS's order (-coredns +ours):\n%s", diff)
	}

	// Every stock plugin is built in or refused with a reason, never both.
	refused := Refused()
	for _, d := range upstreamOrder {
		_, out := refused[d]
		if in := slices.Contains(Directives(), d); in == out {
			t.Errorf("stock plugin %q: in Directives %v, in Refused %v; want exactly one", d, in, out)
		}
	}
	for d := range refused {
		if !slices.Contains(upstreamOrder, d) {
			t.Errorf("Refused names %q, which is no stock CoreDNS plugin", d)
		}
	}

	// Every directive has a plugin behind it.
	for _, d := range Directives() {
		if _, err := caddy.DirectiveAction("dns", d); err != nil {
			t.Errorf("directive %q: %v", d, err)
		}
	}
}

func TestNewServerOncePerProcess(t *testing.T) {
	_, err := NewServer(Options{})
	if err == nil || !strings.Contains(err.Error(), "one Server") {
		t.Errorf("second NewServer: got %v, want an error saying a process has one Server", err)
	}
}

// seed returns the seed 000 Corefile (testdata) with its upstream replaced
// and, for a test outside a namespace, listening on a free loopback port.
func seed(t *testing.T, upstream string, extra string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/seed000.Corefile")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, r := range [][2]string{
		{"forward . 10.68.5.26 {", "forward . " + upstream + " {"},
		{". {\n", ".:0 {\n    bind 127.0.0.1\n"},
		{"health :18080", "health 127.0.0.1:0"},
		{"    cache 30\n", extra + "    cache 30\n"},
	} {
		if !strings.Contains(s, r[0]) {
			t.Fatalf("seed Corefile has no %q", r[0])
		}
		s = strings.Replace(s, r[0], r[1], 1)
	}
	return s
}

type qa struct {
	name   string
	qtype  uint16
	rcode  string   // "" means NOERROR
	answer []string // zone-file lines without TTL
	ns     []string // nil: not checked
}

func check(t *testing.T, addr string, cases []qa) {
	t.Helper()
	for _, c := range cases {
		rcode, answer, ns := query(t, addr, c.name, c.qtype)
		want := c.rcode
		if want == "" {
			want = "NOERROR"
		}
		if rcode != want {
			t.Errorf("%s %s: rcode %s, want %s", dns.TypeToString[c.qtype], c.name, rcode, want)
		}
		if diff := cmp.Diff(c.answer, answer); diff != "" {
			t.Errorf("%s %s: answer (-want +got):\n%s", dns.TypeToString[c.qtype], c.name, diff)
		}
		if c.ns != nil {
			if diff := cmp.Diff(c.ns, ns); diff != "" {
				t.Errorf("%s %s: authority (-want +got):\n%s", dns.TypeToString[c.qtype], c.name, diff)
			}
		}
	}
}

// TestSeedCorefile runs the seed's Corefile as it is (apart from the
// upstream and the listening addresses): template, hosts, forward.
func TestSeedCorefile(t *testing.T) {
	addr := start(t, seed(t, stub(t), ""))
	check(t, addr, []qa{
		{name: "api.managed.example.com", qtype: dns.TypeA, answer: []string{"api.managed.example.com. A 10.0.0.5"}},
		{name: "api.managed.example.com", qtype: dns.TypeAAAA},
		{name: "api-int.managed.example.com", qtype: dns.TypeA, answer: []string{"api-int.managed.example.com. A 10.0.0.5"}},
		{name: "console.apps.managed.example.com", qtype: dns.TypeA, answer: []string{"console.apps.managed.example.com. A 10.0.0.7"}},
		{name: "managed-mbggk-master-0.managed.example.com", qtype: dns.TypeA, answer: []string{"managed-mbggk-master-0.managed.example.com. A 10.0.3.211"}},
		{name: "managed-mbggk-worker-0-fgmk7", qtype: dns.TypeA, answer: []string{"managed-mbggk-worker-0-fgmk7. A 10.0.3.23"}},
		{name: "www.example.org", qtype: dns.TypeA, answer: []string{"www.example.org. A 198.18.0.99"}},
	})
}

const clusterBlock = `    clusterdns managed.example.com {
        api 198.18.0.5 fd00:bb::5
        ingress 198.18.0.7
        node master-0 master 198.18.0.11 fd00:bb::11
        node master-1 master 198.18.0.12 fd00:bb::12
        node master-2 master 198.18.0.13
        node worker-0 worker 198.18.0.21
        fallthrough
    }
`

// soa is the clusterdns SOA line for the live registry's current version
// (the serial is one more).
func soa() []string {
	return []string{fmt.Sprintf("managed.example.com. SOA ns.managed.example.com. hostmaster.managed.example.com. %d 7200 1800 86400 60", live.Version()+1)}
}

func srvLines(n int) []string {
	var out []string
	for i := range n {
		out = append(out, "_etcd-server-ssl._tcp.managed.example.com. SRV 0 10 2380 etcd-"+string(rune('0'+i))+".managed.example.com.")
	}
	return out
}

// TestClusterDNSInSeed adds a clusterdns block to the seed's Corefile: it
// answers the cluster zone (ahead of the template and hosts lines, which
// still answer what it passes on), and live registry changes show in the
// next answer despite "cache 30".
func TestClusterDNSInSeed(t *testing.T) {
	t.Cleanup(func() { live.Set("mdns", nil) })
	addr := start(t, seed(t, stub(t), clusterBlock))
	check(t, addr, []qa{
		{name: "api.managed.example.com", qtype: dns.TypeA, answer: []string{"api.managed.example.com. A 198.18.0.5"}},
		{name: "api.managed.example.com", qtype: dns.TypeAAAA, answer: []string{"api.managed.example.com. AAAA fd00:bb::5"}},
		{name: "api-int.managed.example.com", qtype: dns.TypeA, answer: []string{"api-int.managed.example.com. A 198.18.0.5"}},
		{name: "console.apps.managed.example.com", qtype: dns.TypeA, answer: []string{"console.apps.managed.example.com. A 198.18.0.7"}},
		{name: "console.apps.managed.example.com", qtype: dns.TypeAAAA, ns: soa()},
		{name: "master-0.managed.example.com", qtype: dns.TypeAAAA, answer: []string{"master-0.managed.example.com. AAAA fd00:bb::11"}},
		{name: "master-2.managed.example.com", qtype: dns.TypeAAAA, ns: soa()},
		{name: "worker-0", qtype: dns.TypeA, answer: []string{"worker-0. A 198.18.0.21"}},
		{name: "etcd-1.managed.example.com", qtype: dns.TypeA, answer: []string{"etcd-1.managed.example.com. A 198.18.0.12"}},
		{name: "_etcd-server-ssl._tcp.managed.example.com", qtype: dns.TypeSRV, answer: srvLines(3)},
		// Names clusterdns does not know fall through to hosts and forward.
		{name: "managed-mbggk-master-0.managed.example.com", qtype: dns.TypeA, answer: []string{"managed-mbggk-master-0.managed.example.com. A 10.0.3.211"}},
		{name: "other.managed.example.com", qtype: dns.TypeA, answer: []string{"other.managed.example.com. A 198.18.0.99"}},
		{name: "www.example.org", qtype: dns.TypeA, answer: []string{"www.example.org. A 198.18.0.99"}},
	})

	// A master joins, then leaves: the next query sees it each time.
	live.Set("mdns", []discovery.Node{{Name: "master-3", Role: discovery.Master, Addrs: addrs("198.18.0.14")}})
	check(t, addr, []qa{
		{name: "_etcd-server-ssl._tcp.managed.example.com", qtype: dns.TypeSRV, answer: srvLines(4)},
		{name: "etcd-3.managed.example.com", qtype: dns.TypeA, answer: []string{"etcd-3.managed.example.com. A 198.18.0.14"}},
	})
	live.Set("mdns", nil)
	check(t, addr, []qa{
		{name: "_etcd-server-ssl._tcp.managed.example.com", qtype: dns.TypeSRV, answer: srvLines(3)},
		// etcd-3 is gone from clusterdns and falls through to forward.
		{name: "etcd-3.managed.example.com", qtype: dns.TypeA, answer: []string{"etcd-3.managed.example.com. A 198.18.0.99"}},
	})
}

// TestBadCorefile checks the errors for Corefiles that cannot run: each
// names the file and line and says what is wrong and what is accepted.
func TestBadCorefile(t *testing.T) {
	tests := []struct {
		name     string
		corefile string
		want     []string // regexps the error must match
	}{
		{
			name:     "unknown plugin",
			corefile: ".:0 {\n    bind 127.0.0.1\n    unbound\n}\n",
			want:     []string{`Corefile:3: unknown plugin "unbound"`, `this build has: root, metadata, .*, acl, clusterdns, cache, mdns, .*, forward, .*, nomad$`},
		},
		{
			name:     "stock plugin left out",
			corefile: ".:0 {\n    bind 127.0.0.1\n    route53 example.org.:Z1D633PJN98FT9\n}\n",
			want:     []string{`Corefile:3: plugin "route53" is a stock CoreDNS plugin that vipstack does not build in: .*AWS SDK.*; this build has: root, .*whoami`},
		},
		{
			name:     "stock plugin left out for its dependencies",
			corefile: ".:0 {\n    bind 127.0.0.1\n    forward . 198.18.0.1\n    trace\n}\n",
			want:     []string{`Corefile:4: plugin "trace" is a stock CoreDNS plugin that vipstack does not build in: .*Datadog`},
		},
		{
			name:     "unclosed block",
			corefile: ".:0 {\n    bind 127.0.0.1\n    forward . 198.18.0.1 {\n}\n",
			want:     []string{`Corefile:1: '\{' is never closed`},
		},
		{
			name:     "stray closing brace",
			corefile: ".:0 {\n    bind 127.0.0.1\n}\n}\n",
			want:     []string{`Corefile:4: '\}' without a matching '\{'`},
		},
		{
			name:     "unterminated quote",
			corefile: ".:0 {\n    template IN A {\n        answer \"{{ .Name }} 60 IN A 198.18.0.1\n    }\n}\n",
			want:     []string{`Corefile:\d`},
		},
		{
			name:     "directive outside a block",
			corefile: "errors\n.:0 {\n}\n",
			want:     []string{`Corefile:2: unknown plugin ".:0" \(if it was meant to open a server block, the lines above it are outside any block\)`},
		},
		{
			name:     "bad server block zone",
			corefile: "example..com:0 {\n    bind 127.0.0.1\n}\n",
			want:     []string{`Corefile: .*not a valid domain name: example\.\.com`, `a server block starts with zones such as`},
		},
		{
			name:     "bad clusterdns zone",
			corefile: ".:0 {\n    bind 127.0.0.1\n    clusterdns managed..example.com\n}\n",
			want:     []string{`plugin/clusterdns: .*Corefile:3`, `label ""`, `host name label`},
		},
		{
			name:     "clusterdns zone outside the server block",
			corefile: "example.org:0 {\n    bind 127.0.0.1\n    clusterdns managed.example.com\n}\n",
			want:     []string{`Corefile:3`, `outside this server block's zones \["example.org."\]`},
		},
		{
			name:     "bad IP in clusterdns block",
			corefile: ".:0 {\n    bind 127.0.0.1\n    clusterdns managed.example.com {\n        api 198.18.0.5\n        node master-0 master 198.18.0.311\n    }\n}\n",
			want:     []string{`Corefile:5`, `node master-0: "198.18.0.311" is not an IP address`, `IPv4 or IPv6 literal`},
		},
		{
			name:     "bad argument to a standard plugin",
			corefile: ".:0 {\n    bind 127.0.0.1\n    forward .\n}\n",
			want:     []string{`plugin/forward: .*Corefile:3`, `Wrong argument count`},
		},
		{
			// CoreDNS would look it up as a host name through the system
			// resolver and fail with "failed to resolve", without a line.
			name:     "forward to an address that is none",
			corefile: ".:0 {\n    bind 127.0.0.1\n    forward . 198.18.0.1 198.18.0.300\n}\n",
			want:     []string{`Corefile:3: forward: "198.18.0.300" is not an IP address; want an IPv4 or IPv6 address`},
		},
		{
			name:     "forward to a bad IPv6 address",
			corefile: ".:0 {\n    bind 127.0.0.1\n    forward . [fd00::zz]:53\n}\n",
			want:     []string{`Corefile:3: forward: "\[fd00::zz\]:53" is not an IP address`},
		},
		{
			name:     "forward port out of range",
			corefile: ".:0 {\n    bind 127.0.0.1\n    forward . 198.18.0.1:99999\n}\n",
			want:     []string{`Corefile:3: forward: "198.18.0.1:99999": port "99999"; want a number from 1 to 65535`},
		},
		{
			// CoreDNS drops the line as /etc/hosts would, and the name
			// goes upstream.
			name:     "hosts entry with a bad address",
			corefile: ".:0 {\n    bind 127.0.0.1\n    hosts {\n        198.18.0.11 master-0\n        198.18.3.2111 master-1\n        fallthrough\n    }\n}\n",
			want:     []string{`Corefile:5: hosts: "198.18.3.2111" is not an IP address, so CoreDNS would drop the line`},
		},
		{
			name:     "hosts entry without a name",
			corefile: ".:0 {\n    bind 127.0.0.1\n    hosts {\n        198.18.0.11\n    }\n}\n",
			want:     []string{`Corefile:4: hosts: address 198.18.0.11 without a name`},
		},
		{
			// CoreDNS sets it up and answers SERVFAIL for every name the
			// template matches (measured with dig: console.apps.example.com
			// A got SERVFAIL, nothing logged without the errors plugin).
			name:     "template answer that is no record",
			corefile: ".:0 {\n    bind 127.0.0.1\n    template IN A example.com {\n        match .*.apps.example.com\n        answer \"{{ .Name }} 60 in {{ .Type }} 198.18.0.300\"\n    }\n}\n",
			want:     []string{`Corefile:5: template: answer "\{\{ \.Name \}\} 60 in \{\{ \.Type \}\} 198\.18\.0\.300" renders as "example\.com\. 60 in A 198\.18\.0\.300", which is not a resource record`, `SERVFAIL`},
		},
		{
			name:     "template additional record with a bad name",
			corefile: ".:0 {\n    bind 127.0.0.1\n    template IN SRV example.com {\n        answer \"{{ .Name }} 60 IN SRV 0 10 2380 etcd-0.example.com.\"\n        additional \"etcd-0..example.com. 60 IN A 198.18.0.11\"\n    }\n}\n",
			want:     []string{`Corefile:5: template: additional "etcd-0\.\.example\.com\. 60 IN A 198\.18\.0\.11"`},
		},
		{
			// CoreDNS says "invalid port" when it starts, without a line.
			name:     "server block port out of range",
			corefile: "example.org:0 {\n    bind 127.0.0.1\n}\n.:99999 {\n    bind 127.0.0.1\n}\n",
			want:     []string{`Corefile:4: server block ".:99999": port "99999"; want a number from 0 to 65535`},
		},
		{
			name:     "empty",
			corefile: "# nothing\n",
			want:     []string{`no server blocks`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := t.TempDir() + "/Corefile"
			if err := os.WriteFile(path, []byte(tt.corefile), 0o644); err != nil {
				t.Fatal(err)
			}
			cf, err := ReadCorefile(path)
			if err != nil {
				t.Fatal(err)
			}
			for op, f := range map[string]func(Corefile) error{"Check": srv.Check, "Start": srv.Start} {
				err := f(cf)
				if err == nil {
					srv.Stop()
					t.Fatalf("%s accepted:\n%s", op, tt.corefile)
				}
				for _, w := range tt.want {
					if !regexp.MustCompile(w).MatchString(err.Error()) {
						t.Errorf("%s: error %q does not match %q", op, err, w)
					}
				}
			}
			if a := srv.Addrs(); len(a) != 0 {
				t.Errorf("listening on %v after a failed Start", a)
			}
		})
	}
}

// TestStartTwice checks that one Server runs one Corefile at a time and can
// start again after Stop.
func TestStartTwice(t *testing.T) {
	corefile := ".:0 {\n    bind 127.0.0.1\n    clusterdns example.test {\n        api 198.18.0.5\n    }\n}\n"
	addr := start(t, corefile)
	cf := Corefile{Contents: []byte(corefile)}
	if err := srv.Start(cf); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("second Start: got %v, want an already running error", err)
	}
	check(t, addr, []qa{{name: "api.example.test", qtype: dns.TypeA, answer: []string{"api.example.test. A 198.18.0.5"}}})
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(cf); err != nil {
		t.Fatalf("Start after Stop: %v", err)
	}
	if a := srv.Addrs(); len(a) == 0 {
		t.Errorf("no listeners after restart")
	}
}

// TestNotServedLeavesAnswers checks Corefiles with other node lines while
// one runs whose clusterdns block reads the live registry: a valid one, and
// one that fails in a plugin set up after clusterdns (a reload of that file
// fails the same way, through the same setup functions, and keeps the
// running Corefile). Neither may change what the running Corefile answers.
func TestNotServedLeavesAnswers(t *testing.T) {
	t.Cleanup(func() { live.Set("mdns", nil) })
	corefile := func(worker, forward string) string {
		return ".:0 {\n    bind 127.0.0.1\n    clusterdns managed.example.com {\n        node master-0 master 198.18.0.11\n        node worker-0 worker " + worker +
			"\n    }\n" + forward + "}\n"
	}
	addr := start(t, corefile("198.18.0.21", ""))
	live.Set("mdns", []discovery.Node{{Name: "master-1", Role: discovery.Master, Addrs: addrs("198.18.0.12")}})
	want := []qa{
		{name: "worker-0.managed.example.com", qtype: dns.TypeA, answer: []string{"worker-0.managed.example.com. A 198.18.0.21"}},
		{name: "etcd-0.managed.example.com", qtype: dns.TypeA, answer: []string{"etcd-0.managed.example.com. A 198.18.0.11"}},
		{name: "etcd-1.managed.example.com", qtype: dns.TypeA, answer: []string{"etcd-1.managed.example.com. A 198.18.0.12"}},
		{name: "master-2.managed.example.com", qtype: dns.TypeA, rcode: "NXDOMAIN"},
	}
	check(t, addr, want)
	steps := []struct {
		name    string
		forward string
		wantErr string
	}{
		{name: "a valid Corefile"},
		{name: "a Corefile with a bad forward line", forward: "    forward . 198.18.0.1 {\n        policy nosuch\n    }\n", wantErr: "unknown policy"},
	}
	for _, s := range steps {
		other := strings.Replace(corefile("198.18.0.99", s.forward), "node master-0 master 198.18.0.11", "node master-2 master 198.18.0.13", 1)
		cf := Corefile{Contents: []byte(other)}
		err := srv.Check(cf)
		if s.wantErr == "" && err != nil || s.wantErr != "" && (err == nil || !strings.Contains(err.Error(), s.wantErr)) {
			t.Errorf("%s: error %v, want %q", s.name, err, s.wantErr)
		}
		check(t, addr, want)
	}
}

// TestReload edits a running Corefile that uses the reload plugin: CoreDNS
// restarts with the new file (read through the -conf path Start sets), the
// new clusterdns instance gets the same live registry, and Stop stops the
// instance the reload started. It waits for CoreDNS's own reload timer (2 s
// at least), so -short skips it.
func TestReload(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the reload plugin's timer")
	}
	t.Cleanup(func() { live.Set("mdns", nil) })
	corefile := func(api string) string {
		return ".:0 {\n    bind 127.0.0.1\n    reload 2s 1s\n    clusterdns managed.example.com {\n        api " + api + "\n    }\n}\n"
	}
	path, _ := startEditable(t, corefile("198.18.0.5"))
	addr := srv.Addrs()[0].String()
	check(t, addr, []qa{{name: "api.managed.example.com", qtype: dns.TypeA, answer: []string{"api.managed.example.com. A 198.18.0.5"}}})

	if err := os.WriteFile(path, []byte(corefile("198.18.0.6")), 0o644); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, answer, _ := query(t, addr, "api.managed.example.com", dns.TypeA)
		if slices.Equal(answer, []string{"api.managed.example.com. A 198.18.0.6"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("answer still %q 15s after the Corefile changed", answer)
		}
		time.Sleep(100 * time.Millisecond) // polling CoreDNS's reload timer, which we cannot drive
	}
	live.Set("mdns", []discovery.Node{{Name: "master-9", Role: discovery.Master, Addrs: addrs("198.18.0.19")}})
	check(t, addr, []qa{{name: "etcd-9.managed.example.com", qtype: dns.TypeA, answer: []string{"etcd-9.managed.example.com. A 198.18.0.19"}}})
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop after reload: %v", err)
	}
	if _, _, err := new(dns.Client).Exchange(new(dns.Msg).SetQuestion("api.managed.example.com.", dns.TypeA), addr); err == nil {
		t.Errorf("%s still answers after Stop", addr)
	}
}
