package supervise

import (
	"errors"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"
)

// Logger is what a Supervisor logs with. *slog.Logger is one, which the
// in-process supervisors pass; the small supervisor uses a lineLogger,
// which prints the same lines without log/slog (see lineLogger).
type Logger interface {
	Debug(msg string, args ...any)
	Info(msg string, args ...any)
	Error(msg string, args ...any)
}

// slog's levels, by number, and the names its handlers print.
const (
	levelDebug = -4
	levelInfo  = 0
	levelWarn  = 4
	levelError = 8
)

// lineLogger prints what slog.New(slog.NewTextHandler(w, o)).With(attrs...)
// or its JSONHandler prints, for the values the supervisor logs: strings,
// integers, booleans, durations and errors (any other value prints as
// "!UNSUPPORTED"). It exists so that the small supervisor, which runs
// from the initialisation, imports no log/slog: every package a package
// imports is initialised before it, and log/slog (through encoding/json,
// fmt's users and the rest) put the supervisor 196th of ~546 packages,
// after 1 MB of the other packages' allocations (docs/design/memory.md).
// TestLineLoggerMatchesSlog holds it to slog's output.
type lineLogger struct {
	mu    sync.Mutex
	w     io.Writer
	json  bool
	level int              // below it nothing is printed
	attrs []string         // key, value, ... printed after the message
	now   func() time.Time // the records' time
}

// parseLevel reads a level as slog.Level's UnmarshalText does: a name
// (debug, info, warn or error, in any case) with an optional signed
// offset ("info+2").
func parseLevel(s string) (int, error) {
	bad := errors.New("log level " + strconv.Quote(s) + ": want debug, info, warn or error")
	name, offset := s, 0
	for i := 0; i < len(s); i++ {
		if s[i] == '+' || s[i] == '-' {
			n, err := strconv.Atoi(s[i:])
			if err != nil {
				return 0, bad
			}
			name, offset = s[:i], n
			break
		}
	}
	for _, l := range []struct {
		name  string
		level int
	}{{"debug", levelDebug}, {"info", levelInfo}, {"warn", levelWarn}, {"error", levelError}} {
		if equalFoldASCII(name, l.name) {
			return l.level + offset, nil
		}
	}
	return 0, bad
}

// Debug logs at slog's LevelDebug.
func (l *lineLogger) Debug(msg string, args ...any) { l.log(levelDebug, "DEBUG", msg, args) }

// Info logs at slog's LevelInfo.
func (l *lineLogger) Info(msg string, args ...any) { l.log(levelInfo, "INFO", msg, args) }

// Error logs at slog's LevelError.
func (l *lineLogger) Error(msg string, args ...any) { l.log(levelError, "ERROR", msg, args) }

// log prints one record in a single Write, as slog's handlers do. args
// are key, value pairs as slog takes them: a value without a key (one
// that is not a string, or a last string alone) gets the key "!BADKEY".
func (l *lineLogger) log(level int, levelName, msg string, args []any) {
	if level < l.level {
		return
	}
	b := make([]byte, 0, 256)
	sep := " "
	if l.json {
		b = append(b, '{')
		sep = ","
	}
	b = l.key(b, "", "time")
	b = l.time(b, l.now())
	b = l.key(b, sep, "level")
	b = l.str(b, levelName)
	b = l.key(b, sep, "msg")
	b = l.str(b, msg)
	for i := 0; i+1 < len(l.attrs); i += 2 {
		b = l.key(b, sep, l.attrs[i])
		b = l.str(b, l.attrs[i+1])
	}
	for len(args) > 0 {
		key, val := "!BADKEY", args[0]
		if k, ok := args[0].(string); ok && len(args) > 1 {
			key, val = k, args[1]
			args = args[1:]
		}
		args = args[1:]
		b = l.key(b, sep, key)
		b = l.value(b, val)
	}
	if l.json {
		b = append(b, '}')
	}
	b = append(b, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(b)
}

// key appends sep, then key and what ends it ("=" or ":").
func (l *lineLogger) key(b []byte, sep, key string) []byte {
	b = append(b, sep...)
	b = l.str(b, key)
	if l.json {
		return append(b, ':')
	}
	return append(b, '=')
}

// time appends t as slog does: in text to the millisecond, in JSON as
// time.RFC3339Nano.
func (l *lineLogger) time(b []byte, t time.Time) []byte {
	if l.json {
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"')
	}
	return t.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
}

// str appends a string: quoted in JSON; in text quoted only when slog's
// TextHandler would.
func (l *lineLogger) str(b []byte, s string) []byte {
	switch {
	case l.json:
		b = append(b, '"')
		b = appendJSONEscaped(b, s)
		return append(b, '"')
	case needsQuoting(s):
		return strconv.AppendQuote(b, s)
	default:
		return append(b, s...)
	}
}

// value appends v as slog's handlers do for its kind: numbers and
// booleans bare, a duration as its String in text and its nanoseconds
// in JSON, an error as its message.
func (l *lineLogger) value(b []byte, v any) []byte {
	switch v := v.(type) {
	case string:
		return l.str(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10)
	case int64:
		return strconv.AppendInt(b, v, 10)
	case uint64:
		return strconv.AppendUint(b, v, 10)
	case bool:
		return strconv.AppendBool(b, v)
	case time.Duration:
		if l.json {
			return strconv.AppendInt(b, int64(v), 10)
		}
		return append(b, v.String()...)
	case error:
		return l.str(b, v.Error())
	}
	return l.str(b, "!UNSUPPORTED")
}

// needsQuoting is slog's TextHandler's test: empty, or holding a space,
// '=', '"', a byte JSON would escape (but a backslash), invalid UTF-8
// or a rune that is a space or not printable.
func needsQuoting(s string) bool {
	if s == "" {
		return true
	}
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c != '\\' && (c == ' ' || c == '=' || !jsonSafe(c)) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return true
		}
		i += size
	}
	return false
}

// jsonSafe reports whether an ASCII byte stands for itself in a JSON
// string: printable, and neither '"' nor '\'. (DEL is, as encoding/json
// and slog have it.)
func jsonSafe(c byte) bool { return c >= 0x20 && c != '"' && c != '\\' }

// appendJSONEscaped appends s escaped for a JSON string, as slog's
// JSONHandler does (encoding/json's rules without HTML escaping):
// '"', '\', \n, \r and \t by a backslash, other control bytes as
// \u00XX, invalid UTF-8 as \ufffd, U+2028 and U+2029 as \u2028, \u2029.
func appendJSONEscaped(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe(c) {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(b, s[start:]...)
}
