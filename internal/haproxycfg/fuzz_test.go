package haproxycfg

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

// errorLine is the shape of every rejection: "file:line: msg", or
// "file: msg" for the whole file.
var errorLine = regexp.MustCompile(`^testdata/fuzz\.cfg(:\d+)?: .+`)

// FuzzParse checks that Parse never panics, returns exactly one of a
// config and an error, that every error line names the file, and that an
// accepted config is valid again after a trip through its YAML form. The
// seed corpus is the testdata configs and a few odd lines.
func FuzzParse(f *testing.F) {
	for _, name := range testdataConfigs {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(base))
	f.Add([]byte(base + "listen s\n bind localhost:1,[::1]:2 v4v6\n mode http\n stats auth 'a b':\"c\\\"d\"\n stats refresh 1d\n"))
	f.Add([]byte("frontend \"\\x41\"#\n\tbind :1\r\n.if\n\x00userlist u\n"))
	// Connection logs: defaults' and a frontend's log-format, quoting and
	// escapes, option tcplog, dontlognull, a bad variable.
	f.Add([]byte(base + "defaults\n log /dev/log local0\n log-format \"%ci:%cp -> %fi:%fp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq\"\n option dontlognull\nfrontend f2\n bind :3\n log-format %{+Q}ci\\ %%\\ %U\n option tcplog\n"))
	f.Add([]byte(base + "defaults\n log global\n log-format '%[src] %zz %{+X}t %'\n"))

	// mode http: acls, conditions with anonymous acls, ! and ||,
	// http-request rules, redirects, cookies, stats in a frontend.
	f.Add([]byte(httpSeed))
	f.Add([]byte("defaults\n mode http\nfrontend f\n bind :1\n acl a hdr_beg(host) -i -m beg x\n use_backend b if !a || { path_reg ^/[a-z]+$ } a\n" +
		" http-request set-header X %[src]:%[req.hdr(host)] unless { src 10.0.0.0/8 }\n redirect prefix / code 308 if { ssl_fc }\n" +
		"backend b\n cookie S insert indirect nocache\n balance hdr(User-Agent)\n server s 127.0.0.1:2 cookie s\n"))

	// TLS: global defaults, ssl binds and servers (the files they name
	// do not exist: errors naming them).
	f.Add([]byte("global\n ssl-default-bind-options no-tlsv10 ssl-min-ver TLSv1.2\n ssl-default-bind-ciphers ECDHE-RSA-AES128-GCM-SHA256\n crt-base /nonexistent\n" +
		"defaults\n mode http\nfrontend f\n bind :1 ssl crt a.pem alpn h2,http/1.1 no-tls-tickets\n bind :2 ssl crt-list l.txt\n default_backend b\n" +
		"backend b\n server s 127.0.0.1:2 ssl verify none sni str(x) ca-file c.pem\n"))

	// Variables (testEnv), tune lines, set-var and section ids.
	f.Add([]byte("global\n tune.bufsize \"${VS_UNSET-32768}\"\n tune.maxrewrite 0\n" + base +
		"listen l\n bind \"127.0.0.1:${VS_UNSET-3}\"\n id 7\n server s \"${VS_WORDS[*]}\" ${.LINE}\n"))
	f.Add([]byte("defaults\n mode http\nfrontend f\n bind :1\n id 2\n acl a var(txn.h) -m reg ^x\n http-request set-var(txn.h) hdr(host)\n" +
		" http-request set-header X \"%[var(txn.h)]$VS_A\"\n use_backend b if a\nbackend b\n server s 127.0.0.1:2\n"))

	// tcp-request rules and http-request lines in mode tcp.
	f.Add([]byte(base + "listen l\n bind :4\n acl n src 10.212.232.0\n tcp-request connection set-src src,ipmask(21,64)\n" +
		" tcp-request connection reject if n\n tcp-request connection silent-drop unless { src_port 1024: } || !{ dst 10.0.0.0/8 }\n" +
		" tcp-request content accept if { dst_port 80:90 }\n tcp-request connection set-dst ipv6(::1)\n http-request use-service prometheus-exporter\n server s 127.0.0.1:2\n"))

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseWith("testdata/fuzz.cfg", data, Options{LookupEnv: lookupTest})
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse returned config %v and error %v; want exactly one", cfg != nil, err)
		}
		if err != nil {
			for _, l := range strings.Split(err.Error(), "\n") {
				if !errorLine.MatchString(l) && !strings.HasPrefix(l, "... and ") {
					t.Fatalf("error line %q does not name the file", l)
				}
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v does not wrap an *Error", err)
			}
			return
		}
		y, err := lbconfig.FormatYAML(cfg)
		if errors.Is(err, lbconfig.ErrYAMLHTTP) || errors.Is(err, lbconfig.ErrYAMLTLS) || errors.Is(err, lbconfig.ErrYAMLTCPRequest) {
			return
		}
		if err != nil {
			t.Fatalf("FormatYAML: %v", err)
		}
		if _, err := lbconfig.ParseYAML("fuzz.yaml", y); err != nil {
			t.Fatalf("the YAML form of an accepted config is rejected: %v\n%s", err, y)
		}
	})
}
