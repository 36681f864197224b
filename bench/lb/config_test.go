package main

import (
	"testing"

	"github.com/vipstack/vipstack/internal/haproxycfg"
)

// TestRenderConfigHTTPMode: -mode http makes the main frontend and its
// backend HTTP proxies in vipstack's reading; the bulk frontend stays TCP.
func TestRenderConfigHTTPMode(t *testing.T) {
	for _, httpMode := range []bool{false, true} {
		cfg, err := haproxycfg.Parse("bench.cfg", []byte(renderConfig(portsFor(implVipstack), "/w/s.sock", httpMode)))
		if err != nil {
			t.Fatalf("httpMode %v: %v", httpMode, err)
		}
		modes := map[string]bool{}
		for _, f := range cfg.Frontends {
			modes["frontend "+f.Name] = f.HTTP != nil
		}
		for _, b := range cfg.Backends {
			modes["backend "+b.Name] = b.HTTP != nil
		}
		for k, want := range map[string]bool{"frontend main": httpMode, "backend masters": httpMode, "frontend bulk": false, "backend iperf": false} {
			if modes[k] != want {
				t.Errorf("httpMode %v: %s is mode http: %v, want %v", httpMode, k, modes[k], want)
			}
		}
	}
}

func TestValidPrefix(t *testing.T) {
	for p, want := range map[string]bool{"vsI": true, "vhb": true, "a1b2": true, "": false, "abcde": false, "v-b": false, "vé": false} {
		if got := validPrefix(p); got != want {
			t.Errorf("validPrefix(%q) = %v, want %v", p, got, want)
		}
	}
}
