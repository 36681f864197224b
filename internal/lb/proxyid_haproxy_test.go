package lb

import (
	"encoding/csv"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/peers"
)

// TestProxyIDsMatchHaproxy: sections with `id N` keep it and the others
// are numbered around them, on haproxy 2.6's stats page and vipstack's
// alike (the iid column of ;csv), with a stats socket taking the first
// number (measured: fe 2, be1 1, be2 4, be3 3, st 100, fe2 7).
func TestProxyIDsMatchHaproxy(t *testing.T) {
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	dir := t.TempDir()
	dead := closedPort(t).String()
	conf := func(p0, p1, p2 string) string {
		return strings.NewReplacer("{{DIR}}", dir, "{{P0}}", p0, "{{P1}}", p1, "{{P2}}", p2, "{{S}}", dead).Replace(`global
  stats socket {{DIR}}/haproxy.sock mode 600 level admin
defaults
  mode tcp
  timeout client 1s
  timeout server 1s
  timeout connect 1s
frontend fe
  bind 127.0.0.1:{{P0}}
  default_backend be2
backend be1
  id 1
  server s1 {{S}}
backend be2
  server s1 {{S}}
backend be3
  id 3
  server s1 {{S}}
listen st
  bind 127.0.0.1:{{P1}}
  mode http
  id 100
  stats enable
  stats uri /haproxy_stats
frontend fe2
  bind 127.0.0.1:{{P2}}
  default_backend be2
`)
	}
	ports := freePorts(t, 3)
	peers.HAProxy(t, conf(ports[0], ports[1], ports[2]))
	l := newLBOpts(t, Options{}, parseOnLoopback(t, conf("1", "2", "3")))
	iids := func(addr string) map[string]string {
		var body string
		deadline := time.Now().Add(bound)
		for {
			var ok bool
			if body, ok = statsFetch(t, addr, ";csv"); ok {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no stats page", addr)
			}
			time.Sleep(20 * time.Millisecond)
		}
		recs, err := csv.NewReader(strings.NewReader(strings.TrimPrefix(body, "# "))).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		col := 0
		for i, h := range recs[0] {
			if h == "iid" {
				col = i
			}
		}
		out := map[string]string{}
		for _, r := range recs[1:] {
			if len(r) > col && (r[1] == "FRONTEND" || r[1] == "BACKEND") {
				out[r[0]+"/"+r[1]] = r[col]
			}
		}
		return out
	}
	want := map[string]string{"fe/FRONTEND": "2", "be1/BACKEND": "1", "be2/BACKEND": "4", "be3/BACKEND": "3",
		"st/FRONTEND": "100", "st/BACKEND": "100", "fe2/FRONTEND": "7"}
	h, v := iids("127.0.0.1:"+ports[1]), iids(l.Addrs("st")[0].String())
	if diff := cmp.Diff(want, h); diff != "" {
		t.Errorf("haproxy's ids differ from this test's expectation (-expected +haproxy):\n%s", diff)
	}
	if diff := cmp.Diff(h, v); diff != "" {
		t.Errorf("iid (-haproxy +vipstack):\n%s", diff)
	}
}
