package httploop

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/haproxycfg"
)

// TestRefuse: each directive the loop lacks is named with its proxy and
// the line of the directive (or of its section); a configuration of
// what the loop has is taken.
func TestRefuse(t *testing.T) {
	const head = "defaults\n  mode http\n  timeout connect 1s\n  timeout client 5s\n  timeout server 5s\n"
	tests := []struct {
		name string
		fe   string // frontend fe's lines
		be   string // backend be's lines
		want string // "" when taken
	}{
		{name: "plain", fe: "  option forwardfor\n  option httplog\n", be: "  balance leastconn\n", want: ""},
		{name: "abns bind", fe: "  bind abns@loopfe\n", want: `:7: frontend fe: "bind abns@loopfe"`},
		{name: "acl, http-request, redirect, use_backend", fe: "  acl a path /a\n  http-request set-header X-A b\n  redirect location /b if { path /c }\n  use_backend be if a\n", want: ""},
		{name: "http-request return", fe: "  http-request return status 200\n", want: `:6: frontend fe: "http-request return"`},
		{name: "use_backend's backend", fe: "  use_backend other if { path /a }\n", be: "backend other\n  option http-server-close\n", want: `frontend fe (backend other): "option http-server-close"`},
		{name: "monitor-uri", fe: "  monitor-uri /ready\n", want: `:8: frontend fe: "monitor-uri"`},
		{name: "compression", fe: "  compression algo gzip\n", want: `frontend fe: "compression"`},
		{name: "backend rules", be: "  http-response set-header X-A b\n", want: `frontend fe (backend be): "http-response set-header"`},
		{name: "balance uri", be: "  balance uri\n", want: `:10: frontend fe (backend be): "balance uri"`},
		{name: "cookie", be: "  cookie SRV insert\n", want: `frontend fe (backend be): "cookie"`},
		{name: "http-server-close", be: "  option http-server-close\n", want: `frontend fe (backend be): "option http-server-close"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bind := "  bind 127.0.0.1:8080\n"
			if strings.Contains(tt.fe, "bind ") {
				bind = ""
			}
			conf := head + "frontend fe\n" + bind + tt.fe + "  default_backend be\nbackend be\n" + tt.be + "  server s1 127.0.0.1:9000\n"
			cfg, err := haproxycfg.Parse("h.cfg", []byte(conf))
			if err != nil {
				t.Skipf("the reader refuses the configuration: %v", err)
			}
			err = Check(cfg, Loop)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("got %v, want it to say %q", err, tt.want)
			}
			if err := Check(cfg, Auto); err != nil {
				t.Errorf("auto refuses: %v", err)
			}
		})
	}
}

// TestParseMode: --http-engine's values.
func TestParseMode(t *testing.T) {
	for in, want := range map[string]Mode{"": Std, "std": Std, "loop": Loop, "auto": Auto} {
		if got, err := ParseMode(in); err != nil || got != want {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	if _, err := ParseMode("fast"); err == nil || !strings.Contains(err.Error(), "accepted: std, loop or auto") {
		t.Errorf("ParseMode(fast): %v", err)
	}
}
