package lbconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// TLS (haproxy's `bind ... ssl`, `server ... ssl`): the model of what a
// bind terminates and a server originates, as internal/lb carries it out
// with Go's crypto/tls.

// BindTLS is `bind ... ssl`: the bind terminates TLS and its frontend
// sees the plaintext.
type BindTLS struct {
	// Crt are the `crt` arguments as written (crt-base applied): a PEM
	// file, or a directory whose files are each one.
	Crt []string
	// CrtList are the `crt-list` files as written (crt-base applied).
	CrtList []string
	// Certs are the certificates Crt and CrtList name, in haproxy's
	// order: the first is the one a client gets whose SNI no other
	// certificate matches (haproxy's default certificate).
	Certs []Cert
	// ALPN are the protocols offered by ALPN (`alpn h2,http/1.1`), in
	// preference order; none: no ALPN, as haproxy 2.6 without alpn.
	ALPN []string
	TLSOptions
}

// Cert is one certificate a bind serves.
type Cert struct {
	// Path is the PEM file it was read from (its key from Path + ".key"
	// when the PEM holds none, as haproxy 2.6 loads it).
	Path string
	// SNI are a crt-list line's filters: the server names it is served
	// for ("*.example.com" matches one label; "!name" excludes a name);
	// none: the names of the certificate (its CN and DNS SANs).
	SNI []string
	// PEM is the certificate chain and the private key.
	PEM []byte
}

// TLSOptions are the protocol settings of a bind or a server
// (`ssl-min-ver`, `ssl-max-ver`, `no-tlsv1x`, `ciphers`, `no-tls-tickets`,
// and global's ssl-default-bind-* / ssl-default-server-*).
type TLSOptions struct {
	// MinVersion and MaxVersion are tls.VersionTLS10..VersionTLS13;
	// 0: haproxy 2.6's defaults, TLSv1.2 and TLSv1.3.
	MinVersion, MaxVersion uint16
	// Ciphers are the TLS 1.2 (and older) cipher suites in preference
	// order (`ciphers`, OpenSSL names mapped by CipherSuite); none: Go's
	// defaults. TLS 1.3's suites cannot be chosen in Go (see
	// CipherSuites13).
	Ciphers []uint16
	// NoTickets turns session tickets off (`no-tls-tickets`).
	NoTickets bool
	// PreferClientCiphers is a bind's `prefer-client-ciphers`: of the
	// TLS 1.2 (and older) suites both sides offer, the client's first is
	// chosen. TLS 1.3's choice stays Go's own (see CipherSuites13).
	PreferClientCiphers bool
}

// ServerTLS is `server ... ssl`: connections to the server are TLS.
type ServerTLS struct {
	// CAFile is `ca-file` as written (ca-base applied), CA its PEM: the
	// roots the server's certificate is verified against (with
	// Server.Verify).
	CAFile string
	CA     []byte
	// SNI is the server name sent (`sni str(NAME)`); empty: none.
	SNI string
	// ALPN are the protocols offered to the server (`alpn`); none: no
	// ALPN.
	ALPN []string
	TLSOptions
}

// TLSVersions are haproxy's names of the versions, for ssl-min-ver and
// ssl-max-ver. SSLv3 is left out: Go has never spoken it.
var TLSVersions = map[string]uint16{
	"TLSv1.0": tls.VersionTLS10, "TLSv1.1": tls.VersionTLS11,
	"TLSv1.2": tls.VersionTLS12, "TLSv1.3": tls.VersionTLS13,
}

// TLSVersionName is v's haproxy name ("TLSv1.2").
func TLSVersionName(v uint16) string {
	for n, x := range TLSVersions {
		if x == v {
			return n
		}
	}
	return fmt.Sprintf("0x%04x", v)
}

// DefaultTLSMinVersion is haproxy 2.6's lowest version for binds and
// servers without ssl-min-ver or no-tlsv1x.
const DefaultTLSMinVersion = tls.VersionTLS12

// opensslCiphers maps OpenSSL's names of the TLS 1.2 and older cipher
// suites to Go's, for those Go implements.
var opensslCiphers = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-DES-CBC3-SHA":        tls.TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"DES-CBC3-SHA":                  tls.TLS_RSA_WITH_3DES_EDE_CBC_SHA,
}

