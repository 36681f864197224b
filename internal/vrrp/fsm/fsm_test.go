package fsm

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	self  = netip.MustParseAddr("198.18.0.11")
	lower = netip.MustParseAddr("198.18.0.5")
	upper = netip.MustParseAddr("198.18.0.20")
)

// step is one event at an offset from t0, and what must hold afterwards.
type step struct {
	at     time.Duration
	event  string // start, tick, recv, prio, fault, clear, shutdown, nopreempt, preempt, interval, version (prio is the version), advertise (a reload), resign
	from   netip.Addr
	prio   uint8
	intv   time.Duration
	reason string // fault reason

	want      []string // actions, as Action.String() with reasons cut at " ("
	wantState State
	wantNext  time.Duration // NextDeadline - t0; -1 for none
}

func run(t *testing.T, cfg Config, steps []step) {
	t.Helper()
	t0 := time.Unix(1_700_000_000, 0)
	m := New(cfg)
	for i, s := range steps {
		now := t0.Add(s.at)
		var acts []Action
		switch s.event {
		case "start":
			acts = m.Start(now, s.prio, s.reason)
		case "tick":
			acts = m.Tick(now)
		case "recv":
			acts = m.Receive(now, Advert{From: s.from, Priority: s.prio, Interval: s.intv})
		case "prio":
			acts = m.SetPriority(now, s.prio)
		case "fault":
			acts = m.SetFault(now, s.reason)
		case "clear":
			acts = m.SetFault(now, "")
		case "shutdown":
			acts = m.Shutdown(now)
		case "interval":
			m.SetAdvertInterval(now, s.intv)
		case "nopreempt":
			m.SetPreempt(now, false, 0)
		case "preempt":
			m.SetPreempt(now, true, 0)
		case "version":
			acts = m.SetVersion(now, int(s.prio))
		case "advertise":
			acts = m.AdvertiseNow(now)
		case "resign":
			acts = m.Resign(now, s.reason)
		default:
			t.Fatalf("step %d: unknown event %q", i, s.event)
		}
		var got []string
		for _, a := range acts {
			str := a.String()
			if j := strings.Index(str, " ("); j >= 0 {
				str = str[:j]
			}
			got = append(got, str)
		}
		if diff := cmp.Diff(s.want, got); diff != "" {
			t.Fatalf("step %d (%s at %v): actions (-want +got):\n%s", i, s.event, s.at, diff)
		}
		if m.State() != s.wantState {
			t.Fatalf("step %d (%s at %v): state %v, want %v", i, s.event, s.at, m.State(), s.wantState)
		}
		next := time.Duration(-1)
		if d := m.NextDeadline(); !d.IsZero() {
			next = d.Sub(t0)
		}
		if next != s.wantNext {
			t.Fatalf("step %d (%s at %v): next deadline %v, want %v", i, s.event, s.at, next, s.wantNext)
		}
	}
}

const sec = time.Second

// v2, priority 100, advert 1s: skew = 156/256 s = 609.375ms, MDI = 3.609375s.
var (
	skew100 = 156 * sec / 256
	mdi100  = 3*sec + skew100
)

// The tie-break's rival above self, its step, and Skew_Time at 90.
var (
	rivalUp = netip.MustParseAddr("198.18.0.12")
	tieStep = 250 * time.Millisecond
	skew90  = 166 * sec / 256
)

// tie is v2(true) with the tie-break among rivals at top.
func tie(top uint8, rivals []netip.Addr) Config {
	c := v2(true)
	c.TieBreak = TieBreak{Rivals: rivals, Top: top, Step: tieStep}
	return c
}

func v2(preempt bool) Config {
	return Config{Version: 2, AdvertInterval: sec, Preempt: preempt, Primary: self}
}

func TestTimers(t *testing.T) {
	for _, tc := range []struct {
		name     string
		version  int
		prio     uint8
		interval time.Duration
		skew     time.Duration
	}{
		{name: "v2 prio 100", version: 2, prio: 100, interval: sec, skew: 609375 * time.Microsecond},
		{name: "v2 prio 254", version: 2, prio: 254, interval: 3 * sec, skew: 7812500 * time.Nanosecond},
		{name: "v3 prio 100 1s", version: 3, prio: 100, interval: sec, skew: 609375 * time.Microsecond},
		{name: "v3 prio 90 100ms", version: 3, prio: 90, interval: 100 * time.Millisecond, skew: 64843750 * time.Nanosecond},
		{name: "v3 prio 1 50ms", version: 3, prio: 1, interval: 50 * time.Millisecond, skew: 49804687 * time.Nanosecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(Config{Version: tc.version, AdvertInterval: tc.interval, Preempt: true, Primary: self})
			m.Start(time.Unix(0, 0), tc.prio, "")
			if got := m.SkewTime(); got != tc.skew {
				t.Errorf("SkewTime = %v, want %v", got, tc.skew)
			}
			if got, want := m.MasterDownInterval(), 3*tc.interval+tc.skew; got != want {
				t.Errorf("MasterDownInterval = %v, want %v", got, want)
			}
		})
	}
}

