package haproxycfg

import (
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSplitWords(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []string
		wantErr string
	}{
		{name: "blank", in: " \t ", want: nil},
		{name: "comment only", in: "  # bind :80", want: nil},
		{name: "words", in: "  server m0\t10.0.0.1:6443  check ", want: []string{"server", "m0", "10.0.0.1:6443", "check"}},
		{name: "hash ends a word", in: "bind :80#x y", want: []string{"bind", ":80"}},
		{name: "escaped hash", in: `monitor-uri /a\#b`, want: []string{"monitor-uri", "/a#b"}},
		{name: "escaped blank", in: `a b\ c`, want: []string{"a", "b c"}},
		{name: "weak quotes", in: `a "b c # d" e`, want: []string{"a", "b c # d", "e"}},
		{name: "strong quotes keep backslashes", in: `a 'b\x41 "c"'`, want: []string{"a", `b\x41 "c"`}},
		{name: "quotes inside a word", in: `a b"c d"'e f'g`, want: []string{"a", "bc de fg"}},
		{name: "escapes in weak quotes", in: `a "\"\t\n\r\\\$\'"`, want: []string{"a", "\"\t\n\r\\$'"}},
		{name: "hex escape", in: `a \x41\x62`, want: []string{"a", "Ab"}},
		{name: "other backslashes are kept", in: `a \d \$ x\`, want: []string{"a", `\d`, `\$`, `x\`}},
		{name: "dollar outside quotes is literal", in: `a $HOME`, want: []string{"a", "$HOME"}},
		{name: "empty word inside", in: `a "" b`, want: []string{"a", "", "b"}},
		{name: "trailing empty word dropped", in: `a b ""`, want: []string{"a", "b"}},
		{name: "carriage return ends the line", in: "a b\rc d", want: []string{"a", "b"}},
		{name: "vertical tab and form feed separate", in: "a\vb\fc", want: []string{"a", "b", "c"}},
		{name: "unmatched double quote", in: `a "b`, wantErr: `unmatched quote " at position 3 (accepted: a closing ", or \" for the character itself)`},
		{name: "last quote unmatched", in: `a "b" "c`, wantErr: `unmatched quote " at position 7 (accepted: a closing ", or \" for the character itself)`},
		{name: "unmatched single quote", in: `a 'b`, wantErr: `unmatched quote ' at position 3 (accepted: a closing ', or \' outside single quotes for the character itself)`},
		{name: "short hex escape", in: `a \x4`, wantErr: `invalid or incomplete \x escape at position 3 (accepted: \xHH with two hex digits)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := splitWords(tt.in, nil)
			if err != tt.wantErr {
				t.Fatalf("splitWords(%q) error %q, want %q", tt.in, err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("splitWords(%q) mismatch (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}

func TestParseTime(t *testing.T) {
	// haproxy 2.6's warning for text after a unit, which it ignores
	// (measured with haproxy -c: "15min" is 15 minutes).
	trailing := func(c, v string) string {
		return "unexpected character '" + c + "' after the timer value '" + v + "', only " +
			"(us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported. " +
			"This will be reported as an error in next versions."
	}
	tests := []struct {
		in       string
		unit     time.Duration
		want     time.Duration
		wantErr  string
		wantWarn string
	}{
		{in: "0", unit: msUnit, want: 0},
		{in: "10", unit: msUnit, want: 10 * time.Millisecond},
		{in: "10", unit: sUnit, want: 10 * time.Second},
		{in: "1us", unit: msUnit, want: time.Millisecond},
		{in: "1001us", unit: msUnit, want: 2 * time.Millisecond},
		{in: "1ms", unit: sUnit, want: time.Second},
		{in: "86400s", unit: msUnit, want: 24 * time.Hour},
		{in: "24d", unit: msUnit, want: 24 * 24 * time.Hour},
		{in: "2147483647ms", unit: msUnit, want: 2147483647 * time.Millisecond},
		{in: "2147483648", unit: msUnit, wantErr: "is too large (maximum: 2147483647 milliseconds, about 24.8 days)"},
		{in: "999999999999999d", unit: msUnit, wantErr: "is too large (maximum: 2147483647 milliseconds, about 24.8 days)"},
		{in: "9999999999999999", unit: msUnit, wantErr: "is too large (maximum: 2147483647 milliseconds)"},
		{in: "25000d", unit: sUnit, wantErr: "is too large (maximum: 2147483647 seconds, about 68 years)"},
		{in: "", unit: msUnit, wantErr: "is not a time (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)"},
		{in: "s", unit: sUnit, wantErr: "is not a time (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means seconds)"},
		{in: "-1s", unit: msUnit, wantErr: "is not a time (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)"},
		{in: "1M", unit: msUnit, wantErr: "has an unknown unit \"M\" (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)"},
		{in: "1x", unit: msUnit, wantErr: "has an unknown unit \"x\" (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)"},
		{in: "1u", unit: msUnit, wantErr: "has an unknown unit \"u\" (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)"},
		{in: "1.5s", unit: msUnit, wantErr: "has an unexpected character '.' (accepted: a whole number with a unit us, ms, s, m, h or d; no unit means milliseconds)"},
		{in: "1sec", unit: msUnit, want: time.Second, wantWarn: trailing("e", "1sec")},
		{in: "15min", unit: msUnit, want: 15 * time.Minute, wantWarn: trailing("i", "15min")},
		{in: "10msec", unit: msUnit, want: 10 * time.Millisecond, wantWarn: trailing("e", "10msec")},
		{in: "1hour", unit: msUnit, want: time.Hour, wantWarn: trailing("o", "1hour")},
		{in: "2days", unit: msUnit, want: 48 * time.Hour, wantWarn: trailing("a", "2days")},
		{in: "3usec", unit: msUnit, want: time.Millisecond, wantWarn: trailing("e", "3usec")},
		{in: "1mm", unit: msUnit, want: time.Minute, wantWarn: trailing("m", "1mm")},
		{in: "1s5", unit: msUnit, want: time.Second, wantWarn: trailing("5", "1s5")},
		{in: "10sec", unit: sUnit, want: 10 * time.Second, wantWarn: trailing("e", "10sec")},
		{in: "25000days", unit: sUnit, wantErr: "is too large (maximum: 2147483647 seconds, about 68 years)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err, warn := parseTime(tt.in, tt.unit)
			if err != tt.wantErr || got != tt.want || warn != tt.wantWarn {
				t.Errorf("parseTime(%q, %v) = %v, %q, %q; want %v, %q, %q", tt.in, tt.unit, got, err, warn, tt.want, tt.wantErr, tt.wantWarn)
			}
		})
	}
}

func TestParseAddr(t *testing.T) {
	tests := []struct {
		in       string
		bind     bool
		want     string
		wantHost string
		wantErr  string
	}{
		{in: ":::9445", bind: true, want: "[::]:9445"},
		{in: ":7443", bind: true, want: "0.0.0.0:7443"},
		{in: "*:7443", bind: true, want: "0.0.0.0:7443"},
		{in: "localhost:50000", bind: true, want: "127.0.0.1:50000", wantHost: "localhost"},
		{in: "localhost:6443", want: "127.0.0.1:6443", wantHost: "localhost"},
		{in: "[::1]:80", bind: true, want: "[::1]:80"},
		{in: "fd00::1:6443", want: "[fd00::1]:6443"},
		{in: "::ffff:198.18.0.1:80", want: "[::ffff:198.18.0.1]:80"},
		{in: ":6443", want: "0.0.0.0:6443"},
		{in: "*:6443", want: "0.0.0.0:6443"},
		{in: "[::1]", bind: true, wantErr: `address "[::1]" has no port (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`},
		{in: "[::1:80", bind: true, wantErr: `address "[::1:80" has no closing ']' (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`},
		{in: "1.2.3.4:", wantErr: `address "1.2.3.4:" has no port (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`},
		{in: "1.2.3.4:http", wantErr: `address "1.2.3.4:http" has an invalid port "http" (accepted: 1..65535)`},
		{in: "/run/x.sock", bind: true, wantErr: `address "/run/x.sock": UNIX sockets are not supported by vipstack (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`},
		{in: "ipv4@1.2.3.4:80", wantErr: `address "ipv4@1.2.3.4:80": address prefixes such as ipv4@, unix@ and fd@ are not supported by vipstack (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`},
		{in: "", bind: true, wantErr: `address is empty (accepted: ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT)`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, host, err := parseAddr(tt.in, tt.bind)
			var want netip.AddrPort
			if tt.want != "" {
				want = netip.MustParseAddrPort(tt.want)
			}
			if got != want || host != tt.wantHost || err != tt.wantErr {
				t.Errorf("parseAddr(%q, %v) = %v, %q, %q; want %v, %q, %q", tt.in, tt.bind, got, host, err, want, tt.wantHost, tt.wantErr)
			}
		})
	}
}
