package bgp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	api "github.com/osrg/gobgp/v3/api"
	gobgplog "github.com/osrg/gobgp/v3/pkg/log"
	"github.com/osrg/gobgp/v3/pkg/server"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/vipstack/vipstack/internal/bgpconfig"
)

// GoBGP is a Router backed by an in-process GoBGP server (no gRPC).
//
// A session the peer ends with a NOTIFICATION (FRR's Cease "BFD down"
// when its BFD saw this node's path fail, `clear bgp`, a configuration
// change) is reopened at once: GoBGP would hold the peer idle for a fixed
// 5 s before its first connect attempt, and the peer, alive since it
// spoke, usually waits for this side to connect (the speaker does not
// listen). At most one such quick restart per peer per restartDamping;
// a session that keeps ending waits GoBGP's hold.
type GoBGP struct {
	log *slog.Logger

	once sync.Once
	// srv is GoBGP's server once Start made it: the speaker's status
	// may be asked for from another goroutine before its Run has.
	srv atomic.Pointer[server.BgpServer]

	// ops serialises adding, deleting and restarting peers; mu guards
	// peers alone (GoBGP's logger takes it, holding a session's lock).
	ops   sync.Mutex
	mu    sync.Mutex
	peers map[string]*goPeer // by neighbour address, as GoBGP keys them
	ends  chan sessionEnd    // established sessions the peer ended
	quit  chan struct{}
	wg    sync.WaitGroup
	now   func() time.Time

	// answerWait is the package's answerWait (shorter in tests); calls
	// holds the calls GoBGP's server has not answered yet.
	answerWait time.Duration
	calls      struct {
		sync.Mutex
		next    uint64
		pending map[uint64]pendingCall
	}
}

// pendingCall is a call into GoBGP's server not answered yet.
type pendingCall struct {
	what  string
	since time.Time
}

// errNotStarted is a call before Start: the speaker's status may be asked
// for before its Run has started the router.
var errNotStarted = errors.New("GoBGP is not started yet")

// answerWait is how long a call waits for GoBGP's server to answer it.
// GoBGP's API ignores the context it is given: a call waits until the
// server's one loop takes and runs it, and a loop held up (by a bug, or a
// session's goroutine it waits for) would hold every caller for ever:
// the status, an agent's Lease publication, a graceful stop. A call that
// has no answer within answerWait returns an error, and from then on the
// router counts as wedged (Wedged) and the calls that follow fail at once,
// until GoBGP answers. A healthy server answers in milliseconds.
const answerWait = 10 * time.Second

// goPeer is what GoBGP was given for a peer.
type goPeer struct {
	conf        *api.Peer
	disabled    bool      // SetPeerEnabled(false)
	lastRestart time.Time // the last quick restart
}

// sessionEnd is a peer's address, as GoBGP keys it, and the NOTIFICATION
// with which it ended its session, described.
type sessionEnd struct{ addr, notif string }

// restartDamping is how long after one quick restart of a peer's session
// the next end of it is left to GoBGP's idle hold.
const restartDamping = 30 * time.Second

// NewGoBGP returns a Router backed by GoBGP that logs to log.
func NewGoBGP(log *slog.Logger) *GoBGP {
	g := &GoBGP{log: log, peers: map[string]*goPeer{}, ends: make(chan sessionEnd, 16),
		quit: make(chan struct{}), now: time.Now, answerWait: answerWait}
	g.calls.pending = map[uint64]pendingCall{}
	return g
}

// call runs f, a call into GoBGP's server named what, and waits for it at
// most answerWait or until ctx ends (answerWait says why); a call that
// does not answer stays pending, and Wedged names it, until it does.
func (g *GoBGP) call(ctx context.Context, what string, f func(*server.BgpServer) error) error {
	srv := g.srv.Load()
	if srv == nil {
		// GoBGP's server methods would wait for ever on a nil server
		// (the panic stops in a deferred receive).
		return fmt.Errorf("bgp: %s: %w", what, errNotStarted)
	}
	if err := g.Wedged(); err != nil {
		return fmt.Errorf("bgp: %s not tried: %w", what, err)
	}
	c := &g.calls
	c.Lock()
	id := c.next
	c.next++
	c.pending[id] = pendingCall{what: what, since: time.Now()}
	c.Unlock()
	done := make(chan error, 1)
	go func() {
		err := f(srv)
		c.Lock()
		delete(c.pending, id)
		c.Unlock()
		done <- err
	}()
	t := time.NewTimer(g.answerWait)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("bgp: %s: GoBGP did not answer: %w", what, context.Cause(ctx))
	case <-t.C:
		return fmt.Errorf("bgp: %s: GoBGP did not answer within %v", what, g.answerWait)
	}
}

