package haproxycfg

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lbconfig"
)

const statsListen = "listen stats\n  bind 127.0.0.1:47019\n  mode http\n  stats enable\n  stats uri /stats\n"

// TestUseServicePrometheus: the exporter's line in a stats listen, with
// the conditions accepted.
func TestUseServicePrometheus(t *testing.T) {
	prom := func(c *lbconfig.Config) any { return c.Stats[0].Prometheus }
	runAccept(t, []acceptCase{
		{
			name: "if path",
			conf: func(t *testing.T) string {
				return base + statsListen + "  http-request use-service prometheus-exporter if { path /metrics }\n"
			},
			get:  prom,
			want: &lbconfig.PrometheusService{Paths: []string{"/metrics"}},
		},
		{
			name: "unless two paths, before stats enable",
			conf: func(t *testing.T) string {
				return base + "listen stats\n  bind 127.0.0.1:47019\n  mode http\n  http-request use-service prometheus-exporter unless { path /a /b }\n  stats enable\n"
			},
			get:  prom,
			want: &lbconfig.PrometheusService{Paths: []string{"/a", "/b"}, Unless: true},
		},
		{
			name: "no condition",
			conf: func(t *testing.T) string {
				return base + statsListen + "  http-request use-service prometheus-exporter\n"
			},
			get:  prom,
			want: &lbconfig.PrometheusService{},
		},
	})
}

// ruleView is what TestUseServiceRule compares of a section's rules.
// (Cond written back as "if|unless TERM..." with "||" between
// alternatives.)
type ruleView struct{ Action, Name, At, Cond string }

func rulesOf(h *lbconfig.HTTPProxy) []ruleView {
	var out []ruleView
	for _, r := range h.Rules {
		out = append(out, ruleView{r.Action, r.Name, r.At, condText(r.Cond)})
	}
	return out
}

func condText(c *lbconfig.Cond) string {
	if c == nil {
		return ""
	}
	w := []string{"if"}
	if c.Unless {
		w[0] = "unless"
	}
	for i, and := range c.Or {
		if i > 0 {
			w = append(w, "||")
		}
		for _, t := range and {
			neg := ""
			if t.Neg {
				neg = "!"
			}
			if t.Anon == nil {
				w = append(w, neg+t.Name)
				continue
			}
			w = append(w, neg+"{ "+t.Anon.Keyword+" "+strings.Join(t.Anon.Values, " ")+" }")
		}
	}
	return strings.Join(w, " ")
}

// TestUseServiceRule: outside a stats listen, `http-request use-service
// prometheus-exporter` is an http-request rule of the section, in its
// place among the others and under any condition: in a listen without
// servers (which is then a frontend and a backend with no server, as
// haproxy runs it), a listen with servers, a frontend and a backend.
func TestUseServiceRule(t *testing.T) {
	const http = "defaults\n  mode http\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n" // 1-5
	type listenView struct {
		Rules    []ruleView
		Backend  string
		Servers  int
		Warnings int
	}
	runAccept(t, []acceptCase{
		{
			name: "listen without servers (corpus 044's shape)",
			conf: func(t *testing.T) string {
				return base + "listen metrics\n  bind 127.0.0.1:47019\n  mode http\n  http-request use-service prometheus-exporter if { path /metrics }\n"
			},
			get: func(c *lbconfig.Config) any {
				fe, be := c.Frontends[1], c.Backends[1]
				return listenView{rulesOf(&fe.HTTP.HTTPProxy), fe.Backend, len(be.Servers), len(c.Warnings)}
			},
			want: listenView{Rules: []ruleView{{"use-service", lbconfig.PrometheusExporter, "h.cfg:14", "if { path /metrics }"}}, Backend: "metrics"},
		},
		{
			name: "listen with servers, between other rules",
			conf: func(t *testing.T) string {
				return http + "listen web\n  bind 127.0.0.1:47019\n  http-request set-header X-A 1\n  acl m path_beg /m\n" +
					"  http-request use-service prometheus-exporter if m !{ src 10.0.0.0/8 }\n  http-request deny\n  server s 127.0.0.1:47012\n"
			},
			get: func(c *lbconfig.Config) any {
				return listenView{rulesOf(&c.Frontends[0].HTTP.HTTPProxy), c.Frontends[0].Backend, len(c.Backends[0].Servers), len(c.Warnings)}
			},
			want: listenView{Rules: []ruleView{
				{"set-header", "X-A", "h.cfg:8", ""},
				{"use-service", lbconfig.PrometheusExporter, "h.cfg:10", "if m !{ src 10.0.0.0/8 }"},
				{"deny", "", "h.cfg:11", ""},
			}, Backend: "web", Servers: 1},
		},
		{
			name: "frontend without a condition, and a backend",
			conf: func(t *testing.T) string {
				return http + "frontend fe\n  bind 127.0.0.1:47019\n  http-request use-service prometheus-exporter\n  default_backend be\n" +
					"backend be\n  http-request use-service prometheus-exporter unless { path /app }\n  server s 127.0.0.1:47012\n"
			},
			get: func(c *lbconfig.Config) any {
				return [][]ruleView{rulesOf(&c.Frontends[0].HTTP.HTTPProxy), rulesOf(&c.Backends[0].HTTP.HTTPProxy)}
			},
			want: [][]ruleView{
				{{"use-service", lbconfig.PrometheusExporter, "h.cfg:8", ""}},
				{{"use-service", lbconfig.PrometheusExporter, "h.cfg:11", "unless { path /app }"}},
			},
		},
	})
}

