//go:build linux

package story_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/demo"
	"github.com/vipstack/vipstack/internal/syncbuf"
	"github.com/vipstack/vipstack/internal/testnet"
)

// agentCaps is the mask of the node agent's three capabilities
// (docs/security.md) as /proc/PID/status prints it.
var agentCaps = testnet.CapMask(testnet.CapNetBindService, testnet.CapNetAdmin, testnet.CapNetRaw)

// TestStoryDemoLeastPrivilege plays the whole demo story (as
// TestStoryDemo) with every node agent started under capsh, which drops
// every capability from the bounding set but NET_ADMIN, NET_RAW and
// NET_BIND_SERVICE and keeps those three as the permitted, effective,
// inheritable and ambient sets. The namespace is entered before the drop
// (setns needs CAP_SYS_ADMIN), as systemd or a container runtime would.
// While the story runs, every process of the vipstack binary (each
// agent's supervisor and engine) must show exactly those three
// capabilities in /proc/PID/status, and every step must still hold.
func TestStoryDemoLeastPrivilege(t *testing.T) {
	testnet.RequireRoot(t)
	if _, err := exec.LookPath("capsh"); err != nil {
		t.Skip("skipping: capsh is not installed (Debian package libcap2-bin)")
	}
	wrap, err := testnet.CapshPrefix(testnet.CapNetBindService, testnet.CapNetAdmin, testnet.CapNetRaw)
	if err != nil {
		t.Fatal(err)
	}
	bin := buildVipstack(t)
	out := &capProbe{needle: "== step 2/", bin: bin, logs: map[string]string{}}
	res, err := demo.Run(t.Context(), demo.Options{Bin: bin, Out: out, Wrap: wrap, Prefix: "vpC"})
	if err != nil || res.Steps != 5 {
		t.Fatalf("demo.Run with only NET_ADMIN, NET_RAW and NET_BIND_SERVICE: %d steps held, %v\n%s", res.Steps, err, out.buf.String())
	}
	procs, perr := out.result()
	if perr != nil {
		t.Fatalf("reading the agents' capabilities: %v", perr)
	}
	// 6 nodes, each a supervisor and its engine.
	if len(procs) < 6 {
		t.Fatalf("found %d running processes of %s after step 1, want at least one per node (6): %v", len(procs), bin, procs)
	}
	want := capSets{Inh: agentCaps, Prm: agentCaps, Eff: agentCaps, Bnd: agentCaps, Amb: agentCaps}
	for pid, got := range procs {
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("capabilities of vipstack pid %d (-want +got):\n%s", pid, diff)
		}
	}
	// Nothing the agents do may have been refused for want of a
	// capability, even where they carry on (a sysctl, a cleanup).
	if len(out.logs) == 0 {
		t.Errorf("the agents' logs were not read before the cluster was removed")
	}
	for name, log := range out.logs {
		for _, line := range strings.Split(log, "\n") {
			l := strings.ToLower(line)
			if strings.Contains(l, "not permitted") || strings.Contains(l, "permission denied") || strings.Contains(l, "eperm") || strings.Contains(l, "eacces") {
				t.Errorf("%s: %s", name, line)
			}
		}
	}
	t.Logf("%d vipstack processes ran with capabilities %s (NET_BIND_SERVICE, NET_ADMIN, NET_RAW) only", len(procs), agentCaps)
	assertRemoved(t, res)
}

// capSets are the capability masks of /proc/PID/status.
type capSets struct{ Inh, Prm, Eff, Bnd, Amb string }

// capProbe is the demo's output; the first time the output contains
// needle it records the capabilities of every running process whose
// executable is bin, and when the demo starts removing the cluster it
// keeps the node agents' logs (removed with the cluster's directory).
type capProbe struct {
	buf    syncbuf.Buffer
	needle string
	bin    string

	once     sync.Once
	procs    map[int]capSets
	err      error
	logsOnce sync.Once
	logs     map[string]string // node agent log file name -> contents
}

// workDirRE finds the cluster's work directory in the demo's output.
var workDirRE = regexp.MustCompile(`work directory (\S+)`)

func (p *capProbe) Write(b []byte) (int, error) {
	n, err := p.buf.Write(b)
	text := p.buf.String()
	if strings.Contains(text, p.needle) {
		p.once.Do(func() { p.procs, p.err = capsOf(p.bin) })
	}
	if m := workDirRE.FindStringSubmatch(text); m != nil && strings.Contains(text, "removing the cluster") {
		p.logsOnce.Do(func() {
			files, _ := filepath.Glob(filepath.Join(m[1], "*.log"))
			for _, f := range files {
				if b, err := os.ReadFile(f); err == nil {
					p.logs[filepath.Base(f)] = string(b)
				}
			}
		})
	}
	return n, err
}

func (p *capProbe) result() (map[int]capSets, error) {
	p.once.Do(func() { p.err = fmt.Errorf("the output never showed %q, so the capabilities were not read", p.needle) })
	return p.procs, p.err
}

// capsOf reads the capability sets of every process running bin.
func capsOf(bin string) (map[int]capSets, error) {
	bin, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, err
	}
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, err
	}
	out := map[int]capSets{}
	for _, d := range dirs {
		exe, err := os.Readlink(filepath.Join(d, "exe"))
		if err != nil || exe != bin {
			continue // gone, a kernel thread, or another program
		}
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join(d, "status"))
		if err != nil {
			continue // exited since the Readlink
		}
		var s capSets
		for _, line := range strings.Split(string(status), "\n") {
			k, v, ok := strings.Cut(line, ":\t")
			if !ok {
				continue
			}
			switch k {
			case "CapInh":
				s.Inh = v
			case "CapPrm":
				s.Prm = v
			case "CapEff":
				s.Eff = v
			case "CapBnd":
				s.Bnd = v
			case "CapAmb":
				s.Amb = v
			}
		}
		out[pid] = s
	}
	return out, nil
}
