package haproxycfg

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseTune reads global's tune.* lines before base; haproxy -c must
// accept what vipstack accepts, and reject what it rejects unless the
// case says haproxy accepts it (vipstack's range is narrower).
func TestParseTune(t *testing.T) {
	type limits struct{ BufSize, MaxRewrite, Raw, HTX int }
	tests := []struct {
		name    string
		global  string
		want    limits // MaxRewrite -1: not set
		wantErr string
		haproxy string // haproxyAccepts when haproxy takes an input vipstack refuses
	}{
		{name: "defaults", global: "", want: limits{0, -1, 16384, 15291}},
		{name: "vyos's", global: "  tune.bufsize 32768\n  tune.maxrewrite 8192\n", want: limits{32768, 8192, 32768, 24507}},
		{name: "maxrewrite past half the buffer", global: "  tune.maxrewrite 20000\n", want: limits{0, 20000, 16384, 8123}},
		{name: "no reserve", global: "  tune.maxrewrite 0\n", want: limits{0, 0, 16384, 16315}},
		{name: "maxaccept", global: "  tune.maxaccept 500\n", want: limits{0, -1, 16384, 15291}},
		{name: "maxaccept unlimited", global: "  tune.maxaccept -1\n", want: limits{0, -1, 16384, 15291}},
		{name: "bufsize 0", global: "  tune.bufsize 0\n",
			wantErr: "h.cfg:2: 'tune.bufsize' expects a positive integer argument (accepted: 1024..1048576 bytes)"},
		{name: "bufsize not a number", global: "  tune.bufsize 16k\n",
			wantErr: "h.cfg:2: 'tune.bufsize' expects a positive integer argument (accepted: 1024..1048576 bytes)"},
		{name: "maxrewrite negative", global: "  tune.maxrewrite -1\n",
			wantErr: "h.cfg:2: 'tune.maxrewrite' expects a positive integer argument (accepted: 0..1048576 bytes)"},
		{name: "bufsize too small for vipstack", global: "  tune.bufsize 1000\n", haproxy: haproxyAccepts,
			wantErr: "h.cfg:2: tune.bufsize 1000 is out of vipstack's range (accepted: 1024..1048576 bytes)"},
		{name: "bufsize too large for vipstack", global: "  tune.bufsize 2000000\n", haproxy: haproxyAccepts,
			wantErr: "h.cfg:2: tune.bufsize 2000000 is out of vipstack's range (accepted: 1024..1048576 bytes)"},
		{name: "two values", global: "  tune.bufsize 100 200\n",
			wantErr: `h.cfg:2: tune.bufsize takes 1 value(s) (a number of bytes), got 2: "100 200"`},
		{name: "maxaccept not a number", global: "  tune.maxaccept x\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:2: tune.maxaccept "x" is not a number of connections (accepted: -1 for no limit, 0 or more)`},
		{name: "other tune lines", global: "  tune.http.maxhdr 200\n", haproxy: haproxyAccepts,
			wantErr: `h.cfg:2: keyword "tune.http.maxhdr" in global is not supported by vipstack (supported: ` + globalKeywords + `)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := "global\n" + tt.global + base
			cfg, err := Parse("h.cfg", []byte(conf))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				raw, htx := cfg.HeadLimits()
				got := limits{cfg.BufSize, -1, raw, htx}
				if cfg.MaxRewrite != nil {
					got.MaxRewrite = *cfg.MaxRewrite
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("(-want +got):\n%s", diff)
				}
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if wantOK := tt.wantErr == "" || tt.haproxy == haproxyAccepts; ok != wantOK {
				t.Errorf("haproxy -c accepts: %v, want %v:\n%s", ok, wantOK, out)
			}
		})
	}
}