// Wedged returns an error naming the oldest call GoBGP's server has left
// unanswered for answerWait or longer, or nil if there is none. A wedged
// server keeps its sessions open (their keepalives run apart from the
// loop) while it can change nothing it announces: only the end of the
// process closes them.
func (g *GoBGP) Wedged() error {
	c := &g.calls
	c.Lock()
	defer c.Unlock()
	var old pendingCall
	for _, p := range c.pending {
		if time.Since(p.since) >= g.answerWait && (old.since.IsZero() || p.since.Before(old.since)) {
			old = p
		}
	}
	if old.since.IsZero() {
		return nil
	}
	return fmt.Errorf("GoBGP's server has not answered %s since %s (%v): it is wedged", old.what,
		old.since.UTC().Format(time.RFC3339), time.Since(old.since).Round(time.Second))
}

var (
	familyV4 = &api.Family{Afi: api.Family_AFI_IP, Safi: api.Family_SAFI_UNICAST}
	familyV6 = &api.Family{Afi: api.Family_AFI_IP6, Safi: api.Family_SAFI_UNICAST}
)

func (g *GoBGP) Start(ctx context.Context, asn uint32, routerID netip.Addr, listenPort int) error {
	srv := server.NewBgpServer(server.LoggerOption(&logAdapter{l: g.log, g: g}))
	if !g.srv.CompareAndSwap(nil, srv) {
		return errors.New("bgp: GoBGP started twice")
	}
	go srv.Serve()
	g.wg.Add(1)
	go g.restartEnded()
	port := int32(listenPort)
	if port == 0 {
		port = -1 // GoBGP's "do not listen"
	}
	return g.call(ctx, "StartBgp", func(srv *server.BgpServer) error {
		return srv.StartBgp(ctx, &api.StartBgpRequest{Global: &api.Global{Asn: asn, RouterId: routerID.String(), ListenPort: port}})
	})
}

func (g *GoBGP) AddPeer(ctx context.Context, p Peer, ibgp bool) error {
	v4, v6 := p.Families()
	grOn := p.GracefulRestart > 0
	var afs []*api.AfiSafi
	for _, f := range []struct {
		on  bool
		fam *api.Family
	}{{v4, familyV4}, {v6, familyV6}} {
		if !f.on {
			continue
		}
		af := &api.AfiSafi{Config: &api.AfiSafiConfig{Family: f.fam, Enabled: true}}
		if grOn {
			af.MpGracefulRestart = &api.MpGracefulRestart{Config: &api.MpGracefulRestartConfig{Enabled: true}}
		}
		afs = append(afs, af)
	}
	hold := uint64(p.HoldTime.Seconds())
	if p.HoldTime == 0 {
		hold = 90
	}
	keep := uint64(p.Keepalive.Seconds())
	if p.Keepalive == 0 {
		keep = hold / 3
	}
	retry := uint64(p.ConnectRetry.Seconds())
	if p.ConnectRetry == 0 {
		retry = uint64(DefaultConnectRetry.Seconds())
	}
	ap := &api.Peer{
		Conf: &api.PeerConf{NeighborAddress: p.Address.String(), PeerAsn: p.ASN, AuthPassword: p.Password},
		Timers: &api.Timers{Config: &api.TimersConfig{HoldTime: hold, KeepaliveInterval: keep,
			ConnectRetry: retry}},
		Transport: &api.Transport{RemotePort: uint32(p.Port)},
		AfiSafis:  afs,
	}
	if p.LocalAddress.IsValid() {
		ap.Transport.LocalAddress = p.LocalAddress.String()
	}
	if p.Multihop > 0 {
		ap.EbgpMultihop = &api.EbgpMultihop{Enabled: true, MultihopTtl: uint32(p.Multihop)}
	}
	if grOn {
		// No NotificationEnabled (RFC 8538): a graceful stop's Cease must
		// make the peer drop this node's routes, not keep them as stale.
		ap.GracefulRestart = &api.GracefulRestart{Enabled: true, RestartTime: uint32(p.GracefulRestart.Seconds())}
	}
	g.ops.Lock()
	defer g.ops.Unlock()
	if err := g.call(ctx, "AddPeer "+p.Address.String(), func(srv *server.BgpServer) error {
		return srv.AddPeer(ctx, &api.AddPeerRequest{Peer: ap})
	}); err != nil {
		return err
	}
	g.mu.Lock()
	g.peers[p.Address.String()] = &goPeer{conf: ap}
	g.mu.Unlock()
	return nil
}

