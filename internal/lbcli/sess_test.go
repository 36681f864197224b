package lbcli

import (
	"math"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestShowSess: show sess's forms, arguments and level on the fake's two
// sessions, (a snapshot built by hand numbers main 1 and masters 2), the answers shaped as haproxy 2.6.12's (measured; see
// sess.go): the list, the detailed blocks for all or one, the argument
// read as strtoul, and "Session not found.". The connection asking is
// listed after the relayed ones, as haproxy lists its CLI connections
// (its ID, which changes with each connection, is written <cli> here).
func TestShowSess(t *testing.T) {
	path, _ := serve(t, LevelOperator)
	stamp := fakeSessions[0].Accepted.Format("02/Jan/2006:15:04:05.000000")
	cliStamp := time.Unix(1_700_000_000, 0).Add(90061 * time.Second).Local().Format("02/Jan/2006:15:04:05.000000")
	cliLine := "<cli>: proto=unix_stream src=unix:1 fe=GLOBAL be=<NONE> srv=<none> age=0s\n"
	cliBlock := "<cli>: [" + cliStamp + "] proto=unix_stream source=unix:1\n" +
		"  frontend=GLOBAL (id=0 mode=tcp) addr=unix:1\n" +
		"  backend=<NONE> (id=-1 mode=-)\n" +
		"  server=<NONE> (id=-1)\n" +
		"  state=EST age=0s\n"
	list := "0xc000123400: proto=tcpv4 src=198.18.0.50:40000 fe=main be=masters srv=m1 age=1h2m\n" +
		"0xc000123500: proto=tcpv6 src=[fd00::50]:40001 fe=main be=masters srv=m0\n" + cliLine
	first := "0xc000123400: [" + stamp + "] proto=tcpv4 source=198.18.0.50:40000\n" +
		"  frontend=main (id=1 mode=tcp) addr=198.18.0.5:6443\n" +
		"  backend=masters (id=2 mode=tcp) addr=[fd00::1]:50000\n" +
		"  server=m1 (id=2) addr=[fd00::12]:6443\n" +
		"  state=EST age=1h2m\n"
	second := "0xc000123500: proto=tcpv6 source=[fd00::50]:40001\n" +
		"  frontend=main (id=1 mode=tcp) addr=[fd00::5]:6443\n" +
		"  backend=masters (id=2 mode=tcp)\n" +
		"  server=m0 (id=1) addr=198.18.0.11:6443\n" +
		"  state=CON\n"
	for _, tt := range []struct{ name, in, want string }{
		{name: "list", in: "show sess\n", want: list + "\n"},
		{name: "argument read as 0", in: "show sess xyz\n", want: list + "\n"},
		{name: "zero", in: "show sess 0\n", want: list + "\n"},
		{name: "all", in: "show sess all\n", want: first + second + cliBlock + "\n"},
		{name: "all, more words", in: "show sess all x\n", want: first + second + cliBlock + "\n"},
		{name: "minus one is all", in: "show sess -1\n", want: first + second + cliBlock + "\n"},
		{name: "one by hex id", in: "show sess 0xc000123500\n", want: second + "\n"},
		{name: "one by decimal id", in: "show sess 824634913792\n", want: first + "\n"},
		{name: "hex without 0x reads as decimal", in: "show sess 123400\n", want: "Session not found.\n\n"},
		{name: "hex letters first read as 0", in: "show sess c000123400\n", want: list + "\n"},
		{name: "no such session", in: "show sess 0x1234\n", want: "Session not found.\n\n"},
		{name: "then all is ignored", in: "show sess 0x1234 all\n", want: "Session not found.\n\n"},
		{name: "user may not", in: "user; show sess\n", want: "\nPermission denied\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, cliIDs.ReplaceAllString(ask(t, path, tt.in), "<cli>$1")); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

// cliIDs matches the ID of a CLI connection's line or block.
var cliIDs = regexp.MustCompile(`(?m)^0x[0-9a-f]+(: (?:\[[^]]*\] )?proto=unix_stream )`)

// TestShutdownSession: shutdown session's answers, as haproxy 2.6.12's
// (measured, see sess.go), on the fake balancer: its sessions are closed
// by hex or decimal ID, a missing or zero argument and an unknown ID get
// haproxy's texts, and below level admin the command is refused.
func TestShutdownSession(t *testing.T) {
	path, f := serve(t, LevelAdmin)
	for _, tt := range []struct{ name, in, want string }{
		{name: "no argument", in: "shutdown session\n", want: "Session pointer expected (use 'show sess').\n\n"},
		{name: "not a number", in: "shutdown session xyz\n", want: "Session pointer expected (use 'show sess').\n\n"},
		{name: "all is not an id", in: "shutdown session all\n", want: "Session pointer expected (use 'show sess').\n\n"},
		{name: "zero", in: "shutdown session 0\n", want: "Session pointer expected (use 'show sess').\n\n"},
		{name: "no such session", in: "shutdown session 0x1234\n", want: "No such session (use 'show sess').\n\n"},
		{name: "minus one names none", in: "shutdown session -1\n", want: "No such session (use 'show sess').\n\n"},
		{name: "by hex id", in: "shutdown session 0xc000123500\n", want: "\n"},
		{name: "by decimal id, more words", in: "shutdown session 824634913792 x\n", want: "\n"},
		{name: "operator may not", in: "operator; shutdown session 0xc000123500\n", want: "\nPermission denied\n\n"},
		{name: "user may not", in: "user; shutdown session\n", want: "\nPermission denied\n\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ask(t, path, tt.in)); diff != "" {
				t.Errorf("%q (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	if diff := cmp.Diff([]uintptr{0xc000123500, 0xc000123400}, f.killed); diff != "" {
		t.Errorf("sessions the balancer was asked to close (-want +got):\n%s", diff)
	}
}

func TestStrtoul(t *testing.T) {
	for in, want := range map[string]uint64{
		"": 0, "xyz": 0, "12": 12, "12ab": 12, "0x1f": 31, "0X1F": 31, "0x": 0, "0xg": 0, "017": 15, "09": 0,
		" +7": 7, "-1": math.MaxUint64, "-2": math.MaxUint64 - 1, "99999999999999999999999": math.MaxUint64,
	} {
		if got := strtoul(in); got != want {
			t.Errorf("strtoul(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestHumanTime(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 999 * time.Millisecond: "0s", 2 * time.Second: "2s", 60 * time.Second: "1m", 61 * time.Second: "1m1s",
		3725 * time.Second: "1h2m", 86399 * time.Second: "23h59m", 86405 * time.Second: "1d5s", 90061 * time.Second: "1d1h",
	} {
		if got := humanTime(d); got != want {
			t.Errorf("humanTime(%v) = %q, want %q", d, got, want)
		}
	}
}
