package agent

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/bgp"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/node"
)

// BGPPlan is this node's BGP speaker: its peers, the routes of the BGP
// groups it is in, and whether it may announce each now. A plan without
// peers runs no speaker.
type BGPPlan struct {
	Config   bgp.Config
	Verdicts []bgp.Verdict
	// Services names the Service ("namespace/name") of each route.
	Services map[netip.Addr]string
}

// BGPView reads this node's BGP plan from the API (through r, the
// agent's cache): the BGPPeers of namespace that select the node (their
// passwords read by name through pw), and the addresses of the Services
// of every BGP group (spec.bgp) whose status lists the node. A node is
// eligible for an address of a Service with externalTrafficPolicy Local
// while it has a ready endpoint of it, for every other while the node is
// Ready (a Node without a Ready condition counts as Ready). Problems leave
// a peer or a route out with a warning naming it.
func BGPView(ctx context.Context, r client.Reader, nodeName, namespace string, pw Passwords) (BGPPlan, []string, error) {
	if pw.Reader == nil {
		pw.Reader = r
	}
	if namespace == "" {
		namespace = k8s.DefaultNamespace
	}
	var warns []string
	warn := func(format string, a ...any) { warns = append(warns, fmt.Sprintf(format, a...)) }
	plan := BGPPlan{Services: map[netip.Addr]string{}}
	var groups v1alpha1.VIPGroupList
	if err := r.List(ctx, &groups); err != nil {
		return plan, nil, fmt.Errorf("list VIPGroups: %w", err)
	}
	mine := map[k8s.GroupRef]*v1alpha1.GroupBGP{}
	for _, g := range groups.Items {
		if g.Spec.BGP == nil || !slices.ContainsFunc(g.Status.Instances, func(in v1alpha1.GroupInstance) bool { return in.Node == nodeName }) {
			continue
		}
		if err := g.Spec.Validate(); err != nil {
			warn("group %s/%s is not announced: %v", g.Namespace, g.Name, err)
			continue
		}
		mine[k8s.GroupRef{Namespace: g.Namespace, Name: g.Name}] = g.Spec.BGP
	}
	if len(mine) == 0 {
		return plan, warns, nil
	}
	var nd corev1.Node
	if err := r.Get(ctx, client.ObjectKey{Name: nodeName}, &nd); err != nil {
		return plan, nil, fmt.Errorf("get Node %s: %w", nodeName, err)
	}
	var v4, v6 netip.Addr
	for _, a := range nd.Status.Addresses {
		ip, err := netip.ParseAddr(a.Address)
		if a.Type != corev1.NodeInternalIP || err != nil {
			continue
		}
		if ip = ip.Unmap(); ip.Is4() && !v4.IsValid() {
			v4 = ip
		} else if ip.Is6() && !v6.IsValid() {
			v6 = ip
		}
	}
	if !v4.IsValid() {
		warn("node %s announces nothing by BGP: it has no IPv4 InternalIP for its router ID", nodeName)
		return plan, warns, nil
	}
	cfg := bgp.Config{RouterID: v4, NextHopIPv4: v4, NextHopIPv6: v6}
	peers, pwarns, err := nodePeers(ctx, r, pw, &nd, namespace, v4, v6)
	if err != nil {
		return plan, nil, err
	}
	warns = append(warns, pwarns...)
	if len(peers) == 0 {
		warn("node %s announces nothing by BGP: no BGPPeer in namespace %s selects it", nodeName, namespace)
		return plan, warns, nil
	}
	cfg.ASN = peers[0].myASN
	var carry4, carry6 bool
	for _, p := range peers {
		if p.myASN != cfg.ASN {
			warn("BGPPeer %s/%s is not used on node %s: myASN %d differs from %d of BGPPeer %s/%s; every peer of a node must name the same", namespace, p.name, nodeName, p.myASN, cfg.ASN, namespace, peers[0].name)
			continue
		}
		c4, c6 := p.peer.Families()
		carry4, carry6 = carry4 || c4, carry6 || c6
		cfg.Peers = append(cfg.Peers, p.peer)
	}
	routes, verdicts, services, rwarns, err := bgpRoutes(ctx, r, &nd, mine)
	if err != nil {
		return plan, nil, err
	}
	warns = append(warns, rwarns...)
	for _, rt := range routes {
		if rt.VIP.Is4() && !carry4 || rt.VIP.Is6() && !carry6 {
			warn("address %v of Service %s is not announced: no BGPPeer of node %s carries its family", rt.VIP, services[rt.VIP], nodeName)
			continue
		}
		cfg.Routes = append(cfg.Routes, rt)
		plan.Services[rt.VIP] = services[rt.VIP]
	}
	if err := cfg.Validate(); err != nil {
		warn("node %s announces nothing by BGP: %v", nodeName, err)
		return BGPPlan{Services: map[netip.Addr]string{}}, warns, nil
	}
	for _, v := range verdicts {
		if _, ok := plan.Services[v.VIP]; ok {
			plan.Verdicts = append(plan.Verdicts, v)
		}
	}
	plan.Config = cfg
	return plan, warns, nil
}

