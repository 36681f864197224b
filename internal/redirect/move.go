package redirect

import (
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/lbconfig"
)

// RetargetWait bounds how long a Move keeps the old port open for the
// redirects to move before it closes it anyway.
const RetargetWait = 5 * time.Second

// OldPortLinger is how long a Move keeps the old port open after the
// redirects moved. A client whose first packet passed the old redirect
// is NATed to the old port for the life of its connection (conntrack);
// its handshake may still be under way when the redirect changes, and
// closing the listener would refuse it (or reset it in the accept
// queue). One second covers the round trips of a cluster's network.
const OldPortLinger = time.Second

// Applier is the load balancer a Mover drives (a *lb.LB): Apply opens the
// new listeners first and changes nothing when one fails.
type Applier interface {
	Apply(*lbconfig.Config) error
}

// Mover applies a reload to a load balancer that redirects deliver to,
// without refusing a connection when the reload moves the frontend to
// another port. Applied at once, the new configuration would close the
// port the redirects send VIP:PORT to before they move, and the VIP's
// clients would be refused until they did. So the reload takes three
// steps: the load balancer listens on both ports (Open), the caller
// retargets its redirects, and once they moved (or Wait passed) the old
// port closes (Finish). `vipstack lb --redirect` and the node agent both
// reload this way.
type Mover struct {
	LB Applier
	// Clock times the wait for the redirects; nil is the real clock.
	Clock clock.Clock
	Log   *slog.Logger
	// Wait bounds the wait for the redirects; 0 is RetargetWait.
	Wait time.Duration
	// Linger is how long the old port stays open once the redirects
	// moved; 0 is OldPortLinger.
	Linger time.Duration
}

// Move is a reload that Open applied and Finish completes.
type Move struct {
	m       *Mover
	next    *lbconfig.Config
	old     uint16
	overlap bool // the load balancer still listens on old
}

// Open applies next, whose redirected frontend listens on port to where
// the running configuration's listened on old (the same port: no move).
// When the port moves, the load balancer keeps listening on old as well:
// next with running's wildcard binds on old (see KeepPort). When the old
// port cannot stay open (next gives it to another frontend), next is
// applied alone, with a warning. On error nothing changed.
func (m *Mover) Open(running, next *lbconfig.Config, old, to uint16) (*Move, error) {
	mv := &Move{m: m, next: next, old: old}
	if old == to {
		return mv, m.LB.Apply(next)
	}
	err := m.LB.Apply(KeepPort(next, to, running, old))
	if err == nil {
		mv.overlap = true
		return mv, nil
	}
	m.log().Warn("cannot keep the old port open while the redirect moves", "port", old, "err", err)
	return mv, m.LB.Apply(next)
}

// Finish waits until every channel in moved is closed (the redirects'
// Retarget) or the Mover's Wait has passed, then, the redirects moved,
// for the Mover's Linger (connections the old redirect sent to the old
// port finish their handshakes), and closes the old port.
func (mv *Move) Finish(moved ...<-chan struct{}) error {
	m := mv.m
	clk := m.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	if len(moved) > 0 {
		wait := m.Wait
		if wait <= 0 {
			wait = RetargetWait
		}
		t := clk.NewTimer(wait)
		defer t.Stop()
		late := false
	waiting:
		for _, done := range moved {
			select {
			case <-done:
			case <-t.C():
				m.log().Warn("the redirects did not move to the load balancer's new port in time; closing the old one", "wait", wait)
				late = true
				break waiting
			}
		}
		if !late && mv.overlap {
			linger := m.Linger
			if linger <= 0 {
				linger = OldPortLinger
			}
			l := clk.NewTimer(linger)
			<-l.C()
		}
	}
	if !mv.overlap {
		return nil
	}
	if err := m.LB.Apply(mv.next); err != nil {
		return fmt.Errorf("closing the old port %d: %w", mv.old, err)
	}
	m.log().Info("the load balancer no longer listens on the old port", "port", mv.old)
	return nil
}

func (m *Mover) log() *slog.Logger {
	if m.Log == nil {
		return slog.Default()
	}
	return m.Log
}

// KeepPort returns next with the running configuration's wildcard binds
// on old (those a redirect delivers to, see Port) added, as they are, to
// the frontend of next that has a wildcard bind on port: next while the
// redirects move from old to port.
func KeepPort(next *lbconfig.Config, port uint16, running *lbconfig.Config, old uint16) *lbconfig.Config {
	wild := func(b lbconfig.Bind, p uint16) bool {
		a := b.Addr.Addr()
		return a.IsValid() && a.IsUnspecified() && b.Addr.Port() == p
	}
	var keep []lbconfig.Bind
	for _, fe := range running.Frontends {
		for _, b := range fe.Binds {
			if wild(b, old) {
				keep = append(keep, b)
			}
		}
	}
	both := *next
	both.Frontends = slices.Clone(next.Frontends)
	for i, fe := range both.Frontends {
		if slices.ContainsFunc(fe.Binds, func(b lbconfig.Bind) bool { return wild(b, port) }) {
			both.Frontends[i].Binds = append(slices.Clone(fe.Binds), keep...)
			break
		}
	}
	return &both
}
