package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat (100
// on every Linux architecture Go supports).
const clockTicks = 100

// statFields returns /proc/PID/stat's fields after the command name
// (field 3, the state, is index 0) and the command name.
func statFields(pid int) (fields []string, comm string, ok bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, "", false
	}
	i, j := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if i < 0 || j < i {
		return nil, "", false
	}
	return strings.Fields(string(b[j+1:])), string(b[i+1 : j]), true
}

// daemonProcs lists, sorted, the processes of process group pgid whose
// command name is comm: the daemon's long-lived processes, without the
// check scripts keepalived forks (their CPU time reaches keepalived's
// cutime/cstime when it reaps them).
func daemonProcs(pgid int, comm string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, c, ok := statFields(pid)
		// f[0] is the state, f[2] the process group.
		if ok && len(f) > 2 && f[2] == strconv.Itoa(pgid) && c == comm && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	slices.Sort(out)
	return out
}

// groupProcs lists every process of process group pgid.
func groupProcs(pgid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f, _, ok := statFields(pid); ok && len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// cpuTicks sums user and system time, with the reaped children's, of pids.
func cpuTicks(pids []int) (uint64, error) {
	var t uint64
	for _, pid := range pids {
		f, _, ok := statFields(pid)
		if !ok || len(f) < 15 {
			return 0, fmt.Errorf("process %d is gone", pid)
		}
		// utime stime cutime cstime are fields 14..17: indexes 11..14.
		for _, s := range f[11:15] {
			n, _ := strconv.ParseInt(s, 10, 64)
			if n > 0 {
				t += uint64(n)
			}
		}
	}
	return t, nil
}

// memKiB returns a "Name:  N kB" field of a /proc/PID file (VmRSS in
// status, Pss in smaps_rollup).
func memKiB(pid int, file, field string) (int64, error) {
	f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), file))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 2 && fs[0] == field+":" {
			return strconv.ParseInt(fs[1], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/%s has no %s", pid, file, field)
}
