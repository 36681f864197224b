package haproxycfg

import (
	"os"
	"strconv"
)

// SystemEnv looks a variable of haproxy.cfg up as haproxy 2.6 started
// without -L does: HAPROXY_LOCALPEER is the host name (haproxy sets it
// at start whatever the environment holds; measured), any other name the
// process's environment. Load uses it; ParseWith takes it as
// Options.LookupEnv.
func SystemEnv(name string) (string, bool) {
	if name == "HAPROXY_LOCALPEER" {
		h, err := os.Hostname()
		if err != nil {
			return "", false
		}
		return h, true
	}
	return os.LookupEnv(name)
}

// haproxyOwnVars are variables haproxy 2.6 sets itself whose value at
// parse time differs between a start and a reload under master-worker
// (measured with haproxy -Ws: HAPROXY_MWORKER, HAPROXY_CFGFILES and
// HAPROXY_CLI are unset at start and set after a reload;
// HAPROXY_STARTUP_VERSION is haproxy's version). vipstack has no value
// that would mean the same, so they are errors.
const haproxyOwnVars = "HAPROXY_CFGFILES HAPROXY_CLI HAPROXY_MASTER_CLI HAPROXY_MWORKER HAPROXY_STARTUP_VERSION"

// maxExpansion bounds the bytes a file's variables add to it, so that an
// environment cannot make a small file large.
const maxExpansion = MaxFileSize

// vars is what double-quoted variables expand from: the environment and
// the pseudo-variables of the line being read (configuration manual
// section 2.3).
type vars struct {
	lookup  func(name string) (string, bool) // nil: no variable is set
	file    string                           // .FILE
	line    int                              // .LINE
	section string                           // .SECTION
	used    int                              // bytes added so far
}

func isAlpha(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// cIsSpace is C's isspace, which splits a ${NAME[*]} value.
func cIsSpace(c byte) bool { return c == ' ' || c >= '\t' && c <= '\r' }

const varForms = "$NAME, ${NAME}, ${NAME-DEFAULT} or ${NAME[*]}, NAME of letters, digits and underscores " +
	"not starting with a digit, or .FILE, .LINE, .SECTION; \\$ for a dollar sign"

// expand reads the variable whose '$' is at s[i] inside double quotes and
// appends its value to the word being built (cur), or with [*] splits it
// into words at its blanks as haproxy does. It returns the index after
// the variable, or haproxy's message (with the position, from 1) and what
// is accepted.
func (v *vars) expand(s string, i int, words *[]string, cur *[]byte) (int, string) {
	if v == nil {
		v = &vars{}
	}
	i++ // past '$'
	brace := -1
	if i < len(s) && s[i] == '{' {
		brace = i
		i++
	}
	if i >= len(s) || !isAlpha(s[i]) && s[i] != '_' && s[i] != '.' {
		return 0, "forbidden first char in environment variable name at position " + strconv.Itoa(i+1) + " (accepted: " + varForms + ")"
	}
	start := i
	if s[i] == '.' {
		i++
	}
	for i < len(s) && (isAlpha(s[i]) || isDigit(s[i]) || s[i] == '_') {
		i++
	}
	name := s[start:i]
	var (
		value string
		set   bool
	)
	switch {
	case name == ".FILE":
		value, set = v.file, true
	case name == ".LINE":
		value, set = strconv.Itoa(v.line), true
	case name == ".SECTION":
		value, set = v.section, true
	case name[0] == '.':
		return 0, "forbidden first char in environment variable name at position " + strconv.Itoa(start+1) +
			" (accepted: the pseudo-variables .FILE, .LINE and .SECTION)"
	case inList(haproxyOwnVars, name):
		return 0, "variable " + name + " at position " + strconv.Itoa(start+1) + " is one haproxy sets itself, " +
			"with another value after a reload; vipstack does not set it (write the value)"
	case v.lookup != nil:
		value, set = v.lookup(name)
	}
	split := false
	if brace >= 0 && i < len(s) && s[i] == '[' {
		if len(s) < i+3 || s[i:i+3] != "[*]" {
			return 0, "truncated or invalid word expansion sequence at position " + strconv.Itoa(i+1) + " (accepted: ${NAME[*]})"
		}
		split = true
		i += 3
	}
	if brace >= 0 {
		unmatched := "unmatched brace in environment variable name at position " + strconv.Itoa(brace+1) + " (accepted: " + varForms + ")"
		switch {
		case i < len(s) && s[i] == '-':
			// The default runs raw to the brace: no quotes, escapes
			// or variables inside, as in haproxy.
			end := i + 1
			for end < len(s) && s[end] != '}' {
				end++
			}
			if end == len(s) {
				return 0, unmatched
			}
			if !set {
				value = s[i+1 : end]
			}
			i = end
		case i >= len(s) || s[i] != '}':
			return 0, unmatched
		}
		i++ // past '}'
	}
	v.used += len(value)
	if v.used > maxExpansion {
		return 0, "variables expand to more than " + strconv.Itoa(maxExpansion) + " bytes in this file (accepted: at most " +
			strconv.Itoa(maxExpansion) + ", the size limit of the file itself)"
	}
	for j := 0; j < len(value); {
		if split && cIsSpace(value[j]) {
			*words = append(*words, string(*cur))
			*cur = (*cur)[:0]
			for j < len(value) && cIsSpace(value[j]) {
				j++
			}
			continue
		}
		*cur = append(*cur, value[j])
		j++
	}
	return i, ""
}
