package render

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/vipstack/vipstack/internal/cluster"
	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/track"
)

// ignoreProvenance leaves out where the reader found things, and the
// sections' order as read (a model built in code has none: its
// ProxyOrder, compared by sameProxyOrder, is the writer's).
var ignoreProvenance = cmp.Options{
	cmpopts.IgnoreFields(lbconfig.Config{}, "Source", "Warnings", "Proxies"),
	cmpopts.IgnoreFields(lbconfig.TCPRule{}, "At"),
	cmpopts.EquateComparable(netip.Addr{}, netip.AddrPort{}, netip.Prefix{}),
}

// TestHAProxyCfgReadsBackAsLBConfig is the one-source-of-truth check: the
// haproxy.cfg rendered for the upstream haproxy reads back, through the
// same reader `vipstack lb` uses, as exactly the model the node agent runs
// (cluster.Cluster.LBConfig).
func TestHAProxyCfgReadsBackAsLBConfig(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster string
	}{
		{name: "demo"},
		{name: "ipv6", cluster: v6Cluster},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := demo(t)
			if tc.cluster != "" {
				c = parseCluster(t, tc.cluster)
			}
			want, err := c.LBConfig()
			if err != nil {
				t.Fatal(err)
			}
			text, err := HAProxyCfg(want)
			if err != nil {
				t.Fatal(err)
			}
			got, err := haproxycfg.Parse("haproxy.cfg", text)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			if diff := cmp.Diff(want, got, ignoreProvenance); diff != "" {
				t.Fatalf("read back (-want +got):\n%s\n%s", diff, text)
			}
			sameProxyOrder(t, want, got)
			if len(got.Warnings) != 0 {
				t.Errorf("warnings = %q, want none (the log target is used)", got.Warnings)
			}
		})
	}
}

