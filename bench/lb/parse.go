package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// wrkResult is what one wrk run reports.
type wrkResult struct {
	RPS      float64
	P50, P99 time.Duration
	Requests int
	// Errors counts socket errors (connect, read, write, timeout) and
	// responses that were not 2xx or 3xx.
	Errors int
}

// parseWrk reads wrk 4.1's report, run with --latency.
func parseWrk(out string) (wrkResult, error) {
	var r wrkResult
	var haveRPS, haveP50, haveP99 bool
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		f := strings.Fields(line)
		switch {
		case strings.HasPrefix(line, "Requests/sec:") && len(f) == 2:
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.RPS, haveRPS = v, true
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			d, err := time.ParseDuration(f[1])
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			if f[0] == "50%" {
				r.P50, haveP50 = d, true
			} else {
				r.P99, haveP99 = d, true
			}
		case len(f) >= 4 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.Requests = n
		case strings.HasPrefix(line, "Socket errors:"):
			// Socket errors: connect 0, read 12, write 0, timeout 0
			for _, part := range strings.Split(strings.TrimPrefix(line, "Socket errors:"), ",") {
				kv := strings.Fields(part)
				if len(kv) != 2 {
					return r, fmt.Errorf("wrk: %q: want \"KIND N\" pairs", line)
				}
				n, err := strconv.Atoi(kv[1])
				if err != nil {
					return r, fmt.Errorf("wrk: %q: %w", line, err)
				}
				r.Errors += n
			}
		case strings.HasPrefix(line, "Non-2xx or 3xx responses:") && len(f) == 5:
			n, err := strconv.Atoi(f[4])
			if err != nil {
				return r, fmt.Errorf("wrk: %q: %w", line, err)
			}
			r.Errors += n
		}
	}
	if !haveRPS || !haveP50 || !haveP99 {
		return r, fmt.Errorf("wrk: no Requests/sec or latency distribution in its output (was it run with --latency?):\n%s", out)
	}
	return r, nil
}

// parseIperf3 returns the received throughput in bits per second from
// iperf3 -J output.
func parseIperf3(out []byte) (float64, error) {
	var r struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return 0, fmt.Errorf("iperf3 -J: %w", err)
	}
	if r.Error != "" {
		return 0, fmt.Errorf("iperf3: %s", r.Error)
	}
	if r.End.SumReceived.BitsPerSecond <= 0 {
		return 0, fmt.Errorf("iperf3 -J: no end.sum_received.bits_per_second")
	}
	return r.End.SumReceived.BitsPerSecond, nil
}

// userHZ is the unit of the CPU times in /proc/PID/stat (USER_HZ, 100 on
// every architecture Go runs Linux on).
const userHZ = 100

// parseProcStatCPU returns the user plus system CPU time of a process
// from the text of its /proc/PID/stat: all its threads, the living and
// the exited ones.
func parseProcStatCPU(stat string) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces
	// and parentheses itself: the fields after it follow the last ')'.
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/PID/stat: no ')' after the command name in %q", stat)
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/PID/stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("/proc/PID/stat: CPU time %q is not a count of ticks", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
