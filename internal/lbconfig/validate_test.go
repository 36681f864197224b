package lbconfig

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var ap = netip.MustParseAddrPort

// valid returns a small valid Config with no defaults filled in.
func valid() *Config {
	return &Config{
		Timeouts:  Timeouts{Connect: time.Second, Client: time.Minute, Server: time.Minute},
		Frontends: []Frontend{{Name: "main", Binds: []Bind{{Addr: ap("[::]:9445"), V4V6: true}}, Backend: "masters"}},
		Backends: []Backend{{Name: "masters", Check: HTTPCheck{Method: "GET", URI: "/readyz"}, Servers: []Server{
			{Name: "m0", Addr: ap("198.18.0.10:6443"), Check: true, CheckSSL: true},
			{Name: "m1", Addr: ap("[fd00::11]:6443"), Weight: 5, Check: true, Inter: time.Second, Fall: 2, Rise: 3},
		}}},
		Monitors: []Monitor{{Name: "ready", Binds: []Bind{{Addr: ap("127.0.0.1:50936")}}, URI: "/haproxy_ready"}},
		Stats:    []Stats{{Name: "stats", Binds: []Bind{{Addr: ap("127.0.0.1:50000"), Host: "localhost"}}, URI: "/stats"}},
	}
}

func TestValidateDefaults(t *testing.T) {
	c := valid()
	if err := Validate(c); err != nil {
		t.Fatal(err)
	}
	want := valid()
	want.MaxConn, want.Retries = DefaultMaxConn, DefaultRetries
	want.Backends[0].Balance = RoundRobin
	want.Backends[0].Check = HTTPCheck{Method: "GET", URI: "/readyz", Version: "HTTP/1.0"}
	want.Backends[0].Servers[0] = Server{Name: "m0", Addr: ap("198.18.0.10:6443"), Weight: 1, Check: true, CheckSSL: true,
		Inter: 2 * time.Second, Fall: 3, Rise: 2}
	want.Backends[0].Servers[1] = Server{Name: "m1", Addr: ap("[fd00::11]:6443"), Weight: 5, Check: true,
		Inter: time.Second, Fall: 2, Rise: 3}
	if diff := cmp.Diff(want, c, cmp.Comparer(func(a, b netip.AddrPort) bool { return a == b })); diff != "" {
		t.Errorf("Validate mismatch (-want +got):\n%s", diff)
	}

	// Validating again changes nothing and adds no warning twice.
	c.Backends[0].Servers = append(c.Backends[0].Servers, Server{Name: "m2", Addr: ap("198.18.0.12:6443"), CheckSSL: true})
	for range 2 {
		if err := Validate(c); err != nil {
			t.Fatal(err)
		}
	}
	wantWarnings := []string{
		"backend masters, server m2: check-ssl without check: the server is not health checked",
		"backend masters, server m2: no check: backend masters's HTTP check is not run on this server, which is always up",
	}
	if diff := cmp.Diff(wantWarnings, c.Warnings); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
}

func TestValidateMaxConn(t *testing.T) {
	tests := []struct {
		name                   string
		maxConn, globalMaxConn int
		want                   int
	}{
		{name: "default", want: DefaultMaxConn},
		{name: "global", globalMaxConn: 4000, want: 4000},
		{name: "defaults wins", maxConn: 20000, globalMaxConn: 4000, want: 20000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			c.MaxConn, c.GlobalMaxConn = tt.maxConn, tt.globalMaxConn
			if err := Validate(c); err != nil {
				t.Fatal(err)
			}
			if c.MaxConn != tt.want {
				t.Errorf("MaxConn = %d, want %d", c.MaxConn, tt.want)
			}
		})
	}
}

