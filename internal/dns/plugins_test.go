package dns

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStandardPluginsSetUp: each stock plugin vipstack builds in sets up
// (Check runs its setup, as Start does) with a line of its own syntax,
// and refuses a bad one with its error (where stock CoreDNS refuses any:
// chaos takes any words). Each line goes into the same
// block, between bind and forward; ZONE stands for a zone file.
func TestStandardPluginsSetUp(t *testing.T) {
	zone := filepath.Join(t.TempDir(), "db.example.test")
	if err := os.WriteFile(zone, []byte(testZone), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		plugin string
		good   string
		bad    string
		want   string // regexp the bad line's error matches
	}{
		{"root", "root /tmp", "root /tmp /var", `Corefile:3 .*Wrong argument count`},
		{"metadata", "metadata", "metadata\n    metadata", `metadata`},
		{"cancel", "cancel 2s", "cancel -1s", `cancel`},
		{"timeouts", "timeouts {\n        read 10s\n    }", "timeouts {\n        read never\n    }", `timeouts`},
		{"nsid", "nsid vipstack", "nsid a\n    nsid b", `nsid`},
		{"debug", "debug", "debug on", `Corefile:3 .*Wrong argument count`},
		{"local", "local", "local x", `Corefile:3 .*Wrong argument count|local`},
		{"dns64", "dns64 64:ff9b::/96", "dns64 198.18.0.0/24", `dns64`},
		{"any", "any", "any x", `Corefile:3 .*Wrong argument count|any`},
		{"chaos", "chaos vipstack ops@example.test", "", ""}, // stock chaos takes any words
		{"loadbalance", "loadbalance round_robin", "loadbalance nosuch", `unknown policy|nosuch`},
		{"rewrite", "rewrite name exact a.example.test. b.example.test.", "rewrite name nosuch a b", `rewrite`},
		{"autopath", "autopath @kubernetes\n    kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n    }", "autopath", `autopath|Corefile:3`},
		{"acl", "acl {\n        block type AAAA net 198.18.0.0/15\n    }", "acl {\n        block net nosuch\n    }", `acl|nosuch`},
		{"header", "header {\n        response set ra\n    }", "header {\n        response set nosuch\n    }", `header|nosuch`},
		{"minimal", "minimal", "minimal x", `minimal|Wrong argument`},
		{"transfer", "file ZONE example.test\n    transfer example.test {\n        to *\n    }", "transfer {\n        nosuch\n    }", `transfer|nosuch`},
		{"k8s_external", "k8s_external example.test\n    kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n    }", "k8s_external example.test {\n        ttl x\n    }", `k8s_external|ttl|Corefile`},
		{"kubernetes", "kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n        pods insecure\n    }", "kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n        pods nosuch\n    }", `wrong value for pods: nosuch`},
		{"file", "file ZONE example.test", "file ZONE example.test {\n        reload x\n    }", `file|Corefile`},
		{"auto", "auto example.test {\n        directory /tmp db\\.(.*) {1}\n    }", "auto {\n        nosuch\n    }", `auto|nosuch|Corefile`},
		{"secondary", "secondary example.test {\n        transfer from 198.18.0.1\n    }", "secondary example.test {\n        transfer to 198.18.0.1\n    }", `secondary|Corefile`},
		{"etcd", "etcd skydns.local {\n        endpoint http://198.18.0.1:2379\n        path /skydns\n    }", "etcd {\n        nosuch x\n    }", `etcd|nosuch|Corefile`},
		{"loop", "loop", "loop x", `loop|Wrong argument`},
		{"erratic", "erratic {\n        drop 3\n    }", "erratic {\n        drop x\n    }", `erratic|Corefile`},
		{"whoami", "whoami", "whoami x", `whoami|Wrong argument`},
		{"tsig", "tsig {\n        secret key.example.test. c2VjcmV0\n    }", "tsig {\n        require NOSUCH\n    }", `tsig|NOSUCH|Corefile`},
		{"dnstap", "dnstap /tmp/vscf-dnstap.sock full", "dnstap", `dnstap|Wrong argument|Corefile`},
		{"multisocket", "multisocket 2", "multisocket x", `multisocket|Corefile`},
		{"view", "view internal {\n        expr incidr(client_ip(), '127.0.0.0/8')\n    }", "view internal {\n        expr nosuch(\n    }", `view|Corefile`},
		{"on", "on startup true", "on nosuch true", `on|nosuch|Corefile`},
		{"tls", "", "tls /nosuch/cert.pem /nosuch/key.pem", `tls|no such file`},
		{"geoip", "", "geoip /nosuch/GeoLite2-City.mmdb", `geoip|no such file`},
		{"sign", "", "sign /nosuch/db.example.test example.test {\n        key file /nosuch/Kexample.test\n    }", `sign|no such file`},
	}
	block := func(line string) string {
		return ".:0 {\n    bind 127.0.0.1\n    " + strings.ReplaceAll(line, "ZONE", zone) + "\n    forward . 198.18.0.1\n}\n"
	}
	for _, tt := range tests {
		t.Run(tt.plugin, func(t *testing.T) {
			if tt.good != "" {
				if err := srv.Check(Corefile{Contents: []byte(block(tt.good))}); err != nil {
					t.Errorf("Check(%q): %v", tt.good, err)
				}
			}
			if tt.bad == "" {
				return
			}
			err := srv.Check(Corefile{Contents: []byte(block(tt.bad))})
			if err == nil || !regexp.MustCompile(tt.want).MatchString(err.Error()) {
				t.Errorf("Check(%q): %v; want an error matching %q", tt.bad, err, tt.want)
			}
		})
	}
}