// TestHAProxyCfgWriterCoversTheModel writes settings cluster's LBConfig does not
// use, so the writer stays right for the model as a whole.
func TestHAProxyCfgWriterCoversTheModel(t *testing.T) {
	ap := netip.MustParseAddrPort
	want := &lbconfig.Config{
		MaxConn: 500, GlobalMaxConn: 4000, Retries: 2, LogTag: "hx", BufSize: 32768, MaxRewrite: new(8192),
		ProxyIDs: map[string]int{"backend plain": 10, "listen st": 1},
		Timeouts: lbconfig.Timeouts{Connect: 1500 * time.Millisecond, Client: time.Minute, Server: time.Minute, HTTPKeepAlive: 2 * time.Second},
		Frontends: []lbconfig.Frontend{
			{Name: "v4", Binds: []lbconfig.Bind{{Addr: ap("0.0.0.0:80")}, {Addr: ap("198.18.0.5:81")}}, Backend: "plain",
				LogTargets: []lbconfig.LogTarget{{Network: "udp", Address: "[fd00::1]:1514", Facility: 18, Level: 6, MinLevel: 4}}},
			{Name: "v6", Binds: []lbconfig.Bind{{Addr: ap("[fd00::5]:82")}}, Backend: "plain",
				TCPRequest: &lbconfig.TCPRequest{
					ACLs: map[string][]lbconfig.ACLTest{
						"blocked": {{Fetch: "src", Keyword: "src", Match: "ip", Values: []string{"fd00::66", "198.18.9.0/24"}}},
						"web":     {{Fetch: "dst_port", Keyword: "dst_port", Match: "int", Values: []string{"80", "8000:8999"}}},
					},
					Connection: []lbconfig.TCPRule{
						{Action: "set-src", Expr: &lbconfig.AddrExpr{Fetch: "src", Mask4: 21, Mask6: 64}},
						{Action: "accept", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "web"}, {Neg: true, Name: "blocked"}}}}},
						{Action: "silent-drop", Cond: &lbconfig.Cond{Unless: true, Or: [][]lbconfig.CondTerm{
							{{Anon: &lbconfig.ACLTest{Fetch: "src_port", Keyword: "src_port", Match: "int", Values: []string{"1024:"}}}},
							{{Neg: true, Anon: &lbconfig.ACLTest{Fetch: "dst", Keyword: "dst", Match: "ip", Values: []string{"fd00::5"}}}}}}},
						{Action: "set-dst", Expr: &lbconfig.AddrExpr{Fetch: "ipv6", Addr: netip.MustParseAddr("fd00::6"), Mask4: 32, Mask6: 128}},
						{Action: "reject", Cond: &lbconfig.Cond{Or: [][]lbconfig.CondTerm{{{Name: "blocked"}}}}},
					},
					Content: []lbconfig.TCPRule{{Action: "reject"}},
				}},
		},
		Backends: []lbconfig.Backend{{
			Name: "plain", Balance: lbconfig.LeastConn, RedispatchOnRetry: true,
			Check: lbconfig.HTTPCheck{Method: "GET", URI: "/healthz", Version: "HTTP/1.1", ExpectStatus: "200-299", Connect: true, ConnectPort: 8081,
				Headers: []lbconfig.HTTPCheckHeader{{Name: "Host", Value: "api.local"}, {Name: "Authorization", Value: `Basic "a\b" $c #d`}}, Body: "ping me"},
			LogTargets: []lbconfig.LogTarget{{Network: "stderr", Raw: true, Facility: 19, Level: 7}},
			Servers: []lbconfig.Server{
				{Name: "a", Addr: ap("198.18.0.11:8080"), Weight: 3, Check: true, Verify: true, Inter: 500 * time.Millisecond, Fall: 4, Rise: 1},
				{Name: "b", Addr: ap("[fd00::12]:8080"), Weight: 1, Verify: true, Inter: 2 * time.Second, Fall: 3, Rise: 2, SendProxy: 2},
			},
		}},
		Stats: []lbconfig.Stats{{Name: "st", Binds: []lbconfig.Bind{{Addr: ap("127.0.0.1:9000")}}, URI: "/s",
			Users:      []lbconfig.UserPass{{User: "u1", Pass: "p1"}, {User: "u2", Pass: "p2"}},
			Prometheus: &lbconfig.PrometheusService{Paths: []string{"/metrics", "/m2"}, Unless: true}}},
	}
	if err := lbconfig.Validate(want); err != nil {
		t.Fatal(err)
	}
	text, err := HAProxyCfg(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := haproxycfg.Parse("haproxy.cfg", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if diff := cmp.Diff(want, got, ignoreProvenance); diff != "" {
		t.Fatalf("read back (-want +got):\n%s\n%s", diff, text)
	}
	sameProxyOrder(t, want, got)
}

func TestHAProxyCfgRejects(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  *lbconfig.Config
		want string
	}{{
		name: "dontlognull differs",
		cfg:  &lbconfig.Config{Backends: []lbconfig.Backend{{Name: "a", DontLogNull: true}, {Name: "b"}}},
		want: "backend b: dontlognull differs between backends",
	}, {
		name: "blank in a name",
		cfg:  &lbconfig.Config{Frontends: []lbconfig.Frontend{{Name: "my front", Backend: "b"}}},
		want: `"my front" cannot be written as one haproxy.cfg word`,
	}, {
		name: "comment in a URI",
		cfg:  &lbconfig.Config{Monitors: []lbconfig.Monitor{{Name: "m", URI: "/x#y"}}},
		want: `"/x#y" cannot be written as one haproxy.cfg word`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := HAProxyCfg(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// TestKeepalivedConfMatchesPlan reads the rendered keepalived.conf with the
// reader `vipstack vrrp` uses and compares it with the configuration the
// node agent builds from the same plan: same instances, priorities, peers,
// VIPs, tracked checks, weights, rise and fall.
func TestKeepalivedConfMatchesPlan(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster string
		node    string
		iface   string
	}{
		{name: "bootstrap", node: "bootstrap", iface: "eth0"},
		{name: "master-0", node: "master-0", iface: "eth0"},
		{name: "worker-0", node: "worker-0", iface: "eth0"},
		{name: "ipv6 bootstrap", cluster: v6Cluster, node: "bootstrap", iface: "ens3"},
		{name: "ipv6 master", cluster: v6Cluster, node: "m0", iface: "ens3"},
		{name: "dual-stack master", cluster: dualCluster, node: "m1", iface: "eth0"},
		{name: "dual-stack worker", cluster: dualCluster, node: "w0", iface: "eth0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := demo(t)
			if tc.cluster != "" {
				c = parseCluster(t, tc.cluster)
			}
			plan, err := c.PlanFor(tc.node)
			if err != nil {
				t.Fatal(err)
			}
			text, err := KeepalivedConf(c, plan, tc.iface)
			if err != nil {
				t.Fatal(err)
			}
			got, err := keepalived.Parse("keepalived.conf", text, nil)
			if err != nil {
				t.Fatalf("%v\n%s", err, text)
			}
			want := plan.Keepalived(c, tc.iface, func(cluster.CheckSpec) track.Check { return nil })
			// The rendered file holds the 8 characters VRRPv2 carries, and
			// labels its IPv4 VIPs "vip" as OpenShift's template does (an
			// address label on the interface, nothing on the wire).
			for _, in := range want.Instances {
				in.AuthPass = in.AuthPass[:min(len(in.AuthPass), 8)]
				for i := range in.VIPs {
					if in.VIPs[i].Prefix.Addr().Is4() {
						o := in.VIPs[i].Options()
						o.Label = "vip"
						in.VIPs[i].SetOptions(o)
					}
				}
			}
			opts := cmp.Options{
				// The tie-break among equal masters is vipstack node's,
				// not keepalived syntax: keepalived runs without it.
				cmpopts.IgnoreFields(keepalived.Instance{}, "Pos", "TieBreak"),
				cmp.Comparer(keepalived.VIP.SameEntry),
				cmpopts.IgnoreFields(keepalived.TrackScript{}, "Pos"),
				// The upstream scripts run curl under /usr/bin/timeout
				// (checked by TestCheckCommand); the native checks run
				// in process.
				cmpopts.IgnoreFields(keepalived.Script{}, "Pos", "Command", "Args", "Timeout", "Probe"),
				cmpopts.EquateEmpty(),
				cmpopts.EquateComparable(netip.Addr{}, netip.Prefix{}),
			}
			if diff := cmp.Diff(want.Instances, got.Instances, opts); diff != "" {
				t.Errorf("instances (-plan +rendered):\n%s", diff)
			}
			if diff := cmp.Diff(want.Scripts, got.Scripts, opts); diff != "" {
				t.Errorf("scripts (-plan +rendered):\n%s", diff)
			}
			// Script security is what upstream keepalived needs to run
			// the scripts as root; the node agent runs no scripts.
			wantGlobal := want.Global
			wantGlobal.EnableScriptSecurity, wantGlobal.ScriptUser = true, "root"
			// The plan leaves the global refresh repeat at zero and sets
			// each instance's (compared above, it is what runs); the reader
			// fills keepalived's global default, 1.
			wantGlobal.GARPMasterRefreshRepeat = got.Global.GARPMasterRefreshRepeat
			// keepalived runs VRRP in a process of its own at realtime
			// priority, as OpenShift's template sets it. vipstack node
			// shares its process with the load balancer and the DNS,
			// which must not run at realtime priority: it reads the
			// adverts queued meanwhile after a late timer instead.
			wantGlobal.RTPriority, wantGlobal.NoSwap, wantGlobal.RLimitRTTime = 50, true, 100000
			wantGlobal.CheckerRLimitRTTime, wantGlobal.BFDRLimitRTTime = 100000, 100000
			if diff := cmp.Diff(wantGlobal, got.Global, opts); diff != "" {
				t.Errorf("global_defs (-plan +rendered):\n%s", diff)
			}
			if len(got.Warnings) > 0 {
				t.Errorf("warnings: %q", got.Warnings)
			}
		})
	}
}

func TestCheckCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check cluster.CheckSpec
		want  []string // the argv keepalived runs
	}{{
		name:  "one https URL",
		check: cluster.CheckSpec{Name: "lb", URLs: []string{"https://localhost:9445/readyz"}, Timeout: 1900 * time.Millisecond},
		want:  []string{"/usr/bin/timeout", "1.9", "/usr/bin/curl", "-o", "/dev/null", "-kLfs", "https://localhost:9445/readyz"},
	}, {
		name:  "one http URL, no timeout",
		check: cluster.CheckSpec{Name: "ing", URLs: []string{"http://localhost:1936/healthz/ready"}},
		want:  []string{"/usr/bin/curl", "-o", "/dev/null", "-Lfs", "http://localhost:1936/healthz/ready"},
	}, {
		name:  "any of two URLs",
		check: cluster.CheckSpec{Name: "both", URLs: []string{"https://localhost:9445/readyz", "https://[::1]:6443/readyz"}, Timeout: 2 * time.Second},
		want: []string{"/usr/bin/timeout", "2", "/bin/sh", "-c",
			"/usr/bin/curl -o /dev/null -kLfs https://localhost:9445/readyz || /usr/bin/curl -o /dev/null -kLfs https://[::1]:6443/readyz"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := CheckCommand(tc.check)
			if err != nil {
				t.Fatal(err)
			}
			// Split the way keepalived does after reading the quoted
			// script line.
			argv, err := keepalived.SplitCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, argv); diff != "" {
				t.Errorf("argv (-want +got):\n%s", diff)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		check cluster.CheckSpec
		want  string
	}{
		{name: "no URL", check: cluster.CheckSpec{Name: "x"}, want: "check x has no URL"},
		{name: "quote in URL", check: cluster.CheckSpec{Name: "x", URLs: []string{"http://h/'; rm -rf /"}}, want: `check x: URL "http://h/'; rm -rf /" has characters`},
		{name: "not http", check: cluster.CheckSpec{Name: "x", URLs: []string{"file:///etc/passwd"}}, want: "has characters a keepalived script line cannot carry"},
		{name: "negative timeout", check: cluster.CheckSpec{Name: "x", URLs: []string{"http://h/"}, Timeout: -1}, want: "timeout -1ns is negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := CheckCommand(tc.check); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestKeepalivedConfRejects(t *testing.T) {
	c := demo(t)
	plan, err := c.PlanFor("master-0")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := KeepalivedConf(c, plan, "a/b"); err == nil || !strings.Contains(err.Error(), `interface "a/b"`) {
		t.Errorf("bad interface: %v", err)
	}
	odd := *plan
	odd.Checks = append([]cluster.CheckSpec(nil), plan.Checks...)
	odd.Checks[0].Interval = 1500 * time.Millisecond
	if _, err := KeepalivedConf(c, &odd, "eth0"); err == nil || !strings.Contains(err.Error(), "check chk_ocp_lb: interval 1.5s: keepalived 2.2 takes whole seconds") {
		t.Errorf("fractional interval: %v", err)
	}
	odd = *plan
	odd.Checks = plan.Checks[1:]
	if _, err := KeepalivedConf(c, &odd, "eth0"); err == nil || !strings.Contains(err.Error(), `instance managed_API tracks check "chk_ocp_lb", which the plan does not define`) {
		t.Errorf("undefined check: %v", err)
	}
}

// TestCheckCommandRuns runs the rendered check commands (curl under
// timeout, through /bin/sh for several URLs) against servers on loopback:
// each succeeds exactly when one of its URLs answers 2xx in time.
func TestCheckCommandRuns(t *testing.T) {
	for _, p := range []string{timeoutProgram, curlProgram, shellProgram} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("skipping: the upstream checks need %s: %v (install curl and coreutils)", p, err)
		}
	}
	ok := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/redirect" {
			http.Redirect(w, r, "/readyz", http.StatusFound)
			return
		}
		fmt.Fprintln(w, "ok")
	}))
	defer ok.Close()
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not ready", http.StatusInternalServerError)
	}))
	defer failing.Close()
	hang := make(chan struct{})
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // answers only after the client gave up
		case <-r.Context().Done():
		case <-hang:
		}
	}))
	defer slow.Close()
	defer close(hang)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/readyz"
	l.Close()

	for _, tc := range []struct {
		name    string
		urls    []string
		timeout time.Duration
		succeed bool
	}{
		{name: "https 200", urls: []string{ok.URL + "/readyz"}, timeout: 5 * time.Second, succeed: true},
		{name: "redirect followed", urls: []string{ok.URL + "/redirect"}, timeout: 5 * time.Second, succeed: true},
		{name: "http 500", urls: []string{failing.URL + "/readyz"}, timeout: 5 * time.Second},
		{name: "nothing listening", urls: []string{closed}, timeout: 5 * time.Second},
		{name: "too slow", urls: []string{slow.URL + "/readyz"}, timeout: 300 * time.Millisecond},
		{name: "first of two down", urls: []string{closed, ok.URL + "/readyz"}, timeout: 5 * time.Second, succeed: true},
		{name: "second of two down", urls: []string{ok.URL + "/readyz", failing.URL}, timeout: 5 * time.Second, succeed: true},
		{name: "both down", urls: []string{closed, failing.URL + "/readyz"}, timeout: 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd, err := CheckCommand(cluster.CheckSpec{Name: "chk", URLs: tc.urls, Timeout: tc.timeout})
			if err != nil {
				t.Fatal(err)
			}
			argv, err := keepalived.SplitCommand(cmd)
			if err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
			if got := err == nil; got != tc.succeed {
				t.Fatalf("%s: succeeded = %v (%v, output %q), want %v", cmd, got, err, out, tc.succeed)
			}
		})
	}
}