type nodePeer struct {
	name  string
	myASN uint32
	peer  bgp.Peer
}

// nodePeers returns the valid BGPPeers of namespace that select nd,
// sorted by name.
func nodePeers(ctx context.Context, r client.Reader, pw Passwords, nd *corev1.Node, namespace string, v4, v6 netip.Addr) ([]nodePeer, []string, error) {
	var list v1alpha1.BGPPeerList
	if err := r.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, nil, fmt.Errorf("list BGPPeers: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	var out []nodePeer
	var warns []string
	byAddr := map[string]string{}
	for _, bp := range list.Items {
		if !labels.SelectorFromSet(bp.Spec.NodeSelector).Matches(labels.Set(nd.Labels)) {
			continue
		}
		key := namespace + "/" + bp.Name
		if other, ok := byAddr[bp.Spec.PeerAddress]; ok {
			warns = append(warns, fmt.Sprintf("BGPPeer %s is not used on node %s: BGPPeer %s names the same peerAddress %s; a node has one session per router", key, nd.Name, other, bp.Spec.PeerAddress))
			continue
		}
		if err := bp.Spec.Validate(); err != nil {
			warns = append(warns, fmt.Sprintf("BGPPeer %s is not used: %v", key, err))
			continue
		}
		local := v4
		if a, err := netip.ParseAddr(bp.Spec.PeerAddress); err == nil && a.Unmap().Is6() {
			local = v6
		}
		if !local.IsValid() {
			warns = append(warns, fmt.Sprintf("BGPPeer %s is not used on node %s: the node has no InternalIP of the family of %s", key, nd.Name, bp.Spec.PeerAddress))
			continue
		}
		var pass string
		if ref := bp.Spec.PasswordSecretRef; ref != nil {
			var sec corev1.Secret
			err := pw.Reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ref.Name}, &sec)
			switch {
			case apierrors.IsNotFound(err):
				warns = append(warns, fmt.Sprintf("BGPPeer %s is not used: spec.passwordSecretRef: Secret %s/%s does not exist", key, namespace, ref.Name))
				continue
			case err != nil:
				warns = append(warns, fmt.Sprintf("BGPPeer %s is not used: spec.passwordSecretRef: %v", key, err))
				continue
			case len(sec.Data[ref.Key]) == 0:
				warns = append(warns, fmt.Sprintf("BGPPeer %s is not used: spec.passwordSecretRef: Secret %s/%s has no key %q, or it is empty", key, namespace, ref.Name, ref.Key))
				continue
			}
			pass = string(sec.Data[ref.Key])
		}
		p, err := bp.Spec.Peer(local, pass)
		if err != nil {
			warns = append(warns, fmt.Sprintf("BGPPeer %s is not used: %v", key, err))
			continue
		}
		byAddr[bp.Spec.PeerAddress] = key
		out = append(out, nodePeer{name: bp.Name, myASN: bp.Spec.MyASN, peer: p})
	}
	return out, warns, nil
}

