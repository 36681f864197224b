package lb

import (
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/lb/stats"
)

// csvFields returns the haproxy CSV line of pxname/svname as a map from
// column name to value.
func csvFields(t *testing.T, csv, pxname, svname string) map[string]string {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(csv), "\n")
	names := strings.Split(strings.TrimPrefix(lines[0], "# "), ",")
	for _, l := range lines[1:] {
		vals := strings.Split(l, ",")
		if len(vals) >= 2 && vals[0] == pxname && vals[1] == svname {
			m := map[string]string{}
			for i, n := range names {
				if i < len(vals) {
					m[n] = vals[i]
				}
			}
			return m
		}
	}
	t.Fatalf("no CSV line %s,%s in\n%s", pxname, svname, csv)
	return nil
}

// TestStatsFailedClientsCountedAsHaproxy: haproxy 2.6 counts a failed
// connection attempt as a retry (wretr) or, on the client's last attempt,
// as a connection error (econ), every attempt as a session on the server
// (stot), and the client once on the backend whether or not a server took
// it, and the server once as selected (lbtot: retries on the same server
// are not selections) and in its smax. Measured with `retries 3` and one
// refusing server: server stot 4, wretr 3, econ 1, lbtot 1, smax 1;
// backend stot 1, econ 1; with the only server DOWN,
// backend stot 1, econ 1.
func TestStatsFailedClientsCountedAsHaproxy(t *testing.T) {
	l, cfg := failedClient(t, 3)
	want := func(csv, sv string, fields map[string]string) {
		t.Helper()
		got := csvFields(t, csv, "be", sv)
		for k, v := range fields {
			if got[k] != v {
				t.Errorf("be/%s %s = %q, want %q", sv, k, got[k], v)
			}
		}
	}
	csv := l.Snapshot().CSV()
	want(csv, "dead", map[string]string{"stot": "4", "wretr": "3", "econ": "1", "lbtot": "1", "smax": "1"})
	want(csv, "BACKEND", map[string]string{"stot": "1", "wretr": "3", "econ": "1"})

	// With the server out of rotation no attempt is made: the backend
	// still counts the client and its failure.
	if err := l.SetServerAdmin("be", "dead", stats.AdminMaint); err != nil {
		t.Fatal(err)
	}
	cl := dial(t, l, "fe")
	if !cl.closed(t) {
		t.Fatal("client was not closed")
	}
	eventually(t, "the failure to be counted", func() bool { return l.Snapshot().Frontends[0].NoServer == 2 })
	csv = l.Snapshot().CSV()
	want(csv, "dead", map[string]string{"stot": "4", "wretr": "3", "econ": "1"})
	want(csv, "BACKEND", map[string]string{"stot": "2", "wretr": "3", "econ": "2"})

	// The counts survive a reload that keeps the backend.
	if err := l.Apply(cfg); err != nil {
		t.Fatal(err)
	}
	want(l.Snapshot().CSV(), "BACKEND", map[string]string{"stot": "2", "econ": "2"})
}

// TestStatsFullConn: a backend's session limit in the stats is haproxy's
// default fullconn. haproxy 2.6.12 showed (measured, stats page ;csv):
// with defaults maxconn 4005, a backend used by frontends of maxconn 4005
// and 100, slim 411; one used by a frontend of maxconn 7, 1; one no
// frontend uses, 1; a stats section's backend, 401. vipstack's maxconn is
// the same for every frontend: two frontends of 4005 give 801.
func TestStatsFullConn(t *testing.T) {
	for _, tt := range []struct{ maxconn, users, want int }{
		{4105, 1, 411}, // the sum of the two frontends' maxconn
		{7, 1, 1},
		{4005, 0, 1},
		{4005, 1, 401},
		{4005, 2, 801},
		{2000, 1, 200},
	} {
		if got := stats.FullConn(tt.maxconn, tt.users); got != tt.want {
			t.Errorf("stats.FullConn(%d, %d) = %d, want %d", tt.maxconn, tt.users, got, tt.want)
		}
	}
	cfg := parseOnLoopback(t, `defaults
  mode tcp
  maxconn 4005
  timeout connect 1s
  timeout client 10s
  timeout server 10s
frontend f1
  bind 127.0.0.1:1
  default_backend b1
frontend f2
  bind 127.0.0.1:2
  default_backend b1
backend b1
  server s1 127.0.0.1:29999
backend b2
  server s1 127.0.0.1:29999
listen stats
  bind 127.0.0.1:3
  mode http
  stats enable
  stats uri /st
`)
	l := newLB(t, nil, cfg)
	csv := l.Snapshot().CSV()
	for _, tt := range []struct{ px, want string }{{"b1", "801"}, {"b2", "1"}, {"stats", "401"}} {
		if got := csvFields(t, csv, tt.px, "BACKEND")["slim"]; got != tt.want {
			t.Errorf("%s BACKEND slim %q, want %q\n%s", tt.px, got, tt.want, csv)
		}
	}
}