// sameProxyOrder checks that the model's stats numbering (ProxyOrder) is
// the order the rendered file has its sections in, so that vipstack and
// haproxy running that file give the same proxy ids.
func sameProxyOrder(t *testing.T, want, got *lbconfig.Config) {
	t.Helper()
	if diff := cmp.Diff(got.Proxies, want.ProxyOrder()); diff != "" {
		t.Errorf("the model's proxy order is not the rendered file's (-file +model):\n%s", diff)
	}
}

// TestHAProxyCfgWritesTLS writes ssl binds (crt, crt-list, alpn,
// versions, ciphers, no-tls-tickets) and a server's TLS (check-ssl with
// ca-file, sni, alpn and versions): read back through haproxycfg they are
// the model again, certificates read from the files named, and haproxy
// -c accepts the file.
func TestHAProxyCfgWritesTLS(t *testing.T) {
	dir := t.TempDir()
	a, b := selfSignedPEM(t, "a.test"), selfSignedPEM(t, "b.test")
	for name, data := range map[string][]byte{"a.pem": a, "b.pem": b, "ca.pem": a, "list.txt": []byte(dir + "/b.pem x.test *.y.test\n")} {
		if err := os.WriteFile(dir+"/"+name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ap := netip.MustParseAddrPort
	want := &lbconfig.Config{
		Timeouts: lbconfig.Timeouts{Connect: time.Second, Client: time.Minute, Server: time.Minute},
		Frontends: []lbconfig.Frontend{{Name: "tls", Backend: "be", Binds: []lbconfig.Bind{
			{Addr: ap("0.0.0.0:8443"), TLS: &lbconfig.BindTLS{
				Crt: []string{dir + "/a.pem"}, CrtList: []string{dir + "/list.txt"},
				Certs:      []lbconfig.Cert{{Path: dir + "/a.pem", PEM: a}, {Path: dir + "/b.pem", SNI: []string{"x.test", "*.y.test"}, PEM: b}},
				ALPN:       []string{"h2", "http/1.1"},
				TLSOptions: lbconfig.TLSOptions{MinVersion: tls.VersionTLS13, Ciphers: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}, NoTickets: true},
			}},
			{Addr: ap("0.0.0.0:8444"), TLS: &lbconfig.BindTLS{Crt: []string{dir + "/b.pem"}, Certs: []lbconfig.Cert{{Path: dir + "/b.pem", PEM: b}},
				TLSOptions: lbconfig.TLSOptions{MinVersion: tls.VersionTLS11, MaxVersion: tls.VersionTLS12, PreferClientCiphers: true}}},
		}}},
		Backends: []lbconfig.Backend{{Name: "be", Servers: []lbconfig.Server{{
			Name: "s1", Addr: ap("198.18.0.11:6443"), Check: true, CheckSSL: true, Verify: true,
			TLS: &lbconfig.ServerTLS{CAFile: dir + "/ca.pem", CA: a, SNI: "s1.test", ALPN: []string{"http/1.1"},
				TLSOptions: lbconfig.TLSOptions{MaxVersion: tls.VersionTLS12, NoTickets: true}},
		}}}},
	}
	if err := lbconfig.Validate(want); err != nil {
		t.Fatal(err)
	}
	text, err := HAProxyCfg(want)
	if err != nil {
		t.Fatal(err)
	}
	got, err := haproxycfg.Parse("haproxy.cfg", text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if diff := cmp.Diff(want, got, ignoreProvenance); diff != "" {
		t.Fatalf("read back (-want +got):\n%s\n%s", diff, text)
	}
	if _, err := exec.LookPath("haproxy"); err == nil {
		path := dir + "/haproxy.cfg"
		if err := os.WriteFile(path, text, 0o600); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("haproxy", "-c", "-f", path).CombinedOutput(); err != nil {
			t.Errorf("haproxy -c: %v\n%s\n%s", err, out, text)
		}
	}

	// Certificates without a path to write are refused.
	noPath := &lbconfig.Config{Frontends: []lbconfig.Frontend{{Name: "f", Backend: "be",
		Binds: []lbconfig.Bind{{Addr: ap("0.0.0.0:8443"), TLS: &lbconfig.BindTLS{Certs: []lbconfig.Cert{{PEM: a}}}}}}}}
	if _, err := HAProxyCfg(noPath); err == nil || !strings.Contains(err.Error(), "frontend f: ssl bind 0.0.0.0:8443 has certificates but no crt or crt-list path") {
		t.Errorf("error = %v, want the missing path named", err)
	}
}

func selfSignedPEM(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(3), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
}
