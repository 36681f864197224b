package lbconfig

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseCiphers(t *testing.T) {
	tests := []struct {
		list    string
		want    []uint16
		skipped []string
		wantErr string
	}{
		{list: "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305", want: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256}},
		{list: "AES256-SHA:AES256-SHA", want: []uint16{tls.TLS_RSA_WITH_AES_256_CBC_SHA}},
		{list: "ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256:EDH-RSA-DES-CBC3-SHA", want: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256},
			skipped: []string{"DHE-RSA-AES128-GCM-SHA256", "EDH-RSA-DES-CBC3-SHA"}},
		{list: "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384", wantErr: `names only suites with DHE key exchange, which Go's TLS does not implement, so none is left to offer`},
		{list: "ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256:CAMELLIA128-SHA", wantErr: `cipher "CAMELLIA128-SHA" is not one Go's TLS implements`},
		{list: "HIGH:!aNULL", wantErr: `cipher "HIGH" is not one Go's TLS implements`},
		{list: "ECDH+AESGCM", wantErr: `cipher "ECDH+AESGCM" is not one Go's TLS implements`},
		{list: "::", wantErr: `names no cipher`},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, skipped, err := ParseCiphers(tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.skipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
			for _, id := range got {
				if back, _ := CipherSuite(CipherName(id)); back != id {
					t.Errorf("CipherName(%#x) = %q does not map back", id, CipherName(id))
				}
			}
		})
	}
}

// TestCipherMapMatchesGo names, for each OpenSSL name, the suite Go
// must call it (IANA's name): a wrong constant in the map fails here.
func TestCipherMapMatchesGo(t *testing.T) {
	want := map[string]string{
		"ECDHE-ECDSA-AES128-GCM-SHA256": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
		"ECDHE-RSA-AES128-GCM-SHA256":   "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
		"ECDHE-ECDSA-AES256-GCM-SHA384": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
		"ECDHE-RSA-AES256-GCM-SHA384":   "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
		"ECDHE-ECDSA-CHACHA20-POLY1305": "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
		"ECDHE-RSA-CHACHA20-POLY1305":   "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
		"ECDHE-ECDSA-AES128-SHA256":     "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
		"ECDHE-RSA-AES128-SHA256":       "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
		"ECDHE-ECDSA-AES128-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
		"ECDHE-RSA-AES128-SHA":          "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
		"ECDHE-ECDSA-AES256-SHA":        "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
		"ECDHE-RSA-AES256-SHA":          "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
		"ECDHE-RSA-DES-CBC3-SHA":        "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
		"AES128-GCM-SHA256":             "TLS_RSA_WITH_AES_128_GCM_SHA256",
		"AES256-GCM-SHA384":             "TLS_RSA_WITH_AES_256_GCM_SHA384",
		"AES128-SHA256":                 "TLS_RSA_WITH_AES_128_CBC_SHA256",
		"AES128-SHA":                    "TLS_RSA_WITH_AES_128_CBC_SHA",
		"AES256-SHA":                    "TLS_RSA_WITH_AES_256_CBC_SHA",
		"DES-CBC3-SHA":                  "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
	}
	got := map[string]string{}
	for name, id := range opensslCiphers {
		got[name] = tls.CipherSuiteName(id)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("OpenSSL name -> Go's suite (-want +got):\n%s", diff)
	}
}

func TestCheckCipherSuites13(t *testing.T) {
	for _, tt := range []struct{ list, wantErr string }{
		{list: "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256"},
		{list: "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_256_GCM_SHA384:TLS_AES_128_GCM_SHA256"},
		{list: "TLS_AES_256_GCM_SHA384", wantErr: "leave out TLS_AES_128_GCM_SHA256, which Go's TLS 1.3 always enables"},
		{list: "TLS_AES_128_CCM_SHA256:TLS_AES_128_GCM_SHA256", wantErr: `TLS 1.3 cipher suite "TLS_AES_128_CCM_SHA256" is not one Go's TLS implements`},
	} {
		err := CheckCipherSuites13(tt.list)
		if (err == nil) != (tt.wantErr == "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%s: error = %v, want %q", tt.list, err, tt.wantErr)
		}
	}
}

func testCertPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "a.test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalPKCS8PrivateKey(key)
	return append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})...)
}

func TestValidateTLS(t *testing.T) {
	good := testCertPEM(t)
	tests := []struct {
		name   string
		change func(c *Config)
		want   string // "" valid
	}{
		{name: "ssl bind", change: func(c *Config) {
			c.Frontends[0].Binds[0].TLS = &BindTLS{Certs: []Cert{{Path: "a.pem", PEM: good}}, ALPN: []string{"h2"}}
		}},
		{name: "no certificate", change: func(c *Config) { c.Frontends[0].Binds[0].TLS = &BindTLS{} },
			want: "frontend main, bind [::]:9445: ssl without a certificate"},
		{name: "bad PEM", change: func(c *Config) {
			c.Frontends[0].Binds[0].TLS = &BindTLS{Certs: []Cert{{Path: "x.pem", PEM: []byte("junk")}}}
		}, want: "frontend main, bind [::]:9445: certificate x.pem: tls: failed to find any PEM data in certificate input"},
		{name: "minimum above maximum", change: func(c *Config) {
			c.Frontends[0].Binds[0].TLS = &BindTLS{Certs: []Cert{{Path: "a.pem", PEM: good}},
				TLSOptions: TLSOptions{MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS12}}
		}, want: "ssl-min-ver TLSv1.3 is above ssl-max-ver TLSv1.2"},
		{name: "unmapped cipher", change: func(c *Config) {
			c.Frontends[0].Binds[0].TLS = &BindTLS{Certs: []Cert{{Path: "a.pem", PEM: good}}, TLSOptions: TLSOptions{Ciphers: []uint16{0x1301}}}
		}, want: "cipher suite 0x1301 is not one vipstack maps"},
		{name: "empty alpn", change: func(c *Config) {
			c.Frontends[0].Binds[0].TLS = &BindTLS{Certs: []Cert{{Path: "a.pem", PEM: good}}, ALPN: []string{""}}
		}, want: `alpn protocol "" is empty`},
		{name: "ssl on a stats page", change: func(c *Config) {
			c.Stats[0].Binds[0].TLS = &BindTLS{Certs: []Cert{{Path: "a.pem", PEM: good}}}
		}, want: "ssl on a monitor or stats listener is not supported by vipstack"},
		{name: "server ssl in mode tcp", change: func(c *Config) {
			c.Backends[0].Servers[0].SSL = true
			c.Backends[0].Servers[0].Verify = false
		}, want: "ssl to a server of a mode tcp backend is not supported by vipstack"},
		{name: "server ssl verified without CA", change: func(c *Config) {
			c.Backends[0].HTTP = &HTTPBackend{}
			c.Backends[0].Servers[0].SSL, c.Backends[0].Servers[0].Verify = true, true
		}, want: "verify is enabled by default but no CA file specified"},
		{name: "server ca-file without a certificate", change: func(c *Config) {
			c.Backends[0].HTTP = &HTTPBackend{}
			s := &c.Backends[0].Servers[0]
			s.SSL, s.Verify, s.TLS = true, true, &ServerTLS{CAFile: "ca.pem", CA: []byte("junk")}
		}, want: "ca-file ca.pem holds no PEM certificate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(c)
			err := Validate(c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestFormatYAMLRefusesTLS: the YAML form cannot say TLS, so a
// configuration with it is refused rather than written without it.
func TestFormatYAMLRefusesTLS(t *testing.T) {
	for name, change := range map[string]func(c *Config){
		"ssl bind":   func(c *Config) { c.Frontends[0].Binds[0].TLS = &BindTLS{Crt: []string{"a.pem"}} },
		"ssl server": func(c *Config) { c.Backends[0].Servers[0].SSL = true },
		"server TLS": func(c *Config) { c.Backends[0].Servers[0].TLS = &ServerTLS{CAFile: "ca.pem"} },
	} {
		c := valid()
		change(c)
		if _, err := FormatYAML(c); !errors.Is(err, ErrYAMLTLS) {
			t.Errorf("%s: FormatYAML error = %v, want ErrYAMLTLS", name, err)
		}
	}
	if _, err := FormatYAML(valid()); err != nil {
		t.Errorf("without TLS: %v", err)
	}
}
