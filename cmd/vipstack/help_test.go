package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/daemon"
)

// commands are the subcommands that take flags.
var commands = []string{"vrrp", "lb", "dns", "ipfailover", "node", "status", "render", "manifest", "redirect", "controller", "agent", "demo"}

// TestHelpExitsZero: -h and --help (on the command and on each
// subcommand) print the flags and exit 0; an unknown flag still exits 2.
func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"--help"}, {"help"}} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || !strings.Contains(out.String(), "Usage:") {
			t.Errorf("vipstack %s: exit %d, want 0 and the usage\nstdout: %s\nstderr: %s", args[0], code, out.String(), errb.String())
		}
	}
	for _, c := range commands {
		for _, h := range []string{"-h", "--help"} {
			t.Run(c+" "+h, func(t *testing.T) {
				var out, errb bytes.Buffer
				code := run([]string{c, h}, &out, &errb)
				if code != 0 {
					t.Errorf("vipstack %s %s: exit %d, want 0\nstderr: %s", c, h, code, errb.String())
				}
				if help := out.String() + errb.String(); !strings.Contains(help, "-") || !strings.Contains(help, "Usage") {
					t.Errorf("vipstack %s %s printed no usage:\n%s", c, h, help)
				}
			})
		}
		t.Run(c+" bad flag", func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run([]string{c, "--no-such-flag"}, &out, &errb); code != 2 {
				t.Errorf("vipstack %s --no-such-flag: exit %d, want 2\nstderr: %s", c, code, errb.String())
			}
		})
	}
}

// TestLogFormatFlag: every command with --log-level has --log-format;
// a value other than text or json is refused with what is accepted.
func TestLogFormatFlag(t *testing.T) {
	for _, c := range []string{"vrrp", "lb", "dns", "ipfailover", "node", "redirect", "controller", "agent"} {
		t.Run(c, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := []string{c, "--log-format", "xml"}
			switch c { // the flags each needs to get as far as the logger
			case "agent":
				args = append(args, "--node-name", "n1")
			case "redirect":
				args = append(args, "--vip", "198.18.0.5:6443", "--to-port", "9445", "--monitor", "http://127.0.0.1:1/")
			}
			code := run(args, &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), `--log-format "xml": want text or json`) {
				t.Errorf("vipstack %s --log-format xml: exit %d, want 2 and what is accepted\nstderr: %s", c, code, errb.String())
			}
		})
	}
}

// TestJSONLogger: --log-format json writes one JSON object a line with
// slog's keys (time, level, msg) and the event's own.
func TestJSONLogger(t *testing.T) {
	format, level := "json", "info"
	f := &daemon.LogFlags{Command: "vipstack test", Value: &level, Format: &format}
	var buf bytes.Buffer
	log, ok := f.Logger(&buf)
	if !ok {
		t.Fatal("json refused")
	}
	log.Info("VRRP state change", "instance", "VI_1", "vrid", 51, "from", "BACKUP", "to", "MASTER")
	log.Debug("not shown at info")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), buf.String())
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, lines[0])
	}
	for k, want := range map[string]any{"level": "INFO", "msg": "VRRP state change", "instance": "VI_1", "vrid": float64(51), "to": "MASTER"} {
		if ev[k] != want {
			t.Errorf("%s = %v, want %v", k, ev[k], want)
		}
	}
	if _, ok := ev["time"]; !ok {
		t.Error("no time key")
	}
}

// TestAgentPodIPAddr: the chart's --metrics-addr=$(POD_IP):9654 listens on
// the pod's address, brackets added for an IPv6 one.
func TestAgentPodIPAddr(t *testing.T) {
	for in, want := range map[string]string{
		"198.18.0.11:9654":   "198.18.0.11:9654",
		"fd00::11:9654":      "[fd00::11]:9654",
		"[fd00::11]:9654":    "[fd00::11]:9654",
		"127.0.0.1:9654":     "127.0.0.1:9654",
		":9654":              ":9654",
		"":                   "",
		"not an address":     "not an address",
		"198.18.0.11:x:9654": "198.18.0.11:x:9654",
	} {
		if got := bracketIPv6(in); got != want {
			t.Errorf("bracketIPv6(%q) = %q, want %q", in, got, want)
		}
	}
	var errb bytes.Buffer
	f, _, ok := parseAgentFlags([]string{"--node-name", "n1", "--metrics-addr", "fd00::11:9654"}, &errb)
	if !ok || f.metricsAddr != "[fd00::11]:9654" {
		t.Errorf("--metrics-addr fd00::11:9654: ok %v, addr %q (%s)", ok, f.metricsAddr, errb.String())
	}
}

// TestMetricsAuthFlag: --metrics-auth takes none or kubernetes, and the
// certificate flags come in pairs and only with kubernetes, for the agent
// and the controller alike; each refusal exits 2 saying what is accepted.
func TestMetricsAuthFlag(t *testing.T) {
	for _, cmd := range [][]string{{"agent", "--node-name", "n1"}, {"controller"}} {
		for _, tc := range []struct {
			args []string
			want string
		}{
			{args: []string{"--metrics-auth", "basic"}, want: `--metrics-auth "basic": want none or kubernetes`},
			{args: []string{"--metrics-auth", "kubernetes", "--metrics-tls-cert-file", "c.pem"},
				want: `--metrics-tls-cert-file "c.pem" and --metrics-tls-key-file "": want both or neither`},
			{args: []string{"--metrics-tls-cert-file", "c.pem", "--metrics-tls-key-file", "k.pem"},
				want: `--metrics-tls-cert-file: HTTPS serves only with --metrics-auth kubernetes (now "none")`},
		} {
			var out, errb bytes.Buffer
			args := append(append([]string{}, cmd...), tc.args...)
			if code := run(args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("%v: exit %d, want 2 and %q\nstderr: %s", args, code, tc.want, errb.String())
			}
		}
	}
}
