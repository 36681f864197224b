package procwatch

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Matcher is one vrrp_track_process's rule.
type Matcher struct {
	// Process is the process name (compared with comm, the kernel's name
	// of at most 15 characters) or, with FullCommand, argv[0].
	Process string
	Params  []string
	// ParamMatch is "", "exact", "partial" or "initial" (see
	// keepalived.TrackProcess).
	ParamMatch  string
	FullCommand bool
}

// commLen is the length of the kernel's process name (TASK_COMM_LEN - 1).
const commLen = 15

// Match reports whether a process with name comm and command line argv
// matches m.
func (m Matcher) Match(comm string, argv []string) bool {
	if !m.FullCommand {
		name := m.Process
		if len(name) > commLen {
			name = name[:commLen]
		}
		return comm == name
	}
	if len(argv) == 0 || argv[0] != m.Process {
		return false
	}
	args := argv[1:]
	switch m.ParamMatch {
	case "exact":
		return equal(args, m.Params)
	case "partial":
		return len(args) >= len(m.Params) && equal(args[:len(m.Params)], m.Params)
	case "initial":
		n := len(m.Params)
		if n == 0 {
			return true
		}
		return len(args) >= n && equal(args[:n-1], m.Params[:n-1]) && strings.HasPrefix(args[n-1], m.Params[n-1])
	}
	return true
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Count scans the process directory root (/proc) and returns how many
// live processes (zombies left out, as keepalived leaves them out) match
// m. Processes that end during the scan are skipped.
func Count(root string, m Matcher) (int, error) {
	d, err := os.Open(root)
	if err != nil {
		return 0, fmt.Errorf("procwatch: %w", err)
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return 0, fmt.Errorf("procwatch: read %s: %w", root, err)
	}
	n := 0
	for _, name := range names {
		if _, err := strconv.Atoi(name); err != nil {
			continue
		}
		dir := filepath.Join(root, name)
		var comm string
		var argv []string
		if m.FullCommand {
			b, err := os.ReadFile(filepath.Join(dir, "cmdline"))
			if err != nil || len(b) == 0 {
				continue // gone, or a kernel thread
			}
			argv = strings.Split(string(bytes.TrimSuffix(b, []byte{0})), "\x00")
		} else {
			b, err := os.ReadFile(filepath.Join(dir, "comm"))
			if err != nil {
				continue
			}
			comm = strings.TrimSuffix(string(b), "\n")
		}
		if m.Match(comm, argv) && !zombie(dir) {
			n++
		}
	}
	return n, nil
}

// zombie reports whether the process in dir has exited and waits for its
// parent (state Z), or is gone.
func zombie(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return true
	}
	return b[i+2] == 'Z' || b[i+2] == 'X'
}

// Quorum is a vrrp_track_process's quorum: Min..Max matching processes
// (Max -1: no maximum).
type Quorum struct{ Min, Max int }

// Holds reports whether n processes satisfy q.
func (q Quorum) Holds(n int) bool { return n >= q.Min && (q.Max < 0 || n <= q.Max) }

// Debounce turns raw quorum results into keepalived's tracked process
// state: a quorum gained counts once it has held for ForkDelay, a quorum
// lost once it has been lost for TerminateDelay. The first result counts
// at once. It keeps no clock: the caller passes the time of each result.
type Debounce struct {
	ForkDelay, TerminateDelay time.Duration

	started bool
	up      bool
	// pendingSince is when the raw result first differed from up; zero
	// when it agrees.
	pendingSince time.Time
}

// Step records the raw result ok at now and returns the debounced state.
func (d *Debounce) Step(ok bool, now time.Time) bool {
	if !d.started {
		d.started, d.up = true, ok
		return d.up
	}
	if ok == d.up {
		d.pendingSince = time.Time{}
		return d.up
	}
	if d.pendingSince.IsZero() {
		d.pendingSince = now
	}
	wait := d.TerminateDelay
	if ok {
		wait = d.ForkDelay
	}
	if now.Sub(d.pendingSince) >= wait {
		d.up, d.pendingSince = ok, time.Time{}
	}
	return d.up
}
