package lb

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// testCA issues the certificates of a TLS test, generated in the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "vipstack test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &testCA{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM with a leaf certificate for names (the first as
// CN) and its key.
func (ca *testCA) issue(t *testing.T, names ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
}

const tlsPairConf = `global
  ssl-default-bind-options no-tls-tickets
defaults
  timeout connect 2s
  timeout client 5s
  timeout server 5s
frontend web
  mode http
  log stdout format raw local0
  log-format "TLSLOG %ft %ST"
  bind {{IP}}:{{P0}} ssl crt {{DIR}}/certs alpn h2,http/1.1
  bind {{IP}}:{{P1}}
  http-request redirect scheme https code 301 if !{ ssl_fc }
  http-request set-header X-Forwarded-Proto https if { ssl_fc }
  http-request set-header X-SNI %[ssl_fc_sni]
  default_backend origin
frontend old
  mode http
  bind {{IP}}:{{P2}} ssl crt {{DIR}}/a.pem ssl-min-ver TLSv1.3
  default_backend origin
frontend ciphers
  mode http
  bind {{IP}}:{{P4}} ssl crt {{DIR}}/a.pem ciphers ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305 ssl-max-ver TLSv1.2
  default_backend origin
frontend relay
  mode tcp
  bind {{IP}}:{{P3}} ssl crt {{DIR}}/a.pem
  default_backend echo
frontend checked
  mode http
  bind {{IP}}:{{P5}}
  use_backend good if { path_beg /good }
  default_backend bad
backend good
  mode http
  option httpchk GET /health
  server g1 {{ORIGIN}} ssl verify none check inter 200ms
backend bad
  mode http
  option httpchk GET /bad-health
  server b1 {{ORIGIN}} ssl verify none check inter 200ms fall 1
backend origin
  mode http
  server o1 {{ORIGIN}} ssl verify required ca-file {{DIR}}/ca.pem sni str(origin.test)
backend echo
  mode tcp
  server e1 {{ECHO}}
`

// tlsSeen is what a client saw of one TLS handshake and request.
type tlsSeen struct {
	Err      bool   // the handshake failed
	CN       string // the certificate's subject
	ALPN     string
	Version  uint16
	Cipher   uint16
	Status   int
	Location string
	Proto    string // X-Forwarded-Proto at the origin
	SNI      string // X-SNI at the origin
	OriginSN string // the server name the origin got
}

