package lbconfig

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// Sample expressions with converters, as haproxy 2.6 writes them: a
// fetch and its argument, then converters each after a comma,
// "path,regsub(^/api/,/)".

// Converters are the converters vipstack applies to a sample.
const Converters = "regsub(REGEX,SUBST[,FLAGS])"

// SampleExpr is a sample expression: a fetch (as written, with its
// argument: "path", "req.hdr(host)", "var(txn.x)") and its converters,
// applied in order.
type SampleExpr struct {
	Fetch string
	Convs []Converter
}

// Converter is one converter of a SampleExpr, compiled.
type Converter struct {
	Name string   // regsub
	Args []string // its arguments, unquoted as haproxy reads them
	// regsub: the expression, and the same expression for a match that
	// does not begin at the sample's start (haproxy's REG_NOTBOL: ^
	// does not match there), the substitution and flag g.
	re, reNotBOL *regexp.Regexp
	subst        string
	global       bool
}

// ParseSampleExpr reads a whole sample expression s.
func ParseSampleExpr(s string) (*SampleExpr, error) {
	e, n, err := scanSampleExpr(s)
	if err != nil {
		return nil, err
	}
	if n != len(s) {
		return nil, fmt.Errorf("sample expression %q: unexpected %q after it", s, s[n:])
	}
	return e, nil
}

// scanSampleExpr reads the sample expression at the start of s, as
// haproxy's parser does, up to the first character that is not part of
// it (a %[...]'s closing bracket); n is its length.
func scanSampleExpr(s string) (e *SampleExpr, n int, err error) {
	name, _, n, err := scanCall(s, 0)
	if err != nil {
		return nil, 0, err
	}
	if name == "" {
		return nil, 0, fmt.Errorf("sample expression %q: missing fetch method", s)
	}
	// The fetch is checked by name and argument as written.
	e = &SampleExpr{Fetch: s[:n]}
	for n < len(s) && s[n] == ',' {
		start := n + 1
		cname, cargs, end, err := scanCall(s, start)
		if err != nil {
			return nil, 0, err
		}
		if cname == "" {
			return nil, 0, fmt.Errorf("sample expression %q: missing converter after ','", s)
		}
		c, err := compileConverter(cname, cargs)
		if err != nil {
			return nil, 0, err
		}
		e.Convs = append(e.Convs, c)
		n = end
	}
	return e, n, nil
}

// scanCall reads a name of letters, digits and ._- at s[from:] and its
// argument list in parentheses, if any; end is the index after it.
func scanCall(s string, from int) (name string, args []string, end int, err error) {
	i := from
	for i < len(s) && (s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '_' || s[i] == '-') {
		i++
	}
	name = s[from:i]
	if i == len(s) || s[i] != '(' {
		return name, nil, i, nil
	}
	args, i, ok := scanArgs(s, i+1)
	if !ok {
		// haproxy's words, arg N being the one the text ended in.
		return "", nil, 0, fmt.Errorf("invalid arg %d in converter '%s' : expected ')'", len(args)+1, name)
	}
	return name, args, i, nil
}

// scanArgs reads an argument list from s[i:] up to its closing
// parenthesis as haproxy 2.6 does: arguments split at commas; quotes
// ('...', "...") keep commas and parentheses; outside single quotes a
// backslash escapes a backslash, a quote or a space, \r \n \t are
// those characters, and any other backslash stays. end is the index
// after the closing parenthesis.
func scanArgs(s string, i int) (args []string, end int, ok bool) {
	var b strings.Builder
	squote, dquote := false, false
	for ; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' && !squote:
			dquote = !dquote
		case c == '\'' && !dquote:
			squote = !squote
		case c == '\\' && !squote && i+1 < len(s):
			switch d := s[i+1]; d {
			case '\\', ' ', '"', '\'':
				b.WriteByte(d)
				i++
			case 'r':
				b.WriteByte('\r')
				i++
			case 'n':
				b.WriteByte('\n')
				i++
			case 't':
				b.WriteByte('\t')
				i++
			default:
				b.WriteByte(c)
			}
		case !squote && !dquote && (c == ',' || c == ')'):
			args = append(args, b.String())
			b.Reset()
			if c == ')' {
				return args, i + 1, true
			}
		default:
			b.WriteByte(c)
		}
	}
	return args, 0, false
}