func (g *GoBGP) DeletePeer(ctx context.Context, addr netip.Addr) error {
	g.ops.Lock()
	defer g.ops.Unlock()
	g.mu.Lock()
	delete(g.peers, addr.String())
	g.mu.Unlock()
	return g.call(ctx, "DeletePeer "+addr.String(), func(srv *server.BgpServer) error {
		return srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr.String()})
	})
}

func (g *GoBGP) SetPeerEnabled(ctx context.Context, addr netip.Addr, enabled bool, reason string) error {
	g.ops.Lock()
	defer g.ops.Unlock()
	g.mu.Lock()
	if gp := g.peers[addr.String()]; gp != nil {
		gp.disabled = !enabled
	}
	g.mu.Unlock()
	if enabled {
		return g.call(ctx, "EnablePeer "+addr.String(), func(srv *server.BgpServer) error {
			return srv.EnablePeer(ctx, &api.EnablePeerRequest{Address: addr.String()})
		})
	}
	return g.call(ctx, "DisablePeer "+addr.String(), func(srv *server.BgpServer) error {
		return srv.DisablePeer(ctx, &api.DisablePeerRequest{Address: addr.String(), Communication: reason})
	})
}

// sessionEnded hears that addr's established session ended for reason
// (GoBGP's words). Only an end the peer chose, by a NOTIFICATION, queues
// a quick restart; a session that GoBGP or this node ended, or that
// failed (hold timer, read error), keeps GoBGP's timers. GoBGP calls it
// holding the session's lock: nothing here calls into GoBGP.
func (g *GoBGP) sessionEnded(addr, reason string) {
	notif, ok := peerNotification(reason)
	if !ok {
		return
	}
	select {
	case g.ends <- sessionEnd{addr: addr, notif: notif}:
	default: // the worker is 16 behind: this peer keeps GoBGP's hold
	}
}

// notificationReceived is GoBGP's Peer Down reason for a session the
// peer ended: "notification-received code 6(cease) subcode 10(undefined)".
var notificationReceived = regexp.MustCompile(`^notification-received code (\d+)\([^)]*\) subcode (\d+)\(`)

// peerNotification reports whether reason says the peer ended the
// session with a NOTIFICATION, and describes it.
func peerNotification(reason string) (string, bool) {
	m := notificationReceived.FindStringSubmatch(reason)
	if m == nil {
		return "", false
	}
	code, err1 := strconv.ParseUint(m[1], 10, 8)
	sub, err2 := strconv.ParseUint(m[2], 10, 8)
	if err1 != nil || err2 != nil {
		return reason, true
	}
	return describeNotification(uint8(code), uint8(sub)), true
}

// restartEnded deletes and re-adds each peer whose established session
// the peer ended, unless it was deleted or disabled meanwhile or had a
// quick restart less than restartDamping ago: a new GoBGP peer starts
// without the idle hold and tries its first connection in 1 to 2 s.
func (g *GoBGP) restartEnded() {
	defer g.wg.Done()
	for {
		select {
		case <-g.quit:
			return
		case e := <-g.ends:
			g.restart(e.addr, e.notif)
		}
	}
}

// restart is restartEnded's work for one peer.
func (g *GoBGP) restart(addr, notif string) {
	g.ops.Lock()
	defer g.ops.Unlock()
	g.mu.Lock()
	gp := g.peers[addr]
	if gp == nil || gp.disabled {
		g.mu.Unlock()
		return
	}
	now := g.now()
	if !gp.lastRestart.IsZero() && now.Sub(gp.lastRestart) < restartDamping {
		g.mu.Unlock()
		g.log.Info("bgp: the peer ended the session again; GoBGP's 5 s idle hold applies", "peer", addr,
			"notification", notif, "last_quick_restart", gp.lastRestart.Format(time.RFC3339Nano))
		return
	}
	gp.lastRestart = now
	conf := proto.Clone(gp.conf).(*api.Peer)
	g.mu.Unlock()
	g.log.Info("bgp: the peer ended the session; reconnecting without GoBGP's 5 s idle hold", "peer", addr,
		"notification", notif)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.call(ctx, "DeletePeer "+addr, func(srv *server.BgpServer) error {
		return srv.DeletePeer(ctx, &api.DeletePeerRequest{Address: addr})
	}); err != nil {
		g.log.Error("bgp: quick restart: delete peer", "peer", addr, "err", err)
		return
	}
	if err := g.call(ctx, "AddPeer "+addr, func(srv *server.BgpServer) error { return srv.AddPeer(ctx, &api.AddPeerRequest{Peer: conf}) }); err != nil {
		g.log.Error("bgp: quick restart: add peer again", "peer", addr, "err", err)
	}
}

