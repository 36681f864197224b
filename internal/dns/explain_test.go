package dns

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// explainCases are Corefiles stock CoreDNS refuses with a message that
// lacks the line or what is accepted, and the errors vipstack gives.
var explainCases = []struct {
	name     string
	corefile string
	want     []string // regexps the error must match
}{
	{
		name:     "cache property it does not have",
		corefile: ".:0 {\n    bind 127.0.0.1\n    cache 30 {\n        listen 198.18.0.1:5353\n    }\n}\n",
		want:     []string{`Corefile:4: cache: unknown property "listen" \(accepted in a cache block: success, denial, prefetch, serve_stale, serve_stale_policy, servfail, disable, keepttl\); stock CoreDNS refuses it too \(plugin/cache: Corefile:4 - Error during parsing: Wrong argument count or unexpected line ending after 'listen'\)$`},
	},
	{
		name:     "errors twice in the second block",
		corefile: "example.com:0 {\n    bind 127.0.0.1\n    errors\n}\n.:0 {\n    bind 127.0.0.1\n    errors {\n        consolidate 5m \".*\"\n    }\n    log\n    errors\n}\n",
		want:     []string{`Corefile:11: errors is used a second time in the server block .:0 \(first at line 7\); CoreDNS takes it once per server block: keep one errors line, with the properties of both \(stock CoreDNS: plugin/errors: this plugin can only be used once per Server Block\)$`},
	},
	{
		name:     "prometheus twice",
		corefile: ".:0 {\n    bind 127.0.0.1\n    prometheus 127.0.0.1:0\n    prometheus 127.0.0.1:0\n}\n",
		want:     []string{`Corefile:4: prometheus is used a second time in the server block .:0 \(first at line 3\)`, `plugin/prometheus: this plugin can only be used once`},
	},
	{
		name:     "kubernetes upstream",
		corefile: ".:0 {\n    bind 127.0.0.1\n    kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n        upstream\n    }\n}\n",
		want:     []string{`Corefile:5: kubernetes: unknown property "upstream" \(upstream is not in CoreDNS 1.8 or later: .*delete the line; accepted in a kubernetes block: endpoint_pod_names, pods, .*apiserver_max_inflight\); stock CoreDNS refuses it too \(plugin/kubernetes: Corefile:5 - Error during parsing: unknown property 'upstream'\)$`},
	},
}

func TestExplain(t *testing.T) {
	for _, tc := range explainCases {
		t.Run(tc.name, func(t *testing.T) {
			err := srv.Check(Corefile{Contents: []byte(tc.corefile)})
			if err == nil {
				t.Fatal("Check accepted it")
			}
			for _, w := range tc.want {
				if !regexp.MustCompile(w).MatchString(err.Error()) {
					t.Errorf("error %q\ndoes not match %q", err, w)
				}
			}
		})
	}
}

// TestExplainUnresolved: a forward target that does not resolve gets its
// line (the error is CoreDNS's, as stock CoreDNS gives it; looking a name
// up would send a query off this host, so the error is made here).
func TestExplainUnresolved(t *testing.T) {
	cf := Corefile{Contents: []byte(". {\n    forward . 198.18.0.1 {\n        max_fails 2\n    }\n}\n\nexample.org {\n    forward . 198.18.0.2 tls://dns.example.org:853 {\n        tls_servername dns.example.org\n    }\n}\n")}
	err := explain(cf, errors.New(`plugin/forward: failed to resolve "dns.example.org": lookup dns.example.org on 198.18.0.53:53: no such host`))
	want := `Corefile:8: forward: target "dns.example.org" does not resolve on this host (lookup dns.example.org on 198.18.0.53:53: no such host); CoreDNS looks up a target given by name when it starts and refuses the Corefile when the lookup fails (stock CoreDNS: plugin/forward: failed to resolve "dns.example.org": lookup dns.example.org on 198.18.0.53:53: no such host)`
	if err.Error() != want {
		t.Errorf("got  %s\nwant %s", err, want)
	}
}

// TestExplainLeavesOthers: a property the plugin has, given wrong
// arguments, and an argument that is not a property keep CoreDNS's message.
func TestExplainLeavesOthers(t *testing.T) {
	for _, cf := range []string{
		".:0 {\n    bind 127.0.0.1\n    cache 30 {\n        prefetch\n    }\n}\n",
		".:0 {\n    bind 127.0.0.1\n    cache 30 {\n        success 1000 30 extra\n    }\n}\n",
	} {
		err := srv.Check(Corefile{Contents: []byte(cf)})
		if err == nil || strings.Contains(err.Error(), "unknown property") || !strings.Contains(err.Error(), "dns: check Corefile: plugin/cache: ") {
			t.Errorf("%q: %v; want CoreDNS's own message", cf, err)
		}
	}
}

// TestExplainMatchesStock runs stock CoreDNS on each case: it refuses
// each, with the message vipstack quotes.
func TestExplainMatchesStock(t *testing.T) {
	bin := stockBin(t)
	for _, tc := range explainCases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "Corefile"), []byte(tc.corefile), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin, "-conf", "Corefile")
			cmd.Dir = dir
			out, exited, err := runBounded(t, cmd, 20*time.Second)
			switch {
			case !exited:
				t.Fatalf("stock CoreDNS still running after 20 s (it accepted the Corefile):\n%s", out)
			case err == nil:
				t.Fatalf("stock CoreDNS exited 0:\n%s", out)
			}
			ours := srv.Check(Corefile{Contents: []byte(tc.corefile)}).Error()
			quoted := regexp.MustCompile(`\((?:stock CoreDNS: )?(plugin/[^()]*(?:\([^()]*\)[^()]*)*)\)$`).FindStringSubmatch(ours)
			if quoted == nil || !strings.Contains(out, quoted[1]) {
				t.Errorf("stock CoreDNS printed:\n%s\nvipstack quotes: %q", out, quoted)
			}
		})
	}
}

// TestPropertiesMatchCoreDNS checks the property lists against the
// source of the CoreDNS that go.mod pins: every case of the property
// switch of each plugin's setup.go.
func TestPropertiesMatchCoreDNS(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coredns/coredns").Output()
	if err != nil || len(bytes.TrimSpace(out)) == 0 {
		t.Skipf("CoreDNS source not in the module cache: %v", err)
	}
	dir := string(bytes.TrimSpace(out))
	consts := map[string]string{"Success": "success", "Denial": "denial"} // cache's named cases
	re := regexp.MustCompile(`(?m)^\t{2,3}case ("(\w+)"|(\w+)):`)
	for plugin, want := range properties {
		src, err := os.ReadFile(filepath.Join(dir, "plugin", plugin, "setup.go"))
		if err != nil {
			t.Fatal(err)
		}
		body := string(src)
		if i := strings.Index(body, "NextBlock()"); i >= 0 {
			body = body[i:]
		}
		var got []string
		for _, m := range re.FindAllStringSubmatch(body, -1) {
			name := m[2]
			if name == "" {
				name = consts[m[3]]
			}
			if name != "" && !slices.Contains(got, name) {
				got = append(got, name)
			}
		}
		slices.Sort(got)
		w := slices.Clone(want)
		slices.Sort(w)
		if !slices.Equal(got, w) {
			t.Errorf("%s: setup.go's properties %q; the list has %q", plugin, got, w)
		}
	}
}
