package discovery

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"
)

// TestMDNSBrowseOnly: an MDNS with Self zero publishes nothing (every
// packet it sends is a query, none carries a record of its own), answers
// no query, sends no goodbye, and reports the peers of its cluster alone,
// as OpenShift's CoreDNS mdns plugin sees them. With Cluster empty it takes
// every cluster's mdns-publisher instances.
func TestMDNSBrowseOnly(t *testing.T) {
	for _, tt := range []struct {
		name    string
		cluster string
		want    []string
	}{
		{name: "one cluster", cluster: "ostest",
			want: []string{"master-0 master 198.18.0.11", "worker-0 worker 198.18.0.21"}},
		{name: "every cluster", cluster: "",
			want: []string{"master-0 master 198.18.0.11", "other-0 master 198.18.0.31", "worker-0 worker 198.18.0.21"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := newSimLink(t)
			b := l.add(MDNS{Cluster: tt.cluster, OpenShift: true}, "198.18.0.2", 9)
			m0 := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "master-0", Role: Master, Addrs: addrs("198.18.0.11")}, OpenShift: true}, "198.18.0.11", 5)
			w0 := l.add(MDNS{Cluster: "ostest", Self: Node{Name: "worker-0", Role: Worker, Addrs: addrs("198.18.0.21")}, OpenShift: true}, "198.18.0.21", 6)
			o0 := l.add(MDNS{Cluster: "other", Self: Node{Name: "other-0", Role: Master, Addrs: addrs("198.18.0.31")}, OpenShift: true}, "198.18.0.31", 7)
			for _, h := range []*simHost{b, m0, w0, o0} {
				l.start(h)
			}
			l.run(10 * time.Second)
			if diff := cmp.Diff(tt.want, summary(b.e.nodes())); diff != "" {
				t.Errorf("browser's nodes (-want +got):\n%s", diff)
			}
			// What the others see: never the browser.
			if diff := cmp.Diff([]string{"master-0 master 198.18.0.11", "worker-0 worker 198.18.0.21"}, summary(m0.e.nodes())); diff != "" {
				t.Errorf("master-0's nodes (-want +got):\n%s", diff)
			}
			// A goodbye removes a node from the browser's report.
			l.stop(w0)
			l.run(time.Second)
			var left []string
			for _, n := range tt.want {
				if !strings.HasPrefix(n, "worker-0 ") {
					left = append(left, n)
				}
			}
			if diff := cmp.Diff(left, summary(b.e.nodes())); diff != "" {
				t.Errorf("after worker-0's goodbye (-want +got):\n%s", diff)
			}
			// A query the browser would answer if it published anything.
			askEngine(t, l, b, dns.Question{Name: "_workstation._tcp.local.", Qtype: dns.TypePTR, Qclass: dns.ClassINET},
				dns.Question{Name: "_vipstack._tcp.local.", Qtype: dns.TypePTR, Qclass: dns.ClassINET})
			l.stop(b)
			for _, p := range b.sent {
				if p.msg.Response || len(p.msg.Ns) > 0 {
					t.Errorf("the browser sent %v", p.msg)
				}
				for _, q := range p.msg.Question {
					if !strings.HasPrefix(q.Name, "_workstation._tcp.") && !strings.HasPrefix(q.Name, "_etcd-server-ssl._tcp.") &&
						!strings.Contains(q.Name, "master-0") && !strings.Contains(q.Name, "worker-0") && !strings.Contains(q.Name, "other-0") {
						t.Errorf("the browser asked %v", q)
					}
				}
			}
		})
	}
}

// TestMDNSBrowseOnlyConfig: the refusals of a browse-only MDNS.
func TestMDNSBrowseOnlyConfig(t *testing.T) {
	for _, tt := range []struct {
		name    string
		m       MDNS
		wantErr string
	}{
		{name: "OpenShift, every cluster", m: MDNS{OpenShift: true}},
		{name: "OpenShift, one cluster", m: MDNS{Cluster: "ostest", OpenShift: true}},
		{name: "vipstack's type needs a cluster", m: MDNS{}, wantErr: `Cluster "": length 0`},
		{name: "bad cluster", m: MDNS{Cluster: "os test", OpenShift: true}, wantErr: `Cluster "os test": character ' '`},
		{name: "a role alone is no browse-only", m: MDNS{Cluster: "c", Self: Node{Role: Master}}, wantErr: `Self.Name ""`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.m.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}