func TestScenarios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{{
		name: "backup times out and becomes master, then advertises every interval",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: mdi100 - 1, event: "tick", wantState: Backup, wantNext: mdi100},
			{at: mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi100 + sec},
			{at: mdi100 + sec, event: "tick", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 2*sec},
		},
	}, {
		// A tick a little late keeps the schedule: the next advert is due
		// an interval after the late one was due, not after the tick. A
		// tick a whole interval late or more starts again from the tick.
		name: "a master's late timer does not stretch its intervals",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi100 + sec},
			{at: mdi100 + sec + 300*time.Millisecond, event: "tick", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 2*sec},
			{at: mdi100 + 2*sec, event: "tick", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 3*sec},
			{at: mdi100 + 4*sec + 500*time.Millisecond, event: "tick", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 5*sec + 500*time.Millisecond},
		},
	}, {
		name: "adverts from a higher master keep a backup down",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 150, want: nil, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: lower, prio: 100, want: nil, wantState: Backup, wantNext: 2*sec + mdi100},
			{at: 2*sec + mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 3*sec + mdi100},
		},
	}, {
		name: "priority 0 from the master: take over after skew time",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 200, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 0, wantState: Backup, wantNext: 2*sec + skew100},
			{at: 2*sec + skew100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 3*sec + skew100},
		},
	}, {
		// self (198.18.0.11) has an equal rival above it (198.18.0.12)
		// besides the leaving master: it waits one step beyond Skew_Time
		// and hears the rival take over first.
		name: "tie-break: priority 0, a rival above: wait a step, then follow it",
		cfg:  tie(100, []netip.Addr{upper, rivalUp, lower}),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 100, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 0, wantState: Backup, wantNext: 2*sec + skew100 + tieStep},
			{at: 2*sec + skew100, event: "tick", wantState: Backup, wantNext: 2*sec + skew100 + tieStep},
			{at: 2*sec + skew100 + time.Millisecond, event: "recv", from: rivalUp, prio: 100, wantState: Backup, wantNext: 2*sec + skew100 + time.Millisecond + mdi100},
		},
	}, {
		// The rival above does not take over (it is down too): self does,
		// one step late.
		name: "tie-break: priority 0, the rival above silent: take over a step late",
		cfg:  tie(100, []netip.Addr{upper, rivalUp, lower}),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 0, wantState: Backup, wantNext: 2*sec + skew100 + tieStep},
			{at: 2*sec + skew100 + tieStep, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 3*sec + skew100 + tieStep},
		},
	}, {
		// The highest rival is the one leaving: it does not count, and
		// self is the first of the rest.
		name: "tie-break: the leaving master is not counted",
		cfg:  tie(100, []netip.Addr{rivalUp, lower}),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: 2 * sec, event: "recv", from: rivalUp, prio: 0, wantState: Backup, wantNext: 2*sec + skew100},
			{at: 2*sec + skew100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 3*sec + skew100},
		},
	}, {
		// Below Top (a check failed: 90 of 100), self waits beyond every
		// rival at Top: two rivals left besides the leaver, three steps.
		name: "tie-break: below Top, wait behind every rival",
		cfg:  tie(100, []netip.Addr{upper, rivalUp, lower}),
		steps: []step{
			{event: "start", prio: 90, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: 3*sec + skew90},
			{at: 2 * sec, event: "recv", from: upper, prio: 0, wantState: Backup, wantNext: 2*sec + skew90 + 3*tieStep},
			{at: 2*sec + skew90 + 3*tieStep, event: "tick", want: []string{"advert(prio 90)", "BACKUP->MASTER"}, wantState: Master, wantNext: 3*sec + skew90 + 3*tieStep},
		},
	}, {
		name: "preempt: a lower master is overtaken after skew time",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: sec + skew100},
			{at: sec + skew100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 2*sec + skew100},
		},
	}, {
		// A master stepping down advertises once below us: it is not the
		// master we follow, so it neither resets our timer nor makes us
		// preempt the real one.
		name: "preempt: a lower router that is not our master is discarded",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: sec + mdi100},
			{at: 1200 * time.Millisecond, event: "recv", from: lower, prio: 90, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: 2*sec + mdi100},
			// The master itself dropping below us is still overtaken after skew time.
			{at: 3 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 3*sec + skew100},
		},
	}, {
		// After the master announced it is leaving, a lower router is
		// followed: it may be the one taking over.
		name: "preempt: after priority 0 a lower router is taken for the master",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 0, wantState: Backup, wantNext: 2*sec + skew100},
			{at: 2100 * time.Millisecond, event: "recv", from: lower, prio: 90, wantState: Backup, wantNext: 2*sec + skew100},
		},
	}, {
		// Without preempt every advertisement resets the timer, whoever sends it.
		name: "nopreempt: a lower router that is not our master still resets the timer",
		cfg:  v2(false),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: sec + mdi100},
			{at: 1200 * time.Millisecond, event: "recv", from: lower, prio: 90, wantState: Backup, wantNext: 1200*time.Millisecond + mdi100},
		},
	}, {
		name: "advert_int changed by a reload: a master keeps its state and advertises at the new interval",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi100 + sec},
			{at: mdi100 + 100*time.Millisecond, event: "interval", intv: 3 * sec, wantState: Master, wantNext: mdi100 + sec},
			{at: mdi100 + sec, event: "tick", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 4*sec},
			// Back to 1 s: the next advertisement comes one new interval away.
			{at: mdi100 + 1500*time.Millisecond, event: "interval", intv: sec, wantState: Master, wantNext: mdi100 + 2500*time.Millisecond},
			{at: mdi100 + 2500*time.Millisecond, event: "tick", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 3500*time.Millisecond},
		},
	}, {
		// keepalived 2.2.7 (measured): a reload that changes the version
		// or the authentication keeps its master, which advertises the
		// new content at once.
		name: "version changed by a reload: a master stays master and advertises at once",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi100 + sec},
			{at: mdi100 + 300*time.Millisecond, event: "version", prio: 3, want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 1300*time.Millisecond},
			{at: mdi100 + 400*time.Millisecond, event: "version", prio: 3, wantState: Master, wantNext: mdi100 + 1300*time.Millisecond},
			{at: mdi100 + 500*time.Millisecond, event: "advertise", want: []string{"advert(prio 100)"}, wantState: Master, wantNext: mdi100 + 1500*time.Millisecond},
		},
	}, {
		name: "version changed by a reload: a backup keeps its state and times a version 2 master with its own interval",
		cfg:  Config{Version: 3, AdvertInterval: sec, Preempt: true, Primary: self},
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 150, intv: 100 * time.Millisecond, wantState: Backup, wantNext: sec + 360937500},
			{at: sec + 50*time.Millisecond, event: "version", prio: 2, wantState: Backup, wantNext: sec + 360937500},
			{at: sec + 60*time.Millisecond, event: "advertise", wantState: Backup, wantNext: sec + 360937500},
			{at: sec + 100*time.Millisecond, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: sec + 100*time.Millisecond + mdi100},
		},
	}, {
		name: "advert_int changed by a reload: a version 2 backup times the master with the new interval",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: sec + mdi100},
			{at: 1100 * time.Millisecond, event: "interval", intv: 2 * sec, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 150, wantState: Backup, wantNext: 2*sec + 6*sec + skew100},
		},
	}, {
		// A reload adds nopreempt while a lower master is about to be
		// overtaken: the backup keeps its state and no longer preempts.
		name: "nopreempt set by a reload: a pending preemption is called off",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: sec + skew100},
			{at: 1100 * time.Millisecond, event: "nopreempt", wantState: Backup, wantNext: 1100*time.Millisecond + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 2*sec + mdi100},
			// preempt again: the next lower advertisement is overtaken.
			{at: 2100 * time.Millisecond, event: "preempt", wantState: Backup, wantNext: 2*sec + mdi100},
			{at: 3 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 3*sec + skew100},
		},
	}, {
		name: "nopreempt: a lower master keeps the role",
		cfg:  v2(false),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: sec + mdi100},
			{at: 2 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 2*sec + mdi100},
		},
	}, {
		name: "preempt_delay holds off preemption after start and after first hearing the lower master",
		cfg:  Config{Version: 2, AdvertInterval: sec, Preempt: true, PreemptDelay: 10 * sec, Primary: self},
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: sec + mdi100},
			{at: 4 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 4*sec + mdi100},
			{at: 10 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 11*sec + skew100},
			{at: 11 * sec, event: "recv", from: upper, prio: 90, wantState: Backup, wantNext: 11*sec + skew100},
			{at: 11*sec + skew100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 12*sec + skew100},
		},
	}, {
		name: "master steps down for a higher priority, stays for a lower one and answers it",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 255, want: []string{"advert(prio 255)", "INIT->MASTER"}, wantState: Master, wantNext: sec},
			{at: 500 * time.Millisecond, event: "recv", from: upper, prio: 100, want: []string{"advert(prio 255)"}, wantState: Master, wantNext: 1500 * time.Millisecond},
			// A drop: priority 0, then the lowered priority (see SetPriority).
			{at: 600 * time.Millisecond, event: "prio", prio: 100, want: []string{"advert(prio 0)", "advert(prio 100)"}, wantState: Master, wantNext: 1600 * time.Millisecond},
			// A rise: the new priority alone.
			{at: 650 * time.Millisecond, event: "prio", prio: 110, want: []string{"advert(prio 110)"}, wantState: Master, wantNext: 1650 * time.Millisecond},
			{at: 660 * time.Millisecond, event: "prio", prio: 100, want: []string{"advert(prio 0)", "advert(prio 100)"}, wantState: Master, wantNext: 1660 * time.Millisecond},
			// Stepping down, it advertises once at its own priority, so
			// that a new master that never heard it announces the VIPs.
			{at: 700 * time.Millisecond, event: "recv", from: upper, prio: 101, want: []string{"MASTER->BACKUP", "advert(prio 100)"}, wantState: Backup, wantNext: 700*time.Millisecond + mdi100},
		},
	}, {
		name: "equal priority: the higher primary address wins in master",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi100 + sec},
			{at: 4 * sec, event: "recv", from: lower, prio: 100, want: []string{"advert(prio 100)"}, wantState: Master, wantNext: 5 * sec},
			{at: 4200 * time.Millisecond, event: "recv", from: upper, prio: 100, want: []string{"MASTER->BACKUP", "advert(prio 100)"}, wantState: Backup, wantNext: 4200*time.Millisecond + mdi100},
			// A backup at equal priority accepts the master whatever its address (RFC 5798 6.4.2).
			{at: 5 * sec, event: "recv", from: lower, prio: 100, wantState: Backup, wantNext: 5*sec + mdi100},
		},
	}, {
		name: "master receiving priority 0 from another answers at once",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 255, want: []string{"advert(prio 255)", "INIT->MASTER"}, wantState: Master, wantNext: sec},
			{at: 300 * time.Millisecond, event: "recv", from: upper, prio: 0, want: []string{"advert(prio 255)"}, wantState: Master, wantNext: 1300 * time.Millisecond},
		},
	}, {
		name: "master: shutdown sends priority 0",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			{at: mdi100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi100 + sec},
			{at: mdi100 + 300*time.Millisecond, event: "shutdown", want: []string{"advert(prio 0)", "MASTER->INIT"}, wantState: Initialize, wantNext: -1},
			{at: mdi100 + 2*sec, event: "tick", wantState: Initialize, wantNext: -1},
		},
	}, {
		name: "fault from master sends priority 0; clearing goes back to backup",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 255, want: []string{"advert(prio 255)", "INIT->MASTER"}, wantState: Master, wantNext: sec},
			{at: 100 * time.Millisecond, event: "fault", reason: "eth0 down", want: []string{"advert(prio 0)", "MASTER->FAULT"}, wantState: Fault, wantNext: -1},
			{at: 200 * time.Millisecond, event: "recv", from: upper, prio: 100, wantState: Fault, wantNext: -1},
			{at: 300 * time.Millisecond, event: "fault", reason: "still down", wantState: Fault, wantNext: -1},
			{at: 400 * time.Millisecond, event: "prio", prio: 100, wantState: Fault, wantNext: -1},
			{at: 500 * time.Millisecond, event: "clear", want: []string{"FAULT->BACKUP"}, wantState: Backup, wantNext: 500*time.Millisecond + mdi100},
		},
	}, {
		name: "start in fault",
		cfg:  v2(true),
		steps: []step{
			{event: "start", prio: 100, reason: "script chk failing with weight 0", want: []string{"INIT->FAULT"}, wantState: Fault, wantNext: -1},
			{at: sec, event: "clear", want: []string{"FAULT->BACKUP"}, wantState: Backup, wantNext: sec + mdi100},
		},
	}, {
		name: "v3 backup learns the master's interval",
		cfg:  Config{Version: 3, AdvertInterval: sec, Preempt: true, Primary: self},
		steps: []step{
			{event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
			// Master advertises every 100ms: MDI = 300ms + 156*100ms/256 = 360.9375ms.
			{at: sec, event: "recv", from: upper, prio: 200, intv: 100 * time.Millisecond, wantState: Backup, wantNext: sec + 360937500},
			{at: sec + 360937500, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: 2*sec + 360937500},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc.cfg, tc.steps) })
	}
}

