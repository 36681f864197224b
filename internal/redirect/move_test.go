package redirect

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/haproxycfg"
	"github.com/vipstack/vipstack/internal/lbconfig"
	"github.com/vipstack/vipstack/internal/syncbuf"
)

// fakeLB records the ports each applied configuration listens on; refuse
// says which configurations its Apply refuses.
type fakeLB struct {
	mu        sync.Mutex
	listening []uint16 // the ports of the configuration in force
	applies   []string // every Apply: its ports, and "refused"
	refuse    func(ports []uint16) error
}

func ports(cfg *lbconfig.Config) []uint16 {
	var ps []uint16
	for _, fe := range cfg.Frontends {
		for _, b := range fe.Binds {
			ps = append(ps, b.Addr.Port())
		}
	}
	slices.Sort(ps)
	return ps
}

func (f *fakeLB) Apply(cfg *lbconfig.Config) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	ps := ports(cfg)
	if f.refuse != nil {
		if err := f.refuse(ps); err != nil {
			f.applies = append(f.applies, fmt.Sprint(ps, " refused"))
			return err
		}
	}
	f.applies = append(f.applies, fmt.Sprint(ps))
	f.listening = ps
	return nil
}

func (f *fakeLB) state() ([]uint16, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.listening), slices.Clone(f.applies)
}

// apiConfig is a balancer with one frontend on :::port v4v6 and a
// stats page on 127.0.0.1:statsPort (0: none).
func apiConfig(port, statsPort uint16) *lbconfig.Config {
	fes := []lbconfig.Frontend{{Name: "api", Backend: "masters",
		Binds: []lbconfig.Bind{{Addr: netip.AddrPortFrom(netip.IPv6Unspecified(), port), V4V6: true}}}}
	if statsPort != 0 {
		fes = append(fes, lbconfig.Frontend{Name: "other", Backend: "masters",
			Binds: []lbconfig.Bind{{Addr: netip.AddrPortFrom(netip.IPv6Unspecified(), statsPort), V4V6: true}}})
	}
	return &lbconfig.Config{Frontends: fes}
}

