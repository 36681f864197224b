package cleanup

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/netip"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/supervise"
)

// TestLogRemoved: a few VIPs removed after a crash are logged one line
// each; many are one line at info, with their count and the first ones,
// and one line each at debug only.
func TestLogRemoved(t *testing.T) {
	vips := func(n int) []netif.VIP {
		var out []netif.VIP
		for i := range n {
			out = append(out, netif.VIP{Prefix: netip.PrefixFrom(netip.AddrFrom4([4]byte{198, 18, byte(i / 250), byte(1 + i%250)}), 32), Dev: "eth0"})
		}
		return out
	}
	for _, tc := range []struct {
		n          int
		level      slog.Level
		info, debg int // lines at each level
		want       string
	}{
		{n: 3, level: slog.LevelInfo, info: 3, want: `vip=198.18.0.3/32 dev=eth0`},
		{n: sweepLogged, level: slog.LevelInfo, info: sweepLogged},
		{n: 10000, level: slog.LevelInfo, info: 1, want: `count=10000 first="198.18.0.1/32 dev eth0, 198.18.0.2/32 dev eth0,`},
		{n: 40, level: slog.LevelDebug, info: 1, debg: 40, want: `vip=198.18.0.40/32 dev=eth0`},
	} {
		t.Run(fmt.Sprint(tc.n, tc.level), func(t *testing.T) {
			var buf bytes.Buffer
			logRemoved(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: tc.level})), vips(tc.n))
			out := buf.String()
			if n := strings.Count(out, "level=INFO"); n != tc.info {
				t.Errorf("%d info lines, want %d:\n%s", n, tc.info, out)
			}
			if n := strings.Count(out, "level=DEBUG"); n != tc.debg {
				t.Errorf("%d debug lines, want %d", n, tc.debg)
			}
			if !strings.Contains(out, tc.want) {
				t.Errorf("log lacks %q:\n%.2000s", tc.want, out)
			}
		})
	}
}

// TestLogger: the clean-up logs as the command that started the
// supervisor (its format, level and attributes), and a Spec it cannot
// log by is refused with what is accepted.
func TestLogger(t *testing.T) {
	for _, tc := range []struct {
		spec      supervise.Spec
		want, err string
	}{
		{spec: supervise.Spec{LogFormat: "text", LogLevel: "info", LogAttrs: []string{"node", "m1"}}, want: `level=INFO msg=removed node=m1 count=2`},
		{spec: supervise.Spec{LogFormat: "json", LogLevel: "info"}, want: `"level":"INFO","msg":"removed","count":2}`},
		{spec: supervise.Spec{LogFormat: "text", LogLevel: "error"}, want: ""},
		{spec: supervise.Spec{LogFormat: "xml", LogLevel: "info"}, err: `log format "xml": want text or json`},
		{spec: supervise.Spec{LogFormat: "text", LogLevel: "loud"}, err: `log level "loud": want debug, info, warn or error`},
	} {
		var buf bytes.Buffer
		log, err := logger(tc.spec, &buf)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: error %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.spec, err)
		}
		log.Info("removed", "count", 2)
		if got := buf.String(); tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
			t.Errorf("%+v logged %q, want it to hold %q", tc.spec, got, tc.want)
		}
	}
}
