package lb

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestDHECiphersMatchHaproxy: an ssl-default-bind-ciphers list with DHE
// suites, beside haproxy 2.6. vipstack reads it with a warning naming
// them and offers the others: a client of an ECDHE suite gets the same
// suite from both. A client offering DHE suites alone fails with both
// when no DH parameters are set (haproxy 2.6 on OpenSSL 3 offers no DHE
// then, as in the corpus file with this list); with
// tune.ssl.default-dh-param it is the difference the warning announces:
// haproxy completes that handshake, vipstack (Go) cannot.
func TestDHECiphersMatchHaproxy(t *testing.T) {
	for _, dh := range []bool{false, true} {
		t.Run(map[bool]string{false: "no DH parameters", true: "tune.ssl.default-dh-param"}[dh], func(t *testing.T) {
			testDHECiphers(t, dh)
		})
	}
}

func testDHECiphers(t *testing.T, dhParams bool) {
	for _, tool := range []string{"haproxy", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed", tool)
		}
	}
	crt := filepath.Join(t.TempDir(), "a.pem")
	if err := os.WriteFile(crt, rsaCert(t, "a.test"), 0o600); err != nil {
		t.Fatal(err)
	}
	be := startBackend(t, "s1")
	ports := freePorts(t, 2)
	dh := ""
	if dhParams {
		dh = "  tune.ssl.default-dh-param 2048\n"
	}
	conf := func(port string) string {
		return strings.NewReplacer("{{P}}", port, "{{CRT}}", crt, "{{S1}}", be.addr.String(), "{{DH}}", dh).Replace(`global
{{DH}}  ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384
  ssl-default-bind-options ssl-max-ver TLSv1.2
defaults
  mode tcp
  timeout connect 1s
  timeout client 3s
  timeout server 3s
frontend fe
  bind 127.0.0.1:{{P}} ssl crt {{CRT}}
  default_backend be
backend be
  server s1 {{S1}}
`)
	}
	peers.HAProxy(t, conf(ports[0]))
	cfg, err := haproxycfg.Parse("haproxy.cfg", []byte(conf(ports[1])))
	if err != nil {
		t.Fatal(err)
	}
	if want := "ssl-default-bind-ciphers: vipstack cannot offer DHE-RSA-AES128-GCM-SHA256, DHE-RSA-AES256-GCM-SHA384 (DHE key exchange, which Go's TLS does not implement); it offers the others of the list"; len(cfg.Warnings) != 1 || !strings.HasSuffix(cfg.Warnings[0], want) {
		t.Errorf("warnings %q, want %q", cfg.Warnings, want)
	}
	newLBOpts(t, Options{}, cfg)
	suite := func(port string) string {
		waitListening(t, "tcp", "127.0.0.1:"+port)
		c, err := tls.Dial("tcp", "127.0.0.1:"+port, &tls.Config{InsecureSkipVerify: true, ServerName: "a.test",
			CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}})
		if err != nil {
			return "handshake failed: " + err.Error()
		}
		defer c.Close()
		return tls.CipherSuiteName(c.ConnectionState().CipherSuite)
	}
	if h, v := suite(ports[0]), suite(ports[1]); h != "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256" || v != h {
		t.Errorf("ECDHE client: haproxy %q, vipstack %q", h, v)
	}
	dheOnly := func(port string) bool {
		cmd := exec.Command("openssl", "s_client", "-connect", "127.0.0.1:"+port, "-tls1_2", "-cipher", "DHE-RSA-AES128-GCM-SHA256")
		cmd.Stdin = strings.NewReader("")
		done := make(chan []byte, 1)
		go func() { out, _ := cmd.CombinedOutput(); done <- out }()
		select {
		case out := <-done:
			return strings.Contains(string(out), "Cipher is DHE-RSA-AES128-GCM-SHA256")
		case <-time.After(bound):
			cmd.Process.Kill()
			return false
		}
	}
	if h, v := dheOnly(ports[0]), dheOnly(ports[1]); h != dhParams || v {
		t.Errorf("client offering DHE only: handshake completed with haproxy %v (want %v), vipstack %v (want false: Go has no DHE)", h, dhParams, v)
	}
}

// rsaCert is a self-signed certificate for name with an RSA key (DHE-RSA
// and ECDHE-RSA suites need one), certificate and key in one PEM.
func rsaCert(t *testing.T, name string) []byte {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	out := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})...)
}
