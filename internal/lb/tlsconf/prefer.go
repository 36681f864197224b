package tlsconf

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"slices"
	"strings"
)

// prefer-client-ciphers: haproxy lets OpenSSL choose, of the suites both
// sides offer, the client's first. Go's server walks its own fixed
// order whatever the configuration's or the client's (crypto/tls 1.17
// and later), so for a handshake below TLS 1.3 the suite the client
// wants first is worked out here and the handshake is given a
// configuration offering that suite alone. TLS 1.3's suites Go does not
// let a program order: they stay Go's choice.

// preferClient wraps a bind's GetConfigForClient (next, nil when none):
// the configuration for a client, limited to its first usable suite.
func preferClient(base *tls.Config, next func(*tls.ClientHelloInfo) (*tls.Config, error)) func(*tls.ClientHelloInfo) (*tls.Config, error) {
	return func(h *tls.ClientHelloInfo) (*tls.Config, error) {
		c := base
		if next != nil {
			alt, err := next(h)
			if err != nil {
				return nil, err
			}
			if alt != nil {
				c = alt
			}
		}
		v := mutualVersion(c, h.SupportedVersions)
		if v == 0 || v >= tls.VersionTLS13 {
			return c, nil
		}
		cert, err := c.GetCertificate(h)
		if err != nil || cert == nil {
			return c, nil
		}
		id, ok := clientFirstSuite(c, h, cert, v)
		if !ok {
			return c, nil // no suite in common: Go fails the handshake as it would
		}
		one := c.Clone()
		one.GetConfigForClient = nil
		one.CipherSuites = []uint16{id}
		return one, nil
	}
}

// mutualVersion is the version Go's server negotiates: the first of the
// client's versions (its order) within c's range; 0 when none.
func mutualVersion(c *tls.Config, client []uint16) uint16 {
	for _, v := range client {
		if v >= c.MinVersion && v <= c.MaxVersion && v >= tls.VersionTLS10 && v <= tls.VersionTLS13 {
			return v
		}
	}
	return 0
}

// clientFirstSuite is the first of the client's suites that c enables,
// that version v may use, whose key exchange the client can do (ECDHE:
// a curve in common) and that the certificate's key can sign or
// decrypt.
func clientFirstSuite(c *tls.Config, h *tls.ClientHelloInfo, cert *tls.Certificate, v uint16) (uint16, bool) {
	suites := map[uint16]*tls.CipherSuite{}
	for _, s := range tls.CipherSuites() {
		suites[s.ID] = s
	}
	ecdhe := slices.ContainsFunc(h.SupportedCurves, func(id tls.CurveID) bool {
		return id == tls.X25519 || id == tls.CurveP256 || id == tls.CurveP384 || id == tls.CurveP521
	})
	ecKey := isECKey(cert)
	for _, id := range h.CipherSuites {
		s := suites[id]
		if s == nil || !enabled(c, s) || !slices.Contains(s.SupportedVersions, v) {
			continue
		}
		switch {
		case strings.HasPrefix(s.Name, "TLS_ECDHE_ECDSA_"):
			if !ecdhe || !ecKey {
				continue
			}
		case strings.HasPrefix(s.Name, "TLS_ECDHE_RSA_"):
			if !ecdhe || ecKey {
				continue
			}
		case strings.HasPrefix(s.Name, "TLS_RSA_"):
			if ecKey {
				continue
			}
		default:
			continue
		}
		return id, true
	}
	return 0, false
}

// enabled reports whether c offers suite s: one of its CipherSuites, or
// without a list one of Go's defaults (no RSA key exchange, no CBC with
// SHA-256; tls.CipherSuites leaves out the insecure ones).
func enabled(c *tls.Config, s *tls.CipherSuite) bool {
	if c.CipherSuites != nil {
		return slices.Contains(c.CipherSuites, s.ID)
	}
	return !strings.HasPrefix(s.Name, "TLS_RSA_") && !strings.HasSuffix(s.Name, "_CBC_SHA256")
}

// isECKey reports whether the certificate's key is ECDSA or Ed25519
// (ECDHE_ECDSA suites), not RSA.
func isECKey(cert *tls.Certificate) bool {
	signer, ok := cert.PrivateKey.(crypto.Signer)
	if !ok {
		return false
	}
	switch signer.Public().(type) {
	case *ecdsa.PublicKey, ed25519.PublicKey:
		return true
	case *rsa.PublicKey:
		return false
	}
	return false
}