func TestValidateErrors(t *testing.T) {
	srv := func(c *Config) *Server { return &c.Backends[0].Servers[0] }
	tests := []struct {
		name   string
		change func(c *Config)
		want   string
	}{
		{
			name:   "nothing to listen on",
			change: func(c *Config) { c.Frontends, c.Monitors, c.Stats = nil, nil, nil },
			want:   "no frontend, monitor or stats section: nothing to listen on (accepted: at least one frontend, or a stats socket in global)",
		},
		{
			name:   "negative numbers",
			change: func(c *Config) { c.MaxConn, c.GlobalMaxConn, c.Retries, c.Timeouts.Queue = -1, -2, -3, -time.Second },
			want: "global: maxconn -2 is negative (accepted: 1 or more, or 0 for not set)\n" +
				"defaults: maxconn -1 is negative (accepted: 1 or more, or 0 for the default)\n" +
				"defaults: retries -3 is negative (accepted: 1 or more, or 0 for the default 3)\n" +
				"defaults: timeout queue -1s is negative (accepted: a positive duration, or 0 for none)",
		},
		{
			name: "position from Source",
			change: func(c *Config) {
				c.Retries = -1
				c.Source = map[string]string{"defaults/retries": "h.cfg:7", "defaults": "h.cfg:1"}
			},
			want: "h.cfg:7: defaults: retries -1 is negative (accepted: 1 or more, or 0 for the default 3)",
		},
		{
			name:   "section position when the item has none",
			change: func(c *Config) { srv(c).Weight = 300; c.Source = map[string]string{"backend masters": "lb.yaml:12"} },
			want:   "lb.yaml:12: backend masters, server m0: weight 300 is out of range (accepted: 1..256)",
		},
		{
			name:   "empty frontend name",
			change: func(c *Config) { c.Frontends[0].Name = "" },
			want:   "frontend name is empty (accepted: letters, digits, '-', '_', '.', ':')",
		},
		{
			name:   "bad character in a name",
			change: func(c *Config) { c.Monitors[0].Name = "a b" },
			want:   `listen a b: character ' ' is not permitted in listen name "a b" (accepted: letters, digits, '-', '_', '.', ':')`,
		},
		{
			name: "control character and invalid UTF-8 in names",
			change: func(c *Config) {
				c.Monitors[0].Name = "a\nb"
				c.Stats[0].Name = "\xff"
			},
			want: `listen a\nb: character '\n' is not permitted in listen name "a\nb" (accepted: letters, digits, '-', '_', '.', ':')` + "\n" +
				`listen \xff: byte 0xff is not permitted in listen name "\xff" (accepted: letters, digits, '-', '_', '.', ':')`,
		},
		{
			name: "two frontends with one name",
			change: func(c *Config) {
				c.Frontends = append(c.Frontends, Frontend{Name: "main", Binds: []Bind{{Addr: ap("127.0.0.1:1")}}, Backend: "masters"})
			},
			want: "frontend main: has the same name as frontend main (names must be unique)",
		},
		{
			name:   "listen with the name of a backend",
			change: func(c *Config) { c.Stats[0].Name = "masters" },
			want:   "listen masters: has the same name as backend masters (names must be unique)",
		},
		{
			name:   "frontend and backend may share a name",
			change: func(c *Config) { c.Backends[0].Name, c.Frontends[0].Backend = "main", "main" },
			want:   "",
		},
		{
			name:   "no bind",
			change: func(c *Config) { c.Frontends[0].Binds = nil },
			want:   "frontend main: has no bind (accepted: at least one bind ADDRESS:PORT)",
		},
		{
			name: "bad binds",
			change: func(c *Config) {
				c.Frontends[0].Binds = []Bind{{}, {Addr: ap("0.0.0.0:0")}, {Addr: ap("[fe80::1%eth0]:1")},
					{Addr: ap("127.0.0.1:2"), Host: "example.com"}, {Addr: ap("198.18.0.1:3"), Host: "localhost"}}
			},
			want: "frontend main, bind 0: address is not set (accepted: IP:PORT)\n" +
				"frontend main, bind 0.0.0.0:0: port 0 (accepted: 1..65535)\n" +
				"frontend main, bind [fe80::1%eth0]:1: IPv6 zones are not supported by vipstack (accepted: an address without %zone)\n" +
				`frontend main, bind example.com:2: host "example.com" is not supported by vipstack (accepted: localhost, or an IP address)` + "\n" +
				"frontend main, bind localhost:3: host localhost with the address 198.18.0.1 (accepted: 127.0.0.1, which the readers give localhost)",
		},
		{
			name:   "address bound twice",
			change: func(c *Config) { c.Stats[0].Binds[0] = Bind{Addr: ap("127.0.0.1:50936")} },
			want:   "listen stats, bind 127.0.0.1:50936: 127.0.0.1:50936 is also bound by listen ready (accepted: each address once)",
		},
		{
			name:   "no default backend",
			change: func(c *Config) { c.Frontends[0].Backend = "" },
			want:   "frontend main: has no default_backend (accepted: the name of a backend: masters)",
		},
		{
			name:   "missing backend",
			change: func(c *Config) { c.Frontends[0].Backend = "workers" },
			want:   `frontend main: default_backend "workers" is not a backend (accepted: masters)`,
		},
		{
			name:   "no backends at all",
			change: func(c *Config) { c.Backends = nil },
			want:   `frontend main: default_backend "masters" is not a backend (accepted: none defined)`,
		},
		{
			name:   "balance",
			change: func(c *Config) { c.Backends[0].Balance = "uri" },
			want:   `backend masters: balance uri needs mode http (accepted in mode tcp: roundrobin, static-rr, leastconn, first, source, random)`,
		},
		{
			name:   "check URI without method",
			change: func(c *Config) { c.Backends[0].Check = HTTPCheck{URI: "/readyz"} },
			want:   "backend masters: HTTP check with a URI or version but no method (accepted: a method such as GET for HTTP checks, or no method, URI and version for TCP connect checks)",
		},
		{
			name:   "bad check",
			change: func(c *Config) { c.Backends[0].Check = HTTPCheck{Method: "GE T", URI: "/a b", Version: "HTTP/2"} },
			want: `backend masters: HTTP check method "GE T" is not an HTTP method token (accepted: e.g. GET, HEAD, OPTIONS)` + "\n" +
				`backend masters: HTTP check URI "/a b" contains blanks or control characters (accepted: a request target such as /readyz)` + "\n" +
				`backend masters: HTTP check version "HTTP/2" is not supported by vipstack (accepted: HTTP/1.0, HTTP/1.1)`,
		},
		{
			name: "server names",
			change: func(c *Config) {
				c.Backends[0].Servers[1].Name = "m0"
				c.Backends[0].Servers = append(c.Backends[0].Servers, Server{Addr: ap("1.2.3.4:5")})
			},
			want: "backend masters, server m0: is defined twice in the backend (accepted: unique server names)\n" +
				"backend masters: server name is empty (accepted: letters, digits, '-', '_', '.', ':')",
		},
		{
			name:   "server without address",
			change: func(c *Config) { srv(c).Addr = netip.AddrPort{} },
			want:   "backend masters, server m0: has no address (accepted: IP:PORT)",
		},
		{
			name:   "server port 0",
			change: func(c *Config) { srv(c).Addr = ap("198.18.0.10:0") },
			want:   "backend masters, server m0: address 198.18.0.10:0 has port 0 (accepted: 1..65535)",
		},
		{
			name:   "server numbers",
			change: func(c *Config) { s := srv(c); s.Weight, s.Inter, s.Fall, s.Rise = -1, time.Microsecond, -1, -2 },
			want: "backend masters, server m0: weight -1 is out of range (accepted: 1..256)\n" +
				"backend masters, server m0: inter 1µs is below 1ms (accepted: 1ms or more)\n" +
				"backend masters, server m0: fall -1 is negative (accepted: 1 or more)\n" +
				"backend masters, server m0: rise -2 is negative (accepted: 1 or more)",
		},
		{
			name:   "monitor URI",
			change: func(c *Config) { c.Monitors[0].URI = "ready" },
			want:   `listen ready: monitor-uri "ready" does not start with / (accepted: a path such as /healthz)`,
		},
		{
			name: "stats",
			change: func(c *Config) {
				s := &c.Stats[0]
				s.URI, s.Refresh, s.Users = "", -time.Second, []UserPass{{}, {User: "a:b"}}
			},
			want: "listen stats: stats uri is not set (accepted: a path such as /healthz)\n" +
				"listen stats: stats refresh -1s is negative (accepted: a positive duration, or 0 for none)\n" +
				"listen stats: stats auth 0 has an empty user name (accepted: USER:PASSWORD)\n" +
				`listen stats: stats auth user "a:b" contains ':' or a line break (accepted: USER:PASSWORD, the user without ':')`,
		},
		{
			name: "errors beyond 20 are counted",
			change: func(c *Config) {
				for i := range 25 {
					c.Backends[0].Servers = append(c.Backends[0].Servers, Server{Name: "x" + string(rune('a'+i)), Weight: 999, Addr: ap("1.2.3.4:5")})
				}
			},
			want: "backend masters, server xa: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xb: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xc: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xd: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xe: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xf: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xg: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xh: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xi: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xj: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xk: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xl: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xm: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xn: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xo: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xp: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xq: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xr: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xs: weight 999 is out of range (accepted: 1..256)\n" +
				"backend masters, server xt: weight 999 is out of range (accepted: 1..256)\n" +
				"... and 5 more errors",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.change(c)
			err := Validate(c)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Fatalf("Validate error:\n got %s\nwant %s", got, tt.want)
			}
			if err == nil {
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("error %v does not wrap a *FieldError", err)
			}
			if strings.HasSuffix(tt.want, "more errors") {
				var more MoreErrors
				if !errors.As(err, &more) || more != 5 {
					t.Errorf("error %v: want MoreErrors(5), got %d", err, more)
				}
			}
		})
	}
}

func TestFieldErrorKeyword(t *testing.T) {
	c := valid()
	c.Backends[0].Servers[0].Weight = 300
	c.Source = map[string]string{"backend masters/server m0": "h.cfg:10"}
	var fe *FieldError
	if err := Validate(c); !errors.As(err, &fe) {
		t.Fatalf("Validate = %v, want a *FieldError", err)
	}
	want := &FieldError{Pos: "h.cfg:10", Field: "backend masters, server m0", Keyword: "weight", Msg: "weight 300 is out of range (accepted: 1..256)"}
	if diff := cmp.Diff(want, fe); diff != "" {
		t.Errorf("FieldError mismatch (-want +got):\n%s", diff)
	}
}
