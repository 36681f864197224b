package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/vipstack/vipstack/internal/bfd"
)

// Eligibility is where the speaker learns which VIPs this node is eligible
// for: the node's checks, the same ones that set VRRP priority.
type Eligibility interface {
	// Verdicts returns the current verdict for each VIP.
	Verdicts() []Verdict
	// Changed receives a value whenever the verdicts may have changed.
	Changed() <-chan struct{}
}

// Router is what the speaker needs from a BGP implementation. NewGoBGP
// is the real one; logic tests use a fake.
type Router interface {
	Start(ctx context.Context, asn uint32, routerID netip.Addr, listenPort int) error
	AddPeer(ctx context.Context, p Peer, ibgp bool) error
	// DeletePeer closes the session (with a Cease) and forgets the peer.
	DeletePeer(ctx context.Context, addr netip.Addr) error
	// SetPeerEnabled takes a session down (administratively, sending a
	// Cease) or lets it come back.
	SetPeerEnabled(ctx context.Context, addr netip.Addr, enabled bool, reason string) error
	// Announce adds or replaces the path for r. nextHop may be invalid
	// (the session's local address); prependASN is the ASN r.Prepend
	// repeats.
	Announce(ctx context.Context, r Route, nextHop netip.Addr, prependASN uint32) error
	Withdraw(ctx context.Context, p netip.Prefix) error
	Peers(ctx context.Context) ([]RouterPeer, error)
	// Stop closes every session with a Cease NOTIFICATION.
	Stop(ctx context.Context) error
}

// RouterPeer is a session as the BGP implementation sees it.
type RouterPeer struct {
	Address     netip.Addr
	State       string // "idle", "connect", "active", "opensent", "openconfirm", "established"
	AdminDown   bool
	Advertised  uint64 // routes in the peer's Adj-RIB-Out, all families
	SentUpdates uint64 // UPDATE messages written to the session
	Established bool
}

// BFDSession is the part of *bfd.Session the speaker uses.
type BFDSession interface {
	Events() <-chan bfd.Event
	State() bfd.State
	// Rejected counts the peer's packets the session discarded, by
	// reason, with the last such error.
	Rejected() (map[bfd.Reason]int, error)
	Close() error
}

// Options build a Speaker.
type Options struct {
	Config      Config
	Eligibility Eligibility
	Router      Router                                      // nil: NewGoBGP(Logger)
	DialBFD     func(bfd.SessionConfig) (BFDSession, error) // nil: bfd.Dial
	Logger      *slog.Logger                                // nil: slog.Default()
	// StopTimeout bounds how long a graceful stop waits for the
	// withdrawals to leave before closing the sessions; 0 is 3 s.
	StopTimeout time.Duration
	// Drain is how long a graceful stop keeps the sessions, and so the
	// node its VIPs, once the withdrawals are on the wire: the routers
	// still forward on the old route until they have reprogrammed it
	// (bench/bgp saw 20 to 70 ms from the withdrawal to FRR's kernel
	// route under load), and a node that stopped answering at once
	// would lose those connections. 0 is 1 s; negative is none.
	Drain time.Duration
}

// ErrRestarting, as the cause of Run's context (context.WithCancelCause),
// makes Run return without withdrawing or closing the sessions: the
// process is about to exit for a restart. Its exit closes the TCP
// sessions without a NOTIFICATION, so peers with graceful restart (RFC
// 4724, Peer.GracefulRestart) keep this node's routes until it is back or
// the restart time passes.
var ErrRestarting = errors.New("bgp: restarting, routes left to graceful restart")

// Speaker announces the VIPs this node is eligible for.
type Speaker struct {
	cfg      Config
	elig     Eligibility
	router   Router
	dialBFD  func(bfd.SessionConfig) (BFDSession, error)
	log      *slog.Logger
	stopWait time.Duration
	drain    time.Duration

	updates chan update
	// ended is closed when Run returns: an Update then fails at once.
	ended chan struct{}

	mu sync.Mutex
	// ran is set once Run has taken its configuration; an Update before
	// replaces it.
	ran       bool
	announced map[netip.Prefix]Attributes
	// announces and withdrawals count the routes put into and taken out
	// of the RIB since the speaker started.
	announces, withdrawals uint64
	routes                 []RouteStatus
	peers                  []*peerState
}

