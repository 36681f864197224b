package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLBCheckHTTPEngine: `vipstack lb --check --http-engine loop`
// refuses a mode http frontend using what the loop engine lacks, naming
// the file and line, the proxy and the directive; auto and std accept
// it; a bad --http-engine is a usage error that says what is accepted.
func TestLBCheckHTTPEngine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.cfg")
	cfg := `defaults
  mode http
  timeout connect 1s
  timeout client 1m
  timeout server 1m
frontend fe
  bind 127.0.0.1:9000
  default_backend be
backend be
  cookie SRV insert indirect nocache
  server s1 127.0.0.1:8001 cookie s1
`
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	checkLBFlag(t, path, "--http-engine", []lbFlagCase{
		{value: "loop", code: 1, stderr: []string{"--http-engine loop: " + path + ":10: frontend fe (backend be)", `"cookie" needs the std HTTP engine`, "--http-engine auto or std"}},
		{value: "auto", code: 0},
		{value: "std", code: 0},
		{value: "fast", code: 2, stderr: []string{`--http-engine "fast": accepted: std, loop or auto`}},
	})
}
