//go:build linux

package story_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// TestStoryDemo runs `vipstack demo`'s whole story (demo.Run, which the
// command calls): the bootstrap holds the API VIP; once it is removed a
// master takes it; the client resolves the API name through the DNS VIP
// and reaches the masters through VIP -> LB; the API VIP's master crashes
// and another takes over; a worker's router fails and Ingress moves. Every
// step must hold, the live view must have shown the moves, and nothing may
// be left behind.
func TestStoryDemo(t *testing.T) {
	testnet.RequireRoot(t)
	bin := buildVipstack(t)
	out := &syncbuf.Buffer{}
	res, err := demo.Run(t.Context(), demo.Options{Bin: bin, Out: out})
	if err != nil || res.Steps != 5 {
		t.Fatalf("demo.Run: %d steps held, %v\n%s", res.Steps, err, out)
	}
	view := out.String()
	for _, want := range []string{
		"API VIP on bootstrap",
		"bootstrap  (shut down)",
		"router down",
		"every step held",
	} {
		if !strings.Contains(view, want) {
			t.Errorf("the demo's output lacks %q", want)
		}
	}
	for _, re := range []string{`API VIP on master-\d`, `master-\d   \(crashed\)`} {
		if !regexp.MustCompile(re).MatchString(view) {
			t.Errorf("the demo's output has nothing like %s", re)
		}
	}
	if t.Failed() {
		t.Logf("---- output:\n%s", view)
	}
	assertRemoved(t, res)
}

// TestStoryDemoInterrupted stops the demo mid-story, as Ctrl-C does: Run
// must say so, and remove everything.
func TestStoryDemoInterrupted(t *testing.T) {
	testnet.RequireRoot(t)
	bin := buildVipstack(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &cancelOn{needle: "== step 2/", cancel: cancel}
	res, err := demo.Run(ctx, demo.Options{Bin: bin, Out: out})
	if err == nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("demo.Run after cancel: %v, want an interruption\n%s", err, out.buf.String())
	}
	if res.Steps != 1 {
		t.Errorf("%d steps held before the interruption, want 1", res.Steps)
	}
	assertRemoved(t, res)
}

// cancelOn cancels once the output contains needle.
type cancelOn struct {
	buf    syncbuf.Buffer
	needle string
	cancel context.CancelFunc
}

func (c *cancelOn) Write(p []byte) (int, error) {
	n, err := c.buf.Write(p)
	if strings.Contains(c.buf.String(), c.needle) {
		c.cancel()
	}
	return n, err
}

// assertRemoved checks that no namespace, process or file of the run is
// left.
func assertRemoved(t *testing.T, res demo.Result) {
	t.Helper()
	if res.Tag == "" || res.Dir == "" {
		t.Fatalf("Result %+v lacks the tag or the directory", res)
	}
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), res.Tag) {
		t.Errorf("namespaces left behind:\n%s", out)
	}
	if _, err := os.Stat(res.Dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("work directory %s left behind (%v)", res.Dir, err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.Contains(string(b), res.Dir) {
			t.Errorf("process left behind: %s: %s", p, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
}
