//go:build linux

package lbfiles

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestRealFilesMatchHaproxy runs four haproxy.cfg files as their authors
// wrote them (addresses and paths changed to the test network) under
// haproxy 2.6 and `vipstack lb` side by side, and checks that connections
// land where haproxy sends them, also after a server's health check
// changes.
func TestRealFilesMatchHaproxy(t *testing.T) {
	testnet.RequireRoot(t)
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Run("kubeadm API balancer", func(t *testing.T) { kubeadmAPI(t, bin) })
	t.Run("OpenShift UPI servers named by DNS", func(t *testing.T) { openshiftUPI(t, bin) })
	t.Run("Patroni primary by tcp-check", func(t *testing.T) { patroni(t, bin) })
	t.Run("HTTP routing by Host", func(t *testing.T) { httpRouting(t, bin) })
	t.Run("tcp-request rules", func(t *testing.T) { tcpRequestRules(t, bin) }) // tcprequest_linux_test.go
}

// kubeadmAPI: the kubeadm HA guide's API balancer as a CentOS user kept it
// (the distribution's stock global and defaults: chroot, user, daemon,
// stats socket, HTTP defaults under a TCP frontend; `option httpchk`
// overridden by `option ssl-hello-chk`), in front of three TLS servers.
func kubeadmAPI(t *testing.T, bin string) {
	l := newLab(t, 3)
	cert := certificate(t)
	names := []string{"k8s-mas01", "k8s-mas02", "k8s-mas03"}
	var masters []*server
	for i, name := range names {
		s := newServer(name)
		masters = append(masters, s)
		l.serve(l.backs[i], net.JoinHostPort(l.backIP(i), "6443"), s, cert)
	}
	l.start(bin, "kubeadm-api.cfg", 8443, func(b *balancer) []string {
		return []string{"192.168.1.220", l.backIP(0), "192.168.1.221", l.backIP(1), "192.168.1.222", l.backIP(2),
			"/var/lib/haproxy/stats", filepath.Join(b.Dir, "stats"), "/var/run/haproxy.pid", filepath.Join(b.Dir, "haproxy.pid")}
	})
	l.sameStatuses("all up", "apiserver", map[string]string{names[0]: "UP", names[1]: "UP", names[2]: "UP"})
	l.sameNames("round robin over three", 8443, 12, true, map[string]int{names[0]: 4, names[1]: 4, names[2]: 4})

	masters[1].sick.Store(true) // its TLS hello check fails
	l.sameStatuses("k8s-mas02 failing", "apiserver", map[string]string{names[0]: "UP", names[1]: "DOWN", names[2]: "UP"})
	l.sameNames("round robin over the two up", 8443, 12, true, map[string]int{names[0]: 6, names[2]: 6})

	masters[1].sick.Store(false)
	l.sameStatuses("k8s-mas02 back", "apiserver", map[string]string{names[0]: "UP", names[1]: "UP", names[2]: "UP"})
}

// sameStatuses waits until haproxy's servers of px have the status words
// want with a check done, then until vipstack's stats socket says the
// same, check status included.
func (l *lab) sameStatuses(what, px string, want map[string]string) {
	l.t.Helper()
	sock := func(b *balancer) string { return filepath.Join(b.Dir, "stats") }
	var hst map[string]string
	err := testutil.PollEvery(l.t.Context(), 200*time.Millisecond, bound, func() error {
		st, err := statuses(sock(l.lbs[0]), px)
		if err != nil {
			return err
		}
		for sv, w := range want {
			// "UP 1/3" is a server going down; INI: no check done yet.
			word, check, _ := strings.Cut(st[sv], " ")
			if word != w || check == "" || check == "INI" || strings.Contains(check, " ") {
				return fmt.Errorf("haproxy: %v", st)
			}
		}
		hst = st
		return nil
	})
	if err != nil {
		l.t.Fatalf("%s: haproxy's servers never had the statuses %v: %v", what, want, err)
	}
	var vst map[string]string
	err = testutil.PollEvery(l.t.Context(), 200*time.Millisecond, bound, func() error {
		vst, err = statuses(sock(l.lbs[1]), px)
		if err != nil {
			return err
		}
		if !strMapsEqual(vst, hst) {
			return fmt.Errorf("differs")
		}
		return nil
	})
	l.t.Logf("%s: haproxy %v, vipstack %v", what, hst, vst)
	if err != nil {
		l.t.Fatalf("%s: vipstack's servers %v, haproxy's %v (%v)", what, vst, hst, err)
	}
}

func strMapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// openshiftUPI: OpenShift's user-provisioned layout (listen sections for
// the API with a TLS readiness check, the machine-config server, ingress
// by source hash), its servers named by DNS names the hosts file gives.
func openshiftUPI(t *testing.T, bin string) {
	l := newLab(t, 3)
	cert := certificate(t)
	var api []*server
	var hosts strings.Builder
	for i := range 3 {
		name := fmt.Sprintf("controlplane%d", i)
		fmt.Fprintf(&hosts, "%s %s.ocp4.azurelocal.lab\n", l.backIP(i), name)
		s := newServer(name + ":6443")
		api = append(api, s)
		l.serve(l.backs[i], net.JoinHostPort(l.backIP(i), "6443"), s, cert)
		for _, port := range []string{"22623", "443", "80"} {
			l.serve(l.backs[i], net.JoinHostPort(l.backIP(i), port), newServer(name+":"+port), nil)
		}
	}
	l.hosts(hosts.String())
	l.start(bin, "openshift-upi.cfg", 6443, func(b *balancer) []string {
		return []string{"172.16.16.103", b.IP(), "172.16.16.104", b.IP(), "/var/run/haproxy.pid", filepath.Join(b.Dir, "haproxy.pid")}
	})
	l.sameNames("API round robin", 6443, 6, true,
		map[string]int{"controlplane0:6443": 2, "controlplane1:6443": 2, "controlplane2:6443": 2})
	l.sameNames("machine-config server round robin", 22623, 6, false,
		map[string]int{"controlplane0:22623": 2, "controlplane1:22623": 2, "controlplane2:22623": 2})
	for _, port := range []int{443, 80} {
		got := l.sameNames(fmt.Sprintf("ingress :%d, balance source", port), port, 6, false, nil)
		if len(got) != 1 || got[""] != 0 {
			t.Errorf("ingress :%d, balance source: haproxy spread one client's connections as %v, want one server", port, got)
		}
	}

	api[1].status.Store(500) // /readyz fails: inter 10s fall 2
	l.untilNames("API with controlplane1 not ready", 6443, 4, true,
		map[string]int{"controlplane0:6443": 2, "controlplane2:6443": 2})
}

