package logfmt

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
)

// TestNewHandler: each format writes its own form at the level asked, and
// a bad level or format is refused with the value and what is accepted.
func TestNewHandler(t *testing.T) {
	for _, tc := range []struct{ format, want string }{
		{"text", "level=WARN msg=kept"},
		{"json", `"level":"WARN","msg":"kept"`},
	} {
		l, err := ParseLevel("warn")
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		h, err := NewHandler(&b, tc.format, l)
		if err != nil {
			t.Fatal(err)
		}
		log := slog.New(h)
		log.Info("dropped")
		log.Warn("kept")
		if out := b.String(); !strings.Contains(out, tc.want) || strings.Contains(out, "dropped") {
			t.Errorf("%s: wrote %q, want %q and nothing at info", tc.format, out, tc.want)
		}
		if h.Enabled(context.Background(), slog.LevelInfo) {
			t.Errorf("%s: info enabled at warn", tc.format)
		}
	}
	if _, err := ParseLevel("loud"); err == nil || !strings.Contains(err.Error(), `"loud": want debug, info, warn or error`) {
		t.Errorf("bad level: %v", err)
	}
	if _, err := NewHandler(nil, "xml", slog.LevelInfo); err == nil || !strings.Contains(err.Error(), `"xml": want text or json`) {
		t.Errorf("bad format: %v", err)
	}
}
