package procfs

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// ClockTicks is USER_HZ, the unit of the CPU times in /proc/PID/stat (100
// on every Linux architecture Go supports).
const ClockTicks = 100

// Group lists the processes whose process group is pgid.
func Group(pgid int) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if f := stat(pid); len(f) > 2 && f[2] == strconv.Itoa(pgid) {
			out = append(out, pid)
		}
	}
	return out
}

// CPUTicks sums the user and system time of pids, with their reaped
// children's (check scripts), in ClockTicks.
func CPUTicks(pids []int) uint64 {
	var t uint64
	for _, pid := range pids {
		f := stat(pid)
		if len(f) < 15 {
			continue
		}
		// utime stime cutime cstime are fields 14..17: indexes 11..14.
		for _, s := range f[11:15] {
			if n, _ := strconv.ParseInt(s, 10, 64); n > 0 {
				t += uint64(n)
			}
		}
	}
	return t
}

// MemMiB sums the resident set size and the proportional set size (pages
// shared between the processes, such as keepalived's parent and child
// after fork, counted once) of pids, from smaps_rollup.
func MemMiB(pids []int) (rss, pss float64) {
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

// AnonMiB sums the anonymous memory (smaps_rollup's Anonymous: the heap,
// stacks and written data, without the file pages a process maps, such
// as its binary's) of the processes pids, in MiB.
func AnonMiB(pids []int) float64 {
	var k int64
	for _, pid := range pids {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "smaps_rollup"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			if fs := strings.Fields(l); len(fs) >= 2 && fs[0] == "Anonymous:" {
				n, _ := strconv.ParseInt(fs[1], 10, 64)
				k += n
			}
		}
	}
	return float64(k) / 1024
}
