package servingcert

import (
	"context"
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
)

// TestSelfSigned: the certificate names the hosts given, and a client
// that pins it completes a handshake with a server using TLSConfig.
func TestSelfSigned(t *testing.T) {
	now := time.Date(2026, 11, 29, 4, 0, 0, 0, time.UTC)
	s, err := SelfSigned(now, "n1", "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	leaf := s.Leaf()
	if got := leaf.DNSNames; len(got) != 1 || got[0] != "n1" {
		t.Errorf("DNSNames = %v, want [n1]", got)
	}
	if got := leaf.IPAddresses; len(got) != 1 || !got[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("IPAddresses = %v, want [127.0.0.1]", got)
	}
	if !leaf.NotBefore.Before(now) || !leaf.NotAfter.Equal(now.Add(SelfSignedValidity)) {
		t.Errorf("valid %v to %v, want from before %v for %v", leaf.NotBefore, leaf.NotAfter, now, SelfSignedValidity)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", s.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.(*tls.Conn).Handshake()
			c.Close()
		}
	}()
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", Time: func() time.Time { return now }})
	if err != nil {
		t.Fatalf("handshake with the pinned self-signed certificate: %v", err)
	}
	c.Close()
	if _, err := tls.DialWithDialer(d, "tcp", ln.Addr().String(), &tls.Config{ServerName: "127.0.0.1"}); err == nil {
		t.Error("a client that does not pin the self-signed certificate completed a handshake")
	}
}

// writePair writes s's certificate and key as PEM files.
func writePair(t *testing.T, s *Source, certFile, keyFile string) {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(s.cert.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestFromFilesReload: the files' certificate is served; after both files
// change, the new one is; a broken pair keeps the one before; files that
// cannot be loaded at start are an error naming them.
func TestFromFilesReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if _, err := FromFiles(certFile, keyFile); err == nil || !strings.Contains(err.Error(), certFile) {
		t.Errorf("FromFiles of missing files: %v, want an error naming %s", err, certFile)
	}
	now := time.Now()
	a, err := SelfSigned(now, "a.example")
	if err != nil {
		t.Fatal(err)
	}
	b, err := SelfSigned(now, "b.example")
	if err != nil {
		t.Fatal(err)
	}
	writePair(t, a, certFile, keyFile)
	s, err := FromFiles(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	served := func() string {
		c, err := s.GetCertificate(nil)
		if err != nil {
			t.Fatal(err)
		}
		return c.Leaf.DNSNames[0]
	}
	if got := served(); got != "a.example" {
		t.Fatalf("served %s, want a.example", got)
	}
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		go s.Watch(ctx, clock.Real{}, time.Second, log)
		synctest.Wait()
		writePair(t, b, certFile, keyFile)
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if got := served(); got != "b.example" {
			t.Errorf("after both files changed: served %s, want b.example", got)
		}
		// The certificate of a with the key of b: refused, b kept.
		writePair(t, a, certFile, filepath.Join(dir, "unused.key"))
		time.Sleep(1500 * time.Millisecond)
		synctest.Wait()
		if got := served(); got != "b.example" {
			t.Errorf("after a mismatched pair: served %s, want b.example still", got)
		}
		cancel()
		synctest.Wait()
	})
}
