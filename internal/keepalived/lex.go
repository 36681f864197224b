package keepalived

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
)

// Limits on what the reader accepts.
const (
	MaxFileSize     = 1 << 20 // bytes per file
	maxIncludeDepth = 8       // nested include levels below the main file
	maxFiles        = 256     // files read in total (a file included twice counts twice)
)

// token is one word of a line. start and end are byte offsets into the
// line's text, so a statement's raw text can be re-split for scripts.
type token struct {
	text       string
	quoted     bool
	start, end int
}

// line is one non-empty, decommented line of configuration.
type line struct {
	pos  Pos
	text string
	toks []token
}

// stmt is a keyword with its arguments and, if it opens one, its block.
type stmt struct {
	pos   Pos
	words []token // words[0] is the keyword
	raw   string  // the statement's text, for re-splitting commands
	block []*stmt
	open  *Pos // where the block was opened; nil without a block
}

func (s *stmt) kw() string { return s.words[0].text }

// args returns the argument texts.
func (s *stmt) args() []string {
	out := make([]string, 0, len(s.words)-1)
	for _, w := range s.words[1:] {
		out = append(out, w.text)
	}
	return out
}

// errList collects rejections. Only the first maxReported are kept; the
// rest are counted, so a hostile file cannot make it grow without bound.
type errList struct {
	errs    []*Error
	dropped int
}

func (l *errList) add(pos Pos, kw, format string, a ...any) {
	if len(l.errs) == maxReported {
		l.dropped++
		return
	}
	l.errs = append(l.errs, &Error{Pos: pos, Keyword: kw, Msg: fmt.Sprintf(format, a...)})
}

// maxReported caps how many errors are joined into the returned error.
const maxReported = 20

func (l *errList) err() error {
	if len(l.errs) == 0 {
		return nil
	}
	out := make([]error, 0, len(l.errs)+1)
	for _, e := range l.errs {
		out = append(out, e)
	}
	if l.dropped > 0 {
		out = append(out, fmt.Errorf("... and %d more errors", l.dropped))
	}
	return errors.Join(out...)
}

// reader reads a file and its includes into a flat list of lines, the way
// keepalived does: include is resolved when the line is read, so it may
// appear anywhere a line may.
type reader struct {
	fsys     fs.FS
	errs     *errList
	files    []string // distinct files, in the order first read
	reads    int      // files read, counting repeats
	warnings []string
	stack    []string // files being read, outermost first
	lines    []line
	configID string // keepalived's -i: which "@ID" lines are read
}

// readFile reads data as the contents of name.
func (r *reader) readFile(name string, data []byte) {
	r.reads++
	if !slices.Contains(r.files, name) {
		r.files = append(r.files, name)
	}
	r.stack = append(r.stack, name)
	defer func() { r.stack = r.stack[:len(r.stack)-1] }()

	// The file's lines are read in place, not split into a slice first,
	// and the list of lines grows once per file, not by appends: Parse of
	// bench/scale's file (1,000 instances, 20,000 lines) allocated 19.0
	// MB before, 13.6 after, garbage made among what the engine keeps
	// (docs/design/memory.md).
	all := string(data)
	r.lines = slices.Grow(r.lines, strings.Count(all, "\n")+1)
	for i := 0; all != ""; i++ {
		text, rest, _ := strings.Cut(all, "\n")
		all = rest
		pos := Pos{File: name, Line: i + 1}
		text, err := decomment(strings.TrimSuffix(text, "\r"))
		if err != "" {
			r.errs.add(pos, "", "%s", err)
			continue
		}
		if text == "" {
			continue
		}
		if text[0] == '@' {
			var keep bool
			if text, keep = r.conditional(pos, text); !keep {
				continue
			}
		}
		if !r.special(pos, text) {
			continue
		}
		if refs := builtinRefs(text); len(refs) > 0 {
			for _, ref := range refs {
				what, _ := builtin(ref.name)
				r.errs.add(pos, "$", "keepalived's builtin definition %s is not supported by vipstack (keepalived puts %s there); write the value instead",
					ref.text, what)
			}
			continue
		}
		toks, err := tokenize(text, true)
		if err != "" {
			r.errs.add(pos, "", "%s", err)
			continue
		}
		if toks[0].text == "include" && !toks[0].quoted {
			words, _ := tokenize(text, false) // no error: the same quotes
			r.include(pos, words[1:])
			continue
		}
		r.lines = append(r.lines, line{pos: pos, text: text, toks: toks})
	}
}