// describeNotification names a NOTIFICATION's code and, for a Cease,
// its subcode (RFC 4486, 8538, 9384).
func describeNotification(code, subcode uint8) string {
	if code != 6 {
		return fmt.Sprintf("code %d, subcode %d", code, subcode)
	}
	names := []string{1: "maximum number of prefixes reached", 2: "administrative shutdown",
		3: "peer de-configured", 4: "administrative reset", 5: "connection rejected",
		6: "other configuration change", 7: "connection collision resolution", 8: "out of resources",
		9: "hard reset", 10: "BFD down"}
	if int(subcode) < len(names) && names[subcode] != "" {
		return fmt.Sprintf("cease (6), %s (%d)", names[subcode], subcode)
	}
	return fmt.Sprintf("cease (6), subcode %d", subcode)
}

// path builds the GoBGP path for a route.
func path(r Route, nextHop netip.Addr, prependASN uint32) (*api.Path, error) {
	p := r.Prefix()
	nlri, err := anypb.New(&api.IPAddressPrefix{PrefixLen: uint32(p.Bits()), Prefix: p.Addr().String()})
	if err != nil {
		return nil, err
	}
	attrs := []proto.Message{&api.OriginAttribute{Origin: 0}} // IGP
	fam := familyV4
	if p.Addr().Is4() {
		nh := "0.0.0.0"
		if nextHop.IsValid() {
			nh = nextHop.String()
		}
		attrs = append(attrs, &api.NextHopAttribute{NextHop: nh})
	} else {
		fam = familyV6
		nh := "::"
		if nextHop.IsValid() {
			nh = nextHop.String()
		}
		attrs = append(attrs, &api.MpReachNLRIAttribute{Family: fam, NextHops: []string{nh}, Nlris: []*anypb.Any{nlri}})
	}
	if len(r.Communities) > 0 {
		var cs []uint32
		for _, s := range r.Communities {
			c, err := bgpconfig.ParseCommunity(s)
			if err != nil {
				return nil, err
			}
			cs = append(cs, c)
		}
		attrs = append(attrs, &api.CommunitiesAttribute{Communities: cs})
	}
	if len(r.LargeCommunities) > 0 {
		var cs []*api.LargeCommunity
		for _, s := range r.LargeCommunities {
			c, err := bgpconfig.ParseLargeCommunity(s)
			if err != nil {
				return nil, err
			}
			cs = append(cs, &api.LargeCommunity{GlobalAdmin: c[0], LocalData1: c[1], LocalData2: c[2]})
		}
		attrs = append(attrs, &api.LargeCommunitiesAttribute{Communities: cs})
	}
	if r.LocalPref != nil {
		attrs = append(attrs, &api.LocalPrefAttribute{LocalPref: *r.LocalPref})
	}
	if r.MED != nil {
		attrs = append(attrs, &api.MultiExitDiscAttribute{Med: *r.MED})
	}
	if r.Prepend > 0 {
		nums := make([]uint32, r.Prepend)
		for i := range nums {
			nums[i] = prependASN
		}
		attrs = append(attrs, &api.AsPathAttribute{Segments: []*api.AsSegment{{Type: api.AsSegment_AS_SEQUENCE, Numbers: nums}}})
	}
	var pattrs []*anypb.Any
	for _, a := range attrs {
		x, err := anypb.New(a)
		if err != nil {
			return nil, err
		}
		pattrs = append(pattrs, x)
	}
	return &api.Path{Family: fam, Nlri: nlri, Pattrs: pattrs}, nil
}

func (g *GoBGP) Announce(ctx context.Context, r Route, nextHop netip.Addr, prependASN uint32) error {
	p, err := path(r, nextHop, prependASN)
	if err != nil {
		return err
	}
	return g.call(ctx, "AddPath "+r.Prefix().String(), func(srv *server.BgpServer) error {
		_, err := srv.AddPath(ctx, &api.AddPathRequest{TableType: api.TableType_GLOBAL, Path: p})
		return err
	})
}

func (g *GoBGP) Withdraw(ctx context.Context, pfx netip.Prefix) error {
	p, err := path(Route{VIP: pfx.Addr()}, netip.Addr{}, 0)
	if err != nil {
		return err
	}
	return g.call(ctx, "DeletePath "+pfx.String(), func(srv *server.BgpServer) error {
		return srv.DeletePath(ctx, &api.DeletePathRequest{TableType: api.TableType_GLOBAL, Family: p.Family, Path: p})
	})
}

