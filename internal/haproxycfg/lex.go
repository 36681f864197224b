package haproxycfg

import (
	"strconv"
	"strings"
)

// MaxFileSize is the largest haproxy.cfg Parse and Load accept.
const MaxFileSize = 1 << 20

// line is one statement: its words after unquoting and unescaping. A
// line the lexer rejected (its error is reported) is kept as broken, with
// no words, so that the parser does not take what the line would have
// set for missing.
type line struct {
	num    int
	words  []string
	broken bool
}

func (l line) kw() string { return l.words[0] }

// splitLines cuts data into statements. Lines that hold only blanks and
// comments are left out; a line haproxy would reject yields an error.
// Double-quoted variables expand from env (nil: none is set), with the
// pseudo-variables .FILE, .LINE and .SECTION of the line being read.
func splitLines(name string, data []byte, env func(string) (string, bool), errs *errList) []line {
	var out []line
	v := &vars{lookup: env, file: name}
	for i, text := range strings.Split(string(data), "\n") {
		num := i + 1
		if j := strings.IndexByte(text, 0); j >= 0 {
			errs.add(name, num, "", "stray NUL character at position %d", j+1)
			continue
		}
		v.line = num
		words, msg := splitWords(text, v)
		if msg != "" {
			// Name the keyword when the first word is plain text.
			kw := ""
			if f := strings.Fields(text); len(f) > 0 && !strings.ContainsAny(f[0], "\"'\\#$") {
				kw = f[0]
				msg = kw + ": " + msg
			}
			errs.add(name, num, kw, "%s", msg)
			out = append(out, line{num: num, broken: true})
			continue
		}
		if len(words) == 0 {
			continue
		}
		if words[0] == "" {
			errs.add(name, num, "", "empty keyword (a quoted empty string or an empty variable starts the line; haproxy skips such a line)")
			continue
		}
		// haproxy's .SECTION: the section's name, or its keyword
		// when it has none, from the line after the one opening it.
		if inList(supportedSections, words[0]) || inList(unsupportedSections, words[0]) {
			v.section = words[0]
			if len(words) > 1 {
				v.section = words[1]
			}
		}
		out = append(out, line{num: num, words: words})
	}
	return out
}

// isSpace is C's isspace for the characters that reach it (line feeds
// end the line before).
func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\v' || c == '\f' }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

func unhex(c byte) byte {
	switch {
	case c >= 'a':
		return c - 'a' + 10
	case c >= 'A':
		return c - 'A' + 10
	}
	return c - '0'
}

// splitWords splits one line into words the way haproxy 2.6's parse_line
// does (configuration manual sections 2.2 and 2.3):
//
//   - leading blanks are skipped; runs of unquoted blanks separate words;
//   - an unquoted, unescaped '#' starts a comment, even inside a word;
//   - a carriage return ends the line;
//   - "..." quotes weakly (backslash escapes work inside), '...' strongly
//     (nothing is interpreted); quotes may open and close inside a word;
//   - outside single quotes, \<space> \\ \# \' \" and (inside double
//     quotes) \$ stand for the character, \t \n \r for the control
//     character and \xHH for that byte; a backslash before anything else
//     is kept as it is;
//   - inside double quotes, $NAME and ${NAME} stand for the environment
//     variable's value (nothing when it is unset), ${NAME-DEFAULT} for
//     DEFAULT when it is unset (not when it is empty), and ${NAME[*]}
//     splits the value into words at its blanks (vars.expand); outside
//     double quotes a dollar is a dollar;
//   - a trailing empty word (after trailing blanks or a final "") is
//     dropped.
func splitWords(s string, v *vars) ([]string, string) {
	var (
		words          []string
		cur            []byte
		squote, dquote bool
		opened         int // position of the open quote, from 1
	)
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	for i < len(s) {
		c := s[i]
		switch {
		case c == '\r':
			i = len(s)
			continue
		case c == '#' && !squote && !dquote:
			i = len(s)
			continue
		case c == '"' && !squote:
			dquote, opened = !dquote, i+1
		case c == '\'' && !dquote:
			squote, opened = !squote, i+1
		case c == '\\' && !squote:
			var next byte
			if i+1 < len(s) {
				next = s[i+1]
			}
			switch next {
			case ' ', '\\', '#', '\'', '"':
				cur = append(cur, next)
				i++
			case 't':
				cur = append(cur, '\t')
				i++
			case 'n':
				cur = append(cur, '\n')
				i++
			case 'r':
				cur = append(cur, '\r')
				i++
			case '$':
				if dquote {
					cur = append(cur, '$')
					i++
				} else {
					cur = append(cur, '\\')
				}
			case 'x':
				if i+3 >= len(s) || !isHex(s[i+2]) || !isHex(s[i+3]) {
					return nil, "invalid or incomplete \\x escape at position " + strconv.Itoa(i+1) + " (accepted: \\xHH with two hex digits)"
				}
				cur = append(cur, unhex(s[i+2])<<4|unhex(s[i+3]))
				i += 3
			default:
				cur = append(cur, '\\')
			}
		case isSpace(c) && !squote && !dquote:
			words = append(words, string(cur))
			cur = cur[:0]
			for i+1 < len(s) && isSpace(s[i+1]) {
				i++
			}
		case c == '$' && dquote:
			next, msg := v.expand(s, i, &words, &cur)
			if msg != "" {
				return nil, msg
			}
			i = next
			continue
		default:
			cur = append(cur, c)
		}
		i++
	}
	if squote || dquote {
		if squote {
			return nil, "unmatched quote ' at position " + strconv.Itoa(opened) +
				` (accepted: a closing ', or \' outside single quotes for the character itself)`
		}
		return nil, `unmatched quote " at position ` + strconv.Itoa(opened) +
			` (accepted: a closing ", or \" for the character itself)`
	}
	if len(cur) > 0 {
		words = append(words, string(cur))
	}
	return words, ""
}
