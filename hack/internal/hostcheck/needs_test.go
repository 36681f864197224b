package hostcheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHaproxyNeeds(t *testing.T) {
	cfg := `global
  log syslog.example local0
  log 198.18.0.1:514 local1
  log /dev/log local2
  crt-base /srv/certs
  ca-base /srv/ca
defaults
  log global
  errorfile 503 /srv/errors/503.http
frontend fe
  bind :443 ssl crt site.pem ca-file clients.pem
  bind :8443 ssl crt /srv/certdir crt-list /srv/list.txt
  bind abns@inner
  acl bad src -f /srv/bad.lst # a comment naming server ghost:1
backend be
  server a app.example:8080 check
  server b 198.18.0.2:80
  server c ipv4@db.example:5432
  server d abns@inner
  server e [fd00::1]:80
  server f ${HOST}:80
  server g app.example:8081
resolvers dns
  nameserver ns1 ns.example:53
peers p
  peer one peer.example:1024
`
	got := haproxyNeeds(cfg)
	want := needs{
		Hosts: []string{"syslog.example", "app.example", "db.example", "ns.example", "peer.example"},
		Files: []need{
			{Path: "/srv/errors/503.http", Kind: errorFile, Arg: "503"},
			{Path: "/srv/certs/site.pem", Kind: pemCert},
			{Path: "/srv/ca/clients.pem", Kind: caCert},
			{Path: "/srv/certdir", Kind: certDir},
			{Path: "/srv/list.txt", Kind: crtList},
			{Path: "/srv/bad.lst", Kind: emptyFile},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("haproxyNeeds (-want +got):\n%s", d)
	}
}

func TestCorefileNeeds(t *testing.T) {
	cfg := `. {
    forward . 198.18.0.1 tls://dns.example dns://other.example:53 ns.example%tls.example /etc/resolv.conf
    prometheus metrics.example:9153
    health :8080
    tls /srv/tls/cert.pem /srv/tls/key.pem
    import /srv/common.conf
    import /srv/conf.d/*
    kubernetes cluster.local {
        kubeconfig /srv/kubeconfig ctx
    }
}
`
	got := corefileNeeds(cfg)
	want := needs{
		Hosts: []string{"dns.example", "other.example", "ns.example", "metrics.example"},
		Files: []need{
			{Path: "/srv/tls/cert.pem", Kind: certOnly},
			{Path: "/srv/tls/key.pem", Kind: keyOnly},
			{Path: "/srv/common.conf", Kind: emptyFile},
			{Path: "/srv/kubeconfig", Kind: kubeconfig, Arg: "ctx"},
		},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("corefileNeeds (-want +got):\n%s", d)
	}
}

// TestCorefileNeedsInCluster: a kubernetes block naming no API server gets
// a pod's service account, and one naming an endpoint does not.
func TestCorefileNeedsInCluster(t *testing.T) {
	in := corefileNeeds(". {\n    kubernetes cluster.local {\n        pods insecure\n    }\n}\n")
	if !in.InCluster || len(in.Files) != 3 || in.Files[0].Path != serviceAccount+"token" || in.Files[0].Arg == "" {
		t.Errorf("in-cluster block: %+v", in)
	}
	out := corefileNeeds(". {\n    kubernetes cluster.local {\n        endpoint https://198.18.0.1:6443\n    }\n}\n")
	if out.InCluster || len(out.Files) != 0 {
		t.Errorf("block with an endpoint: %+v", out)
	}
}

func TestHostsFile(t *testing.T) {
	names := make([]string, 300)
	for i := range names {
		names[i] = "h" + strings.Repeat("x", i%3)
	}
	lines := strings.Split(hostsFile(names), "\n")
	if got, want := lines[2], "198.18.1.1\th"; got != want {
		t.Errorf("first name: %q, want %q", got, want)
	}
	if got, want := lines[2+254], "198.18.2.1\th"+strings.Repeat("x", 254%3); got != want {
		t.Errorf("name 255: %q, want %q", got, want)
	}
}

// TestStage checks what stage writes: only paths missing on this host,
// each with content its checker loads.
func TestStage(t *testing.T) {
	c, err := newCert()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	exists := filepath.Join(t.TempDir(), "there.pem")
	if err := os.WriteFile(exists, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	n := needs{Hosts: []string{"app.example"}, Files: []need{
		{Path: exists, Kind: pemCert},
		{Path: "/nonexistent-corpushost/a.pem", Kind: pemCert},
		{Path: "/nonexistent-corpushost/dir", Kind: certDir},
		{Path: "/nonexistent-corpushost/list", Kind: crtList},
		{Path: "/nonexistent-corpushost/503.http", Kind: errorFile, Arg: "503"},
	}}
	made, err := stage(dir, n, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(made) != 4 {
		t.Errorf("made %q; want the 4 missing paths", made)
	}
	read := func(p string) string {
		b, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if s := read("/nonexistent-corpushost/a.pem"); !strings.Contains(s, "BEGIN CERTIFICATE") || !strings.Contains(s, "PRIVATE KEY") {
		t.Errorf("a.pem lacks a certificate and key:\n%s", s)
	}
	if s := read("/nonexistent-corpushost/dir/corpushost.pem"); !strings.Contains(s, "PRIVATE KEY") {
		t.Errorf("dir/corpushost.pem: %s", s)
	}
	if s := read("/nonexistent-corpushost/list"); s != "/nonexistent-corpushost/list.corpushost.pem\n" {
		t.Errorf("crt-list: %q", s)
	}
	if s := read("/nonexistent-corpushost/503.http"); !strings.HasPrefix(s, "HTTP/1.0 503 Service Unavailable\r\n") {
		t.Errorf("errorfile: %q", s)
	}
	if s := read("/etc/hosts"); !strings.Contains(s, "198.18.1.1\tapp.example\n") {
		t.Errorf("hosts: %q", s)
	}
	if _, err := os.Stat(filepath.Join(dir, exists)); err == nil {
		t.Errorf("staged %s, which exists on the host", exists)
	}
}

func TestOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name string
		got  Outcome
		want Outcome
	}{
		{"haproxy clean", haproxyOutcome(0, "Configuration file is valid\n"), Outcome{Class: "accept"}},
		{"haproxy name", haproxyOutcome(1, "[NOTICE]   (1) : haproxy version\n[ALERT]    (1) : config : [f.cfg:9] : 'server be/a' : could not resolve address 'x'.\n[ALERT]    (1) : config : Fatal errors found in configuration.\n"),
			Outcome{"host-only", "[f.cfg:9] : 'server be/a' : could not resolve address 'x'."}},
		{"haproxy error", haproxyOutcome(1, "[ALERT]    (1) : config : [f.cfg:2] : unknown keyword 'bogus' in 'global' section\n"),
			Outcome{"reject", "[f.cfg:2] : unknown keyword 'bogus' in 'global' section"}},
		{"coredns banner", coreDNSOutcome(serveResult{Started: true}), Outcome{Class: "accept"}},
		{"coredns exit", coreDNSOutcome(serveResult{Exited: true, Code: 1, Out: "plugin/errors: this plugin can only be used once per Server Block\n\n"}),
			Outcome{"reject", "plugin/errors: this plugin can only be used once per Server Block"}},
		{"coredns listen", coreDNSOutcome(serveResult{Exited: true, Code: 1, Out: "Listen: listen tcp 192.0.2.1:53: bind: cannot assign requested address\n"}),
			Outcome{"host-only", "Listen: listen tcp 192.0.2.1:53: bind: cannot assign requested address"}},
		{"vipstack warning", vipstackOutcome(1, "warning: x\nf.cfg:3: keyword \"y\" is not supported\n"), Outcome{"reject", "f.cfg:3: keyword \"y\" is not supported"}},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, tc.got, tc.want)
		}
	}
}

