package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// pacedAuto is -paced-rate auto: each round's open loop runs at
// -paced-fraction of the keep-alive requests/s haproxy sustained under
// wrk earlier in the same round.
const pacedAuto = -1

// maxPacedRate bounds the open loop's rate, fixed or derived.
const maxPacedRate = 100000

// defaultPacedFraction is -paced-fraction's default. The keep-alive p99
// target is judged on the open loop, so its rate must load haproxy, not
// leave it idle (10,000 GETs/s, the old fixed rate, was about a quarter
// of haproxy's wrk rate on the 2-CPU machine), yet stay under what
// haproxy sustains in the open loop: at or above that, the queue grows
// for the whole run and the p99 measures the backlog, not the balancer.
// That capacity is well under haproxy's wrk rate here (below): the open
// loop's Go client spends 15-30 us of CPU per request (logged with each
// run), about what haproxy spends, on the same two CPUs (wrk's own cost
// was not measured). Measured 2026-11-30 under the other helpers' load (load 3 to
// 10), 1 round, -d 3s, haproxy's open-loop p50 and p99 against its wrk
// p50: 0.75 gave 3.3 ms and 67 ms (wrk 2.3 ms), and in two runs with 32
// connections 8.4 and 30 ms p50; 0.6 gave 1.6 ms and 88 ms (wrk 2.2);
// 0.5 kept its p50 under wrk's in five rounds of six (0.8 to 1.4 ms
// against 1.9 to 2.5; p99 4.4 to 204 ms, the stalls of a machine at load
// 6 to 10) and fell behind in one at load 9.7. Half of haproxy's rate is
// twice the old load; a round where haproxy's open-loop p50 exceeds its
// wrk p50 gets a note (overloadNotes).
const defaultPacedFraction = 0.5

// parsePacedRate reads -paced-rate: auto (pacedAuto), 0 (no open loop) or
// a fixed number of requests a second.
func parsePacedRate(s string) (int, error) {
	if s == "auto" {
		return pacedAuto, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > maxPacedRate {
		return 0, fmt.Errorf("%q: want auto, 0 (no open loop) or 1..%d requests a second", s, maxPacedRate)
	}
	return n, nil
}

// openLoopRate is a round's open-loop rate: setting when -paced-rate
// fixed it, else fraction of haproxyRPS (haproxy's wrk keep-alive
// requests/s in the round), rounded to 100 from 1000 up.
func openLoopRate(setting int, fraction, haproxyRPS float64) (int, error) {
	if setting != pacedAuto {
		return setting, nil
	}
	if haproxyRPS <= 0 || fraction <= 0 {
		return 0, fmt.Errorf("no open-loop rate: %.2f of haproxy's keep-alive %.0f requests/s", fraction, haproxyRPS)
	}
	r := fraction * haproxyRPS
	if r >= 1000 {
		r = math.Round(r/100) * 100
	}
	return min(maxPacedRate, max(1, int(math.Round(r)))), nil
}

// pacedRequest is the open loop's request, the same bytes every time.
var pacedRequest = []byte("GET / HTTP/1.1\r\nHost: bench\r\n\r\n")

// readAnswer reads one HTTP/1.1 answer to pacedRequest from r: a 200 with
// a Content-Length body, the connection kept. It allocates nothing on the
// way (net/http's ReadResponse builds a header map for every answer):
// the open loop shares the two CPUs with the balancers, and what the
// client spends per request is taken from their capacity.
func readAnswer(r *bufio.Reader) error {
	line, err := r.ReadSlice('\n')
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(line, []byte("HTTP/1.1 200 ")) {
		return fmt.Errorf("status line %q, want HTTP/1.1 200", bytes.TrimSpace(line))
	}
	length := -1
	for {
		line, err = r.ReadSlice('\n')
		if err != nil {
			return err
		}
		h := bytes.TrimRight(line, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return fmt.Errorf("header line %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil || length < 0 {
				return fmt.Errorf("Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")) && bytes.EqualFold(value, []byte("close")):
			return errors.New("the answer closes the connection")
		}
	}
	if length < 0 {
		return errors.New("an answer without Content-Length")
	}
	_, err = r.Discard(length)
	return err
}

// overloadNotes are the rounds where haproxy's open-loop p50 exceeded
// its p50 under wrk, which ran it at full rate: the open loop offered
// more than haproxy sustained in it, so its p99 measured a backlog that
// grew through the run, and the p99 ratio says little.
func (r *results) overloadNotes() []string {
	var notes []string
	for i, f := range r.Rounds[implHAProxy] {
		if f.Paced.Rate > 0 && f.KeepAlive.P50 > 0 && f.Paced.P50 > f.KeepAlive.P50 {
			notes = append(notes, fmt.Sprintf("round %d: haproxy's open-loop p50 %s is above its wrk p50 %s: %d GETs a second was more than it sustained in the open loop, and its p99 is that of a backlog (lower -paced-fraction or -paced-rate)",
				i+1, fmtDuration(float64(f.Paced.P50)), fmtDuration(float64(f.KeepAlive.P50)), f.Paced.Rate))
		}
	}
	return notes
}
