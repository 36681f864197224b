package lbconfig

import (
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// LogTarget is one haproxy `log` line: where a proxy's syslog messages
// go (connection lines, health checks, server state changes) and which
// of them, by level.
type LogTarget struct {
	// Network is "unixgram" (Address is an absolute path to a Unix
	// datagram socket), "udp" (Address is IP:PORT, [IPv6]:PORT for
	// IPv6), "stdout" or "stderr" (Address empty).
	Network string
	Address string
	// Raw is haproxy's `format raw`: the message alone, without the
	// syslog header. The default is RFC 3164: "<PRI>Mmm dd hh:mm:ss
	// TAG[PID]: message".
	Raw bool
	// RFC3164 is an explicit `format rfc3164`, whose header haproxy 2.6
	// writes with a host name, "localhost" (measured, 2.6.12 without
	// log-send-hostname: "<134>Nov 24 01:12:24 localhost haproxy[16752]:
	// Connect from ..."), where the default format has none.
	RFC3164 bool
	// Facility is the syslog facility, 0 (kern) to 23 (local7):
	// index into LogFacilities.
	Facility int
	// Level: messages less severe than it (a higher number) are not
	// sent; 7 (debug) sends all. Index into LogLevels.
	Level int
	// MinLevel: messages more severe than it (a lower number) are sent
	// with this level instead; 0 (emerg) leaves them.
	MinLevel int
	// Len is haproxy's `len`: the most bytes of a line sent to this
	// target, its newline apart (MinLogLen..MaxLogLen); 0 means
	// DefaultLogLen. A longer line is cut and still ends with a newline.
	Len int
}

// Bounds of a log target's `len`, haproxy 2.6's (measured: 79 and 65536
// are refused, "invalid log length '79', must be between 80 and 65535"),
// and its default.
const (
	MinLogLen     = 80
	MaxLogLen     = 65535
	DefaultLogLen = 1024
)

// LogFacilities are the syslog facilities haproxy names, by number.
var LogFacilities = []string{"kern", "user", "mail", "daemon", "auth", "syslog", "lpr", "news",
	"uucp", "cron", "auth2", "ftp", "ntp", "audit", "alert", "cron2",
	"local0", "local1", "local2", "local3", "local4", "local5", "local6", "local7"}

// LogLevels are the syslog levels (severities), by number.
var LogLevels = []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug"}

// Syslog levels of the messages vipstack sends, as haproxy 2.6 sends
// them (measured, internal/lb's TestSyslogMatchesHaproxy).
const (
	LevelEmerg   = 0 // "backend B has no server available!"
	LevelAlert   = 1 // "Server B/S is DOWN..."
	LevelErr     = 3 // connection lines that end in an error, with option log-separate-errors
	LevelWarning = 4 // "Proxy NAME stopped (cumulated conns: ...)."
	LevelNotice  = 5 // "Server B/S is UP...", "Health check for server..."
	LevelInfo    = 6 // connection lines
	LevelDebug   = 7
)

// DefaultSyslogPort is the UDP port of a target written without one.
const DefaultSyslogPort = 514

// logTargetForms says what ParseLogTarget accepts, for error messages.
const logTargetForms = "an absolute path to a Unix datagram socket (or unix@PATH), IP[:PORT] or [IPv6][:PORT] " +
	"(UDP, port 514 by default; udp@, udp4@, udp6@, ipv4@, ipv6@ prefixes), stdout, stderr"

// ParseLogTarget reads the words after haproxy's `log` keyword:
// TARGET [len LENGTH] [format rfc3164|raw] FACILITY [LEVEL [MINLEVEL]],
// len before format as haproxy 2.6 reads them (measured: `format raw len
// 100` is refused, "unknown log facility 'len'"). The error names the bad
// word and what is accepted.
func ParseLogTarget(words []string) (LogTarget, error) {
	if len(words) == 0 {
		return LogTarget{}, fmt.Errorf("log needs a target (accepted: log global, or log TARGET [len LENGTH] [format raw|rfc3164] FACILITY [LEVEL [MINLEVEL]])")
	}
	t, err := parseLogAddress(words[0])
	if err != nil {
		return LogTarget{}, err
	}
	rest := words[1:]
	if len(rest) > 0 && rest[0] == "len" {
		if len(rest) < 2 {
			return LogTarget{}, fmt.Errorf("log %s: len needs a value (accepted: %d..%d)", words[0], MinLogLen, MaxLogLen)
		}
		n, err := strconv.Atoi(rest[1])
		if err != nil || n < MinLogLen || n > MaxLogLen {
			// haproxy reads the leading digits alone ("100abc" is
			// 100); vipstack takes a plain number only.
			return LogTarget{}, fmt.Errorf("log %s: len %q is not a length from %d to %d bytes (haproxy's bounds)", words[0], rest[1], MinLogLen, MaxLogLen)
		}
		t.Len = n
		rest = rest[2:]
	}
	for len(rest) > 0 && (rest[0] == "format" || rest[0] == "len" || rest[0] == "sample") {
		switch {
		case rest[0] == "len":
			return LogTarget{}, fmt.Errorf("log %s: len comes before format and only once (accepted: log TARGET [len LENGTH] [format raw|rfc3164] FACILITY ...; haproxy reads this len as a facility)", words[0])
		case rest[0] != "format":
			return LogTarget{}, fmt.Errorf("log %s: option %q is not supported by vipstack (accepted: len LENGTH, format raw, format rfc3164)", words[0], rest[0])
		}
		if len(rest) < 2 {
			return LogTarget{}, fmt.Errorf("log %s: format needs a value (accepted: raw, rfc3164)", words[0])
		}
		switch rest[1] {
		case "raw":
			t.Raw, t.RFC3164 = true, false
		case "rfc3164":
			t.Raw, t.RFC3164 = false, true
		default:
			return LogTarget{}, fmt.Errorf("log %s: format %q is not supported by vipstack (accepted: raw, rfc3164)", words[0], rest[1])
		}
		rest = rest[2:]
	}
	if len(rest) < 1 || len(rest) > 3 {
		return LogTarget{}, fmt.Errorf("log %s takes FACILITY [LEVEL [MINLEVEL]] after the target, got %d values: %q",
			words[0], len(rest), strings.Join(rest, " "))
	}
	t.Facility = slices.Index(LogFacilities, rest[0])
	if t.Facility < 0 {
		return LogTarget{}, fmt.Errorf("log %s: unknown facility %q (accepted: %s)", words[0], rest[0], strings.Join(LogFacilities, ", "))
	}
	t.Level, t.MinLevel = LevelDebug, 0
	for i, lv := range rest[1:] {
		n := slices.Index(LogLevels, lv)
		if n < 0 {
			return LogTarget{}, fmt.Errorf("log %s: unknown level %q (accepted: %s)", words[0], lv, strings.Join(LogLevels, ", "))
		}
		if i == 0 {
			t.Level = n
		} else {
			t.MinLevel = n
		}
	}
	return t, nil
}

// parseLogAddress reads a log target's address.
func parseLogAddress(a string) (LogTarget, error) {
	switch a {
	case "stdout", "stderr":
		return LogTarget{Network: a}, nil
	}
	addr, family := a, ""
	if p, rest, ok := strings.Cut(a, "@"); ok && !strings.Contains(p, "/") {
		family, addr = p, rest
	}
	switch family {
	case "unix":
		if !strings.HasPrefix(addr, "/") {
			return LogTarget{}, fmt.Errorf("log target %q: a relative path (accepted: %s)", a, logTargetForms)
		}
		return LogTarget{Network: "unixgram", Address: addr}, nil
	case "", "udp", "udp4", "udp6", "ipv4", "ipv6":
	default:
		return LogTarget{}, fmt.Errorf("log target %q: the %s@ family is not supported by vipstack (accepted: %s)", a, family, logTargetForms)
	}
	if family == "" && strings.HasPrefix(addr, "/") {
		return LogTarget{Network: "unixgram", Address: addr}, nil
	}
	ap, err := parseHostPort(addr)
	if err != nil {
		if family == "" && !strings.Contains(addr, ":") {
			return LogTarget{}, fmt.Errorf("log target %q is neither an absolute path nor an IP address (accepted: %s; names are not resolved)", a, logTargetForms)
		}
		return LogTarget{}, fmt.Errorf("log target %q: %v (accepted: %s)", a, err, logTargetForms)
	}
	v4 := ap.Addr().Is4()
	if (family == "udp4" || family == "ipv4") && !v4 || (family == "udp6" || family == "ipv6") && v4 {
		return LogTarget{}, fmt.Errorf("log target %q: the address does not belong to the %s@ family", a, family)
	}
	return LogTarget{Network: "udp", Address: ap.String()}, nil
}

// parseHostPort reads IP, IP:PORT, [IPv6] or [IPv6]:PORT.
func parseHostPort(s string) (netip.AddrPort, error) {
	host, port := s, ""
	switch {
	case strings.HasPrefix(s, "["):
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return netip.AddrPort{}, fmt.Errorf("%q has no closing ]", s)
		}
		host, port = s[1:end], s[end+1:]
		if port != "" && !strings.HasPrefix(port, ":") {
			return netip.AddrPort{}, fmt.Errorf("%q has text after ] that is not :PORT", s)
		}
		port = strings.TrimPrefix(port, ":")
	case strings.Count(s, ":") == 1:
		host, port, _ = strings.Cut(s, ":")
	case strings.Count(s, ":") > 1:
		return netip.AddrPort{}, fmt.Errorf("IPv6 address %q needs brackets, [IPv6]:PORT", s)
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || ip.Zone() != "" {
		return netip.AddrPort{}, fmt.Errorf("%q is not an IP address", host)
	}
	p := DefaultSyslogPort
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return netip.AddrPort{}, fmt.Errorf("port %q is out of range (accepted: 1..65535)", port)
		}
		p = n
	}
	return netip.AddrPortFrom(ip, uint16(p)), nil
}

