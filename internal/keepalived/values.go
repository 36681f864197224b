package keepalived

import (
	"errors"
	"strconv"
	"strings"
	"time"
)

// parseSeconds parses a keepalived <TIMER>: decimal seconds with at most six
// fractional digits (microsecond resolution), no sign and no exponent. It
// works on the digits, so "0.01" is exactly 10ms.
func parseSeconds(s string) (time.Duration, bool) {
	whole, frac, hasDot := strings.Cut(s, ".")
	if whole == "" || len(whole) > 10 || len(frac) > 6 || (hasDot && frac == "") || !digits(whole) || !digits(frac) {
		return 0, false
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f, _ := strconv.ParseInt((frac + "000000")[:6], 10, 64)
	return time.Duration(w)*time.Second + time.Duration(f)*time.Microsecond, true
}

func digits(s string) bool {
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// fmtSeconds formats d as decimal seconds, the way a config would write it.
func fmtSeconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64)
}

// validIfName reports whether name is a valid Linux interface name, using
// the kernel's rules (as keepalived's dev_name_valid does).
func validIfName(name string) bool {
	if name == "" || len(name) > 15 || name == "." || name == ".." {
		return false
	}
	return !strings.ContainsAny(name, "/: \t\n\v\f\r")
}

// SplitCommand splits a script or notify command line into arguments the
// way keepalived does: on whitespace, with single or double quotes grouping
// words and backslash escapes (\n, \t, \xHH, \NNN octal, \cC, and \C for any
// other C) honoured inside and outside quotes.
func SplitCommand(s string) ([]string, error) {
	var (
		args  []string
		cur   []byte
		quote byte
		inArg bool
	)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\':
			if i+1 == len(s) {
				return nil, errors.New("missing character after trailing backslash")
			}
			var b byte
			b, i = unescape(s, i+1)
			cur, inArg = append(cur, b), true
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur = append(cur, c)
		case c == '"' || c == '\'':
			quote, inArg = c, true
		case strings.IndexByte(blanks+"\n", c) >= 0:
			if inArg {
				args, cur, inArg = append(args, string(cur)), nil, false
			}
		default:
			cur, inArg = append(cur, c), true
		}
	}
	if quote != 0 {
		return nil, errors.New("missing terminating " + string(quote))
	}
	if inArg {
		args = append(args, string(cur))
	}
	return args, nil
}

// unescape decodes the escape sequence whose first character (after the
// backslash) is s[i]. It returns the byte and the index of the last
// character consumed.
func unescape(s string, i int) (byte, int) {
	c := s[i]
	switch {
	case c == 'x' && i+1 < len(s) && isHex(s[i+1]):
		n := 1
		if i+2 < len(s) && isHex(s[i+2]) {
			n = 2
		}
		v, _ := strconv.ParseUint(s[i+1:i+1+n], 16, 8)
		return byte(v), i + n
	case c == 'c' && i+1 < len(s):
		return s[i+1] & 0x1f, i + 1
	case c >= '0' && c <= '7':
		v, n := 0, 0
		for n < 3 && i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '7' {
			v = v<<3 | int(s[i+n]-'0')
			n++
		}
		return byte(v), i + n - 1
	}
	if r, ok := map[byte]byte{'a': '\a', 'b': '\b', 'E': 0x1b, 'f': '\f', 'n': '\n', 'r': '\r', 't': '\t', 'v': '\v'}[c]; ok {
		return r, i
	}
	return c, i
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// validHostName reports whether name is a DNS host name: labels of letters,
// digits and hyphens, separated by dots.
func validHostName(name string) bool {
	if name == "" || len(name) > 253 {
		return false
	}
	for _, l := range strings.Split(strings.TrimSuffix(name, "."), ".") {
		if l == "" || len(l) > 63 || l[0] == '-' || l[len(l)-1] == '-' {
			return false
		}
		for _, c := range []byte(l) {
			if !(isAlpha(c) || (c >= '0' && c <= '9') || c == '-' || c == '_') {
				return false
			}
		}
	}
	return true
}
