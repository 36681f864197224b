package dns

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
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
	path, write := startEditable(t, corefile("198.18.0.5", ""))
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

// TestServerReload runs a Corefile without the reload plugin and reloads it
// with Server.Reload (what vipstack dns does on SIGUSR1 and SIGHUP, as
// CoreDNS reloads on SIGUSR1). Scenario, checked after every step:
// a good edit applies; edits that Validate, a plugin's setup or the file
// itself refuse return an error naming the file (and line) and leave the
// running answers; Stop stops the instance the last Reload started.
//
// Measured against CoreDNS 1.8.1 (openshift/coredns, ~/.cache/vipstack-peers)
// with ".:15354 { errors }": SIGHUP is ignored; SIGUSR1 moved it to the
// edited port 15355; a SIGUSR1 after an edit with an unknown directive
// logged "Restart failed: aa-core.Corefile:3 - Error during parsing:
// Unknown directive 'bogus'" and kept answering on 15355.
func TestServerReload(t *testing.T) {
	port := freePort(t)
	corefile := func(api, extra string) string {
		return fmt.Sprintf(".:%d {\n    bind 127.0.0.1\n    clusterdns managed.example.com {\n        api %s\n    }\n%s}\n", port, api, extra)
	}
	if err := srv.Reload(); err == nil || !strings.Contains(err.Error(), "no Corefile is running") {
		t.Errorf("Reload with nothing running: %v, want a no Corefile is running error", err)
	}
	path, write := startEditable(t, corefile("198.18.0.5", ""))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	steps := []struct {
		name    string
		edit    func()
		wantErr string // regexp; "" = the reload applies
		api     string // api's answer after the step
	}{
		{name: "good edit", edit: func() { write(corefile("198.18.0.6", "")) }, api: "198.18.0.6"},
		{name: "unchanged file", edit: func() {}, api: "198.18.0.6"},
		{
			name:    "hosts line CoreDNS would drop",
			edit:    func() { write(corefile("198.18.0.7", "    hosts {\n        198.18.3.2111 master-1\n    }\n")) },
			wantErr: `Corefile:7: hosts: "198\.18\.3\.2111" is not an IP address.*; still serving the running Corefile`,
			api:     "198.18.0.6",
		},
		{
			name:    "bad plugin argument",
			edit:    func() { write(corefile("198.18.0.7", "    forward . 198.18.0.1 {\n        policy nosuch\n    }\n")) },
			wantErr: `Corefile:7.*unknown policy.*; still serving the running Corefile`,
			api:     "198.18.0.6",
		},
		{
			name:    "unknown plugin",
			edit:    func() { write(corefile("198.18.0.7", "    unbound\n")) },
			wantErr: `Corefile:6: unknown plugin "unbound".*; still serving the running Corefile`,
			api:     "198.18.0.6",
		},
		{
			name:    "file gone",
			edit:    func() { os.Remove(path) },
			wantErr: `read Corefile: .*Corefile: no such file.*; still serving the running Corefile`,
			api:     "198.18.0.6",
		},
		{name: "good edit after refused ones", edit: func() { write(corefile("198.18.0.8", "")) }, api: "198.18.0.8"},
	}
	for _, st := range steps {
		st.edit()
		err := srv.Reload()
		switch {
		case st.wantErr == "" && err != nil:
			t.Errorf("%s: Reload: %v", st.name, err)
		case st.wantErr != "" && err == nil:
			t.Errorf("%s: Reload accepted the edit, want an error matching %q", st.name, st.wantErr)
		case st.wantErr != "" && !regexp.MustCompile(st.wantErr).MatchString(err.Error()):
			t.Errorf("%s: Reload error %q does not match %q", st.name, err, st.wantErr)
		}
		check(t, addr, []qa{{name: "api.managed.example.com", qtype: dns.TypeA, answer: []string{"api.managed.example.com. A " + st.api}}})
	}
	if err := srv.Stop(); err != nil {
		t.Fatalf("Stop after Reload: %v", err)
	}
	if _, _, err := (&dns.Client{Timeout: time.Second}).Exchange(new(dns.Msg).SetQuestion("api.managed.example.com.", dns.TypeA), addr); err == nil {
		t.Errorf("%s still answers after Stop", addr)
	}
}

// startEditable writes text to a Corefile in a temporary directory, starts
// srv with it (stopped when the test ends) and returns the file's path and
// a function that replaces its text, for reloads.
func startEditable(t *testing.T, text string) (path string, write func(string)) {
	t.Helper()
	path = t.TempDir() + "/Corefile"
	write = func(s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(text)
	cf, err := ReadCorefile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(cf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	return path, write
}

// TestStopDuringPluginReload stops the server while the reload plugin's
// restart is under way: the new instance already serves, and Caddy has
// not yet announced it (it stops the old instance and runs its shutdown
// callbacks first; one added here holds that moment for 500 ms). Stop took
// the old instance and waits for the instances' shared WaitGroup, the new
// one's servers included; it must still return, with nothing answering.
func TestStopDuringPluginReload(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the reload plugin's timer")
	}
	corefile := func(api string) string {
		return ".:0 {\n    bind 127.0.0.1\n    reload 2s 1s\n    clusterdns managed.example.com {\n        api " + api + "\n    }\n}\n"
	}
	_, write := startEditable(t, corefile("198.18.0.5"))
	srv.mu.Lock()
	old := srv.inst
	srv.mu.Unlock()
	held := make(chan struct{})
	var once sync.Once
	old.OnShutdown = append(old.OnShutdown, func() error {
		once.Do(func() { close(held) })
		time.Sleep(500 * time.Millisecond) // the restart's announcement waits
		return nil
	})
	addr := srv.Addrs()[0].String()
	write(corefile("198.18.0.6"))
	select {
	case <-held:
	case <-time.After(15 * time.Second):
		t.Fatal("the reload plugin did not restart within 15 s")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Stop during the reload: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Stop during the plugin's reload has not returned in 30 s: it waits for the new instance's servers")
	}
	if _, _, err := new(dns.Client).Exchange(new(dns.Msg).SetQuestion("api.managed.example.com.", dns.TypeA), addr); err == nil {
		t.Errorf("%s still answers after Stop", addr)
	}
}
