package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat.
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

// statFields returns /proc/PID/stat's fields after the command name.
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

// cpuTicks sums user and system time of pids, with their reaped children's.
func cpuTicks(pids []int) uint64 {
	var t uint64
	for _, pid := range pids {
		f, ok := statFields(pid)
		if !ok || len(f) < 15 {
			continue
		}
		for _, s := range f[11:15] { // utime stime cutime cstime
			n, _ := strconv.ParseInt(s, 10, 64)
			if n > 0 {
				t += uint64(n)
			}
		}
	}
	return t
}

// memMiB sums the RSS and the PSS (shared pages counted once) of pids,
// from smaps_rollup.
func memMiB(pids []int) (rss, pss float64) {
	var rk, pk int64
	for _, pid := range pids {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 2 {
				continue
			}
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			switch fs[0] {
			case "Rss:":
				rk += n
			case "Pss:":
				pk += n
			}
		}
		f.Close()
	}
	return float64(rk) / 1024, float64(pk) / 1024
}
