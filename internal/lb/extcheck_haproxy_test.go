package lb

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// extCheckScript records its arguments and environment in out.SERVER
// beside itself (the first run only) and exits as exit.SERVER says: a
// status, or "sleep" to run past the check's timeout.
const extCheckScript = `#!/bin/sh
dir=$(/usr/bin/dirname "$0")
out="$dir/out.$HAPROXY_PROXY_NAME.$HAPROXY_SERVER_NAME"
if [ ! -e "$out" ]; then
  { echo "ARGS $*"; /usr/bin/env | /usr/bin/sort; } > "$out.tmp" && /bin/mv "$out.tmp" "$out"
fi
what=0
[ -e "$dir/exit.$HAPROXY_SERVER_NAME" ] && what=$(/bin/cat "$dir/exit.$HAPROXY_SERVER_NAME")
[ "$what" = sleep ] && exec /bin/sleep 5
exit $what
`

// TestExternalCheckMatchesHaproxy: `option external-check` runs the
// command with haproxy 2.6's arguments and environment (and nothing of
// the balancer's own), a listen's first bind and a backend's NOT_USED;
// exit 0 keeps a server UP, another status takes it DOWN ("External
// check error, code: 3"), and a command still running at min(inter,
// timeout connect) (timeout check set) is a timeout: the same log lines
// as haproxy's.
func TestExternalCheckMatchesHaproxy(t *testing.T) {
	dirs := map[string]string{}
	for _, who := range []string{"h", "v"} {
		d := filepath.Join(t.TempDir(), who)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "chk.sh"), []byte(extCheckScript), 0o755); err != nil {
			t.Fatal(err)
		}
		for name, what := range map[string]string{"bad": "3", "slow": "sleep"} {
			if err := os.WriteFile(filepath.Join(d, "exit."+name), []byte(what), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dirs[who] = d
	}
	conf := func(sock string, ports []string) string {
		dir := dirs["v"]
		if strings.Contains(sock, "h.sock") {
			dir = dirs["h"]
		}
		return strings.NewReplacer("{{SOCK}}", sock, "{{P0}}", ports[0], "{{DIR}}", dir).Replace(`global
  external-check
  insecure-fork-wanted
defaults
  mode tcp
  log {{SOCK}} local0
  timeout connect 1s
  timeout client 3s
  timeout server 3s
listen ext
  bind 127.0.0.1:{{P0}}
  option external-check
  external-check path "/usr/bin:/bin"
  external-check command {{DIR}}/chk.sh
  server ok 127.0.0.1:9 check inter 1s maxconn 5 id 7
  server bad 127.0.0.1:10 check inter 1s fall 1
backend slowbe
  timeout check 1s
  timeout connect 300ms
  option external-check
  external-check command {{DIR}}/chk.sh
  server slow 127.0.0.1:11 check inter 2s fall 1
`)
	}
	hlog, vlog, hports, vports := startHaproxyAndLB(t, 1, conf)
	for _, who := range []struct {
		name string
		r    *logReader
	}{{"haproxy", hlog}, {"vipstack", vlog}} {
		who.r.waitFor(t, who.name, "Server ext/bad is DOWN")
		who.r.waitFor(t, who.name, "Server slowbe/slow is DOWN")
	}
	pick := func(lines []string) []string {
		var out []string
		for _, d := range lines {
			if s := maskDatagram(d); strings.Contains(s, " is DOWN") {
				out = append(out, s)
			}
		}
		slices.Sort(out)
		return out
	}
	want, got := pick(hlog.lines()), pick(vlog.lines())
	if len(want) != 2 {
		t.Errorf("haproxy's DOWN lines differ from this test's expectation: %q", want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("DOWN lines (-haproxy +vipstack):\n%s", diff)
	}

	// What each run saw, with the balancer's own port and directory
	// masked.
	shellVars := regexp.MustCompile(`(?m)^(PWD|SHLVL|_|OLDPWD)=.*\n`)
	for _, srv := range []string{"ext.ok", "ext.bad", "slowbe.slow"} {
		read := func(who, port string) string {
			path := filepath.Join(dirs[who], "out."+srv)
			deadline := time.Now().Add(bound)
			for {
				b, err := os.ReadFile(path)
				if err == nil {
					s := shellVars.ReplaceAllString(string(b), "")
					return strings.ReplaceAll(s, port, "PORT")
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: %s never ran for %s", who, filepath.Join(dirs[who], "chk.sh"), srv)
				}
				time.Sleep(20 * time.Millisecond) // polling for the script's file, bounded
			}
		}
		h, v := read("h", hports[0]), read("v", vports[0])
		if srv == "ext.ok" && !strings.Contains(h, "ARGS 127.0.0.1 PORT 127.0.0.1 9\n") {
			t.Errorf("haproxy's run differs from this test's expectation:\n%s", h)
		}
		if diff := cmp.Diff(h, v); diff != "" {
			t.Errorf("%s: arguments and environment (-haproxy +vipstack):\n%s", srv, diff)
		}
	}
}
