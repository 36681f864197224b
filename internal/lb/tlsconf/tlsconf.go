// Package tlsconf turns the TLS of the lbconfig model (a bind's `ssl crt
// ...`, a server's `ssl`) into crypto/tls configurations that behave as
// haproxy 2.6's OpenSSL contexts do where a client can tell: the
// certificate chosen by SNI (exact names before wildcards, the first
// certificate by default), ALPN offered only when the client shares a
// protocol (haproxy goes on without ALPN where Go would abort), the
// versions and cipher suites configured (below TLS 1.3 in the client's
// order with prefer-client-ciphers), and a server's certificate
// verified against its ca-file and, with sni, that name.
//
// It imports only lbconfig; internal/lb uses it for its TLS listeners and
// health checks, internal/lb/httpproxy for its TLS servers.
package tlsconf

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// cert is one certificate with the names it is served for.
type cert struct {
	c                tls.Certificate
	names, wild, not []string // exact names, wildcard suffixes (".example.com"), excluded names
}

// store picks a bind's certificate for a client's SNI.
type store struct{ certs []cert }

// Bind returns the server configuration of an ssl bind.
func Bind(t *lbconfig.BindTLS) (*tls.Config, error) {
	st := &store{}
	for _, c := range t.Certs {
		tc, err := lbconfig.LoadCertPEM(c.PEM)
		if err != nil {
			return nil, fmt.Errorf("certificate %s: %w", c.Path, err)
		}
		ce := cert{c: tc}
		names := c.SNI
		if len(names) == 0 {
			names = append([]string{tc.Leaf.Subject.CommonName}, tc.Leaf.DNSNames...)
		}
		for _, n := range names {
			n = strings.ToLower(n)
			switch {
			case n == "":
			case strings.HasPrefix(n, "!"):
				ce.not = append(ce.not, n[1:])
			case strings.HasPrefix(n, "*."):
				ce.wild = append(ce.wild, n[1:])
			default:
				ce.names = append(ce.names, n)
			}
		}
		st.certs = append(st.certs, ce)
	}
	if len(st.certs) == 0 {
		return nil, errors.New("no certificate")
	}
	base := &tls.Config{
		GetCertificate:         st.pick,
		NextProtos:             slices.Clone(t.ALPN),
		SessionTicketsDisabled: t.NoTickets,
	}
	options(base, t.TLSOptions)
	if len(t.ALPN) > 0 {
		// haproxy (OpenSSL's callback answering NOACK) goes on without
		// ALPN when the client shares no protocol; Go's server would
		// abort the handshake.
		plain := base.Clone()
		plain.NextProtos = nil
		base.GetConfigForClient = func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			for _, p := range h.SupportedProtos {
				if slices.Contains(t.ALPN, p) {
					return nil, nil
				}
			}
			return plain, nil
		}
	}
	if t.PreferClientCiphers {
		base.GetConfigForClient = preferClient(base, base.GetConfigForClient)
	}
	return base, nil
}

func options(c *tls.Config, o lbconfig.TLSOptions) {
	c.MinVersion, c.MaxVersion = o.MinVersion, o.MaxVersion
	if c.MinVersion == 0 {
		c.MinVersion = lbconfig.DefaultTLSMinVersion
	}
	if c.MaxVersion == 0 {
		c.MaxVersion = tls.VersionTLS13
	}
	c.CipherSuites = slices.Clone(o.Ciphers)
}

// pick chooses the certificate for the client's server name as haproxy
// does: one whose names hold it exactly, else one with a matching
// wildcard, else the first (the default); among several, the first the
// client supports (an ECDSA and an RSA certificate of one name).
func (st *store) pick(h *tls.ClientHelloInfo) (*tls.Certificate, error) {
	sni := strings.ToLower(strings.TrimSuffix(h.ServerName, "."))
	if sni != "" {
		var exact, wild []*cert
		for i := range st.certs {
			c := &st.certs[i]
			if slices.Contains(c.not, sni) {
				continue
			}
			if slices.Contains(c.names, sni) {
				exact = append(exact, c)
				continue
			}
			if j := strings.IndexByte(sni, '.'); j > 0 && slices.Contains(c.wild, sni[j:]) {
				wild = append(wild, c)
			}
		}
		for _, set := range [][]*cert{exact, wild} {
			for _, c := range set {
				if h.SupportsCertificate(&c.c) == nil {
					return &c.c, nil
				}
			}
			if len(set) > 0 {
				return &set[0].c, nil
			}
		}
	}
	return &st.certs[0].c, nil
}

// Server returns the client configuration for a server's TLS (`ssl`, or
// `check-ssl`): its certificate verified, unless verify is off, against
// its ca-file (the system's pool without one) and, when sni names the
// server, against that name, as haproxy verifies without verifyhost.
func Server(s lbconfig.Server) *tls.Config {
	t := s.TLS
	if t == nil {
		t = &lbconfig.ServerTLS{}
	}
	c := &tls.Config{
		ServerName:             t.SNI,
		NextProtos:             slices.Clone(t.ALPN),
		SessionTicketsDisabled: t.NoTickets,
		ClientSessionCache:     tls.NewLRUClientSessionCache(8),
		// Verified below, by VerifyConnection: haproxy checks the
		// chain, and the name only when one is sent.
		InsecureSkipVerify: true, // #nosec G402
	}
	options(c, t.TLSOptions)
	if !s.Verify {
		return c
	}
	var roots *x509.CertPool
	if len(t.CA) > 0 {
		roots = x509.NewCertPool()
		roots.AppendCertsFromPEM(t.CA)
	}
	name := t.SNI
	c.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("tls: the server sent no certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, DNSName: name})
		return err
	}
	return c
}

// Live is a listener's TLS configuration, replaced in place on reload:
// a client's handshake takes the one in force when it starts.
type Live struct{ cur atomic.Pointer[tls.Config] }

// Set puts c in force for the next handshakes.
func (l *Live) Set(c *tls.Config) { l.cur.Store(c) }

// Config is the configuration for tls.NewListener or tls.Server: it
// hands each client the one in force.
func (l *Live) Config() *tls.Config {
	return &tls.Config{GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		c := l.cur.Load()
		if c.GetConfigForClient != nil {
			if alt, err := c.GetConfigForClient(h); alt != nil || err != nil {
				return alt, err
			}
		}
		return c, nil
	}}
}
