package haproxycfg

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// Units of haproxy time values: what a number without a unit means.
const (
	msUnit = time.Millisecond // timeouts, inter
	sUnit  = time.Second      // stats refresh
)

// maxTime is haproxy's limit on a time value, in its default unit: values
// must stay below 2^31 (about 24.8 days in milliseconds).
const maxTime = 1<<31 - 1

// parseTime parses a haproxy time value (configuration manual section
// 2.5): a whole number, then an optional unit among us, ms, s, m, h, d;
// without a unit the number is in unit. As haproxy does, the value is
// rounded up to a whole unit and must stay below 2^31 units.
//
// Text after a unit is haproxy 2.6's warning, not an error: its
// parse_time_err reads the unit from the first letters and ignores the
// rest, so "15min" is 15 minutes, "5sec" 5 seconds and "10msec" 10
// milliseconds (measured with haproxy -c). warn is then haproxy's words;
// msg is an error for what haproxy refuses.
func parseTime(v string, unit time.Duration) (d time.Duration, msg, warn string) {
	unitName := "milliseconds"
	if unit == time.Second {
		unitName = "seconds"
	}
	accepted := "a whole number with a unit us, ms, s, m, h or d; no unit means " + unitName
	i := 0
	for i < len(v) && v[i] >= '0' && v[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, "is not a time (accepted: " + accepted + ")", ""
	}
	if i > 15 {
		return 0, "is too large (maximum: " + strconv.Itoa(maxTime) + " " + unitName + ")", ""
	}
	n, _ := strconv.ParseUint(v[:i], 10, 64)
	per, size := timeUnit(v[i:])
	switch {
	case i == len(v):
		per = unit
	case size == 0:
		// A word after the digits is a unit haproxy does not know
		// ("10x", "1M"): name all of it.
		if c := v[i]; c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return 0, "has an unknown unit " + strconv.Quote(v[i:]) + " (accepted: " + accepted + ")", ""
		}
		return 0, "has an unexpected character " + strconv.QuoteRune(rune(v[i])) + " (accepted: " + accepted + ")", ""
	case i+size < len(v):
		warn = fmt.Sprintf("unexpected character '%c' after the timer value '%s', only "+
			"(us=microseconds,ms=milliseconds,s=seconds,m=minutes,h=hours,d=days) are supported."+
			" This will be reported as an error in next versions.", v[i+size], v)
	}
	// n*per/unit rounded up, without overflowing: n < 10^15 and per is at
	// most a day, so split per into a whole number of units and a rest.
	var units uint64
	if per >= unit {
		units = n * uint64(per/unit)
		if n != 0 && units/n != uint64(per/unit) {
			units = maxTime + 1
		}
	} else {
		div := uint64(unit / per)
		units = (n + div - 1) / div
	}
	if units > maxTime {
		return 0, "is too large (maximum: " + strconv.Itoa(maxTime) + " " + unitName + ", about " + maxDays(unit) + ")", ""
	}
	return time.Duration(units) * unit, "", warn
}

// timeUnit reads a time unit at the start of s as haproxy's
// parse_time_err does: "us", "ms", or one letter s, m, h, d ("m" not
// followed by "s" is minutes). size is how many bytes the unit took, 0
// when s starts with no unit.
func timeUnit(s string) (per time.Duration, size int) {
	if s == "" {
		return 0, 0
	}
	switch s[0] {
	case 's':
		return time.Second, 1
	case 'u':
		if strings.HasPrefix(s, "us") {
			return time.Microsecond, 2
		}
	case 'm':
		if strings.HasPrefix(s, "ms") {
			return time.Millisecond, 2
		}
		return time.Minute, 1
	case 'h':
		return time.Hour, 1
	case 'd':
		return 24 * time.Hour, 1
	}
	return 0, 0
}

func maxDays(unit time.Duration) string {
	if unit == time.Second {
		return "68 years"
	}
	return "24.8 days"
}

// timeArg parses a time value for keyword kw and reports errors.
func (p *parser) timeArg(l line, kw, v string, unit time.Duration) (time.Duration, bool) {
	d, msg, warn := parseTime(v, unit)
	if msg != "" {
		p.errorf(l, strings.Fields(kw)[0], "%s %q %s", kw, v, msg)
		return 0, false
	}
	if warn != "" {
		p.warnf(l, "%s", warn)
	}
	return d, true
}

