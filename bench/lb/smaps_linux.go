package main

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// mapUse is what smaps says of the mappings of one kind (the same file
// and permissions, or anonymous memory) in a set of processes, in KiB.
type mapUse struct {
	Rss, Anon int64
}

// smapsByMapping sums /proc/PID/smaps of pids by mapping: the file's
// base name, permissions and offset ("vipstack r-xp @00000000"), "[heap]" and the like,
// or "anon rw-p" for mappings without a name.
func smapsByMapping(pids []int) map[string]mapUse {
	m := map[string]mapUse{}
	for _, pid := range pids {
		f, err := os.Open(filepath.Join("/proc", strconv.Itoa(pid), "smaps"))
		if err != nil {
			continue
		}
		addSmaps(m, f)
		f.Close()
	}
	return m
}

// addSmaps adds the mappings of one smaps file to m.
func addSmaps(m map[string]mapUse, r io.Reader) {
	sc := bufio.NewScanner(r)
	key := ""
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":"):
			key = "anon " + fs[1]
			if len(fs) >= 6 {
				key = filepath.Base(fs[5]) + " " + fs[1] + " @" + fs[2]
			}
		case len(fs) >= 2 && (fs[0] == "Rss:" || fs[0] == "Anonymous:"):
			n, _ := strconv.ParseInt(fs[1], 10, 64)
			u := m[key]
			if fs[0] == "Rss:" {
				u.Rss += n
			} else {
				u.Anon += n
			}
			m[key] = u
		}
	}
}

// smapsGrowth writes, largest growth first, the mappings whose resident
// set grew or shrank by at least 64 KiB from before to after, or holds
// at least 1 MiB in either.
func smapsGrowth(w io.Writer, who string, before, after map[string]mapUse) {
	type row struct {
		key       string
		rss, anon int64
	}
	var rows []row
	for k, a := range after {
		b := before[k]
		if d := a.Rss - b.Rss; d >= 64 || d <= -64 || a.Rss >= 1024 || b.Rss >= 1024 {
			rows = append(rows, row{k, d, a.Anon - b.Anon})
		}
	}
	for k, b := range before {
		if _, ok := after[k]; !ok && b.Rss >= 64 {
			rows = append(rows, row{k, -b.Rss, -b.Anon})
		}
	}
	slices.SortFunc(rows, func(x, y row) int { return cmp.Compare(y.rss, x.rss) })
	for _, r := range rows {
		fmt.Fprintf(w, "lb: smaps, %s: %-28s Rss %+8d KiB, of it anonymous %+8d KiB (%d -> %d)\n", who, r.key, r.rss, r.anon, before[r.key].Rss, after[r.key].Rss)
	}
}