type peerState struct {
	cfg      Peer
	bfd      BFDSession
	bfdState string        // "" when the peer has no BFD
	down     string        // why the speaker holds the session down; "" when it does not
	quit     chan struct{} // closed when an update removes the peer
}

// update is a new configuration for the running speaker.
type update struct {
	cfg  Config
	errc chan error
}

// PeerStatus is one peer for vipstack status.
type PeerStatus struct {
	Address netip.Addr
	ASN     uint32
	IBGP    bool
	Session string // the BGP FSM state
	BFD     string // "up", "down", "init", "admindown"; "" without BFD
	// BFDRejected is how many of the peer's BFD packets were discarded
	// and the last reason, "" when none were.
	BFDRejected string
	HeldDown    string // why the speaker holds the session down
	Advertised  uint64
	// SentUpdates counts the UPDATE messages written to the session
	// (announcements and withdrawals) since the peer was added.
	SentUpdates uint64
}

// Status is the speaker's state for vipstack status.
type Status struct {
	Peers  []PeerStatus
	Routes []RouteStatus
	// Announces and Withdrawals count the routes the speaker put into
	// and took out of its RIB (and so sent to every established peer)
	// since it started.
	Announces, Withdrawals uint64
	// Wedged says why the router no longer answers (Speaker.Wedged), ""
	// while it does.
	Wedged string
}

// New validates o.Config and returns a speaker; Run starts it.
func New(o Options) (*Speaker, error) {
	if err := o.Config.Validate(); err != nil {
		return nil, err
	}
	if o.Eligibility == nil {
		return nil, errors.New("bgp: no Eligibility")
	}
	s := &Speaker{cfg: o.Config, elig: o.Eligibility, router: o.Router, dialBFD: o.DialBFD, log: o.Logger,
		stopWait: o.StopTimeout, drain: o.Drain, announced: map[netip.Prefix]Attributes{}, updates: make(chan update), ended: make(chan struct{})}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.router == nil {
		s.router = NewGoBGP(s.log)
	}
	if s.dialBFD == nil {
		s.dialBFD = func(c bfd.SessionConfig) (BFDSession, error) { return bfd.Dial(c) }
	}
	if s.stopWait == 0 {
		s.stopWait = 3 * time.Second
	}
	if s.drain == 0 {
		s.drain = time.Second
	}
	return s, nil
}

type bfdEvent struct {
	peer *peerState
	ev   bfd.Event
}