func TestTransitionReasonsNameThePeer(t *testing.T) {
	m := New(v2(true))
	t0 := time.Unix(0, 0)
	m.Start(t0, 255, "")
	acts := m.Receive(t0.Add(sec), Advert{From: upper, Priority: 255})
	if len(acts) != 2 || !strings.Contains(acts[0].Reason, "198.18.0.20") || !strings.Contains(acts[0].Reason, "equal priority 255") {
		t.Fatalf("reason does not name the peer and priority: %v", acts)
	}
	if a, p := m.Master(); a != upper || p != 255 {
		t.Fatalf("Master() = %v %d, want %v 255", a, p, upper)
	}
}

func TestFollow(t *testing.T) {
	t0 := time.Unix(0, 0)
	m := New(v2(true))
	m.Start(t0, 100, "")
	if acts := m.Follow(t0, Backup, "group"); acts != nil {
		t.Fatalf("Follow(Backup) from Backup = %v, want nothing", acts)
	}
	acts := m.Follow(t0.Add(sec), Master, "sync group G: VI_2 became master")
	if m.State() != Master || len(acts) != 2 || acts[0].Kind != SendAdvert || acts[1].Reason != "sync group G: VI_2 became master" {
		t.Fatalf("Follow(Master) from Backup: state %v actions %v", m.State(), acts)
	}
	acts = m.Follow(t0.Add(2*sec), Backup, "group")
	if m.State() != Backup || m.NextDeadline() != t0.Add(2*sec+mdi100) {
		t.Fatalf("Follow(Backup) from Master: state %v next %v", m.State(), m.NextDeadline())
	}
	// Stepping down with its group, a member advertises once, as one that
	// heard a higher master does.
	if len(acts) != 2 || acts[0].Kind != Transition || acts[1].Kind != SendAdvert || acts[1].Priority != 100 {
		t.Fatalf("Follow(Backup) from Master: actions %v, want the transition and one advert at 100", acts)
	}
	m.SetFault(t0.Add(3*sec), "down")
	if acts := m.Follow(t0.Add(3*sec), Master, "group"); acts != nil || m.State() != Fault {
		t.Fatalf("Follow(Master) from Fault = %v (state %v), want nothing", acts, m.State())
	}
}

