package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/hack/internal/hostcheck"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

var texts = map[string]string{
	"k/lvs.conf":    "vrrp_instance VI_1 {\n}\n  virtual_server 10.0.0.1 80 {\n}\n",
	"k/plain.conf":  "vrrp_instance VI_1 {\n  # virtual_server in a comment is not LVS\n}\n",
	"h/api.conf":    "frontend api\n  bind *:6443\n",
	"h/web.conf":    "frontend web\n  bind *:80\n",
	"h/named.conf":  "frontend api\n  bind *:6443\nbackend b\n  server m master0.ocp.example:6443\n",
	"h/cert.conf":   "frontend web\n  bind *:443 ssl crt /etc/ssl/site.pem\n",
	"h/nocert.conf": "frontend web\n  bind *:443 ssl crt /etc/ssl/gone.pem\n",
	"h/bad.conf":    "frontend web\n  bogus\n",
}

var rows = []result{
	{Kind: "keepalived", File: "k/lvs.conf", UpClass: "accept", VSClass: "reject"},
	{Kind: "keepalived", File: "k/plain.conf", UpClass: "host-only", VSClass: "host-only"},
	{Kind: "keepalived", File: "k/plain.conf", UpClass: "reject", VSClass: "reject"},
	{Kind: "haproxy", File: "h/api.conf", UpClass: "accept", VSClass: "accept"},
	{Kind: "haproxy", File: "h/web.conf", UpClass: "accept", VSClass: "accept"},
	{Kind: "haproxy", File: "h/named.conf", UpClass: "host-only", VSClass: "reject"},
	{Kind: "haproxy", File: "h/cert.conf", UpClass: "host-only", VSClass: "reject"},
	{Kind: "haproxy", File: "h/nocert.conf", UpClass: "host-only", VSClass: "reject"},
	{Kind: "haproxy", File: "h/bad.conf", UpClass: "reject", VSClass: "accept"},
	{Kind: "corefile", File: "c/1", UpClass: "accept", VSClass: "accept"},
	{Kind: "corefile", File: "c/2", UpClass: "accept", VSClass: "reject"},
	{Kind: "corefile", File: "c/3", UpClass: "accept", VSClass: "accept"},
	{Kind: "corefile", File: "c/4", UpClass: "reject", VSClass: "reject"},
	{Kind: "corefile", File: "c/5", UpClass: "accept", VSClass: "accept"},
}

// checked is what the provided-hosts step found: haproxy accepts the
// file naming a host and the one naming a certificate, and vipstack both;
// haproxy still refuses the third; stock CoreDNS refuses c/2 as vipstack
// does, accepts c/3, and refuses c/5 for a listen address this host lacks.
var checked = map[string]hostcheck.Verdict{
	"h/named.conf":  verdict("haproxy", "h/named.conf", "accept", "accept"),
	"h/cert.conf":   verdict("haproxy", "h/cert.conf", "accept", "accept"),
	"h/nocert.conf": verdict("haproxy", "h/nocert.conf", "reject", "reject"),
	"c/1":           verdict("corefile", "c/1", "accept", "accept"),
	"c/2":           verdict("corefile", "c/2", "reject", "reject"),
	"c/3":           verdict("corefile", "c/3", "accept", "accept"),
	"c/5":           {Job: hostcheck.Job{Kind: "corefile", File: "c/5"}, Up: hostcheck.Outcome{Class: "host-only", Msg: "listen tcp 192.0.2.1:53: bind: cannot assign requested address"}, VS: hostcheck.Outcome{Class: "accept"}},
}

func verdict(kind, file, up, vs string) hostcheck.Verdict {
	return hostcheck.Verdict{Job: hostcheck.Job{Kind: kind, File: file}, Up: hostcheck.Outcome{Class: up}, VS: hostcheck.Outcome{Class: vs}}
}

func TestFigures(t *testing.T) {
	text := func(f string) string { return texts[f] }
	for _, tc := range []struct {
		name    string
		checked map[string]hostcheck.Verdict
		want    []figure
	}{{
		name: "run.sh only",
		want: []figure{
			{What: "keepalived.conf without `virtual_server` (keepalived -t)", Target: 0.95, Here: count{Up: 1, VS: 1, Both: 1}},
			{What: "haproxy.cfg (haproxy -c)", Target: 0.90,
				Here: count{Up: 5, VS: 3, Both: 2, Refused: []string{"named", "cert", "nocert"}, Extra: []string{"bad"}}},
			{What: "haproxy.cfg balancing a Kubernetes API (:6443)", Target: 1, Here: count{Up: 2, VS: 1, Both: 1, Refused: []string{"named"}}},
			{What: "Corefile with stock plugins only", Target: 0.95, Here: count{Up: 4, VS: 3, Both: 3, Refused: []string{"2"}}},
		},
	}, {
		name:    "with what the files name provided",
		checked: checked,
		want: []figure{
			{What: "keepalived.conf without `virtual_server` (keepalived -t)", Target: 0.95, Here: count{Up: 1, VS: 1, Both: 1}},
			{What: "haproxy.cfg (haproxy -c)", Target: 0.90,
				Here:     count{Up: 5, VS: 3, Both: 2, Refused: []string{"named", "cert", "nocert"}, Extra: []string{"bad"}},
				Provided: &count{Up: 4, VS: 5, Both: 4, Extra: []string{"bad"}}},
			{What: "haproxy.cfg balancing a Kubernetes API (:6443)", Target: 1,
				Here: count{Up: 2, VS: 1, Both: 1, Refused: []string{"named"}}, Provided: &count{Up: 2, VS: 2, Both: 2}},
			{What: "Corefile with stock plugins only", Target: 0.95,
				Here:     count{Up: 4, VS: 3, Both: 3, Refused: []string{"2"}},
				Provided: &count{Up: 2, VS: 3, Both: 2, Extra: []string{"5 (upstream: for this host only: listen tcp 192.0.2.1:53: bind: cannot assign requested address)"}}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, figures(rows, text, tc.checked)); diff != "" {
				t.Errorf("figures (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReport renders both cases; the verdicts of haproxy.cfg, the API
// balancers and the Corefiles are MISS from run.sh's rows and PASS from
// the provided-hosts rows.
func TestReport(t *testing.T) {
	text := func(f string) string { return texts[f] }
	var b strings.Builder
	b.WriteString("# run.sh only\n\n")
	_ = report(figures(rows, text, nil), "not root (uid 1000)").Markdown(&b)
	b.WriteString("\n# with what the files name provided\n\n")
	_ = report(figures(rows, text, checked), "").Markdown(&b)
	golden := filepath.Join("testdata", t.Name()+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), b.String()); diff != "" {
		t.Errorf("report (-want +got):\n%s", diff)
	}
}
