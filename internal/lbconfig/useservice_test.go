package lbconfig

import (
	"strings"
	"testing"
)

// TestValidateUseService: an `http-request use-service` rule of an HTTP
// frontend or backend names haproxy's Prometheus exporter, under any
// condition; another service, or the action among http-response rules,
// is refused with what is accepted.
func TestValidateUseService(t *testing.T) {
	path := &Cond{Or: [][]CondTerm{{{Anon: &ACLTest{Fetch: "path", Match: "str", Values: []string{"/metrics"}}}}}}
	tests := []struct {
		name string
		edit func(c *Config)
		want string // "" valid
	}{
		{name: "frontend, if path", edit: func(c *Config) {
			c.Frontends[0].HTTP.Rules = []HTTPRule{{Action: "set-header", Name: "X", Value: "y"}, {Action: "use-service", Name: PrometheusExporter, Cond: path}}
		}},
		{name: "frontend, no condition", edit: func(c *Config) {
			c.Frontends[0].HTTP.Rules = []HTTPRule{{Action: "use-service", Name: PrometheusExporter}}
		}},
		{name: "backend, named acl", edit: func(c *Config) {
			h := &c.Backends[0].HTTP.HTTPProxy
			h.ACLs = map[string][]ACLTest{"m": {{Fetch: "path_beg", Match: "beg", Values: []string{"/m"}}}}
			h.Rules = []HTTPRule{{Action: "use-service", Name: PrometheusExporter, Cond: &Cond{Or: [][]CondTerm{{{Name: "m"}}}}}}
		}},
		{name: "another service", edit: func(c *Config) {
			c.Frontends[0].HTTP.Rules = []HTTPRule{{Action: "use-service", Name: "lua.hello", At: "f:7"}}
		}, want: `f:7: frontend main: http-request use-service "lua.hello" is not supported by vipstack (accepted: http-request use-service prometheus-exporter)`},
		{name: "undefined acl", edit: func(c *Config) {
			c.Frontends[0].HTTP.Rules = []HTTPRule{{Action: "use-service", Name: PrometheusExporter, Cond: &Cond{Or: [][]CondTerm{{{Name: "nosuch"}}}}}}
		}, want: `acl "nosuch" is not defined in frontend main`},
		{name: "among http-response rules", edit: func(c *Config) {
			c.Frontends[0].HTTP.ResponseRules = []HTTPRule{{Action: "use-service", Name: PrometheusExporter, At: "f:9"}}
		}, want: `f:9: frontend main: http-response use-service "prometheus-exporter" is not supported by vipstack (accepted: http-request use-service prometheus-exporter)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid()
			c.Monitors, c.Stats = nil, nil
			c.Backends[0].HTTP = &HTTPBackend{}
			c.Frontends[0].HTTP = &HTTPFrontend{}
			tt.edit(c)
			err := Validate(c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatal(err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want it to contain %s", err, tt.want)
			}
		})
	}
}
