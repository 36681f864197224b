package haproxycfg

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// selfSigned returns a certificate for name and its key, as PEM, made
// in the test.
func selfSigned(t *testing.T, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: name}, DNSNames: []string{name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// tlsFiles writes the certificate files the TLS tests name under dir:
// a.pem (certificate and key), certs/ (b.pem and c.pem, c's key in
// c.pem.key), list.txt (a crt-list), ca.pem and nokey.pem.
func tlsFiles(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	w := func(name string, parts ...[]byte) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var b []byte
		for _, x := range parts {
			b = append(b, x...)
		}
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ac, ak := selfSigned(t, "a.test")
	bc, bk := selfSigned(t, "b.test")
	cc, ck := selfSigned(t, "c.test")
	w("a.pem", ac, ak)
	w("certs/b.pem", bc, bk)
	w("certs/c.pem", cc)
	w("certs/c.pem.key", ck)
	w("nokey.pem", ac)
	w("ca.pem", ac)
	w("list.txt", []byte("# certificates\n"+dir+"/a.pem www.a.test *.a.test !old.a.test\n\nb.pem\n"))
	return dir
}

func TestParseTLS(t *testing.T) {
	dir := tlsFiles(t)
	conf := func(global, bind, backend string) string {
		return "global\n" + global + "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
			"frontend fe\n  bind 127.0.0.1:47443 " + bind + "\n  default_backend be\n" +
			"backend be\n" + backend
	}
	const plainServer = "  server s1 127.0.0.1:47444\n"
	paths := func(c *lbconfig.Config) any {
		var out []string
		for _, ce := range c.Frontends[0].Binds[0].TLS.Certs {
			out = append(out, strings.TrimPrefix(ce.Path, dir)+" "+strings.Join(ce.SNI, ","))
		}
		return out
	}
	bindTLS := func(c *lbconfig.Config) any {
		b := *c.Frontends[0].Binds[0].TLS
		b.Certs = nil
		return b
	}
	server := func(c *lbconfig.Config) any {
		s := c.Backends[0].Servers[0]
		out := []any{s.SSL, s.Verify}
		if s.TLS != nil {
			x := *s.TLS
			x.CA = nil
			out = append(out, x)
		}
		return out
	}
	tests := []struct {
		name         string
		conf         string
		get          func(*lbconfig.Config) any
		want         any
		wantWarnings []string
	}{{
		name: "crt file, alpn, versions",
		conf: conf("", "ssl crt "+dir+"/a.pem alpn h2,http/1.1 ssl-min-ver TLSv1.3 no-tls-tickets", plainServer),
		get:  bindTLS,
		want: lbconfig.BindTLS{Crt: []string{dir + "/a.pem"}, ALPN: []string{"h2", "http/1.1"},
			TLSOptions: lbconfig.TLSOptions{MinVersion: tls.VersionTLS13, NoTickets: true}},
	}, {
		name: "crt directory in name order, key from FILE.key",
		conf: conf("", "ssl crt "+dir+"/certs", plainServer),
		get:  paths,
		want: []string{"/certs/b.pem ", "/certs/c.pem "},
	}, {
		name: "crt-list with SNI filters and crt-base",
		conf: conf("  crt-base "+dir+"/certs\n", "ssl crt-list "+dir+"/list.txt", plainServer),
		get:  paths,
		want: []string{"/a.pem www.a.test,*.a.test,!old.a.test", "/certs/b.pem "},
	}, {
		name: "two crt, relative to crt-base",
		conf: conf("  crt-base "+dir+"\n", "ssl crt a.pem crt certs/b.pem", plainServer),
		get:  paths,
		want: []string{"/a.pem ", "/certs/b.pem "},
	}, {
		name: "global defaults: options, ciphers, all TLS 1.3 suites",
		conf: conf("  ssl-default-bind-options no-sslv3 no-tlsv10 no-tlsv11 no-tlsv13 no-tls-tickets\n"+
			"  ssl-default-bind-ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256\n"+
			"  ssl-default-bind-ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256\n",
			"ssl crt "+dir+"/a.pem", plainServer),
		get: bindTLS,
		want: lbconfig.BindTLS{Crt: []string{dir + "/a.pem"}, TLSOptions: lbconfig.TLSOptions{MaxVersion: tls.VersionTLS12,
			Ciphers: []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, NoTickets: true}},
	}, {
		// OpenSSL leaves out the suites it cannot offer; vipstack does
		// the same with DHE's, and says so.
		name: "DHE suites left out with a warning",
		conf: conf("  ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384\n",
			"ssl crt "+dir+"/a.pem", "  server s1 127.0.0.1:47444 ssl verify none ciphers ECDHE-RSA-AES256-GCM-SHA384:EDH-RSA-DES-CBC3-SHA\n"),
		get: func(c *lbconfig.Config) any {
			return [][]uint16{c.Frontends[0].Binds[0].TLS.Ciphers, c.Backends[0].Servers[0].TLS.Ciphers}
		},
		want: [][]uint16{{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}, {tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}},
		wantWarnings: []string{
			"h.cfg:12: server s1 ciphers: vipstack cannot offer EDH-RSA-DES-CBC3-SHA (DHE key exchange, which Go's TLS does not implement); it offers the others of the list",
			"h.cfg:2: ssl-default-bind-ciphers: vipstack cannot offer DHE-RSA-AES128-GCM-SHA256, DHE-RSA-AES256-GCM-SHA384 (DHE key exchange, which Go's TLS does not implement); it offers the others of the list",
		},
	}, {
		name: "the bind's own settings over global's",
		conf: conf("  ssl-default-bind-options ssl-min-ver TLSv1.3\n", "ssl crt "+dir+"/a.pem ssl-min-ver TLSv1.0 force-tlsv12", plainServer),
		get:  bindTLS,
		want: lbconfig.BindTLS{Crt: []string{dir + "/a.pem"}, TLSOptions: lbconfig.TLSOptions{MaxVersion: tls.VersionTLS12}},
	}, {
		// As in haproxy, global's defaults apply only to ssl binds and
		// servers: OpenShift's and Debian's stock lines, which Go cannot
		// carry out, are no error without one.
		name: "global defaults Go cannot carry out, nothing they apply to",
		conf: conf("  ssl-default-bind-ciphers PROFILE=SYSTEM\n  ssl-default-bind-options prefer-client-ciphers\n"+
			"  ssl-default-server-ciphers ECDH+AESGCM:DHE-RSA-AES128-GCM-SHA256\n", "", plainServer),
		get: func(c *lbconfig.Config) any {
			return c.Frontends[0].Binds[0].TLS == nil && c.Backends[0].Servers[0].TLS == nil
		},
		want: true,
	}, {
		name:         "prefer-client-ciphers in global, the 069 layout",
		conf:         conf("  ssl-default-bind-options prefer-client-ciphers no-sslv3 no-tlsv10 no-tlsv11 no-tls-tickets\n", "ssl crt "+dir+"/a.pem", plainServer),
		get:          bindTLS,
		want:         lbconfig.BindTLS{Crt: []string{dir + "/a.pem"}, TLSOptions: lbconfig.TLSOptions{NoTickets: true, PreferClientCiphers: true}},
		wantWarnings: []string{"h.cfg:2: ssl-default-bind-options: prefer-client-ciphers: vipstack takes the client's order for TLS 1.2 and older suites, as haproxy does; for TLS 1.3, Go's TLS takes its own (AES-128-GCM, AES-256-GCM, then ChaCha20; ChaCha20 first for a client that lists it first), so a client preferring AES-256-GCM gets AES-128-GCM where haproxy gives it AES-256-GCM"},
	}, {
		name:         "prefer-client-ciphers on a bind",
		conf:         conf("", "ssl crt "+dir+"/a.pem prefer-client-ciphers ssl-max-ver TLSv1.2", plainServer),
		get:          bindTLS,
		want:         lbconfig.BindTLS{Crt: []string{dir + "/a.pem"}, TLSOptions: lbconfig.TLSOptions{MaxVersion: tls.VersionTLS12, PreferClientCiphers: true}},
		wantWarnings: []string{"h.cfg:8: bind: prefer-client-ciphers: vipstack takes the client's order for TLS 1.2 and older suites, as haproxy does; for TLS 1.3, Go's TLS takes its own (AES-128-GCM, AES-256-GCM, then ChaCha20; ChaCha20 first for a client that lists it first), so a client preferring AES-256-GCM gets AES-128-GCM where haproxy gives it AES-256-GCM"},
	}, {
		name:         "alpn without ssl",
		conf:         conf("", "alpn h2,http/1.1", plainServer),
		get:          func(c *lbconfig.Config) any { return c.Frontends[0].Binds[0].TLS == nil },
		want:         true,
		wantWarnings: []string{"h.cfg:8: bind: alpn applies to ssl binds, which this one is not: it changes nothing here"},
	}, {
		name: "server ssl verify none",
		conf: conf("", "", "  server s1 127.0.0.1:47444 ssl verify none\n"),
		get:  server,
		want: []any{true, false},
	}, {
		name: "server ssl with ca-file, sni, alpn, global options",
		conf: conf("  ca-base "+dir+"\n  ssl-default-server-options ssl-min-ver TLSv1.3\n", "",
			"  server s1 127.0.0.1:47444 ssl ca-file ca.pem sni str(origin.test) alpn http/1.1 check\n"),
		get: server,
		want: []any{true, true, lbconfig.ServerTLS{CAFile: dir + "/ca.pem", SNI: "origin.test", ALPN: []string{"http/1.1"},
			TLSOptions: lbconfig.TLSOptions{MinVersion: tls.VersionTLS13}}},
	}, {
		name: "default-server ssl",
		conf: conf("", "", "  default-server ssl verify none ssl-max-ver TLSv1.2\n  server s1 127.0.0.1:47444\n"),
		get:  server,
		want: []any{true, false, lbconfig.ServerTLS{TLSOptions: lbconfig.TLSOptions{MaxVersion: tls.VersionTLS12}}},
	}, {
		name: "ssl_fc_sni acl",
		conf: strings.Replace(conf("", "ssl crt "+dir+"/a.pem", plainServer), "  default_backend be\n",
			"  http-request set-header X-SNI %[ssl_fc_sni]\n  use_backend be if { ssl_fc_sni -i a.test }\n  default_backend be\n", 1),
		get:  func(c *lbconfig.Config) any { return c.Frontends[0].HTTP.UseBackends[0].Cond.Or[0][0].Anon.Fetch },
		want: "ssl_fc_sni",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("h.cfg", []byte(tt.conf))
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, tt.conf)
			}
			if diff := cmp.Diff(tt.want, tt.get(cfg), cmpOpts); diff != "" {
				t.Errorf("value mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWarnings, cfg.Warnings); diff != "" {
				t.Errorf("warnings mismatch (-want +got):\n%s", diff)
			}
			if ok, out := haproxyCheck(t, []byte(tt.conf)); !ok {
				t.Errorf("haproxy -c rejects it:\n%s", out)
			}
		})
	}
}

