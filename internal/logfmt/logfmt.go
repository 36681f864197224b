// Package logfmt makes vipstack's log handlers from the names its flags
// take (--log-format, --log-level). It is light: the crash clean-up, which
// runs from the initialisation of a few packages (internal/cleanup/early),
// uses it as the commands do (internal/daemon).
package logfmt

import (
	"fmt"
	"io"
	"log/slog"
)

// ParseLevel reads a level: debug, info, warn or error. The error names
// the value and what is accepted; the caller says where it came from.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return l, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

// NewHandler returns a handler writing to w in format (text or json) at
// level. The error names the format and what is accepted.
func NewHandler(w io.Writer, format string, level slog.Level) (slog.Handler, error) {
	o := &slog.HandlerOptions{Level: level}
	switch format {
	case "text":
		return slog.NewTextHandler(w, o), nil
	case "json":
		return slog.NewJSONHandler(w, o), nil
	}
	return nil, fmt.Errorf("%q: want text or json", format)
}
