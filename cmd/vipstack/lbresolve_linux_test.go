package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/testnet"
)

// TestLBCheckResolvesLikeHaproxy: server host names resolve through the
// system's resolver at load, as haproxy's do: in a namespace whose
// /etc/hosts (ip netns exec's /etc/netns/NAME/hosts) names one server and
// not the other, haproxy -c and vipstack lb --check accept and refuse the
// same files.
func TestLBCheckResolvesLikeHaproxy(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("haproxy"); err != nil {
		t.Skip("haproxy not installed")
	}
	ns := fmt.Sprintf("vshp%d", os.Getpid()%100000)
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		t.Fatalf("ip netns add: %v: %s", err, out)
	}
	etc := filepath.Join("/etc/netns", ns)
	_, statErr := os.Stat("/etc/netns")
	t.Cleanup(func() {
		os.RemoveAll(etc)
		if os.IsNotExist(statErr) {
			os.Remove("/etc/netns") // this test made it; only if empty
		}
		exec.Command("ip", "netns", "del", ns).Run()
	})
	if err := os.MkdirAll(etc, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(etc, "hosts"), []byte("127.0.0.1 localhost\n198.18.0.7 vshp-db1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, tt := range []struct {
		host  string
		valid bool
	}{
		{"vshp-db1", true},
		{"vshp-nowhere.invalid", false},
	} {
		conf := "defaults\n  mode tcp\n  timeout connect 5s\n  timeout client 30s\n  timeout server 30s\n" +
			"frontend fe\n  bind 127.0.0.1:47061\n  default_backend be\nbackend be\n  server db " + tt.host + ":5432 check\n"
		path := filepath.Join(dir, tt.host+".cfg")
		if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		hout, herr := exec.Command("ip", "netns", "exec", ns, "haproxy", "-c", "-f", path).CombinedOutput()
		cmd := exec.Command("ip", "netns", "exec", ns, os.Args[0], "-test.run=^TestLBHelperProcess$")
		cmd.Env = append(os.Environ(), "VIPSTACK_LB_HELPER_ARGS="+strings.Join([]string{"-f", path, "--check"}, "\n"))
		vout, verr := cmd.CombinedOutput()
		if (herr == nil) != tt.valid || (verr == nil) != tt.valid {
			t.Errorf("%s: want valid=%v; haproxy -c: %v\n%s\nvipstack lb --check: %v\n%s", tt.host, tt.valid, herr, hout, verr, vout)
		}
		if !tt.valid && !strings.Contains(string(vout), "could not resolve address '"+tt.host+"'") {
			t.Errorf("%s: vipstack's error does not use haproxy's words:\n%s", tt.host, vout)
		}
	}
}