func TestParseTLSErrors(t *testing.T) {
	dir := tlsFiles(t)
	conf := func(global, bind, backend string) string {
		return "global\n" + global + "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
			"frontend fe\n  bind 127.0.0.1:47443 " + bind + "\n  default_backend be\n" +
			"backend be\n" + backend
	}
	const plainServer = "  server s1 127.0.0.1:47444\n"
	a := "ssl crt " + dir + "/a.pem"
	tests := []struct {
		name          string
		conf          string
		want          string
		haproxyAlso   bool // haproxy -c rejects it too
		haproxyReason string
	}{{
		name: "missing certificate file", conf: conf("", "ssl crt /nonexistent/x.pem", plainServer),
		want:        `h.cfg:8: bind: unable to stat SSL certificate from file "/nonexistent/x.pem": no such file or directory`,
		haproxyAlso: true, haproxyReason: "unable to stat SSL certificate from file '/nonexistent/x.pem'",
	}, {
		name: "missing crt-list", conf: conf("", "ssl crt-list /nonexistent/l.txt", plainServer),
		want:        `h.cfg:8: bind: 'crt-list' : cannot open file "/nonexistent/l.txt": no such file or directory`,
		haproxyAlso: true, haproxyReason: "cannot open file '/nonexistent/l.txt'",
	}, {
		name: "certificate without its key", conf: conf("", "ssl crt "+dir+"/nokey.pem", plainServer),
		want:        `h.cfg:8: bind: unable to load SSL certificate from PEM file "` + dir + `/nokey.pem": tls: found a certificate rather than a key in the PEM for the private key (accepted: a PEM file with the certificate chain and its private key, or the key in ` + dir + `/nokey.pem.key)`,
		haproxyAlso: true,
	}, {
		name: "a device as certificate", conf: conf("", "ssl crt /dev/zero", plainServer),
		want: `h.cfg:8: bind: unable to load SSL certificate from file "/dev/zero": not a regular file`,
	}, {
		name: "ssl without crt", conf: conf("", "ssl", plainServer),
		want:        `h.cfg:8: bind: ssl without a certificate (accepted: crt FILE|DIR or crt-list FILE)`,
		haproxyAlso: true,
	}, {
		name: "unknown version", conf: conf("", a+" ssl-min-ver TLSv1.4", plainServer),
		want:        `h.cfg:8: bind parameter ssl-min-ver "TLSv1.4" is not a TLS version vipstack speaks (accepted: TLSv1.0, TLSv1.1, TLSv1.2, TLSv1.3; Go has no SSLv3)`,
		haproxyAlso: true,
	}, {
		name: "minimum above maximum", conf: conf("", a+" ssl-min-ver TLSv1.3 ssl-max-ver TLSv1.2", plainServer),
		want: `h.cfg:8: bind: no TLS version is left enabled (accepted: ssl-min-ver at or below ssl-max-ver, not every version disabled)`,
	}, {
		name: "a cipher Go lacks", conf: conf("  ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256:CAMELLIA128-SHA\n", a, plainServer),
		want: `h.cfg:2: ssl-default-bind-ciphers: cipher "CAMELLIA128-SHA" is not one Go's TLS implements (accepted: OpenSSL names of the suites it does: ` + lbconfig.CipherNames() + `)`,
	}, {
		name: "only DHE suites", conf: conf("", a+" ciphers DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384", plainServer),
		want: `h.cfg:8: bind parameter ciphers: cipher list "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384" names only suites with DHE key exchange, which Go's TLS does not implement, so none is left to offer (accepted: a list naming at least one of ` + lbconfig.CipherNames() + `)`,
	}, {
		name: "a global default applied to a server", conf: conf("  ssl-default-server-ciphers PROFILE=SYSTEM\n", a, "  server s1 127.0.0.1:47444 ssl verify none\n"),
		want: `h.cfg:2: ssl-default-server-ciphers: cipher "PROFILE=SYSTEM" is not one Go's TLS implements (accepted: OpenSSL names of the suites it does: ` + lbconfig.CipherNames() + `)`,
	}, {
		name: "TLS 1.3 suites left out", conf: conf("", a+" ciphersuites TLS_AES_128_GCM_SHA256", plainServer),
		want: `h.cfg:8: bind parameter ciphersuites: TLS 1.3 cipher suites "TLS_AES_128_GCM_SHA256" leave out TLS_AES_256_GCM_SHA384, which Go's TLS 1.3 always enables (accepted: a list naming all of TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256)`,
	}, {
		name: "prefer-client-ciphers for servers", conf: conf("  ssl-default-server-options prefer-client-ciphers\n", a, "  server s1 127.0.0.1:47444 ssl verify none\n"),
		want:        `h.cfg:2: ssl-default-server-options: option "prefer-client-ciphers" is not supported by vipstack (accepted: ` + tlsOptionWords + `)`,
		haproxyAlso: true,
	}, {
		name: "server ssl verified without ca-file", conf: conf("", a, "  server s1 127.0.0.1:47444 ssl\n"),
		want:        `h.cfg:11: backend be, server s1: verify is enabled by default but no CA file specified. If you're running on a LAN where you're certain to trust the server's certificate, please set an explicit 'verify none' statement on the 'server' line (accepted: ca-file FILE, or verify none)`,
		haproxyAlso: true, haproxyReason: "verify is enabled by default but no CA file specified",
	}, {
		name: "missing ca-file", conf: conf("", a, "  server s1 127.0.0.1:47444 ssl ca-file /nonexistent/ca.pem\n"),
		want:        `h.cfg:11: backend be, server s1: unable to load ca-file "/nonexistent/ca.pem": no such file or directory`,
		haproxyAlso: true,
	}, {
		name: "sni expression", conf: conf("", a, "  server s1 127.0.0.1:47444 ssl verify none sni req.hdr(host)\n"),
		want: `h.cfg:11: backend be, server s1: sni "req.hdr(host)" is not supported by vipstack (accepted: sni str(NAME), a fixed server name)`,
	}, {
		name: "server ssl in mode tcp",
		conf: strings.Replace(conf("", a, "  mode tcp\n  server s1 127.0.0.1:47444 ssl verify none\n"), "frontend fe\n", "frontend fe\n  mode tcp\n", 1),
		want: `h.cfg:13: backend be, server s1: ssl to a server of a mode tcp backend is not supported by vipstack (accepted: ssl on the servers of mode http backends)`,
	}, {
		name: "crt-list options", conf: conf("", "ssl crt-list "+writeFile(t, "[alpn h2] "+dir+"/a.pem\n"), plainServer),
		want: `h.cfg:8: bind: crt-list ` + "LIST" + ` line 1: ssl options in brackets are not supported by vipstack (accepted: CERTFILE [SNI-FILTER...])`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse("h.cfg", []byte(tt.conf))
			if cfg != nil || err == nil {
				t.Fatalf("Parse accepted:\n%s", tt.conf)
			}
			want := tt.want
			if strings.Contains(want, "LIST") {
				f := strings.Fields(tt.conf)
				for i, w := range f {
					if w == "crt-list" {
						want = strings.Replace(want, "LIST", f[i+1], 1)
					}
				}
			}
			if got := err.Error(); got != want {
				t.Errorf("Parse error:\n got %s\nwant %s", got, want)
			}
			if !tt.haproxyAlso {
				return
			}
			if ok, out := haproxyCheck(t, []byte(tt.conf)); ok || !strings.Contains(out, tt.haproxyReason) {
				t.Errorf("haproxy -c: valid=%v, want a rejection saying %q; output:\n%s", ok, tt.haproxyReason, out)
			}
		})
	}
}

func writeFile(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "list.txt")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