func TestReasonAfterPriorityZero(t *testing.T) {
	t0 := time.Unix(0, 0)
	m := New(v2(true))
	m.Start(t0, 100, "")
	m.Receive(t0.Add(sec), Advert{From: upper, Priority: 200})
	m.Receive(t0.Add(2*sec), Advert{From: upper, Priority: 0})
	acts := m.Tick(t0.Add(2*sec + skew100))
	if len(acts) != 2 || !strings.Contains(acts[1].Reason, "198.18.0.20 left (priority 0") {
		t.Fatalf("takeover after priority 0: %v", acts)
	}
	// With the tie-break's wait, the reason names it.
	m3 := New(tie(100, []netip.Addr{upper, rivalUp}))
	m3.Start(t0, 100, "")
	m3.Receive(t0.Add(2*sec), Advert{From: upper, Priority: 0})
	acts = m3.Tick(t0.Add(2*sec + skew100 + tieStep))
	if len(acts) != 2 || !strings.Contains(acts[1].Reason, "250ms more, the tie-break's wait behind 1 equal-priority router(s) with a higher address") {
		t.Fatalf("takeover after the tie-break's wait: %v", acts)
	}
	// A timeout without a priority-0 advert says so.
	m2 := New(v2(true))
	m2.Start(t0, 100, "")
	m2.Receive(t0.Add(sec), Advert{From: upper, Priority: 200})
	acts = m2.Tick(t0.Add(sec + mdi100))
	if len(acts) != 2 || !strings.Contains(acts[1].Reason, "no advertisement from master 198.18.0.20") {
		t.Fatalf("takeover after silence: %v", acts)
	}
}

