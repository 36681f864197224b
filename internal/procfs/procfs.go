// Package procfs reads what the test harnesses and benches need to know
// about processes from /proc: whether one lives, its parent, its children.
package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// stat returns the fields of /proc/PID/stat after the command name (which
// may hold spaces and parentheses): state, ppid, ...
func stat(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// Alive reports whether pid exists and is not a zombie.
func Alive(pid int) bool {
	f := stat(pid)
	return len(f) > 0 && f[0] != "Z"
}

// PPid returns pid's parent, 0 if unknown.
func PPid(pid int) int {
	f := stat(pid)
	if len(f) < 2 {
		return 0
	}
	p, _ := strconv.Atoi(f[1])
	return p
}

// ChildOf returns the first live child of pid, 0 if none. A Go process
// lists its children under the thread that forked them, so every thread
// is looked at.
func ChildOf(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil && Alive(c) {
				return c
			}
		}
	}
	return 0
}

// LoadAvg returns the 1, 5 and 15 minute load averages from /proc/loadavg,
// as the benches print them, or "?" when it cannot be read.
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// StatusKiB is the "Name:   N kB" field of /proc/PID/status (VmRSS,
// RssAnon, VmHWM, ...), in KiB.
func StatusKiB(pid int, field string) (int, error) { return StatusInt(pid, field) }

// StatusInt is a numeric field of /proc/PID/status (pid may be a thread's
// ID: voluntary_ctxt_switches, ...), without its unit.
func StatusInt(pid int, field string) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == field+":" {
			n, err := strconv.Atoi(f[1])
			if err != nil {
				return 0, fmt.Errorf("/proc/%d/status: %s: %w", pid, field, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no %s", pid, field)
}
