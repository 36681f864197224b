package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/kubetest"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
	"github.com/vipstack/vipstack/internal/testutil"
)

// TestMetricsAuth runs `vipstack agent` and `vipstack controller` with
// --metrics-auth kubernetes against a real API server, each as its
// ServiceAccount with deploy/rbac.yaml's roles (the chart's), and scrapes
// their metrics over HTTPS: without a token 401, with the token of a
// ServiceAccount no role lets get /metrics 403, with the token of a
// "Prometheus" ServiceAccount bound to the chart's metrics-reader
// ClusterRole 200 and the metrics; plain HTTP gets no metrics. The agent
// serves a self-signed certificate naming its node and address; the
// controller the certificate of --metrics-tls-cert-file, which a client
// verifies against its CA.
func TestMetricsAuth(t *testing.T) {
	testnet.RequireRoot(t) // the agent opens netlink and its ledger
	env := kubetest.Start(t)
	admin := k8stest.Client(t, env.Config)
	k8stest.InstallCRDs(t, admin)
	ctx := t.Context()
	if err := k8stest.Apply(ctx, admin, k8stest.Objects(t, "rbac.yaml"), false); err != nil {
		t.Fatalf("deploy/rbac.yaml: %v", err)
	}
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		t.Helper()
		if _, err := cs.CoreV1().ServiceAccounts("monitoring").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("monitoring").CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	prom, stranger := token("prometheus"), token("stranger")
	// What the chart renders with monitoring.prometheusServiceAccount
	// {name: prometheus, namespace: monitoring} (internal/chart's
	// TestMetricsAuth checks that rendering).
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "vipstack-metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "vipstack-metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "monitoring"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	kubeconfigAs := func(sa string) string {
		t.Helper()
		path := filepath.Join(dir, "kubeconfig-"+sa)
		if err := env.WriteKubeconfigAs(path, "", "vipstack-system", sa); err != nil {
			t.Fatal(err)
		}
		return path
	}
	caPool, certFile, keyFile := writeServingCert(t, dir, "127.0.0.1")
	freeAddr := func() string {
		t.Helper()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	type daemon struct {
		name string
		addr string
		run  func(ctx context.Context, args []string, stdout, stderr io.Writer) int
		args []string
		tls  *tls.Config
		// the served certificate's names (self-signed) or nil (verified)
		sans []string
		has  []string
	}
	agentAddr, ctlAddr := freeAddr(), freeAddr()
	daemons := []daemon{
		{name: "agent", addr: agentAddr, run: runAgent, args: []string{"--kubeconfig", kubeconfigAs("vipstack-agent"), "--node-name", "n1", "--no-supervisor",
			"--metrics-addr", agentAddr, "--metrics-auth", "kubernetes", "--status-addr", "", "--health-addr", "",
			"--handoff-socket", "", "--state-dir", filepath.Join(dir, "state"), "--namespace", "vipstack-system", "--publish-namespace", ""},
			tls:  &tls.Config{InsecureSkipVerify: true},
			sans: []string{"n1", "127.0.0.1"},
			has:  []string{"vipstack_build_info{", "vipstack_agent_"}},
		{name: "controller", addr: ctlAddr, run: runController, args: []string{"--kubeconfig", kubeconfigAs("vipstack-controller"), "--leader-elect=false",
			"--namespace", "vipstack-system", "--metrics-addr", ctlAddr, "--metrics-auth", "kubernetes",
			"--metrics-tls-cert-file", certFile, "--metrics-tls-key-file", keyFile},
			tls: &tls.Config{RootCAs: caPool},
			has: []string{"vipstack_build_info{", "controller_runtime_reconcile_total{"}},
	}
	for _, d := range daemons {
		t.Run(d.name, func(t *testing.T) {
			runCtx, cancel := context.WithCancel(ctx)
			var out, errb syncbuf.Buffer
			done := make(chan int, 1)
			go func() { done <- d.run(runCtx, d.args, &out, &errb) }()
			defer func() {
				cancel()
				select {
				case <-done:
				case <-time.After(30 * time.Second):
					t.Errorf("%s did not stop within 30s of its context ending", d.name)
				}
				if t.Failed() {
					t.Logf("%s log:\n%s", d.name, errb.String())
				}
			}()
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: d.tls}}
			var served *x509.Certificate
			scrape := func(scheme, token string) (int, string, error) {
				req, _ := http.NewRequest(http.MethodGet, scheme+"://"+d.addr+"/metrics", nil)
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				resp, err := client.Do(req)
				if err != nil {
					return 0, "", err
				}
				defer resp.Body.Close()
				if resp.TLS != nil && len(resp.TLS.PeerCertificates) > 0 {
					served = resp.TLS.PeerCertificates[0]
				}
				b, err := io.ReadAll(resp.Body)
				return resp.StatusCode, string(b), err
			}
			// Wait for the endpoint; the first answer is then the anonymous one.
			testutil.Eventually(t, 60*time.Second, func() error { _, _, err := scrape("https", ""); return err })
			if d.sans != nil {
				got := slices.Clone(served.DNSNames)
				for _, ip := range served.IPAddresses {
					got = append(got, ip.String())
				}
				if !slices.Equal(got, d.sans) || served.Issuer.String() != served.Subject.String() {
					t.Errorf("served certificate %s issued by %s for %v; want self-signed for %v", served.Subject, served.Issuer, got, d.sans)
				}
			}
			for _, tc := range []struct {
				name, scheme, token string
				code                int
				has                 []string
			}{
				{name: "no token", scheme: "https", code: 401, has: []string{"bearer token is required"}},
				{name: "unauthorised ServiceAccount", scheme: "https", token: stranger, code: 403, has: []string{"system:serviceaccount:monitoring:stranger"}},
				{name: "Prometheus's ServiceAccount", scheme: "https", token: prom, code: 200, has: d.has},
			} {
				code, body, err := scrape(tc.scheme, tc.token)
				if err != nil || code != tc.code || slices.ContainsFunc(tc.has, func(s string) bool { return !strings.Contains(body, s) }) {
					t.Errorf("%s: %d %v, want %d with %q:\n%.2000s", tc.name, code, err, tc.code, tc.has, body)
				}
			}
			// Go's TLS server answers plain HTTP with a 400 and resets.
			if code, body, err := scrape("http", prom); code != 400 || strings.Contains(body, "vipstack_build_info") {
				t.Errorf("plain HTTP with Prometheus's token: %d %v, want 400 and no metrics:\n%.2000s", code, err, body)
			}
		})
	}
}

// writeServingCert writes a CA and a certificate it signs for ip, and
// returns a pool with the CA and the paths of the certificate and key.
func writeServingCert(t *testing.T, dir, ip string) (*x509.CertPool, string, string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test metrics CA"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "vipstack-controller"}, NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, IPAddresses: []net.IP{net.ParseIP(ip)}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return pool, certFile, keyFile
}
