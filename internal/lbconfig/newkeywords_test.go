package lbconfig

import (
	"strings"
	"testing"
)

// TestValidateNewKeywords: what Validate refuses of http-check send,
// send-proxy and a monitor's or stats page's maxconn, each naming the
// field and what is accepted, and what it lets through.
func TestValidateNewKeywords(t *testing.T) {
	tests := []struct {
		name string
		edit func(c *Config)
		want string // "" for valid
	}{
		{name: "check headers and body", edit: func(c *Config) {
			c.Backends[0].Check.Headers = []HTTPCheckHeader{{Name: "Host", Value: "api"}}
			c.Backends[0].Check.Body, c.Backends[0].Check.Connect, c.Backends[0].Check.ConnectPort = "ping", true, 8081
		}},
		{name: "check header name not a token", edit: func(c *Config) {
			c.Backends[0].Check.Headers = []HTTPCheckHeader{{Name: "X Y", Value: "v"}}
		}, want: `backend masters: HTTP check header name "X Y" is not an HTTP token (accepted: e.g. Host, X-Check)`},
		{name: "check header value with a line break", edit: func(c *Config) {
			c.Backends[0].Check.Headers = []HTTPCheckHeader{{Name: "X", Value: "a\r\nb: c"}}
		}, want: `backend masters: HTTP check header X: value "a\r\nb: c" has a line break or NUL (accepted: one line of text)`},
		{name: "check connect port out of range", edit: func(c *Config) { c.Backends[0].Check.Connect, c.Backends[0].Check.ConnectPort = true, 70000 },
			want: "backend masters: http-check connect port 70000 is out of range (accepted: 1..65535)"},
		{name: "headers without an HTTP check", edit: func(c *Config) {
			c.Backends[0].Check = HTTPCheck{Headers: []HTTPCheckHeader{{Name: "X", Value: "v"}}}
		}, want: "backend masters: HTTP check headers, body or connect port without a method (accepted: them with an HTTP check, option httpchk)"},
		{name: "send-proxy v2 without checks", edit: func(c *Config) {
			c.Backends[0].Servers[0].SendProxy, c.Backends[0].Servers[0].Check = 2, false
		}},
		{name: "send-proxy with checks on another port", edit: func(c *Config) {
			c.Backends[0].Servers[0].SendProxy, c.Backends[0].Servers[0].CheckPort = 1, 6444
		}},
		{name: "send-proxy version 3", edit: func(c *Config) {
			c.Backends[0].Servers[0].SendProxy, c.Backends[0].Servers[0].Check = 3, false
		}, want: "backend masters, server m0: PROXY protocol version 3 (accepted: 1 for send-proxy, 2 for send-proxy-v2)"},
		{name: "send-proxy with checks", edit: func(c *Config) { c.Backends[0].Servers[0].SendProxy = 1 }},
		{name: "send-proxy in mode http", edit: func(c *Config) {
			c.Backends[0].HTTP = &HTTPBackend{}
			c.Frontends[0].HTTP = &HTTPFrontend{}
			c.Backends[0].Servers[0].SendProxy, c.Backends[0].Servers[0].Check = 2, false
		}, want: "backend masters, server m0: send-proxy in a mode http backend is not supported by vipstack"},
		{name: "listen maxconn", edit: func(c *Config) { c.Stats[0].MaxConn, c.Monitors[0].MaxConn = 10, 5 }},
		{name: "listen maxconn negative", edit: func(c *Config) { c.Stats[0].MaxConn = -1 },
			want: "listen stats: maxconn -1 is negative (accepted: a number of clients, or 0 for vipstack's own cap)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			tt.edit(c)
			err := Validate(c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate error %v, want it to contain %q", err, tt.want)
			}
		})
	}
}