// special rejects keepalived's preprocessor features, which vipstack does
// not implement. It reports whether the line is an ordinary one.
func (r *reader) special(pos Pos, text string) bool {
	first, _, _ := strings.Cut(text, " ")
	first, _, _ = strings.Cut(first, "\t")
	switch {
	case text[0] == '$':
		r.errs.add(pos, "$", "parameter definitions ($NAME=...) are not supported by vipstack")
	case text[0] == '~':
		r.errs.add(pos, "~", "sequence and list blocks (~SEQ, ~LST) are not supported by vipstack")
	case slices.Contains([]string{"includer", "includem", "includew", "includeb", "includea", "includet", "include_check"}, first):
		r.errs.add(pos, first, "keyword %q is not supported by vipstack (use include)", first)
	default:
		return true
	}
	return false
}

// conditional handles keepalived's conditional lines: "@ID rest" is rest
// when ID is the config ID (-i, default the host name), "@^ID rest" when it
// is not; otherwise the line is skipped. It returns the line to read and
// whether to read it.
func (r *reader) conditional(pos Pos, text string) (string, bool) {
	id, rest, _ := strings.Cut(text[1:], " ")
	if i := strings.IndexByte(id, '\t'); i >= 0 {
		id, rest = id[:i], id[i+1:]+" "+rest
	}
	rest = strings.TrimLeft(rest, blanks)
	not := strings.HasPrefix(id, "^")
	id = strings.TrimPrefix(id, "^")
	if id == "" {
		r.errs.add(pos, "@", "conditional line %q has no config ID after @ (accepted: @ID or @^ID, then the line)", text)
		return "", false
	}
	if (id == r.configID) == not || rest == "" {
		return "", false
	}
	return rest, true
}

// hiddenMatch reports whether the glob pattern matched name only because a
// wildcard matched a leading "." of one of its components. keepalived
// globs with glibc's glob(3), where such a dot must be matched by a "." in
// the pattern; Go's path.Match lets * and ? match it. fs.Glob matches
// component by component, so both have as many components.
func hiddenMatch(pattern, name string) bool {
	pc, nc := strings.Split(pattern, "/"), strings.Split(name, "/")
	if len(pc) != len(nc) {
		return false
	}
	for i := range nc {
		if strings.HasPrefix(nc[i], ".") && !strings.HasPrefix(pc[i], ".") {
			return true
		}
	}
	return false
}

// builtin says what keepalived 2.2.7 puts in place of its predefined
// definition name, and whether name is one.
func builtin(name string) (string, bool) {
	switch name {
	case "_PWD":
		return "the directory of the configuration file", true
	case "_INSTANCE":
		return "its instance name (the host name unless -i is given)", true
	case "_RANDOM":
		return "a random number", true
	case "_HASH":
		return "#", true
	case "_BANG":
		return "!", true
	}
	return "", false
}

// builtinRef is one use of a keepalived builtin definition in a line.
type builtinRef struct {
	name string // the definition, e.g. _PWD
	text string // as written, e.g. ${_PWD}
}

// builtinRefs finds the builtin definitions keepalived 2.2.7 would expand
// in a decommented line: $NAME where the name ends the line or is followed
// by a blank, "," or ")", and ${NAME} or ${NAME N M}, anywhere, quotes
// included (measured: auth_pass "x${_PWD}" and a$_PWD are expanded,
// $_PWD/x is not). Other names are left as they are, as keepalived leaves
// names it has no definition for.
func builtinRefs(line string) []builtinRef {
	var refs []builtinRef
	for i := 0; i < len(line); i++ {
		if line[i] != '$' {
			continue
		}
		j := i + 1
		braces := j < len(line) && line[j] == '{'
		if braces {
			j++
		}
		start := j
		for j < len(line) && (line[j] == '_' || isAlpha(line[j]) || (j > start && line[j] >= '0' && line[j] <= '9')) {
			j++
		}
		name := line[start:j]
		if _, ok := builtin(name); !ok {
			continue
		}
		if braces {
			for j < len(line) && (line[j] == ' ' || (line[j] >= '0' && line[j] <= '9')) {
				j++
			}
			if j == len(line) || line[j] != '}' {
				continue
			}
			j++
		} else if j < len(line) && !strings.ContainsRune(" \t,)", rune(line[j])) {
			continue
		}
		refs = append(refs, builtinRef{name: name, text: line[i:j]})
		i = j - 1
	}
	return refs
}

