package supervise

import (
	"errors"
	"strconv"
)

// MarshalText encodes s for EnvSupervisor: space-separated fields, each
// name=value, strings Go-quoted, an attribute per field in order:
//
//	format="text" level="info" attr="node" attr="m0" keepfd=5 ledger="/run/vipstack/vrrp-net.vips" redirects=true startgc=5 gcenv=true procsenv=true
//
// Not JSON: the supervisor that decodes it runs from the initialisation,
// where encoding/json would come too late (see lineLogger). The value
// passes only between two runs of the same binary.
func (s Spec) MarshalText() ([]byte, error) {
	b := []byte("format=")
	b = strconv.AppendQuote(b, s.LogFormat)
	b = append(b, " level="...)
	b = strconv.AppendQuote(b, s.LogLevel)
	for _, a := range s.LogAttrs {
		b = append(b, " attr="...)
		b = strconv.AppendQuote(b, a)
	}
	if s.KeepFD != 0 {
		b = append(b, " keepfd="...)
		b = strconv.AppendInt(b, int64(s.KeepFD), 10)
	}
	for _, l := range s.Ledgers {
		b = append(b, " ledger="...)
		b = strconv.AppendQuote(b, l)
	}
	if s.Redirects {
		b = append(b, " redirects=true"...)
	}
	if s.StartGC != 0 {
		b = append(b, " startgc="...)
		b = strconv.AppendInt(b, int64(s.StartGC), 10)
	}
	if s.gcEnv {
		b = append(b, " gcenv=true"...)
	}
	if s.procsEnv {
		b = append(b, " procsenv=true"...)
	}
	return b, nil
}

// UnmarshalText decodes what MarshalText encoded; an error names the
// field, the bad value and what is accepted.
func (s *Spec) UnmarshalText(text []byte) error {
	var out Spec
	rest := string(text)
	for rest != "" {
		name, value, ok := cut(rest, '=')
		if !ok {
			return errors.New("field " + strconv.Quote(rest) + ": want name=value")
		}
		var v string
		switch name {
		case "format", "level", "attr", "ledger":
			q, err := strconv.QuotedPrefix(value)
			if err != nil {
				return errors.New("field " + name + ": value " + strconv.Quote(value) + ": want a Go-quoted string")
			}
			v, _ = strconv.Unquote(q)
			rest = value[len(q):]
		case "keepfd", "startgc", "gcenv", "procsenv", "redirects":
			var more bool
			v, rest, more = cut(value, ' ')
			if more {
				rest = " " + rest
			}
			if name == "startgc" {
				n, err := strconv.Atoi(v)
				if err != nil || n < 1 {
					return errors.New("field startgc: value " + strconv.Quote(v) + ": want a GOGC percentage, 1 or more")
				}
				out.StartGC = n
				break
			}
			if name != "keepfd" {
				on, err := strconv.ParseBool(v)
				if err != nil {
					return errors.New("field " + name + ": value " + strconv.Quote(v) + ": want true or false")
				}
				switch name {
				case "gcenv":
					out.gcEnv = on
				case "procsenv":
					out.procsEnv = on
				default:
					out.Redirects = on
				}
				break
			}
			fd, err := strconv.Atoi(v)
			if err != nil || fd < 0 {
				return errors.New("field keepfd: value " + strconv.Quote(v) + ": want a descriptor number")
			}
			out.KeepFD = fd
		default:
			return errors.New("field " + strconv.Quote(name) + ": want format, level, attr, keepfd, ledger, redirects, startgc, gcenv or procsenv")
		}
		switch name {
		case "format":
			out.LogFormat = v
		case "level":
			out.LogLevel = v
		case "attr":
			out.LogAttrs = append(out.LogAttrs, v)
		case "ledger":
			out.Ledgers = append(out.Ledgers, v)
		}
		if rest == " " {
			return errors.New("a space at the end: want name=value after each space")
		}
		if rest != "" {
			if rest[0] != ' ' {
				return errors.New("field " + name + ": " + strconv.Quote(rest) + " after its value: want a space, then the next field")
			}
			rest = rest[1:]
		}
	}
	*s = out
	return nil
}
