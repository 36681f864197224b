package tlsconf

import (
	"crypto/tls"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// TestPreferClientCiphers: with prefer-client-ciphers a bind takes, below
// TLS 1.3, the client's first suite it can use (enabled, allowed in the
// version, a curve in common for ECDHE, the certificate's key type),
// and leaves TLS 1.3 and a client with no usable suite to Go. The
// choice is checked against haproxy 2.6 by internal/lb's
// TestPreferClientCiphersMatchesHaproxy; here the hello's order is one
// Go's client would not send.
func TestPreferClientCiphers(t *testing.T) {
	ca := newCA(t) // ECDSA certificates
	bind := func(ciphers ...uint16) *tls.Config {
		c, err := Bind(&lbconfig.BindTLS{Certs: []lbconfig.Cert{{PEM: ca.issue(t, "a.test")}}, ALPN: []string{"h2"},
			TLSOptions: lbconfig.TLSOptions{MinVersion: tls.VersionTLS10, Ciphers: ciphers, PreferClientCiphers: true}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const (
		ecAES128  = tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
		ecAES256  = tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
		ecChaCha  = tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
		ecCBC     = tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA
		rsaAES256 = tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
	)
	x25519 := []tls.CurveID{tls.X25519}
	tests := []struct {
		name      string
		conf      *tls.Config
		hello     tls.ClientHelloInfo
		want      []uint16 // the suites offered to this client
		unchanged bool     // the bind's own configuration
	}{
		{name: "the client's first", conf: bind(),
			hello: tls.ClientHelloInfo{CipherSuites: []uint16{ecAES256, ecChaCha, ecAES128}, SupportedVersions: []uint16{tls.VersionTLS12}, SupportedCurves: x25519},
			want:  []uint16{ecAES256}},
		{name: "an RSA suite skipped for an ECDSA key", conf: bind(),
			hello: tls.ClientHelloInfo{CipherSuites: []uint16{rsaAES256, ecChaCha}, SupportedVersions: []uint16{tls.VersionTLS12}, SupportedCurves: x25519},
			want:  []uint16{ecChaCha}},
		{name: "only the list's suites", conf: bind(ecAES128, ecAES256),
			hello: tls.ClientHelloInfo{CipherSuites: []uint16{ecChaCha, ecAES256, ecAES128}, SupportedVersions: []uint16{tls.VersionTLS12}, SupportedCurves: x25519},
			want:  []uint16{ecAES256}},
		{name: "a TLS 1.2 suite skipped in TLS 1.0", conf: bind(),
			hello: tls.ClientHelloInfo{CipherSuites: []uint16{ecAES256, ecCBC}, SupportedVersions: []uint16{tls.VersionTLS10}, SupportedCurves: x25519},
			want:  []uint16{ecCBC}},
		{name: "no curve in common", conf: bind(),
			hello:     tls.ClientHelloInfo{SupportedProtos: []string{"h2"}, CipherSuites: []uint16{ecAES256}, SupportedVersions: []uint16{tls.VersionTLS12}},
			unchanged: true},
		{name: "TLS 1.3 stays Go's", conf: bind(),
			hello:     tls.ClientHelloInfo{SupportedProtos: []string{"h2"}, CipherSuites: []uint16{tls.TLS_AES_256_GCM_SHA384, ecAES256}, SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12}, SupportedCurves: x25519},
			unchanged: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.conf.GetConfigForClient(&tt.hello)
			if err != nil {
				t.Fatal(err)
			}
			if tt.unchanged {
				if got != tt.conf {
					t.Errorf("got a configuration of its own (suites %x), want the bind's", got.CipherSuites)
				}
				return
			}
			if len(got.CipherSuites) != 1 || got.CipherSuites[0] != tt.want[0] {
				t.Errorf("suites %x, want %x", got.CipherSuites, tt.want)
			}
		})
	}

	// The configuration handed out completes a handshake with that suite,
	// ALPN kept.
	conf := bind(ecChaCha, ecAES256)
	st, err := handshake(t, conf, &tls.Config{InsecureSkipVerify: true, MaxVersion: tls.VersionTLS12, NextProtos: []string{"h2"},
		CipherSuites: []uint16{ecChaCha}})
	if err != nil || st.CipherSuite != ecChaCha || st.NegotiatedProtocol != "h2" {
		t.Errorf("handshake: suite %x alpn %q err %v, want %x h2", st.CipherSuite, st.NegotiatedProtocol, err, ecChaCha)
	}
}