// TestMasterReportsItsOwnPriority: a master whose priority changes reports
// the new one as the master's priority (an audit saw a master's status say
// "master ... (prio 70)" next to its effective priority 20).
func TestMasterReportsItsOwnPriority(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	m := New(Config{Version: 3, AdvertInterval: sec, Preempt: true, Primary: self})
	m.Start(t0, 70, "")
	m.Tick(t0.Add(m.MasterDownInterval()))
	if m.State() != Master {
		t.Fatalf("state %v, want MASTER", m.State())
	}
	for _, p := range []uint8{20, 90} {
		m.SetPriority(t0.Add(sec), p)
		if addr, prio := m.Master(); addr != self || prio != p {
			t.Errorf("after SetPriority(%d): Master() = %v prio %d, want %v prio %d", p, addr, prio, self, p)
		}
	}
	m.Receive(t0.Add(2*sec), Advert{From: upper, Priority: 100, Interval: sec})
	m.SetPriority(t0.Add(3*sec), 30)
	if addr, prio := m.Master(); addr != upper || prio != 100 {
		t.Errorf("a backup's SetPriority changed what it knows of the master: %v prio %d, want %v prio 100", addr, prio, upper)
	}
}

// TestResign: a master whose VIP was removed behind its back steps down as
// keepalived 2.2.7 does (measured: BACKUP, "sent 0 priority", MASTER again
// after its Skew_Time when alone): a priority-0 advertisement, BACKUP, and
// its own master-down timer at Skew_Time, so the best backup takes over
// first and, without one, it does. A router it hears meanwhile is followed
// as any master.
func TestResign(t *testing.T) {
	mdi := mdi100
	run(t, v2(true), []step{
		{at: 0, event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi},
		{at: mdi, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi + sec},
		{at: mdi + 100*time.Millisecond, event: "resign", reason: "vip gone",
			want: []string{"advert(prio 0)", "MASTER->BACKUP"}, wantState: Backup, wantNext: mdi + 100*time.Millisecond + skew100},
		{at: mdi + 100*time.Millisecond + skew100, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master,
			wantNext: mdi + 1100*time.Millisecond + skew100},
		// Not master: nothing.
		{at: 6 * sec, event: "recv", from: upper, prio: 200, want: []string{"MASTER->BACKUP", "advert(prio 100)"}, wantState: Backup, wantNext: 6*sec + mdi},
		{at: 6500 * time.Millisecond, event: "resign", want: nil, wantState: Backup, wantNext: 6*sec + mdi},
	})
	// A better backup that takes over after the priority 0 is followed.
	run(t, v2(true), []step{
		{at: 0, event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi},
		{at: mdi, event: "tick", want: []string{"advert(prio 100)", "BACKUP->MASTER"}, wantState: Master, wantNext: mdi + sec},
		{at: 4 * sec, event: "resign", want: []string{"advert(prio 0)", "MASTER->BACKUP"}, wantState: Backup, wantNext: 4*sec + skew100},
		{at: 4*sec + 10*time.Millisecond, event: "recv", from: upper, prio: 150, want: nil, wantState: Backup, wantNext: 4*sec + 10*time.Millisecond + mdi},
	})
	// The takeover's reason says what happened.
	t0 := time.Unix(0, 0)
	m := New(v2(true))
	m.Start(t0, 100, "")
	m.Tick(t0.Add(mdi))
	m.Resign(t0.Add(5*sec), "vip gone")
	acts := m.Tick(t0.Add(5*sec + skew100))
	if len(acts) != 2 || !strings.Contains(acts[1].Reason, "after we stepped down") {
		t.Fatalf("takeover after resigning: %v", acts)
	}
}

