package haproxycfg

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseProxyIDs reads `id N` in proxy sections; haproxy -c agrees
// on each case unless it says vipstack is stricter.
func TestParseProxyIDs(t *testing.T) {
	const head = "defaults\n  mode tcp\n  timeout client 1s\n  timeout server 1s\n  timeout connect 1s\n" +
		"frontend fe\n  bind 127.0.0.1:47011\n  default_backend be\n"
	tests := []struct {
		name    string
		rest    string
		want    map[string]int
		wantErr string
		haproxy string
	}{
		{name: "backend and frontend", rest: "  id 10\nbackend be\n  id 3\n  server s 127.0.0.1:47012\n",
			want: map[string]int{"frontend fe": 10, "backend be": 3}},
		{name: "forwarding listen is both", rest: "backend be\n  server s 127.0.0.1:47012\nlisten fw\n  bind 127.0.0.1:47013\n  id 100\n  server s 127.0.0.1:47012\n",
			want: map[string]int{"frontend fw": 100, "backend fw": 100}},
		{name: "zero", rest: "backend be\n  id 0\n  server s 127.0.0.1:47012\n",
			wantErr: `h.cfg:10: custom id has to be > 0. (got "0"; accepted: 1..2147483647)`},
		{name: "not a number", rest: "backend be\n  id x\n  server s 127.0.0.1:47012\n",
			wantErr: `h.cfg:10: custom id has to be > 0. (got "x"; accepted: 1..2147483647)`},
		{name: "same id twice", rest: "  id 5\nbackend be\n  id 5\n  server s 127.0.0.1:47012\n",
			wantErr: `h.cfg:11: backend be reuses same custom id as frontend fe (declared at h.cfg:9).`},
		{name: "twice in a section", rest: "backend be\n  id 5\n  id 6\n  server s 127.0.0.1:47012\n",
			wantErr: `h.cfg:11: id is already set in backend be at line 10 (accepted: once per section)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conf := head + tt.rest
			cfg, err := Parse("h.cfg", []byte(conf))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v\nwant %s", err, tt.wantErr)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, cfg.ProxyIDs); diff != "" {
					t.Errorf("ProxyIDs (-want +got):\n%s", diff)
				}
			}
			ok, out := haproxyCheck(t, []byte(conf))
			if wantOK := tt.wantErr == "" || tt.haproxy == haproxyAccepts; ok != wantOK {
				t.Errorf("haproxy -c accepts: %v, want %v:\n%s", ok, wantOK, out)
			}
		})
	}
}
