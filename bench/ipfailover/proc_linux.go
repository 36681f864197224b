package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat (100
// on every Linux architecture Go supports).
const clockTicks = 100

// groupProcs lists the processes whose process group is pgid.
func groupProcs(pgid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		f, ok := statFields(pid)
		if ok && len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// statFields returns /proc/PID/stat's fields after the command name
// (field 3, the state, is index 0).
func statFields(pid int) ([]string, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
}

// cpuTicks sums user and system time, with the reaped children's (check
// scripts), of pids.
func cpuTicks(pids []int) uint64 {
	var t uint64
	for _, pid := range pids {
		f, ok := statFields(pid)
		if !ok || len(f) < 15 {
			continue
		}
		// utime stime cutime cstime are fields 14..17: indexes 11..14.
		for _, s := range f[11:15] {
			n, _ := strconv.ParseInt(s, 10, 64)
			if n > 0 {
				t += uint64(n)
			}
		}
	}
	return t
}

// pssMiB sums the proportional set size of pids, so pages that keepalived's
// parent and child share after fork count once.
func pssMiB(pids []int) float64 {
	var kb int64
	for _, pid := range pids {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) >= 2 && fs[0] == "Pss:" {
				n, _ := strconv.ParseInt(fs[1], 10, 64)
				kb += n
			}
		}
		f.Close()
	}
	return float64(kb) / 1024
}