// String is the target as a haproxy `log` line's values.
func (t LogTarget) String() string {
	var b strings.Builder
	switch t.Network {
	case "stdout", "stderr":
		b.WriteString(t.Network)
	default:
		b.WriteString(t.Address)
	}
	if t.Len != 0 {
		b.WriteString(" len " + strconv.Itoa(t.Len))
	}
	if t.Raw {
		b.WriteString(" format raw")
	}
	if t.RFC3164 {
		b.WriteString(" format rfc3164")
	}
	b.WriteString(" " + name(LogFacilities, t.Facility))
	if t.Level != LevelDebug || t.MinLevel != 0 {
		b.WriteString(" " + name(LogLevels, t.Level))
	}
	if t.MinLevel != 0 {
		b.WriteString(" " + name(LogLevels, t.MinLevel))
	}
	return b.String()
}

func name(list []string, i int) string {
	if i < 0 || i >= len(list) {
		return strconv.Itoa(i)
	}
	return list[i]
}

// check reports what is wrong with a target built without
// ParseLogTarget (the YAML form, a program).
func (t LogTarget) check() error {
	switch t.Network {
	case "stdout", "stderr":
		if t.Address != "" {
			return fmt.Errorf("log target %s has an address %q (accepted: none)", t.Network, t.Address)
		}
	case "unixgram":
		if !strings.HasPrefix(t.Address, "/") {
			return fmt.Errorf("log target %q is not an absolute path (accepted: %s)", t.Address, logTargetForms)
		}
	case "udp":
		if _, err := netip.ParseAddrPort(t.Address); err != nil {
			return fmt.Errorf("log target %q is not IP:PORT (accepted: %s)", t.Address, logTargetForms)
		}
	default:
		return fmt.Errorf("log target network %q (accepted: unixgram, udp, stdout, stderr)", t.Network)
	}
	if t.Facility < 0 || t.Facility >= len(LogFacilities) {
		return fmt.Errorf("log target %s: facility %d is out of range (accepted: 0..23)", t.Address, t.Facility)
	}
	if t.Raw && t.RFC3164 {
		return fmt.Errorf("log target %s: both raw and rfc3164 (accepted: one format)", t.Address)
	}
	if t.Len != 0 && (t.Len < MinLogLen || t.Len > MaxLogLen) {
		return fmt.Errorf("log target %s: len %d is out of range (accepted: 0 for %d, or %d..%d)", t.Address, t.Len, DefaultLogLen, MinLogLen, MaxLogLen)
	}
	if t.Level < 0 || t.Level > LevelDebug || t.MinLevel < 0 || t.MinLevel > LevelDebug {
		return fmt.Errorf("log target %s: level %d or minimum level %d is out of range (accepted: 0..7)", t.Address, t.Level, t.MinLevel)
	}
	return nil
}
