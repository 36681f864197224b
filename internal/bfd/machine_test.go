package bfd

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const ms = time.Millisecond

// peer is what a received packet carries; zero fields get defaults.
type peer struct {
	state       State
	poll, final bool
	tx, rx      time.Duration // default 300ms; rx -1 sends zero
	mult        uint8         // default 3
	your        uint32        // default ours (1), or 0 when state is Down
}

func (p peer) packet() *Packet {
	q := &Packet{State: p.state, Poll: p.poll, Final: p.final, DetectMult: p.mult,
		MyDiscriminator: 2, YourDiscriminator: p.your, DesiredMinTx: p.tx, RequiredMinRx: p.rx}
	if q.DetectMult == 0 {
		q.DetectMult = 3
	}
	if q.DesiredMinTx == 0 {
		q.DesiredMinTx = 300 * ms
	}
	switch q.RequiredMinRx {
	case 0:
		q.RequiredMinRx = 300 * ms
	case -1:
		q.RequiredMinRx = 0
	}
	if q.YourDiscriminator == 0 && p.state != Down && p.state != AdminDown {
		q.YourDiscriminator = 1
	}
	return q
}

// step is one event at an offset from t0, and what must hold afterwards.
type step struct {
	at     time.Duration
	event  string // start, tick, recv, set (tx, rx in peer), admindown, enable
	peer   peer
	want   []string // actions, as Action.String() cut at " ("
	state  State
	next   time.Duration // NextDeadline - t0; -1 for none
	detect time.Duration // DetectionTime, checked when nonzero
}

func cfg300() Config {
	return Config{LocalDiscr: 1, DesiredMinTx: 300 * ms, RequiredMinRx: 300 * ms, DetectMult: 3,
		Jitter: func() float64 { return 0 }} // every interval at 75%
}

