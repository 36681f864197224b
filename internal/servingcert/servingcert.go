package servingcert

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/filewatch"
)

// Source holds the certificate served; GetCertificate reads it, so a
// reload takes effect at the next handshake.
type Source struct {
	certFile, keyFile string // empty: self-signed

	mu   sync.RWMutex
	cert *tls.Certificate
}

// SelfSignedValidity is how long a self-signed certificate is valid.
const SelfSignedValidity = 365 * 24 * time.Hour

// SelfSigned makes an ECDSA P-256 certificate for hosts (DNS names or IP
// addresses), signed by its own key, valid from now-1h for
// SelfSignedValidity. A client verifies it only by pinning it; a scraper
// of a self-signed endpoint skips verification (as with
// kube-rbac-proxy's), and the bearer token still guards what it serves.
func SelfSigned(now time.Time, hosts ...string) (*Source, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	cn := "vipstack"
	if len(hosts) > 0 {
		cn = hosts[0]
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: cn, Organization: []string{"vipstack (self-signed)"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(SelfSignedValidity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // its own issuer, so that a client can pin it as a root
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else if h != "" {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("self-signed certificate: %w", err)
	}
	return &Source{cert: &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}}, nil
}

// FromFiles loads a PEM certificate (chain) and its key. It fails, naming
// the files, when they cannot be read or do not belong together.
func FromFiles(certFile, keyFile string) (*Source, error) {
	s := &Source{certFile: certFile, keyFile: keyFile}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// Reload reads the files again; on error the certificate served stays
// the one before. A self-signed Source has nothing to reload.
func (s *Source) Reload() error {
	if s.certFile == "" {
		return nil
	}
	c, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
	if err != nil {
		return fmt.Errorf("certificate %s with key %s: %w (want a PEM certificate and its PEM private key)", s.certFile, s.keyFile, err)
	}
	if c.Leaf == nil && len(c.Certificate) > 0 {
		if c.Leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return fmt.Errorf("certificate %s: %w", s.certFile, err)
		}
	}
	s.mu.Lock()
	s.cert = &c
	s.mu.Unlock()
	return nil
}

// Watch reloads the files whenever either changes (size or modification
// time, checked every interval; a Secret volume's update replaces both
// through a symbolic link), until ctx ends. A pair that does not load
// (one file written, the other not yet) is logged and the certificate
// before kept until the next change. A self-signed Source returns at once.
func (s *Source) Watch(ctx context.Context, clk clock.Clock, interval time.Duration, log *slog.Logger) {
	if s.certFile == "" {
		return
	}
	reload := func() {
		if err := s.Reload(); err != nil {
			log.Warn("serving certificate not reloaded; serving the one before", "err", err)
			return
		}
		log.Info("serving certificate reloaded", "cert", s.certFile, "subject", s.Leaf().Subject.String(), "not_after", s.Leaf().NotAfter)
	}
	var wg sync.WaitGroup
	for _, f := range []string{s.certFile, s.keyFile} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			filewatch.Watch(ctx, clk, f, interval, reload, log)
		}()
	}
	wg.Wait()
}

// Leaf is the certificate served now.
func (s *Source) Leaf() *x509.Certificate {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert.Leaf
}

// GetCertificate is tls.Config's GetCertificate.
func (s *Source) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cert, nil
}

// TLSConfig serves the Source's certificate with TLS 1.2 or later.
func (s *Source) TLSConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.GetCertificate}
}