// TestEnvProvides runs haproxy -c on a file naming a server by a name this
// host does not resolve and a certificate it does not have: refused as
// is, accepted in the check's environment (both without a route out), and the host's /etc/hosts and
// the certificate's path are untouched afterwards. Root and haproxy only.
func TestEnvProvides(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (unshare -m -n, mount)")
	}
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Skip("haproxy not installed")
	}
	dir := t.TempDir()
	cert := "/nonexistent-corpushost-" + filepath.Base(dir) + "/site.pem"
	cfgPath := filepath.Join(dir, "h.cfg")
	cfg := "defaults\n  mode http\n  timeout connect 1s\n  timeout client 1s\n  timeout server 1s\n" +
		"frontend fe\n  bind 127.0.0.1:8443 ssl crt " + cert + "\n  default_backend be\n" +
		"backend be\n  server a app.corpushost.invalid:8080\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	hostsBefore, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	// As is, in a network namespace of its own (the name's lookup stays
	// on this host).
	if out, err := exec.Command("unshare", "-n", haproxy, "-c", "-f", cfgPath).CombinedOutput(); err == nil {
		t.Fatalf("haproxy -c accepted the file as is:\n%s", out)
	}
	c, err := newCert()
	if err != nil {
		t.Fatal(err)
	}
	n := haproxyNeeds(cfg)
	envDir, made, err := prepare(dir, n, c)
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Hosts) != 1 || len(made) != 1 {
		t.Fatalf("needs %+v, provided %q", n, made)
	}
	rc, out := runOnce(envDir, nil, 30*time.Second, haproxy, "-c", "-f", cfgPath)
	if got := haproxyOutcome(rc, out); got.Class != "accept" {
		t.Errorf("in the environment: %+v\n%s", got, out)
	}
	if after, _ := os.ReadFile("/etc/hosts"); string(after) != string(hostsBefore) {
		t.Errorf("/etc/hosts changed")
	}
	if _, err := os.Stat(cert); err == nil {
		t.Errorf("%s exists on the host", cert)
	}
}

func TestChosen(t *testing.T) {
	for _, tc := range []struct {
		kind, upClass string
		want          bool
	}{
		{"haproxy", "host-only", true},
		{"haproxy", "accept", false},
		{"haproxy", "reject", false},
		{"corefile", "accept", true},
		{"corefile", "reject", false},
		{"keepalived", "host-only", false},
	} {
		if got := Chosen(tc.kind, tc.upClass); got != tc.want {
			t.Errorf("Chosen(%q, %q) = %v, want %v", tc.kind, tc.upClass, got, tc.want)
		}
	}
}