func runSteps(t *testing.T, cfg Config, steps []step) *Machine {
	t.Helper()
	t0 := time.Unix(1_700_000_000, 0)
	m, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range steps {
		now := t0.Add(s.at)
		var acts []Action
		switch s.event {
		case "start":
			acts = m.Start(now)
		case "tick":
			acts = m.Tick(now)
		case "recv":
			acts, err = m.Receive(now, s.peer.packet())
			if err != nil {
				t.Fatalf("step %d (recv at %v): %v", i, s.at, err)
			}
		case "set":
			acts, err = m.SetIntervals(now, s.peer.tx, s.peer.rx)
			if err != nil {
				t.Fatalf("step %d (set at %v): %v", i, s.at, err)
			}
		case "admindown":
			acts = m.AdminDown(now)
		case "enable":
			acts = m.Enable(now)
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
		if m.State() != s.state {
			t.Fatalf("step %d (%s at %v): state %v, want %v", i, s.event, s.at, m.State(), s.state)
		}
		next := time.Duration(-1)
		if d := m.NextDeadline(); !d.IsZero() {
			next = d.Sub(t0)
		}
		if next != s.next {
			t.Fatalf("step %d (%s at %v): next deadline %v, want %v", i, s.event, s.at, next, s.next)
		}
		if s.detect != 0 && m.DetectionTime() != s.detect {
			t.Fatalf("step %d (%s at %v): detection time %v, want %v", i, s.event, s.at, m.DetectionTime(), s.detect)
		}
	}
	return m
}

func TestScenarios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		steps []step
	}{{
		name: "three-way handshake, poll to fast timers, detection time expires",
		cfg:  cfg300(),
		steps: []step{
			// Not Up: at least 1s, jittered to 750ms.
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 100 * ms, event: "recv", peer: peer{state: Down, tx: sec}, want: []string{"Down->Init"}, state: Init, next: 750 * ms, detect: 3 * sec},
			{at: 750 * ms, event: "tick", want: []string{"send(Init)"}, state: Init, next: 1500 * ms},
			// Up: the TX interval drops to 300ms at once, with a poll.
			{at: sec, event: "recv", peer: peer{state: Init, tx: sec}, want: []string{"Init->Up", "send(Up P)"}, state: Up, next: 1225 * ms, detect: 3 * sec},
			// The peer polls too: a Final at once, the timer unmoved.
			{at: 1100 * ms, event: "recv", peer: peer{state: Up, poll: true}, want: []string{"send(Up F)"}, state: Up, next: 1225 * ms, detect: 900 * ms},
			{at: 1225 * ms, event: "tick", want: []string{"send(Up P)"}, state: Up, next: 1450 * ms},
			{at: 1300 * ms, event: "recv", peer: peer{state: Up, final: true}, state: Up, next: 1450 * ms, detect: 900 * ms},
			{at: 1450 * ms, event: "tick", want: []string{"send(Up)"}, state: Up, next: 1675 * ms},
			{at: 1675 * ms, event: "tick", want: []string{"send(Up)"}, state: Up, next: 1900 * ms},
			{at: 1900 * ms, event: "tick", want: []string{"send(Up)"}, state: Up, next: 2125 * ms},
			{at: 2125 * ms, event: "tick", want: []string{"send(Up)"}, state: Up, next: 2200 * ms},
			{at: 2200*ms - 1, event: "tick", state: Up, next: 2200 * ms},
			// 1.3s + 3 x 300ms: down with diag 1; the peer is forgotten.
			{at: 2200 * ms, event: "tick", want: []string{"Up->Down"}, state: Down, next: 2350 * ms},
			{at: 2350 * ms, event: "tick", want: []string{"send(Down)"}, state: Down, next: 3100 * ms},
		},
	}, {
		name: "Down with the peer in Init goes straight Up",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 235 * ms, detect: 900 * ms},
			// A peer in Up seen from Down is ignored (RFC 5880 6.8.6).
		},
	}, {
		name: "Down ignores a peer in Up",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Up}, state: Down, next: 750 * ms},
		},
	}, {
		name: "the peer signals AdminDown",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 235 * ms},
			{at: 20 * ms, event: "recv", peer: peer{state: AdminDown}, want: []string{"Up->Down"}, state: Down, next: 235 * ms},
		},
	}, {
		name: "the peer signals Down while Up",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 235 * ms},
			{at: 20 * ms, event: "recv", peer: peer{state: Down}, want: []string{"Up->Down"}, state: Down, next: 235 * ms},
			// Down keeps the detection timer, to forget the peer when it expires.
			{at: 235 * ms, event: "tick", want: []string{"send(Down)"}, state: Down, next: 920 * ms},
			{at: 920 * ms, event: "tick", state: Down, next: 985 * ms},
		},
	}, {
		name: "a slower TX waits for the Final; a shorter RX too",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 235 * ms},
			{at: 20 * ms, event: "recv", peer: peer{state: Up, final: true}, state: Up, next: 235 * ms, detect: 900 * ms},
			// TX 300ms -> 600ms, RX 300ms -> 100ms: a poll goes out at once,
			// the old values stay in force.
			{at: 100 * ms, event: "set", peer: peer{tx: 600 * ms, rx: 100 * ms}, want: []string{"send(Up P)"}, state: Up, next: 325 * ms, detect: 900 * ms},
			{at: 325 * ms, event: "tick", want: []string{"send(Up P)"}, state: Up, next: 550 * ms},
			// The peer's Final: 600ms x 75% from now on; detection uses
			// the peer's 300ms TX (larger than our new 100ms RX).
			{at: 400 * ms, event: "recv", peer: peer{state: Up, final: true}, state: Up, next: 550 * ms, detect: 900 * ms},
			{at: 550 * ms, event: "tick", want: []string{"send(Up)"}, state: Up, next: 1000 * ms},
		},
	}, {
		name: "a longer RX applies at once",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 235 * ms, detect: 900 * ms},
			{at: 100 * ms, event: "set", peer: peer{tx: 300 * ms, rx: 500 * ms}, state: Up, next: 235 * ms, detect: 1500 * ms},
			// Detection restarted from the last packet (10ms) with 1.5s.
			{at: 1509 * ms, event: "tick", want: []string{"send(Up P)"}, state: Up, next: 1510 * ms},
			{at: 1510 * ms, event: "tick", want: []string{"Up->Down"}, state: Down, next: 1734 * ms},
		},
	}, {
		name: "a peer asking for no packets gets none, but a Final",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Down, rx: -1}, want: []string{"Down->Init"}, state: Init, next: 750 * ms},
			{at: 750 * ms, event: "tick", state: Init, next: 910 * ms},
			{at: 800 * ms, event: "recv", peer: peer{state: Init, rx: -1, poll: true}, want: []string{"Init->Up", "send(Up F)"}, state: Up, next: 1700 * ms},
			// It wants packets again: transmission restarts at once.
			{at: 900 * ms, event: "recv", peer: peer{state: Up}, want: []string{"send(Up P)"}, state: Up, next: 1125 * ms},
		},
	}, {
		name: "AdminDown keeps sending and ignores the peer; Enable returns to Down",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 235 * ms},
			{at: 100 * ms, event: "admindown", want: []string{"Up->AdminDown", "send(AdminDown)"}, state: AdminDown, next: 850 * ms},
			{at: 200 * ms, event: "recv", peer: peer{state: Up}, state: AdminDown, next: 850 * ms},
			{at: 850 * ms, event: "tick", want: []string{"send(AdminDown)"}, state: AdminDown, next: 1600 * ms},
			{at: 900 * ms, event: "enable", want: []string{"AdminDown->Down"}, state: Down, next: 1600 * ms},
		},
	}, {
		name: "detect mult 1 jitters at 75 to 90 percent",
		cfg: Config{LocalDiscr: 1, DesiredMinTx: 300 * ms, RequiredMinRx: 300 * ms, DetectMult: 1,
			Jitter: func() float64 { return 0.5 }},
		steps: []step{
			// 1s x (0.75 + 0.15 x 0.5) = 825ms.
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 825 * ms},
		},
	}, {
		name: "detect mult 3 jitters at 75 to 100 percent",
		cfg: Config{LocalDiscr: 1, DesiredMinTx: 300 * ms, RequiredMinRx: 300 * ms, DetectMult: 3,
			Jitter: func() float64 { return 0.5 }},
		steps: []step{
			// 1s x (0.75 + 0.25 x 0.5) = 875ms.
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 875 * ms},
		},
	}, {
		name: "the peer's larger RX sets the TX interval",
		cfg:  cfg300(),
		steps: []step{
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init, rx: 2 * sec}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 910 * ms},
			{at: 900 * ms, event: "recv", peer: peer{state: Up, rx: 2 * sec}, state: Up, next: 1510 * ms},
			// It lowers it again: the next packet moves forward to 75% of
			// 300ms after the last one (10ms), which is already past.
			{at: 1000 * ms, event: "recv", peer: peer{state: Up}, state: Up, next: 1000 * ms},
			{at: 1000 * ms, event: "tick", want: []string{"send(Up P)"}, state: Up, next: 1225 * ms},
		},
	}, {
		name: "a lower RX from the peer brings the next packet forward, not before now",
		cfg:  cfg300(),
		steps: []step{
			// The peer in Init asks for 1s; from Down we go Up.
			{event: "start", want: []string{"send(Down)"}, state: Down, next: 750 * ms},
			{at: 10 * ms, event: "recv", peer: peer{state: Init, tx: sec, rx: sec}, want: []string{"Down->Up", "send(Up P)"}, state: Up, next: 760 * ms},
			// Its poll to 300ms: a Final at once, the next packet at 10ms + 225ms.
			{at: 100 * ms, event: "recv", peer: peer{state: Up, poll: true}, want: []string{"send(Up F)"}, state: Up, next: 235 * ms},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) { runSteps(t, tc.cfg, tc.steps) })
	}
}