// CipherSuites13 are TLS 1.3's suites as OpenSSL names them: Go's TLS
// 1.3 always enables all three, so a ciphersuites list is accepted only
// when it names all of them.
var CipherSuites13 = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}

// CipherSuite returns Go's id of the OpenSSL cipher name (as in
// `ciphers ECDHE-RSA-AES128-GCM-SHA256:...`).
func CipherSuite(name string) (uint16, bool) {
	id, ok := opensslCiphers[name]
	return id, ok
}

// CipherName is the OpenSSL name of Go's suite id.
func CipherName(id uint16) string {
	for n, x := range opensslCiphers {
		if x == id {
			return n
		}
	}
	return fmt.Sprintf("0x%04x", id)
}

// CipherNames lists the OpenSSL names CipherSuite knows, for messages.
func CipherNames() string {
	names := make([]string, 0, len(opensslCiphers))
	for n := range opensslCiphers {
		names = append(names, n)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// ParseCiphers maps an OpenSSL cipher list ("A:B:C") to Go's suites. A
// suite with finite-field Diffie-Hellman key exchange (OpenSSL's DHE-*
// and EDH-* names), which Go's TLS does not implement, is left out and
// returned in skipped, as OpenSSL leaves out a suite it cannot offer
// while others remain; the list is an error when nothing else is left.
// Any other name Go does not implement, or an OpenSSL keyword or
// operator (HIGH, !aNULL, +, @STRENGTH), is an error naming it:
// vipstack takes explicit names only.
func ParseCiphers(list string) (ids []uint16, skipped []string, err error) {
	for _, n := range strings.FieldsFunc(list, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		id, ok := opensslCiphers[n]
		switch {
		case !ok && isFiniteFieldDH(n):
			skipped = append(skipped, n)
			continue
		case !ok:
			return nil, nil, fmt.Errorf("cipher %q is not one Go's TLS implements (accepted: OpenSSL names of the suites it does: %s)", n, CipherNames())
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	switch {
	case len(ids) == 0 && len(skipped) > 0:
		return nil, nil, fmt.Errorf("cipher list %q names only suites with DHE key exchange, which Go's TLS does not implement, so none is left to offer (accepted: a list naming at least one of %s)", list, CipherNames())
	case len(ids) == 0:
		return nil, nil, fmt.Errorf("cipher list %q names no cipher (accepted: OpenSSL names separated by ':')", list)
	}
	return ids, skipped, nil
}

// isFiniteFieldDH reports whether n is OpenSSL's name of a suite with
// finite-field (non-elliptic) ephemeral Diffie-Hellman key exchange.
func isFiniteFieldDH(n string) bool {
	return strings.HasPrefix(n, "DHE-") || strings.HasPrefix(n, "EDH-")
}

// CheckCipherSuites13 checks a TLS 1.3 `ciphersuites` list: Go enables
// all three of TLS 1.3's suites, always, so a list must name each of
// them (in any order; Go chooses the order).
func CheckCipherSuites13(list string) error {
	names := strings.Split(list, ":")
	for _, n := range names {
		if !slices.Contains(CipherSuites13, n) {
			return fmt.Errorf("TLS 1.3 cipher suite %q is not one Go's TLS implements (accepted: %s)", n, strings.Join(CipherSuites13, ":"))
		}
	}
	for _, want := range CipherSuites13 {
		if !slices.Contains(names, want) {
			return fmt.Errorf("TLS 1.3 cipher suites %q leave out %s, which Go's TLS 1.3 always enables (accepted: a list naming all of %s)",
				list, want, strings.Join(CipherSuites13, ":"))
		}
	}
	return nil
}

// LoadCertPEM checks that pem holds a certificate chain and its
// private key, as tls.X509KeyPair reads them, and returns the leaf.
func LoadCertPEM(data []byte) (tls.Certificate, error) {
	c, err := tls.X509KeyPair(data, data)
	if err != nil {
		return tls.Certificate{}, err
	}
	if c.Leaf == nil {
		leaf, err := x509.ParseCertificate(c.Certificate[0])
		if err != nil {
			return tls.Certificate{}, err
		}
		c.Leaf = leaf
	}
	return c, nil
}

// HasPEMKey reports whether data holds a PEM private key block.
func HasPEMKey(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if strings.HasSuffix(b.Type, "PRIVATE KEY") {
			return true
		}
	}
}

// HasPEMCert reports whether data holds a PEM certificate block.
func HasPEMCert(data []byte) bool {
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			return false
		}
		if b.Type == "CERTIFICATE" {
			return true
		}
	}
}

// tlsOptions checks o's versions and ciphers.
func (v *validator) tlsOptions(pos, field string, o *TLSOptions) {
	for _, ver := range []uint16{o.MinVersion, o.MaxVersion} {
		if ver != 0 && (ver < tls.VersionTLS10 || ver > tls.VersionTLS13) {
			v.fail(pos, field, "ssl-min-ver", "TLS version 0x%04x is not one vipstack speaks (accepted: TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3)", ver)
		}
	}
	if o.MinVersion != 0 && o.MaxVersion != 0 && o.MinVersion > o.MaxVersion {
		v.fail(pos, field, "ssl-max-ver", "ssl-min-ver %s is above ssl-max-ver %s (accepted: a minimum at or below the maximum)",
			TLSVersionName(o.MinVersion), TLSVersionName(o.MaxVersion))
	}
	for _, id := range o.Ciphers {
		if CipherName(id)[0] == '0' {
			v.fail(pos, field, "ciphers", "cipher suite 0x%04x is not one vipstack maps (accepted: %s)", id, CipherNames())
		}
	}
}

// bindTLS checks a bind's TLS.
func (v *validator) bindTLS(pos, field string, t *BindTLS) {
	if len(t.Certs) == 0 {
		v.fail(pos, field, "ssl", "ssl without a certificate (accepted: crt FILE|DIR or crt-list FILE naming at least one PEM)")
	}
	for _, c := range t.Certs {
		if _, err := LoadCertPEM(c.PEM); err != nil {
			v.fail(pos, field, "crt", "certificate %s: %v (accepted: a PEM file with the certificate chain and its private key)", c.Path, err)
		}
	}
	for _, p := range t.ALPN {
		if p == "" || len(p) > 255 {
			v.fail(pos, field, "alpn", "alpn protocol %q is empty or longer than 255 bytes (accepted: names such as h2,http/1.1)", p)
		}
	}
	v.tlsOptions(pos, field, &t.TLSOptions)
}

// serverTLS checks a server's TLS.
func (v *validator) serverTLS(pos, field string, s *Server) {
	t := s.TLS
	if t == nil {
		t = &ServerTLS{}
	}
	if len(t.CA) > 0 {
		if !x509.NewCertPool().AppendCertsFromPEM(t.CA) {
			v.fail(pos, field, "ca-file", "ca-file %s holds no PEM certificate (accepted: a PEM file of CA certificates)", t.CAFile)
		}
	}
	if s.SSL && s.Verify && len(t.CA) == 0 {
		// haproxy 2.6's words.
		v.fail(pos, field, "verify", "verify is enabled by default but no CA file specified. If you're running on a LAN where you're certain "+
			"to trust the server's certificate, please set an explicit 'verify none' statement on the 'server' line (accepted: ca-file FILE, or verify none)")
	}
	for _, p := range t.ALPN {
		if p == "" || len(p) > 255 {
			v.fail(pos, field, "alpn", "alpn protocol %q is empty or longer than 255 bytes (accepted: names such as h2,http/1.1)", p)
		}
	}
	if t.PreferClientCiphers {
		v.fail(pos, field, "prefer-client-ciphers", "prefer-client-ciphers applies to binds, where vipstack is the TLS server (accepted: no PreferClientCiphers on a server)")
	}
	v.tlsOptions(pos, field, &t.TLSOptions)
}

// ErrYAMLTLS is FormatYAML's refusal of a configuration with TLS, which
// the YAML form cannot say.
var ErrYAMLTLS = errors.New("the YAML form has no TLS (accepted there: binds without ssl, servers without ssl or TLS settings; write haproxy.cfg instead)")

func noTLSInYAML(c *Config) error {
	for _, f := range c.Frontends {
		for _, b := range f.Binds {
			if b.TLS != nil {
				return fmt.Errorf("frontend %s: %w", f.Name, ErrYAMLTLS)
			}
		}
	}
	for _, b := range c.Backends {
		for _, s := range b.Servers {
			if s.SSL || s.TLS != nil {
				return fmt.Errorf("backend %s, server %s: %w", b.Name, s.Name, ErrYAMLTLS)
			}
		}
	}
	return nil
}
