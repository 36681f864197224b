package main

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReportVerdicts(t *testing.T) {
	ka := result{Impl: "keepalived", Startup: 4 * time.Second, CPU: 2, RSS: 10, PSS: 8}
	idle := ka
	idle.CPU = 0
	for _, tc := range []struct {
		name string
		ka   *result // keepalived's, when not ka
		vs   result
		want []string
	}{
		{
			name: "ahead on all",
			vs:   result{Impl: "vipstack", Startup: 3800 * time.Millisecond, CPU: 1, RSS: 10, PSS: 9},
			want: []string{
				"PASS  start-up to every VIP held (s): 0.95 of keepalived's (want <= 1.0)",
				"PASS  CPU at rest (% of one CPU): 0.50 of keepalived's (want <= 1.0)",
				"PASS  RSS (MiB): 1.00 of keepalived's (want <= 1.0)",
			},
		},
		{
			name: "behind on memory",
			vs:   result{Impl: "vipstack", Startup: 3 * time.Second, CPU: 1, RSS: 30, PSS: 29},
			want: []string{
				"PASS  start-up to every VIP held (s): 0.75 of keepalived's (want <= 1.0)",
				"PASS  CPU at rest (% of one CPU): 0.50 of keepalived's (want <= 1.0)",
				"MISS  RSS (MiB): 3.00 of keepalived's (want <= 1.0)",
			},
		},
		{
			name: "no CPU time on either side",
			ka:   &idle,
			vs:   result{Impl: "vipstack", Startup: 3 * time.Second, CPU: 0, RSS: 10, PSS: 9},
			want: []string{
				"PASS  start-up to every VIP held (s): 0.75 of keepalived's (want <= 1.0)",
				"PASS  CPU at rest (% of one CPU): 0.00 against keepalived's 0 (want <= 1.0)",
				"PASS  RSS (MiB): 1.00 of keepalived's (want <= 1.0)",
			},
		},
		{
			name: "never settled",
			vs:   result{Impl: "vipstack", Err: "only 9000 of 10000 VIPs after 120s"},
			want: []string{
				"MISS  start-up to every VIP held (s): no figure to compare (vipstack: only 9000 of 10000 VIPs after 120s)",
				"MISS  CPU at rest (% of one CPU): no figure to compare (vipstack: only 9000 of 10000 VIPs after 120s)",
				"MISS  RSS (MiB): no figure to compare (vipstack: only 9000 of 10000 VIPs after 120s)",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			k := ka
			if tc.ka != nil {
				k = *tc.ka
			}
			if err := report(k, tc.vs, 1000, 10000, 30*time.Second).Text(&b); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range strings.Split(b.String(), "\n") {
				l = strings.TrimLeft(l, "- ")
				if strings.HasPrefix(l, "PASS") || strings.HasPrefix(l, "MISS") {
					got = append(got, l)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s\nreport:\n%s", diff, b.String())
			}
		})
	}
}