const sec = time.Second

func TestReceiveRejects(t *testing.T) {
	pw := func(id uint8, s string) *Auth { return &Auth{KeyID: id, Password: []byte(s)} }
	for _, tc := range []struct {
		name   string
		auth   *Auth
		pkt    *Packet
		reason Reason
		detail string
	}{
		{name: "not our discriminator", pkt: &Packet{State: Up, DetectMult: 3, MyDiscriminator: 2, YourDiscriminator: 9},
			reason: ReasonDiscriminator, detail: "your discriminator 0x9: want ours, 0x1"},
		{name: "demand bit", pkt: &Packet{State: Down, Demand: true, DetectMult: 3, MyDiscriminator: 2},
			reason: ReasonDemand, detail: "demand mode is not implemented"},
		{name: "auth present, none configured", pkt: &Packet{State: Down, DetectMult: 3, MyDiscriminator: 2, Auth: pw(1, "x")},
			reason: ReasonAuth, detail: "want none"},
		{name: "auth missing", auth: pw(1, "secret"), pkt: &Packet{State: Down, DetectMult: 3, MyDiscriminator: 2},
			reason: ReasonAuth, detail: "want simple password, key ID 1"},
		{name: "wrong key ID", auth: pw(1, "secret"), pkt: &Packet{State: Down, DetectMult: 3, MyDiscriminator: 2, Auth: pw(2, "secret")},
			reason: ReasonAuth, detail: "auth key ID 2: want 1"},
		{name: "wrong password", auth: pw(1, "secret"), pkt: &Packet{State: Down, DetectMult: 3, MyDiscriminator: 2, Auth: pw(1, "secreT")},
			reason: ReasonAuth, detail: "wrong simple password for key ID 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg300()
			c.Auth = tc.auth
			m, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			acts, err := m.Receive(time.Unix(0, 0), tc.pkt)
			if err == nil {
				t.Fatalf("Receive accepted %v: %v", tc.pkt, acts)
			}
			if ReasonOf(err) != tc.reason || !strings.Contains(err.Error(), tc.detail) {
				t.Fatalf("Receive error %q (%s), want reason %s containing %q", err, ReasonOf(err), tc.reason, tc.detail)
			}
			if m.RemoteDiscr() != 0 || m.State() != Down {
				t.Fatalf("a rejected packet changed the session: remote discr %#x, state %v", m.RemoteDiscr(), m.State())
			}
		})
	}
	// The right password is accepted.
	c := cfg300()
	c.Auth = pw(1, "secret")
	m, _ := New(c)
	if _, err := m.Receive(time.Unix(0, 0), &Packet{State: Down, DetectMult: 3, MyDiscriminator: 2, Auth: pw(1, "secret")}); err != nil || m.State() != Init {
		t.Fatalf("right password: err %v, state %v", err, m.State())
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{name: "discriminator", mod: func(c *Config) { c.LocalDiscr = 0 }, want: "local discriminator 0: want nonzero"},
		{name: "mult", mod: func(c *Config) { c.DetectMult = 0 }, want: "detect multiplier 0: want 1 to 255"},
		{name: "tx zero", mod: func(c *Config) { c.DesiredMinTx = 0 }, want: "desired min TX interval 0s: want whole microseconds"},
		{name: "tx sub-microsecond", mod: func(c *Config) { c.DesiredMinTx = 1500 }, want: "desired min TX interval 1.5µs"},
		{name: "rx negative", mod: func(c *Config) { c.RequiredMinRx = -ms }, want: "required min RX interval -1ms"},
		{name: "long password", mod: func(c *Config) { c.Auth = &Auth{Password: []byte("12345678901234567")} }, want: "simple password of 17 bytes: want 1 to 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := cfg300()
			tc.mod(&c)
			_, err := New(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
