package tlsconf

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

type ca struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newCA(t *testing.T) *ca {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := x509.ParseCertificate(der)
	return &ca{cert: c, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func (c *ca) issue(t *testing.T, cn string, sans ...string) []byte {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: cn}, DNSNames: sans,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.cert, &key.PublicKey, c.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
}

// handshake runs a client against a server over net.Pipe and returns
// the client's view (nil error when both ends completed).
func handshake(t *testing.T, srv, cli *tls.Config) (tls.ConnectionState, error) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	a.SetDeadline(time.Now().Add(2 * time.Second))
	b.SetDeadline(time.Now().Add(2 * time.Second))
	errc := make(chan error, 1)
	go func() {
		s := tls.Server(a, srv)
		err := s.Handshake()
		if err != nil {
			a.Close()
		}
		errc <- err
	}()
	c := tls.Client(b, cli)
	err := c.Handshake()
	if err != nil {
		b.Close()
	}
	serr := <-errc
	if err == nil {
		err = serr
	}
	return c.ConnectionState(), err
}

func TestBindPicksCertificate(t *testing.T) {
	ca := newCA(t)
	conf, err := Bind(&lbconfig.BindTLS{Certs: []lbconfig.Cert{
		{Path: "default.pem", PEM: ca.issue(t, "default.test")},
		{Path: "wild.pem", PEM: ca.issue(t, "wild", "*.example.test")},
		{Path: "exact.pem", PEM: ca.issue(t, "exact", "www.example.test")},
		{Path: "list.pem", PEM: ca.issue(t, "listed"), SNI: []string{"api.test", "*.api.test", "!old.api.test"}},
	}, ALPN: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		sni      string
		alpn     []string
		wantCN   string
		wantALPN string
	}{
		{sni: "", wantCN: "default.test"},
		{sni: "unknown.test", wantCN: "default.test"},
		{sni: "www.example.test", wantCN: "exact"},        // exact before the wildcard
		{sni: "WWW.Example.Test.", wantCN: "exact"},       // case and a final dot
		{sni: "mail.example.test", wantCN: "wild"},        // one label
		{sni: "a.b.example.test", wantCN: "default.test"}, // a wildcard covers one label only
		{sni: "x.api.test", wantCN: "listed"},
		{sni: "old.api.test", wantCN: "default.test"}, // excluded by the crt-list filter
		{sni: "api.test", alpn: []string{"http/1.1", "h2"}, wantCN: "listed", wantALPN: "h2"},
		{sni: "api.test", alpn: []string{"http/1.1"}, wantCN: "listed", wantALPN: "http/1.1"},
		{sni: "api.test", alpn: []string{"imap"}, wantCN: "listed", wantALPN: ""}, // no overlap: no ALPN, no abort
	} {
		st, err := handshake(t, conf, &tls.Config{ServerName: tt.sni, NextProtos: tt.alpn, InsecureSkipVerify: true})
		if err != nil {
			t.Errorf("sni %q alpn %v: %v", tt.sni, tt.alpn, err)
			continue
		}
		got := []string{st.PeerCertificates[0].Subject.CommonName, st.NegotiatedProtocol}
		if diff := cmp.Diff([]string{tt.wantCN, tt.wantALPN}, got); diff != "" {
			t.Errorf("sni %q alpn %v: (-want +got):\n%s", tt.sni, tt.alpn, diff)
		}
	}
}

func TestBindVersions(t *testing.T) {
	ca := newCA(t)
	conf, err := Bind(&lbconfig.BindTLS{Certs: []lbconfig.Cert{{PEM: ca.issue(t, "a")}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := handshake(t, conf, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS10, MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("TLS 1.1 accepted; haproxy 2.6's default minimum is TLSv1.2")
	}
	only12, err := Bind(&lbconfig.BindTLS{Certs: []lbconfig.Cert{{PEM: ca.issue(t, "a")}}, TLSOptions: lbconfig.TLSOptions{MaxVersion: tls.VersionTLS12}})
	if err != nil {
		t.Fatal(err)
	}
	st, err := handshake(t, only12, &tls.Config{InsecureSkipVerify: true})
	if err != nil || st.Version != tls.VersionTLS12 {
		t.Errorf("ssl-max-ver TLSv1.2: version %#x, err %v", st.Version, err)
	}
}

func TestServerVerifies(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	leaf := ca.issue(t, "origin", "origin.test")
	cert, err := tls.X509KeyPair(leaf, leaf)
	if err != nil {
		t.Fatal(err)
	}
	srv := &tls.Config{Certificates: []tls.Certificate{cert}}
	for _, tt := range []struct {
		name string
		s    lbconfig.Server
		ok   bool
	}{
		{"verify none", lbconfig.Server{}, true},
		{"ca-file", lbconfig.Server{Verify: true, TLS: &lbconfig.ServerTLS{CA: ca.pem}}, true},
		{"ca-file and the right sni", lbconfig.Server{Verify: true, TLS: &lbconfig.ServerTLS{CA: ca.pem, SNI: "origin.test"}}, true},
		{"ca-file and another sni", lbconfig.Server{Verify: true, TLS: &lbconfig.ServerTLS{CA: ca.pem, SNI: "other.test"}}, false},
		{"another CA", lbconfig.Server{Verify: true, TLS: &lbconfig.ServerTLS{CA: other.pem}}, false},
	} {
		_, err := handshake(t, srv, Server(tt.s))
		if (err == nil) != tt.ok {
			t.Errorf("%s: err = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

func TestLiveReplaces(t *testing.T) {
	ca := newCA(t)
	one, _ := Bind(&lbconfig.BindTLS{Certs: []lbconfig.Cert{{PEM: ca.issue(t, "one")}}, ALPN: []string{"h2"}})
	two, _ := Bind(&lbconfig.BindTLS{Certs: []lbconfig.Cert{{PEM: ca.issue(t, "two")}}})
	var l Live
	l.Set(one)
	conf := l.Config()
	for _, want := range []string{"one", "two"} {
		st, err := handshake(t, conf, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"x"}})
		if err != nil || st.PeerCertificates[0].Subject.CommonName != want {
			t.Errorf("got %v (err %v), want %s", st.PeerCertificates, err, want)
		}
		l.Set(two)
	}
}