// parseAddr parses a bind or server address as haproxy does: the port
// follows the last colon (so ":::9445" is [::]:9445), an IPv6 address may
// also be bracketed, an empty address or "*" is every IPv4 address on a
// bind, and on a server the address each client connected to. Of host names only "localhost" is accepted, as 127.0.0.1, and
// returned in host. It returns a message for what vipstack does not
// accept: other names, address prefixes (ipv4@, unix@, fd@, ...; callers
// read abns@ themselves: abstractAddr), UNIX
// socket paths, port ranges and offsets, IPv6 zones.
// abstractAddr returns the name of an abstract UNIX socket address
// (abns@NAME: haproxy takes everything after the prefix as the name), and
// whether s is one; a message when the name is empty.
func abstractAddr(s string) (name string, ok bool, msg string) {
	name, ok = strings.CutPrefix(s, "abns@")
	if ok && name == "" {
		msg = "address \"abns@\" names no socket (accepted: abns@NAME, NAME 1..107 bytes)"
	}
	return name, ok, msg
}

func parseAddr(s string, bind bool) (addr netip.AddrPort, host, msg string) {
	form := "ADDRESS:PORT, :PORT, *:PORT or [IPv6]:PORT"
	switch {
	case s == "":
		return addr, "", "address is empty (accepted: " + form + ")"
	case strings.Contains(s, "@"):
		return addr, "", "address " + strconv.Quote(s) + ": address prefixes such as ipv4@, unix@ and fd@ are not supported by vipstack (accepted: " + form + ")"
	case s[0] == '/':
		return addr, "", "address " + strconv.Quote(s) + ": UNIX sockets are not supported by vipstack (accepted: " + form + ")"
	}
	var hostPart, port string
	if s[0] == '[' {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return addr, "", "address " + strconv.Quote(s) + " has no closing ']' (accepted: " + form + ")"
		}
		hostPart, port = s[1:end], s[end+1:]
		if !strings.HasPrefix(port, ":") {
			return addr, "", "address " + strconv.Quote(s) + " has no port (accepted: " + form + ")"
		}
		port = port[1:]
	} else {
		i := strings.LastIndexByte(s, ':')
		if i < 0 {
			if bind {
				return addr, "", "address " + strconv.Quote(s) + " has no port (accepted: " + form + ")"
			}
			return addr, "", "address " + strconv.Quote(s) + " has no port (accepted: " + form +
				"; haproxy would use the client's port, vipstack needs it written)"
		}
		hostPart, port = s[:i], s[i+1:]
	}

	var p uint64
	switch {
	case port == "":
		return addr, "", "address " + strconv.Quote(s) + " has no port (accepted: " + form + ")"
	case port[0] == '+' || port[0] == '-':
		return addr, "", "address " + strconv.Quote(s) + ": port offsets are not supported by vipstack (accepted: a port 1..65535)"
	case strings.Contains(port, "-") && bind:
		return addr, "", "address " + strconv.Quote(s) + ": port ranges are not supported by vipstack (accepted: a port 1..65535)"
	default:
		var err error
		p, err = strconv.ParseUint(port, 10, 16)
		if err != nil || p == 0 {
			return addr, "", "address " + strconv.Quote(s) + " has an invalid port " + strconv.Quote(port) + " (accepted: 1..65535)"
		}
	}

	var ip netip.Addr
	switch {
	case hostPart == "" || hostPart == "*":
		// A server without an IP connects to the address its client
		// connected to (lbconfig.ServerTarget).
		ip = netip.IPv4Unspecified()
	case hostPart == "localhost":
		ip, host = netip.AddrFrom4([4]byte{127, 0, 0, 1}), "localhost"
	default:
		var err error
		ip, err = netip.ParseAddr(hostPart)
		switch {
		case err != nil:
			return addr, "", "address " + strconv.Quote(s) + ": " + strconv.Quote(hostPart) +
				" is not an IP address (accepted: " + form + "; vipstack resolves no host name but localhost)"
		case ip.Zone() != "":
			return addr, "", "address " + strconv.Quote(s) + ": IPv6 zones are not supported (accepted: " + form + ")"
		}
	}
	return netip.AddrPortFrom(ip, uint16(p)), host, ""
}
