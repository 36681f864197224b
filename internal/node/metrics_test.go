package node

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/vipstack/vipstack/internal/metrics/metricstest"
	"github.com/vipstack/vipstack/internal/redirect"
)

const metricsCluster = `name: c1
baseDomain: example.com
apiVIPs: [198.18.0.5]
ingressVIPs: [198.18.0.7]
machineNetworks: [198.18.0.0/24]
nodes:
  - {name: master-0, role: master, ips: [198.18.0.11]}
`

// fakeToggler is a redirect that always installs.
type fakeToggler struct{}

func (fakeToggler) Enable() error        { return nil }
func (fakeToggler) Disable() error       { return nil }
func (fakeToggler) Renew() error         { return nil }
func (fakeToggler) Lease() time.Duration { return time.Hour }

// listeningDNS is a cluster DNS listening on one socket.
type listeningDNS struct{ dnsServer }

func (listeningDNS) Addrs() []net.Addr {
	return []net.Addr{&net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 53}}
}

// TestHealthMetrics steps the node agent's health series: the cluster
// file accepted, then a broken version refused (0, counted), then fixed
// (1); the DNS down then listening; a redirect not yet, then in effect.
func TestHealthMetrics(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.yaml")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(metricsCluster)
	reg := prometheus.NewRegistry()
	a, err := New(Options{ClusterPath: path, Node: "master-0", Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	close(a.ready) // as Run does once the services started (none here)

	type step struct {
		name string
		do   func(t *testing.T)
		want string
	}
	const names = "vipstack_node_config_last_reload_successful vipstack_node_config_reloads_total vipstack_node_dns_up vipstack_node_redirect_in_effect"
	header := func(d *prometheus.Desc, typ string) string {
		s := d.String()
		_, s, _ = strings.Cut(s, `help: "`)
		s, _, _ = strings.Cut(s, `"`)
		_, name, _ := strings.Cut(d.String(), `fqName: "`)
		name, _, _ = strings.Cut(name, `"`)
		return "# HELP " + name + " " + s + "\n# TYPE " + name + " " + typ + "\n"
	}
	reloads := func(applied, refused int) string {
		return "# HELP vipstack_node_config_reloads_total Reloads of the cluster file (SIGHUP or a change), by result: applied, or refused (the running configuration stays).\n# TYPE vipstack_node_config_reloads_total counter\n" +
			"vipstack_node_config_reloads_total{result=\"applied\"} " + itoa(applied) + "\nvipstack_node_config_reloads_total{result=\"refused\"} " + itoa(refused) + "\n"
	}
	var f *redirect.Follower
	for _, st := range []step{
		{name: "started", want: header(configOKDesc, "gauge") + "vipstack_node_config_last_reload_successful 1\n" + reloads(0, 0) +
			header(dnsUpDesc, "gauge") + "vipstack_node_dns_up 0\n"},
		{name: "broken file refused", do: func(t *testing.T) {
			write("name: [\n")
			if err := a.Reload(); err == nil {
				t.Fatal("a broken cluster file was accepted")
			}
		}, want: header(configOKDesc, "gauge") + "vipstack_node_config_last_reload_successful 0\n" + reloads(0, 1) +
			header(dnsUpDesc, "gauge") + "vipstack_node_dns_up 0\n"},
		{name: "fixed, DNS listening, redirect waiting", do: func(t *testing.T) {
			write(metricsCluster)
			if err := a.Reload(); err != nil {
				t.Fatal(err)
			}
			a.mu.Lock()
			a.dnsSrv = listeningDNS{}
			a.mu.Unlock()
			f = redirect.NewFollower(fakeToggler{}, a.log, nil)
			a.redirMu.Lock()
			a.followers = map[netip.AddrPort]*follower{netip.MustParseAddrPort("198.18.0.5:6443"): {f: f, toPort: 9445}}
			a.redirMu.Unlock()
		}, want: header(configOKDesc, "gauge") + "vipstack_node_config_last_reload_successful 1\n" + reloads(1, 1) +
			header(dnsUpDesc, "gauge") + "vipstack_node_dns_up 1\n" +
			header(redirectDesc, "gauge") + "vipstack_node_redirect_in_effect{to_port=\"9445\",vip=\"198.18.0.5:6443\"} 0\n"},
		{name: "redirect in effect", do: func(t *testing.T) {
			go f.Run()
			t.Cleanup(f.Stop)
			f.Set(true)
			for i := 0; !f.State().InEffect; i++ {
				if i > 500 {
					t.Fatal("the follower never enabled the fake redirect")
				}
				time.Sleep(10 * time.Millisecond)
			}
		}, want: header(configOKDesc, "gauge") + "vipstack_node_config_last_reload_successful 1\n" + reloads(1, 1) +
			header(dnsUpDesc, "gauge") + "vipstack_node_dns_up 1\n" +
			header(redirectDesc, "gauge") + "vipstack_node_redirect_in_effect{to_port=\"9445\",vip=\"198.18.0.5:6443\"} 1\n"},
	} {
		if st.do != nil {
			st.do(t)
		}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(st.want), strings.Fields(names)...); err != nil {
			t.Errorf("%s: %v", st.name, err)
		}
	}
	metricstest.Lint(t, reg)
}

func itoa(n int) string { return strconv.Itoa(n) }