// Run starts the speaker, announces and withdraws as the verdicts change,
// and takes a peer's session down while this side's BFD finds the path
// down. When ctx ends it withdraws every route, waits (bounded) until the
// withdrawals have been sent, and closes the sessions.
func (s *Speaker) Run(ctx context.Context) (err error) {
	defer close(s.ended)
	s.mu.Lock()
	s.ran = true // s.cfg changes on this goroutine from now on (apply)
	s.mu.Unlock()
	bg := context.WithoutCancel(ctx)
	if err := s.router.Start(bg, s.cfg.ASN, s.cfg.RouterID, s.cfg.ListenPort); err != nil {
		// What it made before it failed (GoBGP's server, the watch of
		// its sessions) is stopped with it.
		s.stopRouter(bg)
		return fmt.Errorf("bgp: start: %w", err)
	}
	// Routes go into the RIB before any session opens, so a peer that
	// kept them over a graceful restart gets them back in the first
	// UPDATEs rather than losing them to an empty End-of-RIB.
	s.reconcile(bg)
	events := make(chan bfdEvent, 16)
	var wg sync.WaitGroup
	done := make(chan struct{})
	defer func() {
		close(done)
		wg.Wait()
	}()
	// BFD starts once a peer's BGP session is first established: FRR's
	// bgpd replaces its BFD session when the BGP session comes up, and a
	// BFD session already Up then goes Down, which bgpd answers by
	// resetting BGP (seen with FRR 8.4).
	waitBFD := map[*peerState]bool{}
	addPeer := func(p Peer) (*peerState, error) {
		ps := &peerState{cfg: p, quit: make(chan struct{})}
		if p.BFD != nil {
			ps.bfdState = "waiting for BGP"
		}
		if err := s.router.AddPeer(bg, p, s.cfg.IBGP(p)); err != nil {
			return nil, fmt.Errorf("bgp: peer %v: %w", p.Address, err)
		}
		if p.BFD != nil {
			waitBFD[ps] = true
		}
		return ps, nil
	}
	for _, p := range s.cfg.Peers {
		ps, err := addPeer(p)
		if err != nil {
			s.stopRouter(bg)
			return err
		}
		s.mu.Lock()
		s.peers = append(s.peers, ps)
		s.mu.Unlock()
	}
	startBFD := func(ps *peerState) error {
		sess, err := s.dialBFD(bfdConfig(ps.cfg))
		if err != nil {
			return err
		}
		s.mu.Lock()
		ps.bfd, ps.bfdState = sess, stateName(sess.State())
		s.mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case ev := <-sess.Events():
					select {
					case events <- bfdEvent{peer: ps, ev: ev}:
					case <-done:
						return
					case <-ps.quit:
						return
					}
				case <-done:
					return
				case <-ps.quit:
					return
				}
			}
		}()
		return nil
	}
	// removePeer closes ps's session and BFD; it is gone from s.peers
	// once the caller stores the new list.
	removePeer := func(ps *peerState) error {
		delete(waitBFD, ps)
		close(ps.quit)
		err := s.router.DeletePeer(bg, ps.cfg.Address)
		s.mu.Lock()
		if ps.bfd != nil {
			ps.bfd.Close()
		}
		s.mu.Unlock()
		return err
	}
	poll := time.NewTicker(250 * time.Millisecond)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			if errors.Is(context.Cause(ctx), ErrRestarting) {
				s.leave()
				return nil
			}
			return s.stop(bg)
		case <-s.elig.Changed():
			s.reconcile(bg)
		case u := <-s.updates:
			u.errc <- s.apply(bg, u.cfg, addPeer, removePeer)
		case <-poll.C:
			if len(waitBFD) == 0 {
				continue
			}
			peers, err := s.router.Peers(bg)
			if err != nil {
				continue
			}
			up := map[netip.Addr]bool{}
			for _, p := range peers {
				up[p.Address] = p.Established
			}
			for ps := range waitBFD {
				if !up[ps.cfg.Address] {
					continue
				}
				if err := startBFD(ps); err != nil {
					// Tried again at the next poll; BGP runs meanwhile.
					s.log.Error("bgp: start BFD", "peer", ps.cfg.Address, "err", err)
					s.mu.Lock()
					ps.bfdState = "not started: " + err.Error()
					s.mu.Unlock()
					continue
				}
				delete(waitBFD, ps)
			}
		case e := <-events:
			if e.peer.quitted() {
				continue
			}
			s.bfdChanged(bg, e)
		}
	}
}

func (ps *peerState) quitted() bool {
	select {
	case <-ps.quit:
		return true
	default:
		return false
	}
}

