package lb

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/peers"
)

// TestPreferClientCiphersMatchesHaproxy: ssl-default-bind-options
// prefer-client-ciphers (the 069 layout), beside haproxy 2.6, with
// openssl s_client as the client, since it sends its suites in the order
// given (Go's client sends its own). Below TLS 1.3 both take the
// client's first suite the list and the certificate allow, where
// haproxy without the option takes the list's first. TLS 1.3: a client
// listing ChaCha20 first gets it from both; one listing AES-256-GCM
// before AES-128-GCM gets AES-256 from haproxy and AES-128 from vipstack
// (Go's TLS 1.3 order, the difference the configuration's warning
// names), checked here so that a change on either side shows.
func TestPreferClientCiphersMatchesHaproxy(t *testing.T) {
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
	conf := func(port string) string {
		return strings.NewReplacer("{{P}}", port, "{{CRT}}", crt, "{{S1}}", be.addr.String()).Replace(`global
  ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-CHACHA20-POLY1305
  ssl-default-bind-options prefer-client-ciphers no-sslv3 no-tlsv10 no-tlsv11 no-tls-tickets
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
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "prefer-client-ciphers: vipstack takes the client's order for TLS 1.2") {
		t.Errorf("warnings %q, want prefer-client-ciphers' one", cfg.Warnings)
	}
	newLBOpts(t, Options{}, cfg)
	waitListening(t, "tcp", "127.0.0.1:"+ports[0])
	waitListening(t, "tcp", "127.0.0.1:"+ports[1])

	cipherIs := regexp.MustCompile(`Cipher is (\S+)`)
	suite := func(port string, args ...string) string {
		cmd := exec.Command("openssl", append([]string{"s_client", "-connect", "127.0.0.1:" + port}, args...)...)
		cmd.Stdin = strings.NewReader("")
		done := make(chan []byte, 1)
		go func() { out, _ := cmd.CombinedOutput(); done <- out }()
		select {
		case out := <-done:
			if m := cipherIs.FindSubmatch(out); m != nil {
				return string(m[1])
			}
			return "no suite: " + string(out)
		case <-time.After(bound):
			cmd.Process.Kill()
			<-done
			return "openssl s_client did not end"
		}
	}
	tests := []struct {
		name          string
		args          []string
		haproxy, vips string
	}{
		{name: "TLS 1.2, AES-256 first", args: []string{"-tls1_2", "-cipher", "ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256"},
			haproxy: "ECDHE-RSA-AES256-GCM-SHA384", vips: "ECDHE-RSA-AES256-GCM-SHA384"},
		{name: "TLS 1.2, ChaCha20 first", args: []string{"-tls1_2", "-cipher", "ECDHE-RSA-CHACHA20-POLY1305:ECDHE-RSA-AES128-GCM-SHA256"},
			haproxy: "ECDHE-RSA-CHACHA20-POLY1305", vips: "ECDHE-RSA-CHACHA20-POLY1305"},
		{name: "TLS 1.2, an ECDSA suite and one off the list first", args: []string{"-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-SHA:ECDHE-RSA-AES256-GCM-SHA384:ECDHE-RSA-AES128-GCM-SHA256"},
			haproxy: "ECDHE-RSA-AES256-GCM-SHA384", vips: "ECDHE-RSA-AES256-GCM-SHA384"},
		{name: "TLS 1.3, ChaCha20 first", args: []string{"-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256"},
			haproxy: "TLS_CHACHA20_POLY1305_SHA256", vips: "TLS_CHACHA20_POLY1305_SHA256"},
		{name: "TLS 1.3, AES-256 first", args: []string{"-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"},
			haproxy: "TLS_AES_256_GCM_SHA384", vips: "TLS_AES_128_GCM_SHA256"},
	}
	for _, tt := range tests {
		if h, v := suite(ports[0], tt.args...), suite(ports[1], tt.args...); h != tt.haproxy || v != tt.vips {
			t.Errorf("%s: haproxy %q, vipstack %q; want %q, %q", tt.name, h, v, tt.haproxy, tt.vips)
		}
	}
}
