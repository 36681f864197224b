package supervise

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestLineLoggerMatchesSlog: the small supervisor's logger prints, byte
// for byte, what slog's TextHandler and JSONHandler print for the same
// record (the same time, level, message, the command's attributes and
// the record's), for the values the supervisor logs and the strings
// either handler quotes or escapes.
func TestLineLoggerMatchesSlog(t *testing.T) {
	at := time.Date(2026, 11, 30, 16, 5, 7, 123456789, time.UTC)
	for _, tc := range []struct {
		name  string
		level slog.Level // of the record
		min   string     // the logger's level
		when  time.Time
		attrs []string // the command's
		msg   string
		args  []any
	}{
		{name: "engine started", level: slog.LevelInfo, min: "info", attrs: []string{"node", "m0"},
			msg: "supervisor: engine started", args: []any{"pid", 4242}},
		{name: "died", level: slog.LevelError, min: "info", msg: "supervisor: engine died; releasing what it held",
			args: []any{"pid", 7, "status", "killed by SIGKILL"}},
		{name: "durations", level: slog.LevelInfo, min: "debug", msg: "supervisor: restarting the engine",
			args: []any{"in", 2 * time.Second, "timeout", 1500 * time.Millisecond, "zero", time.Duration(0)}},
		{name: "errors", level: slog.LevelError, min: "warn", msg: "supervisor: cannot start the engine",
			args: []any{"err", errors.New(`fork/exec /usr/bin/vipstack: no such file or directory`), "multi", errors.New("a\nb\t\"c\"")}},
		{name: "debug shown", level: slog.LevelDebug, min: "DEBUG", msg: "supervisor: giving back the start-up's pages",
			args: []any{"err", errors.New("open /proc/self/smaps: permission denied")}},
		{name: "numbers and booleans", level: slog.LevelInfo, min: "info+0", msg: "n",
			args: []any{"int", -12, "int64", int64(1) << 40, "uint64", uint64(1) << 63, "yes", true, "no", false}},
		{name: "quoting", level: slog.LevelInfo, min: "info", attrs: []string{"node name", "a=b", "empty", ""},
			msg: "", args: []any{"q", `say "hi"`, "bs", `C:\dir`, "tab", "a\tb", "nl", "a\nb", "uni", "héllo", "nbsp", "a\u00a0b",
				"ctl", "a\x01b", "del", "a\x7fb", "bad", "a\xffb", "ls", "a\u2028b\u2029", "html", "<a&b>", "emoji", "ok👍"}},
		{name: "keys quoted", level: slog.LevelInfo, min: "info", msg: "k", args: []any{"a key", 1, "k=v", 2, `"`, 3}},
		{name: "bad keys", level: slog.LevelInfo, min: "info", msg: "odd", args: []any{7, "x", "alone"}},
		{name: "zone and millis", level: slog.LevelInfo, min: "info", when: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("", 5*3600+1800)), msg: "tz"},
		{name: "millis rounding", level: slog.LevelInfo, min: "info", when: time.Date(2026, 1, 2, 3, 4, 5, 999999999, time.UTC), msg: "ms"},
	} {
		for _, format := range []string{"text", "json"} {
			t.Run(tc.name+"/"+format, func(t *testing.T) {
				when := tc.when
				if when.IsZero() {
					when = at
				}
				var want, got strings.Builder
				level, err := parseLevel(tc.min)
				if err != nil {
					t.Fatal(err)
				}
				o := &slog.HandlerOptions{Level: slog.Level(level)}
				h := slog.Handler(slog.NewTextHandler(&want, o))
				if format == "json" {
					h = slog.NewJSONHandler(&want, o)
				}
				attrs := make([]any, len(tc.attrs))
				for i, a := range tc.attrs {
					attrs[i] = a
				}
				sl := slog.New(h).With(attrs...)
				if sl.Enabled(context.Background(), tc.level) {
					r := slog.NewRecord(when, tc.level, tc.msg, 0)
					r.Add(tc.args...)
					if err := sl.Handler().Handle(context.Background(), r); err != nil {
						t.Fatal(err)
					}
				}
				l, err := Spec{LogFormat: format, LogLevel: tc.min, LogAttrs: tc.attrs}.logger(&got)
				if err != nil {
					t.Fatal(err)
				}
				l.now = func() time.Time { return when }
				switch tc.level {
				case slog.LevelDebug:
					l.Debug(tc.msg, tc.args...)
				case slog.LevelInfo:
					l.Info(tc.msg, tc.args...)
				case slog.LevelError:
					l.Error(tc.msg, tc.args...)
				default:
					t.Fatalf("level %v: the supervisor logs at debug, info and error", tc.level)
				}
				if diff := cmp.Diff(want.String(), got.String()); diff != "" {
					t.Errorf("lineLogger against slog's %s handler (-slog +lineLogger):\n%s", format, diff)
				}
			})
		}
	}
}

// TestLineLoggerLevels: a record below the level prints nothing; the
// level parses as slog.Level's UnmarshalText does.
func TestLineLoggerLevels(t *testing.T) {
	for _, s := range []string{"debug", "INFO", "Warn", "error", "info+2", "error-8", "debug+1", "info-1"} {
		var want slog.Level
		if err := want.UnmarshalText([]byte(s)); err != nil {
			t.Fatal(err)
		}
		got, err := parseLevel(s)
		if err != nil || got != int(want) {
			t.Errorf("parseLevel(%q) = %d, %v; slog's level is %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "loud", "info+", "+2", "info+x", "trace"} {
		var l slog.Level
		if l.UnmarshalText([]byte(s)) == nil {
			t.Errorf("slog takes %q: the test is wrong", s)
		}
		if _, err := parseLevel(s); err == nil || !strings.Contains(err.Error(), "want debug, info, warn or error") {
			t.Errorf("parseLevel(%q) error = %v, want one that says what is accepted", s, err)
		}
	}
	var b strings.Builder
	l, err := Spec{LogFormat: "text", LogLevel: "warn"}.logger(&b)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("dropped")
	l.Debug("dropped")
	l.Error("kept")
	if got := b.String(); strings.Contains(got, "dropped") || !strings.Contains(got, "msg=kept") {
		t.Errorf("at warn the logger printed %q, want the error alone", got)
	}
}
