package node

import (
	"errors"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/dns"
)

// fakeDNS records the Corefiles started and stopped; Start fails for a
// Corefile whose contents contain failOn (the real server fails there when
// a listener cannot bind; its Check cannot know that in advance).
type fakeDNS struct {
	failOn   []string
	checkErr error
	running  string
	calls    []string
}

func (f *fakeDNS) Check(cf dns.Corefile) error {
	f.calls = append(f.calls, "check")
	return f.checkErr
}

func (f *fakeDNS) Start(cf dns.Corefile) error {
	for _, s := range f.failOn {
		if strings.Contains(string(cf.Contents), s) {
			f.calls = append(f.calls, "start (fails)")
			return errors.New("listen udp :53: bind: address already in use")
		}
	}
	f.calls = append(f.calls, "start")
	f.running = string(cf.Contents)
	return nil
}

func (f *fakeDNS) Stop() error {
	f.calls = append(f.calls, "stop")
	f.running = ""
	return nil
}

func (f *fakeDNS) Addrs() []net.Addr { return nil }

// TestReloadDNSFallback checks the node agent's DNS reload: a Corefile that
// does not check leaves the running one alone; one that checks but does
// not start gives way to the running one again, and the error says which
// of the two serves.
func TestReloadDNSFallback(t *testing.T) {
	const oldVIP, newVIP = "198.18.0.5", "198.18.0.6"
	file := func(vip string) *cluster.Cluster {
		c, err := cluster.Parse("cluster.yaml", []byte(`name: c1
baseDomain: example.com
apiVIPs: [`+vip+`]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: m0, role: master, ips: [198.18.0.11]}
`))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, tc := range []struct {
		name      string
		fake      fakeDNS
		wantErr   string // "" = none
		wantCalls []string
		wantVIP   string // the API VIP in the Corefile served afterwards
	}{
		{name: "new one starts", wantCalls: []string{"check", "stop", "start"}, wantVIP: newVIP},
		{name: "new one does not check", fake: fakeDNS{checkErr: errors.New("Corefile:3 - Error during parsing")},
			wantErr: "cluster DNS: Corefile:3 - Error during parsing", wantCalls: []string{"check"}, wantVIP: oldVIP},
		{name: "new one does not start, the old one serves again", fake: fakeDNS{failOn: []string{newVIP}},
			wantErr:   "cluster DNS: the new configuration did not start, the previous one serves again: listen udp :53: bind: address already in use",
			wantCalls: []string{"check", "stop", "start (fails)", "start"}, wantVIP: oldVIP},
		{name: "neither starts", fake: fakeDNS{failOn: []string{newVIP, oldVIP}},
			wantErr:   "cluster DNS: the new configuration did not start (listen udp :53: bind: address already in use), nor did the previous one again: listen udp :53: bind: address already in use",
			wantCalls: []string{"check", "stop", "start (fails)", "start (fails)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := tc.fake
			a := &Agent{opts: Options{ClusterPath: "cluster.yaml"}, log: slog.New(slog.DiscardHandler), cluster: file(oldVIP)}
			a.dnsSrv = &fake
			a.dnsConf = a.corefile()
			fake.running = a.dnsConf
			old := a.dnsConf

			a.cluster = file(newVIP)
			err := a.reloadDNS()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.wantErr {
				t.Errorf("reloadDNS error:\n%s\nwant:\n%s", got, tc.wantErr)
			}
			if d := cmp.Diff(tc.wantCalls, fake.calls); d != "" {
				t.Errorf("calls on the DNS server (-want +got):\n%s", d)
			}
			switch tc.wantVIP {
			case "":
				if fake.running != "" {
					t.Errorf("a Corefile serves after both failed to start:\n%s", fake.running)
				}
				// Nothing serves, so the next reload must start a Corefile,
				// even the one that served before.
				a.cluster = file(oldVIP)
				fake.failOn, fake.calls = nil, nil
				if err := a.reloadDNS(); err != nil || fake.running != a.corefile() || a.dnsConf != fake.running {
					t.Errorf("the next reload, back to the first file: error %v, calls %v; serving:\n%s\nwant it started", err, fake.calls, fake.running)
				}
			case oldVIP:
				if fake.running != old || a.dnsConf != old {
					t.Errorf("serving:\n%s\nrecorded as serving:\n%s\nwant the previous Corefile:\n%s", fake.running, a.dnsConf, old)
				}
			default:
				if !strings.Contains(fake.running, "api "+tc.wantVIP) || a.dnsConf != fake.running {
					t.Errorf("serving:\n%s\nrecorded as serving:\n%s\nwant the new Corefile (api %s)", fake.running, a.dnsConf, tc.wantVIP)
				}
			}
		})
	}
}
