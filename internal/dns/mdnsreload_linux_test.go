//go:build linux

package dns

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRootMDNSReloadGap asks for a node name the mdns directive answers,
// without pause, across reloads of OpenShift's Corefile (reload plugin)
// that keep the mdns line: every answer must be the node's. With a new
// browser per reload the name went to the next plugins until mDNS
// answered the new browser, upstream answered it, and "cache 30" held that
// answer: measured before the fix, 183 of 256 answers in the 6 s after the
// first reload were the upstream stub's (198.18.0.99), and every answer
// after the next two.
func TestRootMDNSReloadGap(t *testing.T) {
	h1, h2, corefile, p1 := openshiftMDNSLab(t, "vsaa")
	startDNS(t, h2, ".:53 {\n    errors\n}\n", "-mdns-cluster", "ostest", "-node-name", "master-1", "-node-role", "master",
		"-node-addr", h2.IPv4.Addr().String())
	eventually(t, 15*time.Second, func() string {
		if strings.Contains(p1.stderr.String(), `msg="mdns: node joined" plugin=mdns domain=example.com. name=master-1`) {
			return ""
		}
		return "host 1's browser has not logged master-1 joining"
	})
	at := "@" + h1.IPv4.Addr().String()
	want := "NOERROR master-1.example.com. A " + h2.IPv4.Addr().String()
	for i := 1; i <= 2; i++ {
		corefile = strings.Replace(corefile, fmt.Sprintf("    cache %d\n", 31-i), fmt.Sprintf("    cache %d\n", 30-i), 1)
		if err := os.WriteFile(p1.path, []byte(corefile), 0o644); err != nil {
			t.Fatal(err)
		}
		// Ask from the edit until a second after the reload completed
		// (the reload plugin looks every 2 s), at most 10 s.
		deadline, after := time.Now().Add(10*time.Second), time.Time{}
		asked, wrong := 0, map[string]int{}
		for time.Now().Before(deadline) && (after.IsZero() || time.Now().Before(after)) {
			r := dig(t, h1, at, "master-1.example.com", "A")
			if got := r.Status + " " + strings.Join(r.Answer, ","); got != want {
				wrong[got]++
			}
			asked++
			if after.IsZero() && strings.Count(p1.stderr.String(), "Reloading complete") >= i {
				after = time.Now().Add(time.Second)
			}
		}
		if after.IsZero() {
			t.Fatalf("reload %d did not complete within 10 s", i)
		}
		if len(wrong) > 0 {
			t.Errorf("reload %d: of %d answers, these were not %q: %v", i, asked, want, wrong)
		}
	}
	if n := strings.Count(p1.stderr.String(), `msg="mdns: starting" plugin=mdns`); n != 1 {
		t.Errorf("%d browsers started, want 1 (the reloads keep the mdns line, so they keep its browser)", n)
	}
}