// compileConverter checks a converter's arguments and compiles them,
// with haproxy's messages for its misuse.
func compileConverter(name string, args []string) (Converter, error) {
	c := Converter{Name: name, Args: args}
	if name != "regsub" {
		return c, fmt.Errorf("converter '%s' is not supported by vipstack (accepted: %s)", name, Converters)
	}
	bad := func(format string, a ...any) (Converter, error) {
		return c, fmt.Errorf("invalid args in converter 'regsub' : "+format, a...)
	}
	badArg := func(n int, format string, a ...any) (Converter, error) {
		return c, fmt.Errorf("invalid arg %d in converter 'regsub' : "+format, append([]any{n}, a...)...)
	}
	// haproxy reads no list, and an empty one, as one empty argument.
	switch {
	case len(args) <= 1:
		return badArg(2, "missing arguments (got 1/2), type 'string' expected")
	case len(args) > 3:
		return badArg(3, "expected ')' before ',%s)'", strings.Join(args[3:], ","))
	}
	flags := ""
	if len(args) == 3 {
		flags = args[2]
	}
	expr := args[0]
	for _, f := range flags {
		switch f {
		case 'i':
			expr = "(?i)" + args[0]
		case 'g':
			c.global = true
		default:
			return bad("invalid regex flag '%c', only 'i' and 'g' are supported", f)
		}
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return c, fmt.Errorf("error in regex '%s' in arg 1 of conversion keyword 'regsub' : regex '%s' is invalid (error=%v) (accepted: an RE2 regular expression)", args[0], args[0], err)
	}
	c.re, c.subst = re, args[1]
	c.reNotBOL = re
	if c.global {
		if c.reNotBOL, err = notBOL(expr); err != nil {
			return bad("regex %q: %v", args[0], err)
		}
	}
	return c, nil
}

// notBOL is expr where ^ (outside multi-line mode) never matches: the
// expression for a match that does not begin at the sample's start.
func notBOL(expr string) (*regexp.Regexp, error) {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil, err
	}
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		if r.Op == syntax.OpBeginText {
			r.Op = syntax.OpNoMatch
		}
		for _, s := range r.Sub {
			walk(s)
		}
	}
	walk(re)
	return regexp.Compile(re.String())
}

// Convert applies e's converters to a sample's value v.
func (e *SampleExpr) Convert(v string) string {
	for i := range e.Convs {
		v = e.Convs[i].apply(v)
	}
	return v
}

// apply is regsub as haproxy 2.6 carries it out: the first match (every
// one with flag g, each search going on from the end of the last match)
// replaced by the substitution, where \N is the match's group N and
// \xHH a byte; an empty match is taken to stand before a character,
// which is copied, the search going on after it.
func (c *Converter) apply(s string) string {
	var b strings.Builder
	start, re := 0, c.re
	for {
		var m []int
		if c.global || start == 0 {
			m = re.FindStringSubmatchIndex(s[start:])
		}
		if m == nil {
			b.WriteString(s[start:])
			return b.String()
		}
		b.WriteString(s[start : start+m[0]])
		b.WriteString(ExpReplace(s[start:], m, c.subst))
		if start >= len(s) {
			return b.String()
		}
		adv := m[1]
		if adv == 0 {
			b.WriteByte(s[start])
			adv = 1
		}
		start += adv
		re = c.reNotBOL
		if !c.global {
			b.WriteString(s[start:])
			return b.String()
		}
	}
}

// ExpReplace is haproxy's substitution of a match m (as regexp's
// FindStringSubmatchIndex gives it) of s: \N is group N (empty when the
// group matched nothing), \xHH a byte, another escaped character stands
// for itself.
func ExpReplace(s string, m []int, with string) string {
	var b strings.Builder
	for i := 0; i < len(with); i++ {
		c := with[i]
		if c != '\\' || i+1 == len(with) {
			b.WriteByte(c)
			continue
		}
		i++
		d := with[i]
		switch {
		case d >= '0' && d <= '9':
			if n := int(d - '0'); 2*n+1 < len(m) && m[2*n] >= 0 {
				b.WriteString(s[m[2*n]:m[2*n+1]])
			}
		case d == 'x' && i+2 < len(with):
			if v, ok := hexByte(with[i+1 : i+3]); ok {
				b.WriteByte(v)
				i += 2
				continue
			}
			b.WriteByte(d)
		default:
			b.WriteByte(d)
		}
	}
	return b.String()
}

func hexByte(h string) (byte, bool) {
	var v byte
	for _, c := range []byte(h) {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | (c - '0')
		case c >= 'a' && c <= 'f':
			v = v<<4 | (c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			v = v<<4 | (c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return v, true
}

// NextSample finds the first %[...] of a rule's value v: the text
// before it, its expression and the text after its closing bracket.
// found is false when v has none. haproxy reads the expression first
// (a bracket inside a converter's arguments is part of them), then
// wants the bracket.
func NextSample(v string) (lit, expr, rest string, found bool, err error) {
	i := strings.Index(v, "%[")
	if i < 0 {
		return v, "", "", false, nil
	}
	_, n, err := scanSampleExpr(v[i+2:])
	if err != nil {
		return "", "", "", false, fmt.Errorf("failed to parse sample expression <%s> : %w", v[i+2:], err)
	}
	j := i + 2 + n
	if j >= len(v) || v[j] != ']' {
		return "", "", "", false, fmt.Errorf("value %q has an unclosed %%[ (accepted: %s)", v, HTTPValueVars)
	}
	return v[:i], v[i+2 : j], v[j+1:], true, nil
}