// TestMover steps a reload through Open and Finish on a fake clock and
// checks what the load balancer listens on after each step: a moving
// frontend keeps its old port until the redirects moved or the wait ran
// out, and never leaves the VIP's redirect pointing at a closed port.
func TestMover(t *testing.T) {
	both := func(ps []uint16) bool { return len(ps) > 1 && ps[0] == 9445 && ps[1] == 9446 }
	tests := []struct {
		name      string
		running   *lbconfig.Config
		next      *lbconfig.Config
		old, to   uint16
		refuse    func([]uint16) error
		redirects string // "moved": they move while Finish waits; "late": they never do; "": none
		// After Open, and after Finish.
		wantOpenErr    string
		wantOpen       []uint16
		wantFinishErr  string
		wantFinish     []uint16
		wantApplies    []string
		wantLog        string
		wantNoLog      string
		wantWaitsAfter bool // Finish waited for the clock
		wantLinger     bool // the old port stays open a while after the redirects moved
	}{
		{
			name: "same port: applied once", running: apiConfig(9445, 0), next: apiConfig(9445, 0), old: 9445, to: 9445,
			redirects: "", wantOpen: []uint16{9445}, wantFinish: []uint16{9445}, wantApplies: []string{"[9445]"},
		},
		{
			name: "port moves, redirects move in time", running: apiConfig(9445, 0), next: apiConfig(9446, 0), old: 9445, to: 9446,
			redirects: "moved", wantOpen: []uint16{9445, 9446}, wantFinish: []uint16{9446}, wantApplies: []string{"[9445 9446]", "[9446]"},
			wantNoLog: "did not move", wantLinger: true,
			wantLog: `msg="the load balancer no longer listens on the old port" port=9445`,
		},
		{
			name: "port moves, redirects late: the old port closes after the wait", running: apiConfig(9445, 0), next: apiConfig(9446, 0), old: 9445, to: 9446,
			redirects: "late", wantOpen: []uint16{9445, 9446}, wantFinish: []uint16{9446}, wantApplies: []string{"[9445 9446]", "[9446]"},
			wantLog: "the redirects did not move to the load balancer's new port in time; closing the old one", wantWaitsAfter: true,
		},
		{
			name: "old port taken by another frontend: moved without the overlap", running: apiConfig(9445, 0), next: apiConfig(9446, 9445), old: 9445, to: 9446,
			refuse: func(ps []uint16) error {
				if slices.Equal(ps, []uint16{9445, 9445, 9446}) {
					return errors.New("bind [::]:9445: address already in use")
				}
				return nil
			},
			redirects: "moved", wantOpen: []uint16{9445, 9446}, wantFinish: []uint16{9445, 9446},
			wantApplies: []string{"[9445 9445 9446] refused", "[9445 9446]"},
			wantLog:     `msg="cannot keep the old port open while the redirect moves" port=9445 err="bind [::]:9445: address already in use"`,
		},
		{
			name: "next refused: nothing changes", running: apiConfig(9445, 0), next: apiConfig(9446, 0), old: 9445, to: 9446,
			refuse: func(ps []uint16) error {
				if slices.Contains(ps, 9446) {
					return errors.New("bind [::]:9446: permission denied")
				}
				return nil
			},
			wantOpenErr: "bind [::]:9446: permission denied", wantApplies: []string{"[9445 9446] refused", "[9446] refused"},
		},
		{
			name: "closing the old port fails", running: apiConfig(9445, 0), next: apiConfig(9446, 0), old: 9445, to: 9446,
			refuse: func(ps []uint16) error {
				if !both(ps) {
					return errors.New("out of memory")
				}
				return nil
			},
			redirects: "moved", wantOpen: []uint16{9445, 9446}, wantFinishErr: "closing the old port 9445: out of memory",
			wantFinish: []uint16{9445, 9446}, wantApplies: []string{"[9445 9446]", "[9446] refused"}, wantLinger: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			clk := clock.NewFake(time.Unix(0, 0))
			lb := &fakeLB{refuse: tt.refuse}
			lb.listening = ports(tt.running)
			m := &Mover{LB: lb, Clock: clk, Log: slog.New(slog.NewTextHandler(&logs, nil))}

			mv, err := m.Open(tt.running, tt.next, tt.old, tt.to)
			if tt.wantOpenErr != "" {
				if err == nil || err.Error() != tt.wantOpenErr {
					t.Fatalf("Open() = %v; want %q", err, tt.wantOpenErr)
				}
				listening, applies := lb.state()
				if diff := cmp.Diff(ports(tt.running), listening); diff != "" {
					t.Errorf("a refused Open changed the ports (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tt.wantApplies, applies); diff != "" {
					t.Errorf("applies (-want +got):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("Open() = %v", err)
			}
			listening, _ := lb.state()
			if diff := cmp.Diff(tt.wantOpen, listening); diff != "" {
				t.Fatalf("after Open (-want +got):\n%s", diff)
			}

			var moved []<-chan struct{}
			done := make(chan struct{})
			if tt.redirects != "" {
				moved = append(moved, done)
			}
			finished := make(chan error, 1)
			go func() { finished <- mv.Finish(moved...) }()
			if tt.redirects != "" {
				// Finish waits on the fake clock; until the redirects
				// move, the old port stays open.
				waitFor(t, "Finish to wait for the redirects", func() bool { return clk.Pending() == 1 })
				if listening, _ := lb.state(); !cmp.Equal(tt.wantOpen, listening) {
					t.Fatalf("while the redirects move, listening on %v; want %v", listening, tt.wantOpen)
				}
				switch tt.redirects {
				case "moved":
					close(done)
					if !tt.wantLinger {
						break
					}
					// The old port lingers for the handshakes the old
					// redirect sent there: a second timer beside the wait.
					waitFor(t, "Finish to linger on the old port", func() bool { return clk.Pending() == 2 })
					clk.Advance(OldPortLinger - time.Millisecond)
					select {
					case err := <-finished:
						t.Fatalf("Finish() = %v before the old port lingered", err)
					default:
					}
					if listening, _ := lb.state(); !cmp.Equal(tt.wantOpen, listening) {
						t.Fatalf("while the old port lingers, listening on %v; want %v", listening, tt.wantOpen)
					}
					clk.Advance(time.Millisecond)
				case "late":
					clk.Advance(RetargetWait - time.Millisecond)
					select {
					case err := <-finished:
						t.Fatalf("Finish() = %v before the wait ran out", err)
					default:
					}
					clk.Advance(time.Millisecond)
				}
			}
			err = <-finished
			if tt.wantFinishErr != "" {
				if err == nil || err.Error() != tt.wantFinishErr {
					t.Fatalf("Finish() = %v; want %q", err, tt.wantFinishErr)
				}
			} else if err != nil {
				t.Fatalf("Finish() = %v", err)
			}
			if n := clk.Pending(); n != 0 {
				t.Errorf("%d timers left armed after Finish", n)
			}
			listening, applies := lb.state()
			if diff := cmp.Diff(tt.wantFinish, listening); diff != "" {
				t.Errorf("after Finish (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantApplies, applies); diff != "" {
				t.Errorf("applies (-want +got):\n%s", diff)
			}
			if tt.wantLog != "" && !strings.Contains(logs.String(), tt.wantLog) {
				t.Errorf("log lacks %q:\n%s", tt.wantLog, logs.String())
			}
			if tt.wantNoLog != "" && strings.Contains(logs.String(), tt.wantNoLog) {
				t.Errorf("log has %q:\n%s", tt.wantNoLog, logs.String())
			}
		})
	}
}

// TestMoverWaitsForEveryRedirect: with several redirects (one per API
// VIP), the old port stays open until the last one moved.
func TestMoverWaitsForEveryRedirect(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	lb := &fakeLB{listening: []uint16{9445}}
	m := &Mover{LB: lb, Clock: clk}
	mv, err := m.Open(apiConfig(9445, 0), apiConfig(9446, 0), 9445, 9446)
	if err != nil {
		t.Fatal(err)
	}
	v4, v6 := make(chan struct{}), make(chan struct{})
	finished := make(chan error, 1)
	go func() { finished <- mv.Finish(v4, v6) }()
	waitFor(t, "Finish to wait", func() bool { return clk.Pending() == 1 })
	close(v4)
	select {
	case err := <-finished:
		t.Fatalf("Finish() = %v with one redirect still moving", err)
	default:
	}
	if listening, _ := lb.state(); !cmp.Equal([]uint16{9445, 9446}, listening) {
		t.Fatalf("one redirect moved: listening on %v; want both ports", listening)
	}
	close(v6)
	waitFor(t, "Finish to linger on the old port", func() bool { return clk.Pending() == 2 })
	clk.Advance(OldPortLinger)
	if err := <-finished; err != nil {
		t.Fatal(err)
	}
	if listening, _ := lb.state(); !cmp.Equal([]uint16{9446}, listening) {
		t.Fatalf("after Finish: listening on %v; want [9446]", listening)
	}
}

// TestKeepPort: the running configuration's wildcard binds on the old
// port join the frontend of next that listens on the new one, as they
// are; other frontends and binds are left alone, and next is not changed.
func TestKeepPort(t *testing.T) {
	parse := func(text string) *lbconfig.Config {
		t.Helper()
		cfg, err := haproxycfg.Parse("t.cfg", []byte("defaults\n  mode tcp\n"+text+"backend masters\n  server m0 198.18.0.11:6443 check\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	running := parse("frontend api\n  bind :::9445 v4v6\n  bind 127.0.0.1:9445\n  default_backend masters\nfrontend other\n  bind :8080\n  default_backend masters\n")
	next := parse("frontend other\n  bind :8080\n  default_backend masters\nfrontend api\n  bind :::9446 v4v6\n  default_backend masters\n")
	got := KeepPort(next, 9446, running, 9445)
	var binds []string
	for _, fe := range got.Frontends {
		for _, b := range fe.Binds {
			s := fe.Name + " " + b.Addr.String()
			if b.V4V6 {
				s += " v4v6"
			}
			binds = append(binds, s)
		}
	}
	want := []string{"other 0.0.0.0:8080", "api [::]:9446 v4v6", "api [::]:9445 v4v6"}
	if diff := cmp.Diff(want, binds); diff != "" {
		t.Errorf("KeepPort binds (-want +got):\n%s", diff)
	}
	if n := len(next.Frontends[1].Binds); n != 1 {
		t.Errorf("KeepPort changed next: frontend api has %d binds", n)
	}
}
