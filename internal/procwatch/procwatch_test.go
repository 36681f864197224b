package procwatch

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMatch: keepalived's matching rules: the name against comm (first 15
// characters), or with full_command argv[0] and the parameters, exact,
// partial or initial.
func TestMatch(t *testing.T) {
	tests := []struct {
		name string
		m    Matcher
		comm string
		argv []string
		want bool
	}{
		{name: "name", m: Matcher{Process: "haproxy"}, comm: "haproxy", want: true},
		{name: "name is not a prefix match", m: Matcher{Process: "ssh"}, comm: "sshd", want: false},
		{name: "long name, first 15", m: Matcher{Process: "a-very-long-process-name"}, comm: "a-very-long-pro", want: true},
		{name: "full command", m: Matcher{Process: "/usr/sbin/haproxy", FullCommand: true}, argv: []string{"/usr/sbin/haproxy", "-f", "x"}, want: true},
		{name: "full command other path", m: Matcher{Process: "/usr/sbin/haproxy", FullCommand: true}, argv: []string{"haproxy"}, want: false},
		{name: "exact", m: Matcher{Process: "/bin/x", Params: []string{"-a", "b"}, ParamMatch: "exact", FullCommand: true},
			argv: []string{"/bin/x", "-a", "b"}, want: true},
		{name: "exact, one more", m: Matcher{Process: "/bin/x", Params: []string{"-a"}, ParamMatch: "exact", FullCommand: true},
			argv: []string{"/bin/x", "-a", "b"}, want: false},
		{name: "exact, no parameters", m: Matcher{Process: "/bin/x", ParamMatch: "exact", FullCommand: true},
			argv: []string{"/bin/x", "-a"}, want: false},
		{name: "partial", m: Matcher{Process: "/bin/x", Params: []string{"-a"}, ParamMatch: "partial", FullCommand: true},
			argv: []string{"/bin/x", "-a", "b"}, want: true},
		{name: "partial, last longer", m: Matcher{Process: "/bin/x", Params: []string{"-a"}, ParamMatch: "partial", FullCommand: true},
			argv: []string{"/bin/x", "-ab"}, want: false},
		{name: "initial, last longer", m: Matcher{Process: "/bin/x", Params: []string{"-c", "conf"}, ParamMatch: "initial", FullCommand: true},
			argv: []string{"/bin/x", "-c", "config.cfg", "-d"}, want: true},
		{name: "initial, first differs", m: Matcher{Process: "/bin/x", Params: []string{"-c", "conf"}, ParamMatch: "initial", FullCommand: true},
			argv: []string{"/bin/x", "-C", "config.cfg"}, want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.m.Match(tc.comm, tc.argv); got != tc.want {
				t.Errorf("Match(%q, %q) = %v, want %v", tc.comm, tc.argv, got, tc.want)
			}
		})
	}
}

// TestDebounce: a quorum gained counts after fork_delay, one lost after
// terminate_delay, a flip back within the delay changes nothing, and the
// first result counts at once.
func TestDebounce(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	d := &Debounce{ForkDelay: time.Second, TerminateDelay: 2 * time.Second}
	steps := []struct {
		ms   int
		ok   bool
		want bool
	}{
		{0, false, false},    // first result: down at once
		{500, true, false},   // quorum gained: pending
		{1000, false, false}, // lost again within fork_delay
		{1500, true, false},  // gained again: pending anew
		{2400, true, false},  // 0.9 s
		{2500, true, true},   // 1 s: up
		{3000, false, true},  // lost: pending
		{4900, false, true},  // 1.9 s
		{5000, false, false}, // 2 s: down
	}
	for _, s := range steps {
		if got := d.Step(s.ok, at(s.ms)); got != s.want {
			t.Fatalf("at %d ms, raw %v: state %v, want %v", s.ms, s.ok, got, s.want)
		}
	}
	if !(&Debounce{}).Step(true, t0) {
		t.Error("a first result of true is not up at once")
	}
}

// TestQuorum: min..max, -1 for no maximum, quorum_max 0 for none running.
func TestQuorum(t *testing.T) {
	for _, tc := range []struct {
		q    Quorum
		n    int
		want bool
	}{
		{Quorum{1, -1}, 0, false}, {Quorum{1, -1}, 5, true}, {Quorum{2, 3}, 1, false}, {Quorum{2, 3}, 3, true},
		{Quorum{2, 3}, 4, false}, {Quorum{0, 0}, 0, true}, {Quorum{0, 0}, 1, false},
	} {
		if got := tc.q.Holds(tc.n); got != tc.want {
			t.Errorf("%+v.Holds(%d) = %v, want %v", tc.q, tc.n, got, tc.want)
		}
	}
}

// TestCountFake counts in a made-up /proc: zombies and non-PID entries
// are left out; cmdline is read for full_command.
func TestCountFake(t *testing.T) {
	root := t.TempDir()
	procs := []struct{ pid, comm, cmdline, state string }{
		{"10", "haproxy", "/usr/sbin/haproxy\x00-f\x00/etc/haproxy.cfg\x00", "S"},
		{"11", "haproxy", "/usr/sbin/haproxy\x00-f\x00/etc/other.cfg\x00", "R"},
		{"12", "haproxy", "", "Z"},
		{"13", "nginx", "nginx: master\x00", "S"},
	}
	for _, p := range procs {
		dir := filepath.Join(root, p.pid)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		files := map[string]string{"comm": p.comm + "\n", "cmdline": p.cmdline, "stat": p.pid + " (" + p.comm + ") " + p.state + " 1 1"}
		for f, c := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(c), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := os.MkdirAll(filepath.Join(root, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		m    Matcher
		want int
	}{
		{Matcher{Process: "haproxy"}, 2},
		{Matcher{Process: "nginx"}, 1},
		{Matcher{Process: "/usr/sbin/haproxy", FullCommand: true}, 2},
		{Matcher{Process: "/usr/sbin/haproxy", Params: []string{"-f", "/etc/haproxy.cfg"}, ParamMatch: "exact", FullCommand: true}, 1},
	} {
		if got, err := Count(root, tc.m); err != nil || got != tc.want {
			t.Errorf("Count(%+v) = %d, %v; want %d", tc.m, got, err, tc.want)
		}
	}
}

// TestCountReal counts real processes in /proc: copies of sleep under a
// name no other process has, started and ended by the test.
func TestCountReal(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Skip("no sleep binary")
	}
	b, err := os.ReadFile(sleep)
	if err != nil {
		t.Fatal(err)
	}
	name := "vkapw" + strings.ReplaceAll(t.Name()[len(t.Name())-4:], "/", "")
	bin := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	m := Matcher{Process: name}
	var cmds []*exec.Cmd
	for i := 0; i < 2; i++ {
		c := exec.Command(bin, "30")
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
		t.Cleanup(func() { c.Process.Kill(); c.Wait() })
	}
	if n, err := Count("/proc", m); err != nil || n != 2 {
		t.Fatalf("with two running: Count = %d, %v; want 2", n, err)
	}
	if n, _ := Count("/proc", Matcher{Process: bin, Params: []string{"30"}, ParamMatch: "exact", FullCommand: true}); n != 2 {
		t.Errorf("full command with its parameter: %d, want 2", n)
	}
	cmds[0].Process.Kill()
	cmds[0].Wait()
	if n, _ := Count("/proc", m); n != 1 {
		t.Errorf("after one ended: Count = %d, want 1", n)
	}
}
