package main

import (
	"bytes"
	"flag"
	"io"
	"strings"
	"testing"
)

// TestKubeMemoryFlagErrors: vipstack controller and agent refuse a
// --memory-limit that is no size and a --pprof-addr off loopback, saying
// what they accept.
func TestKubeMemoryFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "not a size", args: []string{"--memory-limit", "forty"}, want: `--memory-limit "forty": want a size such as 40Mi or 64M (a Kubernetes quantity), or 0 for none`},
		{name: "negative", args: []string{"--memory-limit", "-1Mi"}, want: `--memory-limit "-1Mi": want a size`},
		{name: "pprof off loopback", args: []string{"--pprof-addr", "0.0.0.0:6060"}, want: `--pprof-addr "0.0.0.0:6060": want a loopback address, 127.0.0.1:PORT or [::1]:PORT`},
	}
	for _, cmd := range []string{"controller", "agent"} {
		for _, tt := range tests {
			t.Run(cmd+"/"+tt.name, func(t *testing.T) {
				args := append([]string{cmd, "--node-name", "n1"}, tt.args...)
				if cmd == "controller" {
					args = append([]string{cmd}, tt.args...)
				}
				var out, errb bytes.Buffer
				if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tt.want) {
					t.Errorf("vipstack %s: exit %d, want 2 and %q\nstderr: %s", strings.Join(args, " "), code, tt.want, errb.String())
				}
			})
		}
	}
}

// TestMemoryLimit: the flag's default applies unless $GOMEMLIMIT is set;
// a flag given wins over $GOMEMLIMIT; 0 means no limit.
func TestMemoryLimit(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  string
		want int64
	}{
		{name: "default", want: 40 << 20},
		{name: "default, GOMEMLIMIT set: the runtime's", env: "100MiB", want: 0},
		{name: "given", args: []string{"--memory-limit", "64Mi"}, want: 64 << 20},
		{name: "given in SI units", args: []string{"--memory-limit", "50M"}, want: 50_000_000},
		{name: "given over GOMEMLIMIT", args: []string{"--memory-limit", "64Mi"}, env: "100MiB", want: 64 << 20},
		{name: "none", args: []string{"--memory-limit", "0"}, env: "100MiB", want: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			var m kubeMemFlags
			m.add(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if !m.check("test", fs, io.Discard) {
				t.Fatalf("check refused %v", tt.args)
			}
			env := func(name string) string {
				if name == "GOMEMLIMIT" {
					return tt.env
				}
				return ""
			}
			if got := m.effectiveLimit(env); got != tt.want {
				t.Errorf("limit %d, want %d", got, tt.want)
			}
		})
	}
}