// Update applies cfg to the running speaker: peers that are new are
// added, peers that are gone are removed (their sessions closed), peers
// whose settings changed are replaced (only their sessions restart), and
// the routes are planned again (a VIP no longer configured is withdrawn,
// a new one announced while eligible). Sessions to unchanged peers stay
// up. The ASN, router ID and listen port cannot change while running.
// Before Run, cfg replaces the configuration Run starts with; once Run
// has returned, Update returns ErrStopped.
func (s *Speaker) Update(ctx context.Context, cfg Config) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err // a select would hand the update over half the time
	}
	s.mu.Lock()
	cur, ran := s.cfg, s.ran
	if !ran {
		// Run starts with it (a runner may hold Run back, as a node
		// waits for its checks before its first sessions).
		s.cfg = cfg
	}
	s.mu.Unlock()
	if !ran {
		return nil
	}
	if cfg.ASN != cur.ASN || cfg.RouterID != cur.RouterID || cfg.ListenPort != cur.ListenPort {
		return fmt.Errorf("bgp: asn, router-id and listen-port (%d, %v, %d to %d, %v, %d) apply only at a restart of the speaker",
			cur.ASN, cur.RouterID, cur.ListenPort, cfg.ASN, cfg.RouterID, cfg.ListenPort)
	}
	u := update{cfg: cfg, errc: make(chan error, 1)}
	select {
	case s.updates <- u:
	case <-s.ended:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	// The loop answers every update it takes, each call to the router
	// bounded; an answer is what was applied, whatever ctx became since.
	return <-u.errc
}

// ErrStopped is Update's error once Run has returned.
var ErrStopped = errors.New("bgp: the speaker has stopped")