// TestPriorityDropCancelsPreemption: a preempting backup that heard its
// master advertise below it takes over after Skew_Time; if its own priority
// drops to or below the master's meanwhile (its tracked script failed), it
// must not: the master is better again. It took over, and the master's
// answer sent it back at once, the VIP moving there and back. It times the
// master as any backup does from then on.
func TestPriorityDropCancelsPreemption(t *testing.T) {
	t1 := 2 * sec
	run(t, v2(true), []step{
		{at: 0, event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
		{at: sec, event: "recv", from: upper, prio: 150, want: nil, wantState: Backup, wantNext: sec + mdi100},
		// The master's priority drops below ours: preempt after Skew_Time.
		{at: t1, event: "recv", from: upper, prio: 50, want: nil, wantState: Backup, wantNext: t1 + skew100},
		// Ours drops to 40 before that: no preemption.
		{at: t1 + 100*time.Millisecond, event: "prio", prio: 40, want: nil, wantState: Backup, wantNext: t1 + 100*time.Millisecond + 3*sec + 216*sec/256},
		{at: t1 + skew100, event: "tick", want: nil, wantState: Backup, wantNext: t1 + 100*time.Millisecond + 3*sec + 216*sec/256},
		{at: t1 + sec, event: "recv", from: upper, prio: 50, want: nil, wantState: Backup, wantNext: t1 + sec + 3*sec + 216*sec/256},
	})
	// Equal to the master's is not above it either; a drop that leaves us
	// above it changes nothing.
	run(t, v2(true), []step{
		{at: 0, event: "start", prio: 100, want: []string{"INIT->BACKUP"}, wantState: Backup, wantNext: mdi100},
		{at: t1, event: "recv", from: upper, prio: 50, want: nil, wantState: Backup, wantNext: t1 + skew100},
		{at: t1 + 10*time.Millisecond, event: "prio", prio: 60, want: nil, wantState: Backup, wantNext: t1 + skew100},
		{at: t1 + 20*time.Millisecond, event: "prio", prio: 50, want: nil, wantState: Backup, wantNext: t1 + 20*time.Millisecond + 3*sec + 206*sec/256},
	})
}

// TestAdopt: an instance handed over by a predecessor on the node starts as
// master at once and advertises, keeps its timers as a master does, and
// yields to a higher master; a fault still starts it in Fault.
func TestAdopt(t *testing.T) {
	t0 := time.Unix(0, 0)
	m := New(v2(true))
	acts := m.Adopt(t0, 100, "", "taken over from agent 42")
	if m.State() != Master || len(acts) != 2 || acts[0].Kind != SendAdvert || acts[0].Priority != 100 ||
		acts[1].Kind != Transition || acts[1].From != Initialize || acts[1].Reason != "start: taken over from agent 42" {
		t.Fatalf("Adopt: state %v actions %v, want Master after one advert at 100", m.State(), acts)
	}
	if got := m.NextDeadline(); got != t0.Add(sec) {
		t.Fatalf("Adopt: next deadline %v, want the next advert at %v", got, t0.Add(sec))
	}
	if acts := m.Adopt(t0, 100, "", "again"); acts != nil {
		t.Fatalf("Adopt outside Initialize = %v, want nothing", acts)
	}
	acts = m.Receive(t0.Add(sec/2), Advert{From: upper, Priority: 200})
	if m.State() != Backup || len(acts) == 0 {
		t.Fatalf("adopted master heard priority 200: state %v actions %v, want Backup", m.State(), acts)
	}

	f := New(v2(true))
	acts = f.Adopt(t0, 100, "interface down", "taken over")
	if f.State() != Fault || len(acts) != 1 || acts[0].Kind != Transition {
		t.Fatalf("Adopt with a fault: state %v actions %v, want Fault and no advert", f.State(), acts)
	}
}

// rfcBackup is a backup that follows RFC 5798 6.4.2 to the letter, as
// keepalived 2.2.7 does (vrrp_state_backup: "received lower priority advert
// - discarding", the timer left running): priority 0 sets its timer to
// Skew_Time, an advertisement below its priority from a preempting backup is
// discarded, any other resets the timer to Master_Down_Interval.
// TestInteropPriorityDropKeepalivedBackup checks the real one.
type rfcBackup struct {
	prio     uint8
	preempt  bool
	interval time.Duration
	downAt   time.Time
}

func (b *rfcBackup) skew() time.Duration { return time.Duration(256-int(b.prio)) * b.interval / 256 }

func (b *rfcBackup) receive(now time.Time, prio uint8) {
	switch {
	case prio == 0:
		b.downAt = now.Add(b.skew())
	case !b.preempt || prio >= b.prio:
		b.downAt = now.Add(3*b.interval + b.skew())
	}
}

// TestPriorityDropHandsOver joins a master whose priority drops from 100 to
// 70 with one backup and delivers the master's advertisements to it: a
// preempting backup above 70 takes over Skew_Time after the drop, not a
// Master_Down_Interval after the master's last advertisement at 100,
// whether it is vipstack's or one that discards lower advertisements as
// RFC 5798 and keepalived do; one at or below 70, or one that does not
// preempt, goes on timing the master and never takes over.
func TestPriorityDropHandsOver(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	drop := t0.Add(10*sec + 300*time.Millisecond) // between two adverts
	for _, tc := range []struct {
		name    string
		prio    uint8
		preempt bool
		version int
		advert  time.Duration
		want    time.Duration // backup's deadline after the drop; 0: a whole Master_Down_Interval
	}{
		{name: "v2 higher backup", prio: 90, preempt: true, version: 2, advert: sec, want: 166 * sec / 256},
		{name: "v3 higher backup at 10ms", prio: 90, preempt: true, version: 3, advert: 10 * time.Millisecond, want: 166 * 10 * time.Millisecond / 256},
		{name: "equal backup", prio: 70, preempt: true, version: 2, advert: sec},
		{name: "lower backup", prio: 60, preempt: true, version: 2, advert: sec},
		{name: "higher backup without preemption", prio: 90, preempt: false, version: 2, advert: sec},
	} {
		for _, peer := range []string{"vipstack", "rfc"} {
			t.Run(tc.name+"/"+peer, func(t *testing.T) {
				master := New(Config{Version: tc.version, AdvertInterval: tc.advert, Preempt: true, Primary: upper})
				backup := New(Config{Version: tc.version, AdvertInterval: tc.advert, Preempt: tc.preempt, Primary: self})
				rfc := &rfcBackup{prio: tc.prio, preempt: tc.preempt, interval: tc.advert}
				master.Start(t0, PriorityOwner, "")
				backup.Start(t0, tc.prio, "")
				rfc.downAt = t0.Add(3*tc.advert + rfc.skew())
				deliver := func(now time.Time, acts []Action) {
					for _, a := range acts {
						if a.Kind == SendAdvert {
							backup.Receive(now, Advert{From: upper, Priority: a.Priority, Interval: tc.advert})
							rfc.receive(now, a.Priority)
						}
					}
				}
				deadline := func() time.Time {
					if peer == "rfc" {
						return rfc.downAt
					}
					return backup.NextDeadline()
				}
				// The master advertises on its schedule until the drop.
				for now := t0; now.Before(drop); now = master.NextDeadline() {
					deliver(now, master.Tick(now))
				}
				deliver(drop, master.SetPriority(drop, 70))
				if master.State() != Master {
					t.Fatalf("master after its drop: %v, want Master", master.State())
				}
				got := deadline().Sub(drop)
				if tc.want != 0 {
					if got != tc.want {
						t.Fatalf("backup's deadline %v after the drop, want its Skew_Time %v", got, tc.want)
					}
					// The new master's advertisement sends the old one to Backup.
					master.Receive(drop.Add(got), Advert{From: self, Priority: tc.prio, Interval: tc.advert})
					if master.State() != Backup {
						t.Fatalf("old master hearing %d: %v, want Backup", tc.prio, master.State())
					}
					return
				}
				if want := 3*tc.advert + rfc.skew(); got != want {
					t.Fatalf("backup's deadline %v after the drop, want a whole Master_Down_Interval %v", got, want)
				}
				// The master keeps advertising at 70: the backup never takes over.
				for now := master.NextDeadline(); now.Before(drop.Add(20 * tc.advert)); now = master.NextDeadline() {
					deliver(now, master.Tick(now))
					if !deadline().After(now) {
						t.Fatalf("backup's timer ran out %v after the drop", now.Sub(drop))
					}
				}
			})
		}
	}
}

// TestMasterGone: a takeover says whether a router could still give the
// addresses up on our advertisement (then the engine takes them before
// advertising, so that the handover overlaps instead of leaving a gap), or
// none could (then the advertisement goes first, as RFC 5798 6.4.2 orders
// it, and stops the other backups' timers).
func TestMasterGone(t *testing.T) {
	t0 := time.Unix(0, 0)
	tests := []struct {
		name    string
		preempt bool
		heard   []Advert // one a second from t0+1s
		wait    time.Duration
		want    bool
	}{
		{name: "no master heard", preempt: true, wait: mdi100, want: true},
		{name: "higher master silent", preempt: true, heard: []Advert{{From: upper, Priority: 200}}, wait: mdi100, want: true},
		{name: "equal master with a higher address silent", preempt: true, heard: []Advert{{From: upper, Priority: 100}}, wait: mdi100, want: true},
		{name: "equal master with a lower address silent", preempt: true, heard: []Advert{{From: lower, Priority: 100}}, wait: mdi100},
		{name: "lower master silent, nopreempt", heard: []Advert{{From: lower, Priority: 50}}, wait: mdi100},
		{name: "preempting a lower master", preempt: true, heard: []Advert{{From: lower, Priority: 50}}, wait: skew100},
		{name: "master left with priority 0", preempt: true, heard: []Advert{{From: upper, Priority: 200}, {From: upper, Priority: 0}}, wait: skew100, want: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := New(v2(tc.preempt))
			m.Start(t0, 100, "")
			at := t0
			for i, a := range tc.heard {
				at = t0.Add(time.Duration(i+1) * sec)
				m.Receive(at, a)
			}
			acts := m.Tick(at.Add(tc.wait))
			if m.State() != Master || len(acts) != 2 || acts[1].Kind != Transition {
				t.Fatalf("after %v: state %v, actions %v; want a takeover", tc.wait, m.State(), acts)
			}
			if acts[0].MasterGone {
				t.Errorf("the advertisement is marked MasterGone; only the transition is")
			}
			if got := acts[1].MasterGone; got != tc.want {
				t.Errorf("MasterGone = %v, want %v (%s)", got, tc.want, acts[1].Reason)
			}
		})
	}
}
