package haproxycfg

import (
	"errors"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestServerHostNames: with a resolver, a server's host name becomes the
// first address it returns; a name it cannot resolve is an error in
// haproxy's words; without one, host names stay refused.
func TestServerHostNames(t *testing.T) {
	lookup := func(host string) ([]netip.Addr, error) {
		switch host {
		case "db1.example":
			return []netip.Addr{netip.MustParseAddr("198.18.0.7"), netip.MustParseAddr("198.18.0.8")}, nil
		case "db6.example":
			return []netip.Addr{netip.MustParseAddr("fd00::7")}, nil
		}
		return nil, errors.New("no such host")
	}
	conf := func(addr string) []byte {
		return []byte(strings.Replace(base, "127.0.0.1:47012", addr, 1))
	}
	for _, tt := range []struct {
		addr, want, host string
	}{
		{"db1.example:5432", "198.18.0.7:5432", "db1.example"},
		{"db6.example:5432", "[fd00::7]:5432", "db6.example"},
		{"198.18.0.9:5432", "198.18.0.9:5432", ""},
	} {
		cfg, err := ParseWith("h.cfg", conf(tt.addr), Options{LookupHost: lookup})
		if err != nil {
			t.Errorf("%s: %v", tt.addr, err)
			continue
		}
		s := cfg.Backends[0].Servers[0]
		if diff := cmp.Diff([]string{tt.want, tt.host}, []string{s.Addr.String(), s.Host}); diff != "" {
			t.Errorf("%s: address, host (-want +got):\n%s", tt.addr, diff)
		}
	}
	_, err := ParseWith("h.cfg", conf("nowhere.example:5432"), Options{LookupHost: lookup})
	want := "h.cfg:10: backend masters, server m0: could not resolve address 'nowhere.example' (accepted: a host name the system resolves at start, an IP address, or init-addr ...,none with resolvers)"
	if err == nil || err.Error() != want {
		t.Errorf("unresolvable: %v, want %s", err, want)
	}
	// haproxy 2.6 -c with an /etc/hosts naming it (hack/corpushost):
	// "could not resolve address '<db-ip>'."; vipstack's lookup is not asked.
	asked := false
	_, err = ParseWith("h.cfg", conf("<db-ip>:5432"), Options{LookupHost: func(string) ([]netip.Addr, error) {
		asked = true
		return []netip.Addr{netip.MustParseAddr("198.18.0.7")}, nil
	}})
	want = "h.cfg:10: backend masters, server m0: could not resolve address '<db-ip>' (it is not a host name: haproxy resolves names of letters, digits, '-', '_' and '.' only; accepted: a host name the system resolves at start, an IP address, or init-addr ...,none with resolvers)"
	if err == nil || err.Error() != want || asked {
		t.Errorf("placeholder: %v (lookup asked: %v), want %s", err, asked, want)
	}
	if _, err := Parse("h.cfg", conf("db1.example:5432")); err == nil || !strings.Contains(err.Error(), "is not an IP address") {
		t.Errorf("without a resolver: %v, want the host name refused", err)
	}
}