// patroni: a Patroni cluster behind one port for the primary and one for
// the replicas, chosen by tcp-check against Patroni's REST API, servers
// resolved at run time through a resolvers section (Docker's DNS, here a
// server on the client's address), sessions shut down when their server
// goes down.
func patroni(t *testing.T, bin string) {
	l := newLab(t, 3)
	names := map[string]netip.Addr{}
	var pg []*server
	for i := range 3 {
		name := fmt.Sprintf("pg%d", i+1)
		names[name] = l.backs[i].IPv4.Addr()
		s := newServer(name)
		pg = append(pg, s)
		l.serve(l.backs[i], net.JoinHostPort(l.backIP(i), "5432"), s, nil)
		l.serve(l.backs[i], net.JoinHostPort(l.backIP(i), "8008"), s, nil) // Patroni's REST API
	}
	pg[0].primary.Store(true)
	dnsAddr := net.JoinHostPort(l.client.IPv4.Addr().String(), "53")
	l.dnsServer(l.client, dnsAddr, names)
	l.start(bin, "patroni-tcp-check.cfg", 5432, func(*balancer) []string { return []string{"127.0.0.11:53", dnsAddr} })

	l.untilNames("read-write to the primary", 5432, 3, false, map[string]int{"pg1": 3})
	l.untilNames("read-only to the replicas", 5433, 4, false, map[string]int{"pg2": 2, "pg3": 2})
	l.sameNames("read-only round robin", 5433, 6, false, map[string]int{"pg2": 3, "pg3": 3})
	var open []*session
	for _, b := range l.lbs {
		s, err := l.open(net.JoinHostPort(b.IP(), "5432"), false)
		if err != nil || s.Name != "pg1" {
			t.Fatalf("a read-write session through %s: %v %v", b.Name, s, err)
		}
		t.Cleanup(func() { s.c.Close() })
		open = append(open, s)
	}

	pg[0].primary.Store(false) // a switchover: pg2 is the primary now
	pg[1].primary.Store(true)
	l.untilNames("read-write after the switchover", 5432, 3, false, map[string]int{"pg2": 3})
	for i, b := range l.lbs {
		if !open[i].closedBy(5 * time.Second) {
			t.Errorf("%s kept a session to pg1 open after pg1 was marked down (on-marked-down shutdown-sessions)", b.Name)
		}
	}
	l.untilNames("read-only after the switchover", 5433, 4, false, map[string]int{"pg1": 2, "pg3": 2})
}

// httpRouting: an HTTP frontend routing by Host (hdr_dom ACLs) to seven
// backends, one of them a server without a port, with no default
// backend.
func httpRouting(t *testing.T, bin string) {
	l := newLab(t, 3)
	for i, port := range []string{"8081", "4200", "80"} {
		name := fmt.Sprintf("origin%d", i+1)
		ln := l.listen(l.backs[i], net.JoinHostPort(l.backIP(i), port))
		go func() {
			_ = http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				fmt.Fprintf(w, "%s %s %s", name, r.Host, r.URL.Path)
			}))
		}()
	}
	l.start(bin, "http-acl-routing.cfg", 80, func(*balancer) []string {
		return []string{"127.0.0.1:8081", net.JoinHostPort(l.backIP(0), "8081"), "127.0.0.1:4200", net.JoinHostPort(l.backIP(1), "4200"),
			"192.168.122.10", l.backIP(2)}
	})
	want := map[string]string{ // "" when only haproxy's answer counts
		"www.example.com":     "200 origin1 www.example.com /p",
		"console.example.com": "200 origin2 console.example.com /p",
		"jj.example.com":      "200 origin3 jj.example.com /p",
		"youth.example.com":   "200 origin3 youth.example.com /p",
		"cquery.example.com":  "200 origin3 cquery.example.com /p",
		"nebula.example.com":  "200 origin3 nebula.example.com /p", // a server without a port: the client's
		"file.example.com":    "200 origin1 file.example.com /p",
		"WWW.Example.COM":     "200 origin1 WWW.Example.COM /p",
		"a.www.b:8080":        "",
		"console":             "",
		"wwwx.example.com":    "",
		"example.com":         "",
		"www-console.example": "",
	}
	for host, w := range want {
		var got []string
		for _, b := range l.lbs {
			got = append(got, l.get(net.JoinHostPort(b.IP(), "80"), host))
		}
		if w != "" && got[0] != w {
			t.Errorf("Host %q: haproxy answered %q, the test expects %q", host, got[0], w)
		}
		if got[1] != got[0] {
			t.Errorf("Host %q: vipstack answered %q, haproxy %q", host, got[1], got[0])
		}
	}
}

// get asks addr for /p with Host host from the client and returns the
// status code and body.
func (l *lab) get(addr, host string) string {
	var out string
	err := l.client.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /p HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", host); err != nil {
			return err
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		out = fmt.Sprintf("%d %s", resp.StatusCode, body)
		return err
	})
	if err != nil {
		return "error: " + err.Error()
	}
	return out
}
