package lbconfig

import (
	"fmt"
	"slices"
	"strings"
)

// ConnLog is a frontend's connection log: haproxy writes one line per
// connection when its proxy has a `log` target and a format, from
// `log-format` or `option tcplog`. vipstack sends them to the frontend's
// LogTargets, as haproxy does.
type ConnLog struct {
	// Format is a haproxy log-format string with the variables of
	// LogVariables; TCPLogFormat is `option tcplog`'s.
	Format string
	// DontLogNull leaves out connections on which the client sent
	// nothing (haproxy's `option dontlognull`: port probes, health
	// checks of the balancer itself).
	DontLogNull bool
	// DontLogNormal leaves out connections that ended without an error
	// (termination state "--"; haproxy's `option dontlog-normal`).
	DontLogNormal bool
	// SeparateErrors sends the lines of connections that ended with an
	// error at level err instead of info (haproxy's `option
	// log-separate-errors`).
	SeparateErrors bool
}

// TCPLogFormat is the format of haproxy's `option tcplog`.
const TCPLogFormat = "%ci:%cp [%t] %ft %b/%s %Tw/%Tc/%Tt %B %ts %ac/%fc/%bc/%sc/%rc %sq/%bq"

// LogVariables are the log-format variables vipstack fills, haproxy's
// names for a TCP connection:
//
//	ci cp      client address and port
//	fi fp      address and port the client connected to
//	si sp      server address and port ("-" when none was tried)
//	bi bp      the balancer's address and port on the server connection
//	           (of the last attempt, also when it failed; "-" when none
//	           was tried)
//	f ft       frontend name (ft: with "~" for TLS, which vipstack does not end: the same)
//	b s        backend and server names ("<NOSRV>" when no server was tried)
//	t          accept date, local time, "23/Nov/2026:18:02:49.251"
//	T Tl       accept date, GMT and local, "23/Nov/2026:18:02:49 +0000"
//	Ts ms      accept time in Unix seconds, and its milliseconds (3 digits)
//	Th Tw Tc Tt  handshake (0), queue wait, connect (-1 if it never
//	           connected) and total time, in milliseconds
//	B U        bytes from the server to the client, and from the client
//	ts         termination state, two characters (see internal/lb)
//	ac fc bc sc  connections in the process, the frontend, the backend
//	           and the server when the line is written (ac and fc
//	           count this one)
//	rc         retries
//	sq bq      server and backend queue (vipstack queues at the frontend: 0)
//	pid H      process id, host name
//	ST         the HTTP status, 0 for a TCP connection (measured)
var LogVariables = []string{"B", "H", "T", "Tc", "Th", "Tl", "Ts", "Tt", "Tw", "U", "ac", "b", "bc", "bi", "bp", "bq", "ci", "cp",
	"f", "fc", "fi", "fp", "ft", "ms", "pid", "rc", "s", "sc", "si", "sp", "sq", "t", "ts", "ST"}

// LogItem is one piece of a compiled log format: literal text, or a
// variable (Var set), quoted when Quote.
type LogItem struct {
	Lit   string
	Var   string
	Quote bool
}

// ParseLogFormat compiles a haproxy log-format string: text, "%%" for a
// percent sign, and "%VAR" or "%{+Q}VAR" / "%{-Q}VAR" for a variable of
// LogVariables; "%{+Q}o" quotes every variable after it (haproxy's
// global options, "%{-Q}VAR" excepted). Sample expressions ("%[...]"), other flags and unknown
// variables are errors that name them.
func ParseLogFormat(s string) ([]LogItem, error) { return parseLogFormat(s, LogVariables) }

func parseLogFormat(s string, known []string) ([]LogItem, error) {
	var items []LogItem
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			items = append(items, LogItem{Lit: lit.String()})
			lit.Reset()
		}
	}
	// global is haproxy's "%o": the flags given to it apply to every
	// variable after it, which may override them with its own.
	global := false
	for i := 0; i < len(s); {
		c := s[i]
		if c == ' ' && (lit.Len() == 0 && len(items) == 0 || strings.HasSuffix(lit.String(), " ")) {
			// haproxy's spaces are separators: a run of them
			// writes one, and none before the line's first
			// text or variable (measured: "%{+Q}o a" logs "a").
			i++
			continue
		}
		if c != '%' {
			lit.WriteByte(c)
			i++
			continue
		}
		i++
		if i < len(s) && s[i] == '%' {
			lit.WriteByte('%')
			i++
			continue
		}
		quote := global
		if i < len(s) && s[i] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("log-format %q: %%{ at offset %d has no closing } (accepted: %%{+Q}VAR)", s, i-1)
			}
			for _, flag := range strings.Split(s[i+1:i+end], ",") {
				switch flag {
				case "+Q":
					quote = true
				case "-Q":
					quote = false
				default:
					return nil, fmt.Errorf("log-format %q: flag %q is not supported by vipstack (accepted: +Q, -Q)", s, flag)
				}
			}
			i += end + 1
		}
		if i < len(s) && s[i] == '[' {
			return nil, fmt.Errorf("log-format %q: sample expressions (%%[...]) are not supported by vipstack (accepted variables: %s)", s, strings.Join(known, " "))
		}
		j := i
		for j < len(s) && isAlnum(s[j]) {
			j++
		}
		name := s[i:j]
		if name == "o" {
			global = quote
			i = j
			continue
		}
		if name == "" {
			return nil, fmt.Errorf("log-format %q: %% at offset %d is not followed by a variable (accepted: %%%% for a percent sign, or one of %s)", s, i-1, strings.Join(known, " "))
		}
		if !slices.Contains(known, name) {
			return nil, fmt.Errorf("log-format %q: variable %%%s is not supported by vipstack (accepted: %s)", s, name, strings.Join(known, " "))
		}
		flush()
		items = append(items, LogItem{Var: name, Quote: quote})
		i = j
	}
	flush()
	return items, nil
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