// bgpRoutes returns the routes of the Services of the groups in mine
// with the node's verdict on each.
func bgpRoutes(ctx context.Context, r client.Reader, nd *corev1.Node, mine map[k8s.GroupRef]*v1alpha1.GroupBGP) ([]bgp.Route, []bgp.Verdict, map[netip.Addr]string, []string, error) {
	var svcs corev1.ServiceList
	if err := r.List(ctx, &svcs, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, nil, nil, fmt.Errorf("list Services: %w", err)
	}
	type entry struct {
		svc   *corev1.Service
		attrs *v1alpha1.GroupBGP
	}
	var entries []entry
	needReady := map[string]bool{}
	for i := range svcs.Items {
		s := &svcs.Items[i]
		g, err := k8s.ServiceGroup(s.Namespace, s.Annotations, s.Status.Conditions, v1alpha1.ServiceConditionGroup)
		if err != nil || g.IsZero() {
			continue
		}
		attrs, ok := mine[g]
		if !ok {
			continue
		}
		entries = append(entries, entry{s, attrs})
		if s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			needReady[s.Namespace+"/"+s.Name] = true
		}
	}
	ready := map[string][]string{}
	if len(needReady) > 0 {
		var sl discoveryv1.EndpointSliceList
		if err := r.List(ctx, &sl, client.UnsafeDisableDeepCopy); err != nil {
			return nil, nil, nil, nil, fmt.Errorf("list EndpointSlices: %w", err)
		}
		for _, s := range sl.Items {
			if key := k8s.EndpointSliceService(&s); needReady[key] {
				ready[key] = append(ready[key], k8s.ReadyNodes(&s)...)
			}
		}
	}
	nodeReady, notReady := true, ""
	for _, c := range nd.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			nodeReady, notReady = false, fmt.Sprintf("node %s is not Ready (%s: %s)", nd.Name, c.Reason, c.Message)
		}
	}
	var routes []bgp.Route
	var verdicts []bgp.Verdict
	var warns []string
	services := map[netip.Addr]string{}
	for _, e := range entries {
		for _, v := range vipsOf(e.svc, ready) {
			if other, ok := services[v.Addr]; ok {
				warns = append(warns, fmt.Sprintf("address %v of Service %s is announced for Service %s", v.Addr, v.Service, other))
				continue
			}
			services[v.Addr] = v.Service
			routes = append(routes, e.attrs.Route(v.Addr))
			vd := bgp.Verdict{VIP: v.Addr, Eligible: nodeReady, Reason: "node Ready, externalTrafficPolicy Cluster"}
			switch {
			case v.Local && slices.Contains(v.Ready, nd.Name):
				vd.Eligible, vd.Reason = true, "a ready endpoint on this node (externalTrafficPolicy Local)"
			case v.Local:
				vd.Eligible, vd.Reason = false, "no ready endpoint on this node (externalTrafficPolicy Local)"
			case !nodeReady:
				vd.Reason = notReady
			}
			verdicts = append(verdicts, vd)
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].VIP.Less(routes[j].VIP) })
	sort.Slice(verdicts, func(i, j int) bool { return verdicts[i].VIP.Less(verdicts[j].VIP) })
	return routes, verdicts, services, warns, nil
}

// verdictSource is the speaker's Eligibility: the verdicts of the
// current BGP plan.
type verdictSource struct {
	changed chan struct{}
	mu      sync.Mutex
	v       []bgp.Verdict
}

func newVerdictSource() *verdictSource { return &verdictSource{changed: make(chan struct{}, 1)} }

func (s *verdictSource) Verdicts() []bgp.Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.v)
}

func (s *verdictSource) Changed() <-chan struct{} { return s.changed }