// TestRootTLSMatchesHaproxy runs one configuration with ssl binds in
// haproxy 2.6 and in vipstack, side by side in a network namespace, with
// certificates made by the test: the certificate chosen by SNI from a
// directory (and the first file's without SNI or for an unknown name),
// ALPN's choice (none when the client offers no shared protocol), a
// version below ssl-min-ver refused, X-Forwarded-Proto and the redirect
// to https by ssl_fc, %[ssl_fc_sni], a TLS backend verified against its
// ca-file with sni, and a mode tcp ssl bind relaying the same bytes,
// half-close included.
func TestRootTLSMatchesHaproxy(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	bin, err := peers.BuildVipstack(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	topo := testnet.New(t, testnet.Options{Hosts: 1, Prefix: "vtls"})
	h := topo.Hosts[0]
	ip := h.IPv4.Addr().String()

	dir := t.TempDir()
	ca := newTestCA(t)
	write := func(name string, data []byte) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ca.pem", ca.pem)
	write("a.pem", ca.issue(t, "a.test"))
	write("certs/1-a.pem", ca.issue(t, "a.test"))
	write("certs/2-b.pem", ca.issue(t, "b.test", "*.b.test"))

	// The origin: HTTPS with a certificate for origin.test, answering
	// with the headers that arrived; and a TCP echo.
	var originLn, echoLn net.Listener
	if err := h.Do(func() (err error) {
		if originLn, err = net.Listen("tcp4", ip+":0"); err != nil {
			return err
		}
		echoLn, err = net.Listen("tcp4", ip+":0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	pemOrigin := ca.issue(t, "origin.test")
	oc, err := tls.X509KeyPair(pemOrigin, pemOrigin)
	if err != nil {
		t.Fatal(err)
	}
	origin := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/bad-health" {
				w.WriteHeader(http.StatusInternalServerError)
				return
			}
			json.NewEncoder(w).Encode(map[string]string{"proto": r.Header.Get("X-Forwarded-Proto"), "sni": r.Header.Get("X-SNI"), "servername": r.TLS.ServerName})
		}),
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{oc}},
		ErrorLog:  log.New(io.Discard, "", 0),
	}
	go origin.ServeTLS(originLn, "", "")
	t.Cleanup(func() { origin.Close() })
	t.Cleanup(func() { echoLn.Close() })
	go func() {
		for {
			c, err := echoLn.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				io.Copy(c, c)
				c.(*net.TCPConn).CloseWrite()
			}()
		}
	}()

	conf := func(ports ...string) string {
		r := strings.NewReplacer("{{IP}}", ip, "{{DIR}}", dir, "{{ORIGIN}}", originLn.Addr().String(), "{{ECHO}}", echoLn.Addr().String(),
			"{{P0}}", ports[0], "{{P1}}", ports[1], "{{P2}}", ports[2], "{{P3}}", ports[3], "{{P4}}", ports[4], "{{P5}}", ports[5])
		return r.Replace(tlsPairConf)
	}
	ha := []string{"8443", "8080", "8444", "8445", "8446", "8081"}
	vs := []string{"9443", "9080", "9444", "9445", "9446", "9081"}
	write("haproxy.cfg", []byte(conf(ha...)))
	write("vipstack.cfg", []byte(conf(vs...)))
	if out, err := exec.Command(bin, "lb", "-f", filepath.Join(dir, "vipstack.cfg"), "--check").CombinedOutput(); err != nil {
		t.Fatalf("vipstack lb --check: %v\n%s", err, out)
	}
	hcmd := h.Command("haproxy", "-db", "-f", filepath.Join(dir, "haproxy.cfg"))
	hout, vout := new(syncbuf.Buffer), new(syncbuf.Buffer)
	hcmd.Stdout, hcmd.Stderr = hout, hout
	if err := h.StartFor(t, hcmd); err != nil {
		t.Fatal(err)
	}
	vcmd := h.Command(bin, "lb", "-f", filepath.Join(dir, "vipstack.cfg"))
	vcmd.Stdout, vcmd.Stderr = vout, vout
	if err := h.StartFor(t, vcmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("haproxy wrote:\n%s\nvipstack wrote:\n%s", hout.String(), vout.String())
		}
	})

	// dial opens a TCP connection in the namespace, waiting (bounded)
	// for the listener to come up.
	dial := func(port string) net.Conn {
		t.Helper()
		deadline := time.Now().Add(bound)
		for {
			var c net.Conn
			err := h.Do(func() (err error) {
				c, err = net.DialTimeout("tcp4", ip+":"+port, time.Second)
				return err
			})
			if err == nil {
				return c
			}
			if time.Now().After(deadline) {
				t.Fatalf("dial %s:%s: %v", ip, port, err)
			}
			time.Sleep(50 * time.Millisecond) // polling a process's start, bounded by deadline
		}
	}
	handshake := func(port string, c *tls.Config) (*tls.Conn, tlsSeen) {
		t.Helper()
		raw := dial(port)
		raw.SetDeadline(time.Now().Add(bound))
		c.RootCAs = x509.NewCertPool()
		c.RootCAs.AppendCertsFromPEM(ca.pem)
		c.InsecureSkipVerify = true // the CN is compared instead
		tc := tls.Client(raw, c)
		if err := tc.Handshake(); err != nil {
			raw.Close()
			return nil, tlsSeen{Err: true}
		}
		st := tc.ConnectionState()
		s := tlsSeen{CN: st.PeerCertificates[0].Subject.CommonName, ALPN: st.NegotiatedProtocol, Version: st.Version, Cipher: st.CipherSuite}
		if s.Version == tls.VersionTLS13 {
			// TLS 1.3's suite is Go's choice, which cannot be
			// configured (OpenSSL prefers TLS_AES_256_GCM_SHA384,
			// Go TLS_AES_128_GCM_SHA256): see docs/haproxy-cfg.md.
			s.Cipher = 0
		}
		return tc, s
	}
	var getPath func(c net.Conn, s *tlsSeen, host, path string)
	get := func(c net.Conn, s *tlsSeen, host string) { getPath(c, s, host, "/x") }
	getPath = func(c net.Conn, s *tlsSeen, host, path string) {
		t.Helper()
		defer c.Close()
		c.SetDeadline(time.Now().Add(bound))
		io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("read answer: %v", err)
		}
		defer resp.Body.Close()
		s.Status, s.Location = resp.StatusCode, resp.Header.Get("Location")
		var got map[string]string
		if json.NewDecoder(resp.Body).Decode(&got) == nil {
			s.Proto, s.SNI, s.OriginSN = got["proto"], got["sni"], got["servername"]
		}
	}

	type step struct {
		name string
		run  func(ports []string) tlsSeen
	}
	viaTLS := func(idx int, sni string, alpn []string, maxVer uint16, request bool, suites ...uint16) func([]string) tlsSeen {
		return func(ports []string) tlsSeen {
			tc, s := handshake(ports[idx], &tls.Config{ServerName: sni, NextProtos: alpn, MaxVersion: maxVer, MinVersion: tls.VersionTLS10, CipherSuites: suites})
			if tc == nil {
				return s
			}
			if request && s.ALPN != "h2" {
				get(tc, &s, "www.example")
			} else {
				tc.Close()
			}
			return s
		}
	}
	steps := []step{
		{"SNI a.test, ALPN h2", viaTLS(0, "a.test", []string{"h2", "http/1.1"}, 0, false)},
		{"SNI b.test, ALPN http/1.1, request", viaTLS(0, "b.test", []string{"http/1.1"}, 0, true)},
		{"SNI wildcard x.b.test", viaTLS(0, "x.b.test", nil, 0, true)},
		{"no SNI: the first certificate", viaTLS(0, "", nil, 0, true)},
		{"unknown SNI: the first certificate", viaTLS(0, "c.test", nil, 0, false)},
		{"no shared ALPN: none", viaTLS(0, "a.test", []string{"spdy/3"}, 0, false)},
		{"TLS 1.1 refused by default", viaTLS(0, "a.test", nil, tls.VersionTLS11, false)},
		{"TLS 1.2 below ssl-min-ver TLSv1.3", viaTLS(2, "a.test", nil, tls.VersionTLS12, false)},
		{"TLS 1.3 at ssl-min-ver", viaTLS(2, "a.test", nil, 0, true)},
		{"ciphers: the one configured of the client's", viaTLS(4, "a.test", nil, 0, true,
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384)},
		{"ciphers: none shared", viaTLS(4, "a.test", nil, 0, false, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256)},
		{"ssl-max-ver TLSv1.2", viaTLS(4, "a.test", nil, 0, false)},
		{"plain bind redirects to https", func(ports []string) tlsSeen {
			var s tlsSeen
			get(dial(ports[1]), &s, "www.example")
			return s
		}},
	}
	for _, st := range steps {
		want, got := st.run(ha), st.run(vs)
		t.Logf("%s: %+v", st.name, want)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: differs (-haproxy +vipstack):\n%s", st.name, diff)
		}
	}
	// The request lines: %ft is the frontend's name with "~" for TLS.
	logLines := func(out string) []string {
		var ls []string
		for _, l := range strings.Split(out, "\n") {
			// Left out: the line haproxy writes, or not, for a client
			// that closes after its handshake without a request (400,
			// or 0 when the close came first), depending on whether its
			// close_notify came before haproxy's first read: timing,
			// not behaviour (seen both ways on one haproxy binary).
			if i := strings.Index(l, "TLSLOG "); i >= 0 && !strings.HasSuffix(l, " 400") && !strings.HasSuffix(l, " 0") {
				ls = append(ls, l[i:])
			}
		}
		slices.Sort(ls)
		return ls
	}
	deadline := time.Now().Add(bound)
	for len(logLines(vout.String())) < len(logLines(hout.String())) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond) // the log queue's sender, bounded by deadline
	}
	if want, got := logLines(hout.String()), logLines(vout.String()); len(want) == 0 || !slices.Contains(want, "TLSLOG web~ 200") || !cmp.Equal(want, got) {
		t.Errorf("request log lines (-haproxy +vipstack):\n%s", cmp.Diff(want, got))
	}

	// Guard against both failing alike.
	if s := steps[1].run(ha); s.Status != http.StatusOK || s.Proto != "https" || s.CN != "b.test" || s.OriginSN != "origin.test" {
		t.Errorf("haproxy did not answer as the test expects: %+v", s)
	}

	// Health checks over the servers' TLS (ssl verify none check, no
	// check-ssl): the failing one's server goes DOWN (503), the other
	// stays UP, in both.
	status := func(port, path string) int {
		var s tlsSeen
		getPath(dial(port), &s, "www.example", path)
		return s.Status
	}
	for _, ports := range [][]string{ha, vs} {
		deadline := time.Now().Add(bound)
		for status(ports[5], "/x") != http.StatusServiceUnavailable {
			if time.Now().After(deadline) {
				t.Fatalf("port %s: the server whose TLS check fails is still UP after %v", ports[5], bound)
			}
			time.Sleep(100 * time.Millisecond) // waiting for a check, bounded by deadline
		}
		if got := status(ports[5], "/good/x"); got != http.StatusOK {
			t.Errorf("port %s: the server whose TLS check passes answers %d, want 200", ports[5], got)
		}
	}

	// mode tcp: the same bytes come back through both, the client's
	// half-close passed on.
	payload := strings.Repeat("0123456789abcdef", 8192) // 128 KiB
	relay := func(port string) (string, error) {
		tc, s := handshake(port, &tls.Config{ServerName: "a.test"})
		if tc == nil {
			return "", errors.New("handshake failed")
		}
		if s.CN != "a.test" {
			return "", errors.New("certificate " + s.CN)
		}
		defer tc.Close()
		go func() {
			io.WriteString(tc, payload)
			tc.CloseWrite()
		}()
		b, err := io.ReadAll(tc)
		return string(b), err
	}
	for _, ports := range [][]string{ha, vs} {
		got, err := relay(ports[3])
		if err != nil || got != payload {
			t.Errorf("mode tcp ssl bind on port %s: got %d bytes (err %v), want the %d sent back", ports[3], len(got), err, len(payload))
		}
	}
}
