package haproxycfg

import (
	"net/netip"
	"strings"
	"testing"
	"time"
)

// TestResolversSection: a resolvers section (OpenShift UPI and Patroni
// files' settings) and servers that name it, with init-addr: libc's
// answer at load, none (no address yet: maintenance), an IP address.
func TestResolversSection(t *testing.T) {
	lookup := func(host string) ([]netip.Addr, error) {
		if host == "db1.example" {
			return []netip.Addr{netip.MustParseAddr("198.18.0.70")}, nil
		}
		return nil, errNoSuchHost
	}
	conf := "resolvers mydns\n  nameserver dns1 198.18.0.53:53\n  resolve_retries 3\n  timeout resolve 1s\n  timeout retry 1s\n" +
		"  hold other 30s\n  hold refused 30s\n  hold nx 30s\n  hold timeout 30s\n  hold valid 10s\n  hold obsolete 30s\n  accepted_payload_size 8192\n" +
		edit(t, "  server m0 127.0.0.1:47012 check\n",
			"  default-server inter 3s resolvers mydns init-addr last,libc,none resolve-prefer ipv4\n"+
				"  server m0 db1.example:5432 check\n  server m1 db2.example:5432 check\n  server m2 db3.example:5432 init-addr 198.18.0.9\n")
	cfg, err := ParseWith("h.cfg", []byte(conf), Options{LookupHost: lookup})
	if err != nil {
		t.Fatal(err)
	}
	r := cfg.Resolvers[0]
	if r.Name != "mydns" || len(r.Nameservers) != 1 || r.Valid != 10*time.Second || r.NX != 30*time.Second || r.PayloadSize != 8192 {
		t.Errorf("resolvers: %+v", r)
	}
	type got struct {
		Addr       string
		Unresolved bool
		Resolvers  string
	}
	var gots []got
	for _, s := range cfg.Backends[0].Servers {
		gots = append(gots, got{s.Addr.String(), s.Unresolved, s.Resolvers})
	}
	want := []got{{"198.18.0.70:5432", false, "mydns"}, {"0.0.0.0:5432", true, "mydns"}, {"198.18.0.9:5432", false, "mydns"}}
	for i := range want {
		if gots[i] != want[i] {
			t.Errorf("server %d: %+v, want %+v", i, gots[i], want[i])
		}
	}
	// haproxy warns of the server libc could not resolve, in these words,
	// and of no other.
	var warned []string
	for _, w := range cfg.Warnings {
		if strings.Contains(w, "could not resolve") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.HasSuffix(warned[0], ": 'server masters/m1' : could not resolve address 'db2.example', disabling server.") {
		t.Errorf("warnings %q, want haproxy's one for m1", warned)
	}
}

// TestInitAddrNoneAloneIsQuiet: with init-addr none alone, nothing was
// asked of libc, and haproxy says nothing.
func TestInitAddrNoneAloneIsQuiet(t *testing.T) {
	lookup := func(string) ([]netip.Addr, error) { return nil, errNoSuchHost }
	conf := "resolvers mydns\n  nameserver dns1 198.18.0.53:53\n" +
		edit(t, "  server m0 127.0.0.1:47012 check\n", "  server m0 db2.example:5432 check resolvers mydns init-addr none\n")
	cfg, err := ParseWith("h.cfg", []byte(conf), Options{LookupHost: lookup})
	if err != nil {
		t.Fatal(err)
	}
	if !cfg.Backends[0].Servers[0].Unresolved {
		t.Errorf("server: %+v, want unresolved", cfg.Backends[0].Servers[0])
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w, "could not resolve") {
			t.Errorf("warning %q, want none", w)
		}
	}
}

// errNoSuchHost is the test resolver's answer for other names.
var errNoSuchHost = &lookupError{}

type lookupError struct{}

func (*lookupError) Error() string { return "no such host" }
