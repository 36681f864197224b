package lb

import (
	"bufio"
	"encoding/csv"
	"errors"
	"io"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vipstack/vipstack/internal/peers"
)

// statsLimits reads the FRONTEND and BACKEND slim of section name from
// a `show stat` CSV.
func statsLimits(t *testing.T, out, name string) [2]string {
	t.Helper()
	recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(out, "# "))).ReadAll()
	if err != nil || len(recs) == 0 {
		t.Fatalf("show stat: %v\n%s", err, out)
	}
	col := slices.Index(recs[0], "slim")
	var got [2]string
	for _, rec := range recs[1:] {
		if len(rec) > col && rec[0] == name {
			switch rec[1] {
			case "FRONTEND":
				got[0] = rec[col]
			case "BACKEND":
				got[1] = rec[col]
			}
		}
	}
	return got
}

// TestStatsMaxconnMatchesHaproxy: `maxconn 2` in a stats listen, in
// haproxy 2.6 and in vipstack side by side. Two silent clients take both
// places; a third one's request waits, unanswered, and neither silent
// client is closed to make room (the evicting cap of web/admit.go is not
// used); when one silent client leaves, the third gets the page. Both
// show the limit as slim, 2 on the FRONTEND line and 1 on the BACKEND
// line (haproxy's fullconn of maxconn 2).
func TestStatsMaxconnMatchesHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	dir := t.TempDir()
	conf := func(p0 string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", p0).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode http
  timeout connect 1s
  timeout client 30s
  timeout server 30s
  timeout http-request 30s
listen stats
  bind 127.0.0.1:{{P0}}
  maxconn 2
  stats enable
  stats uri /stats
`)
	}
	ports := freePorts(t, 1)
	hout := peers.HAProxy(t, conf(ports[0]))
	cfg := parseOnLoopback(t, conf("1"))
	if cfg.Stats[0].MaxConn != 2 {
		t.Fatalf("Stats.MaxConn = %d, want 2", cfg.Stats[0].MaxConn)
	}
	l := newLBOpts(t, Options{}, cfg)
	waitListening(t, "unix", dir+"/haproxy.sock")

	for who, addr := range map[string]string{"haproxy": "127.0.0.1:" + ports[0], "vipstack": l.Addrs("stats")[0].String()} {
		t.Run(who, func(t *testing.T) {
			silent := []net.Conn{dialFrom(t, "127.0.0.2", addr), dialFrom(t, "127.0.0.2", addr)}
			// Both are taken before the third comes: their sessions
			// show in the section's counts.
			eventually(t, "two sessions", func() bool {
				if who == "haproxy" {
					return strings.Contains(haproxyCommand(t, dir+"/haproxy.sock", "show stat"), "stats,FRONTEND,,,2,")
				}
				for _, ls := range l.Snapshot().Listens {
					if ls.Name == "stats" {
						return ls.Sessions == 2
					}
				}
				return false
			})
			third := dialFrom(t, "127.0.0.1", addr)
			if _, err := io.WriteString(third, "GET /stats;csv HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			r := bufio.NewReader(third)
			// Neither the third is answered nor a silent one closed
			// while both stay: a bounded wait for what must not come.
			third.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
			if _, err := r.ReadByte(); !isTimeout(err) {
				t.Fatalf("%s answered the third client past maxconn: %v", who, err)
			}
			silent[1].SetReadDeadline(time.Now().Add(50 * time.Millisecond))
			if _, err := silent[1].Read(make([]byte, 1)); !isTimeout(err) {
				t.Fatalf("%s closed a silent client to make room: %v", who, err)
			}
			silent[0].Close()
			third.SetReadDeadline(time.Now().Add(bound))
			status, err := r.ReadString('\n')
			if err != nil && !errors.Is(err, io.EOF) || !strings.HasPrefix(status, "HTTP/1.1 200") {
				t.Fatalf("%s: third client got %q, %v after a place freed", who, status, err)
			}
		})
	}
	want := statsLimits(t, haproxyCommand(t, dir+"/haproxy.sock", "show stat"), "stats")
	if want != [2]string{"2", "1"} {
		t.Errorf("haproxy's slim = %q, this test expects [2 1]\n%s", want, hout.String())
	}
	if got := statsLimits(t, l.Snapshot().CSV(), "stats"); got != want {
		t.Errorf("slim (FRONTEND, BACKEND): vipstack %q, haproxy %q", got, want)
	}
}