func isAlpha(c byte) bool { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') }

// include reads the files matching an include pattern. A relative pattern
// is relative to the directory of the including file.
func (r *reader) include(pos Pos, args []token) {
	if len(args) != 1 {
		r.errs.add(pos, "include", "include takes exactly one file name or glob, got %d", len(args))
		return
	}
	pattern := args[0].text
	if r.reads >= maxFiles {
		r.errs.add(pos, "include", "include %q: more than %d files read in total", pattern, maxFiles)
		return
	}
	if strings.ContainsAny(pattern, "{}") {
		r.errs.add(pos, "include", "include %q: brace expressions are not supported by vipstack (use * ? [...] globs)", pattern)
		return
	}
	full := pattern
	if !path.IsAbs(full) {
		full = path.Join(path.Dir(pos.File), full)
	}
	abs := path.IsAbs(full)
	fsName := strings.TrimPrefix(path.Clean(full), "/")
	if fsName == "" {
		fsName = "."
	}
	if !fs.ValidPath(fsName) {
		r.errs.add(pos, "include", "include %q: resolves to %q, outside the readable file tree", pattern, full)
		return
	}

	var matches []string
	if strings.ContainsAny(pattern, `*?[\`) {
		m, err := fs.Glob(r.fsys, fsName)
		if err != nil {
			r.errs.add(pos, "include", "include %q: %v", pattern, err)
			return
		}
		m = slices.DeleteFunc(m, func(name string) bool { return hiddenMatch(fsName, name) })
		if len(m) == 0 {
			r.warnings = append(r.warnings, fmt.Sprintf("%s: include %q matched no files", pos, pattern))
		}
		matches = m
	} else {
		matches = []string{fsName}
	}

	for _, m := range matches {
		name := m
		if abs {
			name = "/" + m
		}
		if i := slices.Index(r.stack, name); i >= 0 {
			chain := append(slices.Clone(r.stack[i:]), name)
			r.errs.add(pos, "include", "include cycle: %s", strings.Join(chain, " -> "))
			continue
		}
		if len(r.stack) > maxIncludeDepth {
			r.errs.add(pos, "include", "include %q: includes nested more than %d deep", pattern, maxIncludeDepth)
			return
		}
		if r.reads >= maxFiles {
			r.errs.add(pos, "include", "include %q: more than %d files read in total", pattern, maxFiles)
			return
		}
		if skip := skipInclude(r.fsys, m); skip != "" {
			r.warnings = append(r.warnings, fmt.Sprintf("%s: include %q: %s %s", pos, pattern, name, skip))
			continue
		}
		data, err := readLimited(r.fsys, m)
		if err != nil {
			r.errs.add(pos, "include", "include %q: %s: %v", pattern, name, err)
			continue
		}
		r.readFile(name, data)
	}
}

// skipInclude says why keepalived 2.2.7 would skip the included file name,
// or "" to read it. keepalived reads only regular files with no execute
// bit ("Configuration file '...' is not a regular non-executable file -
// skipping", "... is a directory - skipping"; measured, keepalived -t exits
// 0) and goes on with the rest. A file that cannot be stat'ed is left to
// readLimited, which reports why.
func skipInclude(fsys fs.FS, name string) string {
	fi, err := fs.Stat(fsys, name)
	switch {
	case err != nil:
		return ""
	case fi.IsDir():
		return "is a directory; skipped, as keepalived does"
	case !fi.Mode().IsRegular():
		return fmt.Sprintf("is not a regular file (%s); skipped, as keepalived does", fi.Mode().Type())
	case fi.Mode().Perm()&0o111 != 0:
		return fmt.Sprintf("is executable (mode %04o); skipped, as keepalived skips any include that is not a regular non-executable file", fi.Mode().Perm())
	}
	return ""
}

// readLimited reads a regular file of at most MaxFileSize bytes.
func readLimited(fsys fs.FS, name string) ([]byte, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file (%s)", fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, errTooLarge
	}
	return data, nil
}

var errTooLarge = fmt.Errorf("file is larger than %d bytes (1 MiB)", MaxFileSize)

// decomment strips a comment (# or ! outside double quotes) and surrounding
// blanks. It returns a message for lines vipstack cannot accept.
//
// A backslash does not protect # or ! outside quotes: keepalived 2.2.7's
// VRRP instances read "auth_pass ab\#cd" as password "ab" and
// "script /bin/echo\#x" as /bin/echo (measured with the daemon's -d dump;
// only its global_defs dump showed router_id ab\#cd as ab#cd). Inside
// double quotes a backslash pair is kept as it is (\" does not end the
// quote), and outside them "\\" stays two backslashes, as there.
func decomment(s string) (string, string) {
	var b strings.Builder
	quote := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quote = !quote
		case c == '\\':
			if i+1 == len(s) {
				return "", "line continuation (trailing \\) is not supported by vipstack"
			}
			if !quote && (s[i+1] == '#' || s[i+1] == '!') {
				return strings.Trim(b.String(), blanks), ""
			}
			i++
			b.WriteByte(c)
			c = s[i]
		case !quote && (c == '#' || c == '!'):
			return strings.Trim(b.String(), blanks), ""
		}
		b.WriteByte(c)
	}
	if quote {
		return "", "unterminated double quote"
	}
	return strings.Trim(b.String(), blanks), ""
}

const blanks = " \t\f\v\r"

// tokenize splits a decommented line into words. A word starting with a
// double quote runs to the next double quote and loses the quotes. An
// unquoted "{" or "}" is a word of its own even where it touches another
// word, as keepalived 2.2.7 reads it: "vrrp_instance A{", "{chk}" and
// "}vrrp_instance" open and close blocks (measured), and "auth_pass a{b"
// is auth_pass a followed by a block.
// With braces false they are ordinary characters, for include patterns
// (whose brace expressions include rejects by name).
func tokenize(s string, braces bool) ([]token, string) {
	var toks []token
	i := 0
	for {
		for i < len(s) && strings.IndexByte(blanks, s[i]) >= 0 {
			i++
		}
		if i == len(s) {
			return toks, ""
		}
		start := i
		if s[i] == '"' {
			j := strings.IndexByte(s[i+1:], '"')
			if j < 0 {
				return nil, "unterminated double quote"
			}
			i += j + 2
			toks = append(toks, token{text: s[start+1 : i-1], quoted: true, start: start, end: i})
			continue
		}
		if braces && (s[i] == '{' || s[i] == '}') {
			i++
			toks = append(toks, token{text: s[start:i], start: start, end: i})
			continue
		}
		for i < len(s) && s[i] != '"' && !(braces && (s[i] == '{' || s[i] == '}')) && strings.IndexByte(blanks, s[i]) < 0 {
			i++
		}
		toks = append(toks, token{text: s[start:i], start: start, end: i})
	}
}

// buildTree groups lines into statements and blocks. A block opens with an
// unquoted "{" after a keyword (on the same line or alone on the next line)
// and closes with an unquoted "}"; several statements may share a line, as
// in "track_script { chk }".
func buildTree(lines []line, errs *errList) []*stmt {
	type frame struct {
		owner *stmt
		list  []*stmt
	}
	stack := []*frame{{}}
	var last *stmt // statement that ended the previous line, may take a "{" on the next
	for _, ln := range lines {
		var cur []token
		flush := func() *stmt {
			if len(cur) == 0 {
				return nil
			}
			s := &stmt{pos: ln.pos, words: cur, raw: ln.text[cur[0].start:cur[len(cur)-1].end]}
			top := stack[len(stack)-1]
			top.list = append(top.list, s)
			cur = nil
			return s
		}
		for i, t := range ln.toks {
			switch {
			case t.quoted || (t.text != "{" && t.text != "}"):
				cur = append(cur, t)
			case t.text == "{":
				owner := flush()
				if owner == nil && i == 0 && last != nil && last.open == nil {
					owner = last
				}
				if owner == nil {
					errs.add(ln.pos, "{", `unexpected "{" (a block must follow a keyword)`)
					owner = &stmt{pos: ln.pos, words: []token{{text: "{"}}}
				}
				pos := ln.pos
				owner.open = &pos
				stack = append(stack, &frame{owner: owner})
			default: // "}"
				flush()
				if len(stack) == 1 {
					errs.add(ln.pos, "}", `unexpected "}" (no block is open)`)
					continue
				}
				top := stack[len(stack)-1]
				top.owner.block = top.list
				stack = stack[:len(stack)-1]
			}
			last = nil
		}
		last = flush()
	}
	for _, f := range slices.Backward(stack[1:]) {
		errs.add(*f.owner.open, f.owner.kw(), "%q block opened here is not closed", f.owner.kw())
		f.owner.block = f.list
	}
	return stack[0].list
}
