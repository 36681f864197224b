package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFigures(t *testing.T) {
	texts := map[string]string{
		"k/lvs.conf":   "vrrp_instance VI_1 {\n}\n  virtual_server 10.0.0.1 80 {\n}\n",
		"k/plain.conf": "vrrp_instance VI_1 {\n  # virtual_server in a comment is not LVS\n}\n",
		"h/api.conf":   "frontend api\n  bind *:6443\n",
		"h/web.conf":   "frontend web\n  bind *:80\n",
	}
	rows := []result{
		{Kind: "keepalived", File: "k/lvs.conf", UpClass: "accept", VSClass: "reject"},
		{Kind: "keepalived", File: "k/plain.conf", UpClass: "host-only", VSClass: "host-only"},
		{Kind: "keepalived", File: "k/plain.conf", UpClass: "reject", VSClass: "reject"},
		{Kind: "haproxy", File: "h/api.conf", UpClass: "accept", VSClass: "reject"},
		{Kind: "haproxy", File: "h/web.conf", UpClass: "accept", VSClass: "accept"},
		{Kind: "corefile", File: "c/1", UpClass: "accept", VSClass: "accept"},
		{Kind: "corefile", File: "c/2", UpClass: "reject", VSClass: "reject"},
	}
	got := figures(rows, func(f string) string { return texts[f] })
	want := []figure{
		{What: "keepalived.conf without `virtual_server` (keepalived -t)", Up: 1, VS: 1, Target: 0.95},
		{What: "haproxy.cfg (haproxy -c)", Up: 2, VS: 1, Target: 0.90, Refused: []string{"api"}},
		{What: "haproxy.cfg balancing a Kubernetes API (:6443)", Up: 1, VS: 0, Target: 1, Refused: []string{"api"}},
		{What: "Corefile with stock plugins only", Up: 1, VS: 1, Target: 0.95},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("figures (-want +got):\n%s", diff)
	}
	var b strings.Builder
	_ = report(got).Markdown(&b)
	for _, w := range []string{"| haproxy.cfg (haproxy -c) | 2 | 1 (50%) | 90% | MISS |", "| Corefile with stock plugins only | 1 | 1 (100%) | 95% | PASS |", "(:6443), refused: api"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("report lacks %q:\n%s", w, b.String())
		}
	}
}