// apply is Update on the speaker's goroutine.
func (s *Speaker) apply(ctx context.Context, cfg Config, add func(Peer) (*peerState, error), remove func(*peerState) error) error {
	want := map[netip.Addr]Peer{}
	for _, p := range cfg.Peers {
		want[p.Address] = p
	}
	s.mu.Lock()
	old := slices.Clone(s.peers)
	s.mu.Unlock()
	have := map[netip.Addr]*peerState{}
	var errs []error
	for _, ps := range old {
		if p, ok := want[ps.cfg.Address]; ok && reflect.DeepEqual(p, ps.cfg) {
			have[ps.cfg.Address] = ps
			continue
		}
		s.log.Info("bgp: removing peer", "peer", ps.cfg.Address)
		if err := remove(ps); err != nil {
			errs = append(errs, fmt.Errorf("bgp: remove peer %v: %w", ps.cfg.Address, err))
		}
	}
	var next []*peerState
	for _, p := range cfg.Peers {
		if ps, ok := have[p.Address]; ok {
			next = append(next, ps)
			continue
		}
		s.log.Info("bgp: adding peer", "peer", p.Address)
		ps, err := add(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		next = append(next, ps)
	}
	s.mu.Lock()
	s.cfg, s.peers = cfg, next
	s.mu.Unlock()
	s.reconcile(ctx)
	return errors.Join(errs...)
}

func bfdConfig(p Peer) bfd.SessionConfig {
	c := bfd.SessionConfig{Local: p.LocalAddress, Peer: p.Address, Multihop: p.BFD.Multihop,
		DesiredMinTx: p.BFD.Interval, RequiredMinRx: p.BFD.Interval, DetectMult: p.BFD.Multiplier,
		Password: p.BFD.Password, KeyID: p.BFD.KeyID}
	if c.Multihop {
		// An eBGP multihop TTL of n reaches a peer at most n-1 routers
		// away, whose packets (sent with 255) arrive with 256-n or more.
		c.MinTTL = 254
		if p.Multihop > 1 {
			c.MinTTL = 256 - p.Multihop
		}
	}
	return c
}

func stateName(st bfd.State) string {
	switch st {
	case bfd.Up:
		return "up"
	case bfd.Down:
		return "down"
	case bfd.Init:
		return "init"
	case bfd.AdminDown:
		return "admindown"
	}
	return st.String()
}

// bfdChanged takes the peer's BGP session down when this side's BFD
// detects the path down (RFC 5882 section 4.1), and lets it come back when
// BFD is Up again.
func (s *Speaker) bfdChanged(ctx context.Context, e bfdEvent) {
	s.mu.Lock()
	ps := e.peer
	ps.bfdState = stateName(e.ev.To)
	wasDown := ps.down != ""
	s.mu.Unlock()
	addr := ps.cfg.Address
	switch {
	case e.ev.From == bfd.Up && e.ev.To != bfd.Up && e.ev.Diag == bfd.DiagNeighborDown:
		// The peer said Down (or AdminDown): it is alive, and its own
		// BGP acts on its own BFD. FRR's bfdd does this when bgpd
		// replaces a session; taking BGP down here would only flap it.
		// A peer that then goes silent is caught by the hold timer.
		s.log.Info("bgp: peer signalled BFD down; leaving the session to it", "peer", addr)
	case e.ev.From == bfd.Up && e.ev.To != bfd.Up:
		reason := fmt.Sprintf("BFD session to %v went %v (%v)", addr, stateName(e.ev.To), e.ev.Diag)
		s.log.Warn("bgp: taking session down", "peer", addr, "reason", reason)
		if err := s.router.SetPeerEnabled(ctx, addr, false, reason); err != nil {
			s.log.Error("bgp: disable peer", "peer", addr, "err", err)
			return
		}
		s.mu.Lock()
		ps.down = reason
		s.mu.Unlock()
	case e.ev.To == bfd.Up && wasDown:
		s.log.Info("bgp: BFD up again, enabling session", "peer", addr)
		if err := s.router.SetPeerEnabled(ctx, addr, true, "BFD up"); err != nil {
			s.log.Error("bgp: enable peer", "peer", addr, "err", err)
			return
		}
		s.mu.Lock()
		ps.down = ""
		s.mu.Unlock()
	}
}

// reconcile applies the plan for the current verdicts.
func (s *Speaker) reconcile(ctx context.Context) {
	verdicts := s.elig.Verdicts()
	s.mu.Lock()
	ops, st := Plan(s.cfg.Routes, s.cfg.Demote, verdicts, s.announced)
	s.mu.Unlock()
	for _, op := range ops {
		p := op.Route.Prefix()
		if op.Withdraw {
			if err := s.router.Withdraw(ctx, p); err != nil {
				s.log.Error("bgp: withdraw", "prefix", p, "err", err)
				continue
			}
			s.log.Info("bgp: withdrew", "prefix", p, "reason", op.Reason)
			s.mu.Lock()
			delete(s.announced, p)
			s.withdrawals++
			s.mu.Unlock()
			continue
		}
		if err := s.router.Announce(ctx, op.Route, s.nextHop(op.Route.VIP), s.cfg.ASN); err != nil {
			s.log.Error("bgp: announce", "prefix", p, "err", err)
			for i := range st {
				if st[i].Prefix == p {
					st[i].Announced, st[i].Reason = false, fmt.Sprintf("announce failed: %v", err)
				}
			}
			continue
		}
		s.log.Info("bgp: announced", "prefix", p, "reason", op.Reason)
		s.mu.Lock()
		s.announced[p] = op.Route.Attributes
		s.announces++
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.routes = st
	s.mu.Unlock()
}

func (s *Speaker) nextHop(vip netip.Addr) netip.Addr {
	if vip.Unmap().Is4() {
		return s.cfg.NextHopIPv4
	}
	return s.cfg.NextHopIPv6
}

// stop withdraws every route, waits until every established peer that
// had routes from this node has none left and has been sent an UPDATE
// since (the withdrawal is on the wire, not only queued), or stopWait
// passes, drains (Options.Drain), and then closes the sessions and BFD.
func (s *Speaker) stop(ctx context.Context) error {
	// The router may be wedged already, or found so by the stop's own
	// calls (the first waits its bound): said once, either way.
	saidWedged := false
	sayWedged := func() {
		if err := s.Wedged(); err != nil && !saidWedged {
			saidWedged = true
			s.log.Error("bgp: stopping without withdrawing (what is left): GoBGP does not answer; the sessions close when this process ends, and each router keeps or drops the routes as its graceful restart says",
				"err", err)
		}
	}
	sayWedged()
	before := map[netip.Addr]uint64{}
	if peers, err := s.router.Peers(ctx); err == nil {
		for _, p := range peers {
			if p.Established && p.Advertised > 0 {
				before[p.Address] = p.SentUpdates
			}
		}
	}
	s.mu.Lock()
	var ps []netip.Prefix
	for p := range s.announced {
		ps = append(ps, p)
	}
	s.mu.Unlock()
	var errs []error
	for _, p := range ps {
		if err := s.router.Withdraw(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("bgp: withdraw %v: %w", p, err))
			continue
		}
		s.log.Info("bgp: withdrew", "prefix", p, "reason", "stopping")
		s.mu.Lock()
		delete(s.announced, p)
		s.withdrawals++
		s.mu.Unlock()
	}
	sayWedged()
	s.mu.Lock()
	for i := range s.routes {
		s.routes[i].Announced, s.routes[i].Reason = false, "stopping"
	}
	s.mu.Unlock()
	drain := len(before) > 0 && s.drain > 0
	wctx, cancel := context.WithTimeout(ctx, s.stopWait)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for len(before) > 0 {
		peers, err := s.router.Peers(wctx)
		if err != nil {
			break
		}
		var pending []string
		for _, p := range peers {
			sent, ok := before[p.Address]
			if ok && p.Established && (p.Advertised > 0 || p.SentUpdates <= sent) {
				pending = append(pending, p.Address.String())
			}
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-wctx.Done():
			s.log.Warn("bgp: stopping before the withdrawals reached every peer", "peers", pending)
			before = nil
		case <-tick.C:
		}
	}
	if drain {
		s.log.Info("bgp: draining before closing the sessions", "drain", s.drain)
		select {
		case <-ctx.Done():
		case <-time.After(s.drain):
		}
	}
	errs = append(errs, s.stopRouter(ctx))
	return errors.Join(errs...)
}

// leave ends Run for a restart: the routes stay announced and the
// sessions open until the process exits; BFD closes silently (no
// AdminDown, which would take the peer's session down at once).
func (s *Speaker) leave() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range s.peers {
		if p.bfd != nil {
			p.bfd.Close()
		}
	}
	s.log.Info("bgp: restarting: routes left in place for graceful restart", "routes", len(s.announced))
}