// TestUseServiceErrors: another service, words after the service that are
// not a condition, and what a stats listen's exporter does not
// take are refused, naming the line and what is accepted; haproxy's own
// errors in its words.
func TestUseServiceErrors(t *testing.T) {
	const fe = "frontend f\n  bind 127.0.0.1:47019\n  mode http\n  default_backend b\nbackend b\n  mode http\n  server s 127.0.0.1:47012\n" // 11-17
	for _, tt := range []struct {
		name, conf, want, haproxy string
	}{
		{"another service", base + fe + "  http-request use-service lua.x\n",
			`h.cfg:18: error detected in backend 'b' while parsing 'http-request use-service' rule : 'lua.x' unknown service name. (vipstack accepted: http-request use-service prometheus-exporter [if|unless CONDITION])`, haproxyRejects},
		{"no service", base + fe + "  http-request use-service\n",
			`h.cfg:18: error detected in backend 'b' while parsing 'http-request use-service' rule : 'use-service' expects a service name. (accepted: http-request use-service prometheus-exporter [if|unless CONDITION])`, haproxyRejects},
		{"a word after the service", base + statsListen + "  http-request use-service prometheus-exporter foo\n",
			`h.cfg:16: 'http-request use-service' expects either 'if' or 'unless' followed by a condition but found 'foo'.`, haproxyRejects},
		{"another condition in a stats listen", base + statsListen + "  http-request use-service prometheus-exporter if { path_beg /m }\n",
			`h.cfg:16: http-request use-service: condition "if { path_beg /m }" in a stats listen is not supported by vipstack (accepted: http-request use-service prometheus-exporter [if|unless { path PATH... }] in a stats listen; any condition in a listen with servers or none, a frontend or a backend)`, haproxyAccepts},
		{"twice in a stats listen", base + statsListen + "  http-request use-service prometheus-exporter\n  http-request use-service prometheus-exporter\n",
			`h.cfg:17: http-request use-service: a second use-service in listen stats is not supported by vipstack`, haproxyAccepts},
		{"beside monitor-uri", base + "listen mon\n  bind 127.0.0.1:47019\n  mode http\n  monitor-uri /ok\n  http-request use-service prometheus-exporter\n",
			`h.cfg:14: listen mon serves both monitor-uri and http-request use-service (line 15): not supported by vipstack`, haproxyAccepts},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("h.cfg", []byte(tt.conf))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.want)
			}
			ok, out := haproxyCheck(t, []byte(tt.conf))
			if ok != (tt.haproxy == haproxyAccepts) {
				t.Errorf("haproxy -c: valid=%v, want %s; output:\n%s", ok, tt.haproxy, out)
			}
			if !ok {
				// haproxy's own words, without vipstack's "(accepted ...)".
				msg, _, _ := strings.Cut(tt.want[len("h.cfg:NN: "):], " (")
				if !strings.Contains(out, msg) {
					t.Errorf("haproxy -c does not say %q:\n%s", msg, out)
				}
			}
		})
	}
}
