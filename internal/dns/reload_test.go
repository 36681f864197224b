package dns

import (
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// TestReloadRefusesWhatStartRefuses edits a running Corefile (reload
// plugin) into ones Start and Check refuse although Caddy would load them:
// a hosts line whose address does not parse (CoreDNS drops the line as
// /etc/hosts would and the name goes upstream) and a stray '}'. Each edit
// must fail the reload (coredns_reload_failed_total grows) and leave the
// running Corefile answering; a good edit afterwards applies. It waits for
// CoreDNS's reload timer, so -short skips it.
func TestReloadRefusesWhatStartRefuses(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the reload plugin's timer")
	}
	port := freePort(t)
	corefile := func(api, extra string) string {
		return fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    reload 2s 1s\n    clusterdns managed.example.com {\n        api %s\n    }\n%s}\n", port, api, extra)
	}
	path := t.TempDir() + "/Corefile"
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(corefile("198.18.0.5", ""))
	cf, err := ReadCorefile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(cf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	answer := func() []string {
		_, a, _ := query(t, addr, "api.managed.example.com", dns.TypeA)
		return a
	}
	want := []string{"api.managed.example.com. A 198.18.0.5"}
	if got := answer(); !slices.Equal(got, want) {
		t.Fatalf("before any edit: %q, want %q", got, want)
	}

	for _, edit := range []struct{ name, corefile string }{
		{"hosts line with a bad address", corefile("198.18.0.6", "    hosts {\n        198.18.3.2111 master-1.managed.example.com\n        fallthrough\n    }\n")},
		{"stray closing brace", corefile("198.18.0.6", "") + "}\n"},
	} {
		if err := Validate(Corefile{Path: path, Contents: []byte(edit.corefile)}); err == nil {
			t.Fatalf("%s: Validate accepts the edit; the test needs one it refuses", edit.name)
		}
		failed := reloadFailures(t)
		write(edit.corefile)
		deadline := time.Now().Add(15 * time.Second)
		for reloadFailures(t) == failed {
			if got := answer(); !slices.Equal(got, want) {
				t.Fatalf("%s: the reload applied a Corefile Start refuses: api answers %q, want %q", edit.name, got, want)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: no failed reload 15s after the edit", edit.name)
			}
			time.Sleep(100 * time.Millisecond) // polling CoreDNS's reload timer, which we cannot drive
		}
		if got := answer(); !slices.Equal(got, want) {
			t.Errorf("%s: after the refused reload api answers %q, want %q", edit.name, got, want)
		}
	}

	write(corefile("198.18.0.7", ""))
	want = []string{"api.managed.example.com. A 198.18.0.7"}
	deadline := time.Now().Add(15 * time.Second)
	for got := answer(); !slices.Equal(got, want); got = answer() {
		if time.Now().After(deadline) {
			t.Fatalf("a good edit after refused ones: api answers %q 15s later, want %q", got, want)
		}
		time.Sleep(100 * time.Millisecond) // polling CoreDNS's reload timer, which we cannot drive
	}
}