func (s *Speaker) stopRouter(ctx context.Context) error {
	err := s.router.Stop(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	// BFD closes silently after BGP: an AdminDown is taken as a failure
	// by BIRD 2.0.12, which then holds the session down for 60 s, and
	// it could beat the Cease to the router. Silence only times out
	// there after the BGP session is gone.
	for _, p := range s.peers {
		if p.bfd != nil {
			p.bfd.Close()
		}
	}
	return err
}

// Wedged returns why the router no longer answers (GoBGP.Wedged), or nil
// while it does or cannot tell. The speaker cannot change what it
// announces then, and only the end of the process closes its sessions:
// a command that serves a liveness probe fails it.
func (s *Speaker) Wedged() error {
	if w, ok := s.router.(interface{ Wedged() error }); ok {
		return w.Wedged()
	}
	return nil
}

// Status returns the peers, their session and BFD state, and each route
// with why it is or is not announced.
func (s *Speaker) Status(ctx context.Context) (Status, error) {
	rp, err := s.router.Peers(ctx)
	byAddr := map[netip.Addr]RouterPeer{}
	for _, p := range rp {
		byAddr[p.Address] = p
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var st Status
	for _, p := range s.peers {
		r := byAddr[p.cfg.Address]
		sess := r.State
		if sess == "" {
			sess = "unknown"
		}
		ps := PeerStatus{Address: p.cfg.Address, ASN: p.cfg.ASN, IBGP: s.cfg.IBGP(p.cfg),
			Session: sess, BFD: p.bfdState, HeldDown: p.down, Advertised: r.Advertised, SentUpdates: r.SentUpdates}
		if p.bfd != nil {
			if rej, last := p.bfd.Rejected(); last != nil {
				n := 0
				for _, c := range rej {
					n += c
				}
				ps.BFDRejected = fmt.Sprintf("%d discarded, last: %v", n, last)
			}
		}
		st.Peers = append(st.Peers, ps)
	}
	st.Routes = append(st.Routes, s.routes...)
	st.Announces, st.Withdrawals = s.announces, s.withdrawals
	if w := s.Wedged(); w != nil {
		st.Wedged = w.Error()
	}
	return st, err
}
