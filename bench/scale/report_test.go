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
			if err := report(k, tc.vs, 1000, 10000, 30*time.Second, 15*time.Second).Text(&b); err != nil {
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

// TestReportScrapes: the window with /metrics scraped adds vipstack's
// rows, reported without a target, and its processes.
func TestReportScrapes(t *testing.T) {
	ka := result{Impl: "keepalived", Startup: 4 * time.Second, CPU: 2, RSS: 10, PSS: 8}
	vs := result{Impl: "vipstack", Startup: 3 * time.Second, CPU: 1, RSS: 12, PSS: 11,
		Scraped: scrapes{N: 2, Bytes: 61500, Slowest: 23 * time.Millisecond, CPU: 1.5, RSS: 13.25, Procs: []string{"vipstack 12: RSS 13.2"}}}
	var b strings.Builder
	if err := report(ka, vs, 1000, 10000, 30*time.Second, 15*time.Second).Text(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"CPU, /metrics scraped every 15s (% of one CPU)  -  1.50  -  (reported: keepalived serves no metrics)",
		"RSS after those scrapes (MiB)  -  13.2",
		"vipstack's, after the second window of 30s with 2 scrapes of /metrics (62 kB gzipped, the slowest in 23 ms): vipstack 12: RSS 13.2.",
	} {
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "scraped") && strings.Contains(b.String(), "MISS  CPU, /metrics") {
		t.Errorf("the scraped window has a verdict:\n%s", b.String())
	}
}