func (s *verdictSource) set(v []bgp.Verdict) {
	s.mu.Lock()
	same := reflect.DeepEqual(s.v, v)
	s.v = v
	s.mu.Unlock()
	if !same {
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

// bgpRunner runs the speaker while the plan has peers.
type bgpRunner struct {
	a    *Agent
	elig *verdictSource
	kick chan struct{}
	// handedOver receives, once the agent stops, whether it handed the
	// node over to a successor (true) or lets go of it (false).
	handedOver chan bool
	// newSpeaker makes each speaker (bgp.New; a test's router in tests).
	newSpeaker func(bgp.Options) (*bgp.Speaker, error)
	mu         sync.Mutex
	sp         *bgp.Speaker
	cfg        bgp.Config // the speaker's configuration
	// stopErr is why the last speaker stopped on its own, nil while one
	// runs or none is wanted; retry says when the next starts, "" when
	// none will (its GoBGP is wedged: see run).
	stopErr error
	retry   string
}

// restartGiveUp is how many stops in a row of speakers with one
// configuration the runner answers with a new start after a delay;
// after that only a new configuration starts one. Each start of GoBGP
// leaves its server's goroutine and tables behind (its Serve never
// returns), about 15 kB: a refusal that repeats must not cost that every
// half minute for as long as the agent runs.
const restartGiveUp = 6

func newBGPRunner(a *Agent) *bgpRunner {
	return &bgpRunner{a: a, elig: newVerdictSource(), kick: make(chan struct{}, 1), handedOver: make(chan bool, 1), newSpeaker: bgp.New}
}

// stopped tells run how the agent stopped: handed over to a successor or
// not.
func (b *bgpRunner) stopped(handedOver bool) {
	select {
	case b.handedOver <- handedOver:
	default:
	}
}

// decisionWait bounds how long run waits, once its context ends, for the
// agent to say whether it handed over: the agent's own wait for a
// successor and its acknowledgement, and a margin.
const decisionWait = handoffReadyWait + handoffAckWait + time.Second

// exitCause is how run stops a running speaker once ctx has ended: with
// bgp.ErrRestarting, leaving the routes to the routers' graceful restart
// until the successor's speaker announces them, when the agent handed
// the node over and every peer keeps routes across a restart; otherwise
// nil, a graceful stop that withdraws them first.
func (b *bgpRunner) exitCause() error {
	var over bool
	select {
	case over = <-b.handedOver:
	case <-time.After(decisionWait):
	}
	if !over {
		return nil
	}
	b.mu.Lock()
	cfg := b.cfg
	b.mu.Unlock()
	for _, p := range cfg.Peers {
		if p.GracefulRestart <= 0 {
			b.a.log.Info("handed over, but withdrawing the BGP routes: a peer without graceful restart drops them when the session closes",
				"peer", p.Address.String())
			return nil
		}
	}
	b.a.log.Info("handed over: leaving the BGP routes to the routers' graceful restart until the new agent announces them",
		"peers", len(cfg.Peers))
	return bgp.ErrRestarting
}

// run starts, updates and stops the speaker as the plan changes, until
// ctx ends; then it stops the speaker as exitCause says. A speaker that
// stops on its own (its start or a peer's addition failed) is started
// again after bgp.RestartDelay, up to restartGiveUp times in a row with
// one configuration, then on the next change of it. One whose GoBGP is
// wedged is not: that server may still hold its sessions, and a second
// beside it would open others to the same routers; Live fails until the
// agent restarts.
func (b *bgpRunner) run(ctx context.Context) {
	var (
		cancel    context.CancelCauseFunc
		done      chan struct{}
		runErr    error     // the speaker's Run's, once done is closed
		startedAt time.Time // of the running speaker
		st        restarts
	)
	stop := func(cause error) {
		if cancel != nil {
			cancel(cause)
			<-done
			cancel, done = nil, nil
			b.mu.Lock()
			b.sp = nil
			b.mu.Unlock()
		}
	}
	defer func() {
		if cancel != nil {
			stop(b.exitCause())
		}
	}()
	for {
		plan := b.a.bgpPlan()
		want := len(plan.Config.Peers) > 0
		b.elig.set(plan.Verdicts)
		if done != nil {
			select {
			case <-done:
				cancel(nil)
				cancel, done = nil, nil
				b.stoppedOnItsOwn(runErr, startedAt, &st)
			default:
			}
		}
		switch {
		case want && cancel == nil && st.mayStart(plan.Config, time.Now()):
			sp, err := b.newSpeaker(bgp.Options{Config: plan.Config, Eligibility: b.elig, Logger: b.a.log.With("bgp", true)})
			if err != nil {
				b.a.log.Error("BGP speaker not started", "err", err)
				st.notBefore = time.Now().Add(newSpeakerRetry)
				b.mu.Lock()
				b.stopErr, b.retry = err, "at "+st.notBefore.UTC().Format(time.RFC3339)
				b.mu.Unlock()
				break
			}
			var sctx context.Context
			sctx, cancel = context.WithCancelCause(context.WithoutCancel(ctx))
			done, runErr, startedAt = make(chan struct{}), nil, time.Now()
			st.cfg = plan.Config
			b.mu.Lock()
			b.sp, b.cfg, b.stopErr, b.retry = sp, plan.Config, nil, ""
			b.mu.Unlock()
			go func(done chan struct{}, errp *error) {
				defer close(done)
				*errp = sp.Run(sctx)
			}(done, &runErr)
			b.a.log.Info("BGP speaker started", "asn", plan.Config.ASN, "peers", len(plan.Config.Peers), "routes", len(plan.Config.Routes))
		case want && cancel != nil:
			b.mu.Lock()
			sp, same := b.sp, reflect.DeepEqual(b.cfg, plan.Config)
			b.mu.Unlock()
			if !same {
				if err := sp.Update(ctx, plan.Config); err != nil {
					b.a.log.Error("BGP speaker update failed; it keeps the previous configuration", "err", err)
				} else {
					b.mu.Lock()
					b.cfg = plan.Config
					b.mu.Unlock()
				}
			}
		case !want && cancel != nil:
			b.a.log.Info("no BGPPeer selects this node any more, or it is in no BGP group: stopping the BGP speaker")
			stop(nil)
		case !want && !st.held:
			// Nothing to start: the next want starts at once.
			st = restarts{}
			b.mu.Lock()
			b.stopErr, b.retry = nil, ""
			b.mu.Unlock()
		}
		var retry <-chan time.Time
		if want && cancel == nil && !st.held && !st.gaveUp {
			retry = time.After(max(time.Until(st.notBefore), time.Millisecond))
		}
		select {
		case <-ctx.Done():
		case <-b.kick:
		case <-done:
		case <-retry:
		}
		if ctx.Err() != nil {
			// Whatever else was ready: a plan applied now would be
			// applied with an ended context.
			return
		}
	}
}

// newSpeakerRetry is the wait after bgp.New refused a plan's
// configuration (it validates it: not expected once BGPView has).
const newSpeakerRetry = 5 * time.Second

// restarts is the runner's account of the speakers that stopped on their
// own.
type restarts struct {
	failures  int        // stops in a row of speakers with cfg
	cfg       bgp.Config // the last speaker's configuration
	notBefore time.Time  // no start before, after such a stop
	gaveUp    bool       // restartGiveUp reached: a new cfg starts one
	held      bool       // the last stopped wedged: none starts
}

// mayStart says whether a speaker with cfg may start at now: not while
// held, and after giving up only with another configuration (which
// begins a new series).
func (r *restarts) mayStart(cfg bgp.Config, now time.Time) bool {
	switch {
	case r.held:
		return false
	case r.gaveUp && reflect.DeepEqual(cfg, r.cfg):
		return false
	case r.gaveUp:
		*r = restarts{}
		return true
	}
	return !now.Before(r.notBefore)
}

// stoppedOnItsOwn records why the speaker's Run returned while the agent
// runs on (err), and what comes next: a start after bgp.RestartDelay of
// the stops in a row (a speaker that ran bgp.RestartReset first begins a
// new series), none until the configuration changes once there were
// restartGiveUp, none at all when its GoBGP is wedged (kept in b.sp for
// Live to see).
func (b *bgpRunner) stoppedOnItsOwn(err error, startedAt time.Time, r *restarts) {
	if err == nil {
		err = errors.New("the speaker returned without an error")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stopErr = err
	if w := b.sp.Wedged(); w != nil {
		r.held, b.retry = true, ""
		b.a.log.Error("the BGP speaker stopped with its GoBGP wedged; no other is started beside it, which would open second sessions to its routers: the liveness probe fails until the agent restarts",
			"err", err, "wedged", w)
		return
	}
	b.sp = nil
	if time.Since(startedAt) >= bgp.RestartReset {
		r.failures = 0
	}
	r.failures++
	if r.failures >= restartGiveUp {
		r.gaveUp = true
		b.retry = "when the node's BGPPeers or BGP groups change"
		b.a.log.Error("the BGP speaker stopped again; not starting it with this configuration any more: the node announces nothing until its BGPPeers or BGP groups change",
			"err", err, "stops_in_a_row", r.failures)
		return
	}
	delay := bgp.RestartDelay(r.failures - 1)
	r.notBefore = time.Now().Add(delay)
	b.retry = "at " + r.notBefore.UTC().Format(time.RFC3339)
	b.a.log.Error("the BGP speaker stopped; the node announces nothing until it starts again", "err", err, "in", delay, "stops_in_a_row", r.failures)
}

// wedged is the running speaker's Wedged, nil while none runs.
func (b *bgpRunner) wedged() error {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	sp, stopErr, retry := b.sp, b.stopErr, b.retry
	b.mu.Unlock()
	if sp == nil {
		return nil
	}
	if err := sp.Wedged(); err != nil {
		return err
	}
	if stopErr != nil && retry == "" {
		// Stopped wedged; its call has been answered since, but that
		// server is not stopped and nothing replaces it (run).
		return fmt.Errorf("the speaker stopped with its GoBGP wedged (%w); only a restart of the agent replaces it", stopErr)
	}
	return nil
}

// status is the speaker's status, nil while none runs.
func (b *bgpRunner) status() *node.BGPStatus {
	if b == nil {
		return nil
	}
	b.mu.Lock()
	sp, cfg, stopErr, retry := b.sp, b.cfg, b.stopErr, b.retry
	b.mu.Unlock()
	if sp == nil && stopErr == nil {
		return nil
	}
	if sp == nil {
		// Stopped, its GoBGP stopped with it: no session, no route.
		out := &node.BGPStatus{ASN: cfg.ASN, RouterID: cfg.RouterID.String(), Stopped: stopErr.Error(), Retry: retry}
		services := b.a.bgpPlan().Services
		for _, rt := range cfg.Routes {
			out.Routes = append(out.Routes, node.BGPRouteStatus{Prefix: rt.Prefix().String(), Role: "service " + services[rt.VIP],
				Reason: "the speaker stopped (see stopped); it starts again " + retry})
		}
		return out
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	st, err := sp.Status(ctx)
	out := &node.BGPStatus{ASN: cfg.ASN, RouterID: cfg.RouterID.String(), Announces: st.Announces, Withdrawals: st.Withdrawals, Wedged: st.Wedged}
	if err != nil {
		out.Error = err.Error()
	}
	if stopErr != nil { // stopped wedged (run): what it last said
		out.Stopped = stopErr.Error()
	}
	for _, p := range st.Peers {
		out.Peers = append(out.Peers, node.BGPPeerStatus{Address: p.Address.String(), ASN: p.ASN, IBGP: p.IBGP, Session: p.Session,
			BFD: p.BFD, BFDRejected: p.BFDRejected, HeldDown: p.HeldDown, Advertised: p.Advertised, UpdatesSent: p.SentUpdates})
	}
	services := b.a.bgpPlan().Services
	for _, rt := range st.Routes {
		out.Routes = append(out.Routes, node.BGPRouteStatus{Prefix: rt.Prefix.String(), Role: "service " + services[rt.Prefix.Addr()],
			Announced: rt.Announced, Reason: rt.Reason})
	}
	return out
}