func (g *GoBGP) Peers(ctx context.Context) ([]RouterPeer, error) {
	// out is read only once the call has answered: a call given up
	// still runs, and would append to it.
	var out []RouterPeer
	err := g.call(ctx, "ListPeer", func(srv *server.BgpServer) error {
		return srv.ListPeer(context.Background(), &api.ListPeerRequest{EnableAdvertised: true}, g.peerInto(&out))
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// peerInto is ListPeer's callback: each peer appended to out.
func (g *GoBGP) peerInto(out *[]RouterPeer) func(*api.Peer) {
	return func(p *api.Peer) {
		a, err := netip.ParseAddr(p.GetConf().GetNeighborAddress())
		if err != nil {
			return
		}
		rp := RouterPeer{Address: a}
		if st := p.GetState(); st != nil {
			rp.State = strings.ToLower(st.GetSessionState().String())
			rp.AdminDown = st.GetAdminState() != api.PeerState_UP
			rp.Established = st.GetSessionState() == api.PeerState_ESTABLISHED
			rp.SentUpdates = st.GetMessages().GetSent().GetUpdate()
		}
		rp.Advertised = advertised(p)
		*out = append(*out, rp)
	}
}

// advertised is the number of routes in p's Adj-RIB-Out. For a peer with
// graceful restart on both sides (configured here, the capability
// received), GoBGP counts an End-of-RIB marker per family among them
// (server.getBestFromLocal adds one), which is no route: left in, a
// graceful stop would wait its whole StopTimeout for a count that never
// reaches 0, and the status would show one route too many.
func advertised(p *api.Peer) uint64 {
	gr := p.GetGracefulRestart().GetEnabled() && slices.ContainsFunc(p.GetState().GetRemoteCap(), func(c *anypb.Any) bool {
		return c.MessageIs(&api.GracefulRestartCapability{})
	})
	var n uint64
	for _, af := range p.GetAfiSafis() {
		a := af.GetState().GetAdvertised()
		if gr && a > 0 {
			a--
		}
		n += a
	}
	return n
}

func (g *GoBGP) Stop(ctx context.Context) error {
	var err error
	g.once.Do(func() {
		if g.srv.Load() == nil {
			return
		}
		close(g.quit)
		g.wg.Wait()
		// StopBgp sends each session a Cease and waits for its
		// goroutines; the server's Stop would only call it again (and
		// stop a gRPC server this router does not run).
		err = g.call(ctx, "StopBgp", func(srv *server.BgpServer) error { return srv.StopBgp(context.Background(), &api.StopBgpRequest{}) })
	})
	return err
}

// logAdapter sends GoBGP's log to slog, and tells g (when set) of the
// established sessions that end and why, which GoBGP's API does not say.
// GoBGP calls it holding a session's lock.
type logAdapter struct {
	l *slog.Logger
	g *GoBGP
}

func attrs(f gobgplog.Fields) []any {
	var a []any
	for k, v := range f {
		a = append(a, k, v)
	}
	return a
}

func (a *logAdapter) Panic(msg string, f gobgplog.Fields) {
	a.l.Error("gobgp: "+msg, attrs(f)...)
	panic(fmt.Sprintf("gobgp: %s", msg))
}
func (a *logAdapter) Fatal(msg string, f gobgplog.Fields) {
	// GoBGP calls Fatal on errors it cannot recover from; log them as
	// errors rather than exiting the node.
	a.l.Error("gobgp: "+msg, attrs(f)...)
}
func (a *logAdapter) Error(msg string, f gobgplog.Fields) { a.l.Error("gobgp: "+msg, attrs(f)...) }
func (a *logAdapter) Warn(msg string, f gobgplog.Fields)  { a.l.Warn("gobgp: "+msg, attrs(f)...) }

func (a *logAdapter) Info(msg string, f gobgplog.Fields) {
	a.l.Info("gobgp: "+msg, attrs(f)...)
	if a.g == nil || msg != "Peer Down" {
		return
	}
	key, _ := f["Key"].(string)
	reason, _ := f["Reason"].(string)
	a.g.sessionEnded(key, reason)
}
func (a *logAdapter) Debug(msg string, f gobgplog.Fields) { a.l.Debug("gobgp: "+msg, attrs(f)...) }
func (a *logAdapter) SetLevel(gobgplog.LogLevel)          {}
func (a *logAdapter) GetLevel() gobgplog.LogLevel         { return gobgplog.InfoLevel }
