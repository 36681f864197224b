package script

import (
	"fmt"
	"strconv"
	"strings"
)

// Split turns a keepalived script command line into argv. keepalived execs
// argv directly, with no shell, so there is no globbing, no variables and no
// redirection. The rules are the shell's word splitting, as keepalived.conf(5)
// "Quoted strings" describes them:
//
//   - unquoted blanks (space, tab, newline) separate arguments;
//   - 'single quotes' keep everything literally, blanks included;
//   - "double quotes" keep blanks, and a backslash starts an escape: \a \b \E
//     \e \f \n \r \t \v, \nnn (1-3 octal digits), \xHH (hex digits), \cC
//     (control-C), and \C for any other C is C itself (\" \\ \');
//   - outside quotes a backslash makes the next character literal (\  is a
//     space inside an argument);
//   - quoted and unquoted pieces that touch join into one argument, so
//     abcd" efg "h is the single argument "abcd efg h", and "" is an empty
//     argument.
//
// An empty or all-blank line, an unterminated quote or a trailing backslash
// is an error.
func Split(cmdline string) ([]string, error) {
	var (
		args   []string
		cur    strings.Builder
		inWord bool
	)
	flush := func() {
		if inWord {
			args = append(args, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(cmdline); {
		c := cmdline[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			flush()
			i++
		case c == '\'':
			end := strings.IndexByte(cmdline[i+1:], '\'')
			if end < 0 {
				return nil, fmt.Errorf("script command %q: single quote at byte %d is not closed", cmdline, i)
			}
			cur.WriteString(cmdline[i+1 : i+1+end])
			inWord = true
			i += end + 2
		case c == '"':
			start := i
			i++
			inWord = true
			for {
				if i >= len(cmdline) {
					return nil, fmt.Errorf("script command %q: double quote at byte %d is not closed", cmdline, start)
				}
				if cmdline[i] == '"' {
					i++
					break
				}
				if cmdline[i] == '\\' {
					n, err := unescape(cmdline, i, &cur)
					if err != nil {
						return nil, err
					}
					i += n
					continue
				}
				cur.WriteByte(cmdline[i])
				i++
			}
		case c == '\\':
			if i+1 >= len(cmdline) {
				return nil, fmt.Errorf("script command %q: trailing backslash escapes nothing", cmdline)
			}
			cur.WriteByte(cmdline[i+1])
			inWord = true
			i += 2
		default:
			cur.WriteByte(c)
			inWord = true
			i++
		}
	}
	flush()
	if len(args) == 0 {
		return nil, fmt.Errorf("script command %q: empty; want a program path and optional arguments", cmdline)
	}
	return args, nil
}

// unescape decodes the backslash escape at s[i] (inside double quotes),
// writes it to b and returns how many bytes of s it used.
func unescape(s string, i int, b *strings.Builder) (int, error) {
	if i+1 >= len(s) {
		return 0, fmt.Errorf("script command %q: trailing backslash escapes nothing", s)
	}
	c := s[i+1]
	if r := simpleEscape(c); r != 0 {
		b.WriteByte(r)
		return 2, nil
	}
	switch {
	case c >= '0' && c <= '7':
		j := i + 1
		for j < len(s) && j < i+4 && s[j] >= '0' && s[j] <= '7' {
			j++
		}
		v, _ := strconv.ParseUint(s[i+1:j], 8, 16)
		b.WriteByte(byte(v))
		return j - i, nil
	case c == 'x':
		j := i + 2
		for j < len(s) && isHex(s[j]) {
			j++
		}
		if j == i+2 {
			return 0, fmt.Errorf("script command %q: \\x at byte %d has no hex digits", s, i)
		}
		// keepalived takes "any sequence of hex digits"; only the low byte
		// can be represented, as in C.
		v, _ := strconv.ParseUint(s[max(i+2, j-2):j], 16, 8)
		b.WriteByte(byte(v))
		return j - i, nil
	case c == 'c':
		if i+2 >= len(s) {
			return 0, fmt.Errorf("script command %q: \\c at byte %d has no character after it", s, i)
		}
		b.WriteByte(s[i+2] & 0x1f)
		return 3, nil
	}
	b.WriteByte(c)
	return 2, nil
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// simpleEscape returns the byte a one-letter escape stands for, or 0.
func simpleEscape(c byte) byte {
	switch c {
	case 'a':
		return '\a'
	case 'b':
		return '\b'
	case 'E', 'e':
		return 0x1b
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'v':
		return '\v'
	}
	return 0
}
