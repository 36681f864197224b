package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"os"
	"reflect"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/engine"
	"github.com/vipstack/vipstack/internal/handoff"
	"github.com/vipstack/vipstack/internal/k8s/rewatch"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
	"github.com/vipstack/vipstack/internal/keepalived"
	"github.com/vipstack/vipstack/internal/netif"
	"github.com/vipstack/vipstack/internal/node"
)

// ManagerOptions configure NewManager.
type ManagerOptions struct {
	Logger *slog.Logger
	// PprofAddr serves net/http/pprof under /debug/pprof/; "": off.
	PprofAddr string
}

// NewManager returns a controller-runtime manager for the agent: no leader
// election (every node runs one), no metrics or health server of its own
// (the agent registers its metrics with Options.Registry, and serves
// Agent.Health itself: its port is shared with a successor on the node).
// Its caches keep of each object only what the agent reads (slim).
func NewManager(cfg *rest.Config, o ManagerOptions) (manager.Manager, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	skip := true
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                 s,
		Logger:                 logr.FromSlogHandler(log.Handler()),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		PprofBindAddress:       o.PprofAddr,
		Controller:             config.Controller{SkipNameValidation: &skip},
		// Informers watch again within a second of an API-server restart
		// instead of after client-go's backoff of up to a minute.
		Cache: cache.Options{NewInformer: rewatch.NewInformer(rewatch.Options{Logger: log}), DefaultTransform: slim},
	})
	if err != nil {
		return nil, fmt.Errorf("agent manager: %w", err)
	}
	return mgr, nil
}

// Options configure the agent.
type Options struct {
	Node   string // this node's name (the Node object's)
	Logger *slog.Logger
	// Registry receives the agent's and the engine's metrics; nil: none.
	Registry prometheus.Registerer
	// Ledger records the VIPs the engine may hold, for crash clean-up.
	Ledger netif.Ledger
	Clock  clock.Clock
	// AnnounceRate caps gratuitous ARP / unsolicited NA per second and
	// instance (0: unlimited); see engine.Options.
	AnnounceRate int
	// Interfaces finds interfaces; default HostInterfaces.
	Interfaces Interfaces
	// Handoff is the abstract socket by which the agent serving a node
	// hands it over to its successor (handoff.AgentSocket); "": no
	// hand-off, every start sweeps and every stop releases.
	Handoff string
	// Version is this agent's version, told to the predecessor.
	Version string
	// PublishNamespace is where the agent keeps its status Lease (see
	// LeasePrefix); "": it publishes none.
	PublishNamespace string
	// Namespace is the release namespace, where the controller keeps the
	// copies of the VRRP passwords; "": k8s.DefaultNamespace.
	Namespace string
}

// Agent serves its node's share of every group with the VRRP engine.
type Agent struct {
	opts   Options
	log    *slog.Logger
	reader client.Reader
	// passwords reads the controller's copies of the VRRP passwords
	// straight from the API, by name (the agent may not list or watch
	// Secrets).
	passwords Passwords
	cache     interface {
		WaitForCacheSync(context.Context) bool
	}
	m *agentMetrics

	mu    sync.Mutex
	plan  Plan
	text  string
	cfg   *keepalived.Config
	warns []string
	// services names the Service ("namespace/name") of each address of
	// the groups this node is in.
	services map[netip.Addr]string
	// version counts plan changes.
	version int
	eng     *engine.Engine
	// stage says what run waits for before the engine runs (for Ready).
	stage string
	// takeover: this agent waits for its predecessor on the node to hand
	// over, with its first plan made (Ready answers ready).
	takeover bool
	// srv is the hand-off socket once this agent serves the node.
	srv *handoff.Server
	// bgpP is the BGP plan (BGPView) and bgp runs its speaker.
	bgpP BGPPlan
	bgp  *bgpRunner
}

// planKey is the single work item: every watched change asks for the
// whole plan again, and the queue folds bursts of changes into one.
var planKey = reconcile.Request{NamespacedName: types.NamespacedName{Name: "plan"}}

// New registers the agent with mgr: a reconciler that recomputes the plan
// when a VIPGroup, Service, EndpointSlice or Node changes, and a runnable
// that runs the engine once the caches are filled. The agent needs no
// leader election; every node runs one.
func New(mgr manager.Manager, o Options) (*Agent, error) {
	if o.Node == "" {
		return nil, errors.New("agent: the node name is required")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Interfaces == nil {
		o.Interfaces = HostInterfaces{}
	}
	a := &Agent{opts: o, log: o.Logger, reader: mgr.GetClient(), passwords: Passwords{Reader: mgr.GetAPIReader(), Namespace: o.Namespace}, cache: mgr.GetCache(), m: newAgentMetrics(o.Registry)}
	a.bgp = newBGPRunner(a)
	if o.Registry != nil {
		if err := o.Registry.Register(announcedCollector{a}); err != nil {
			return nil, fmt.Errorf("agent: metrics: %w", err)
		}
		if err := o.Registry.Register(node.NewBGPCollector(a.bgp.status)); err != nil {
			return nil, fmt.Errorf("agent: metrics: %w", err)
		}
	}
	all := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{planKey}
	})
	err := ctrl.NewControllerManagedBy(mgr).Named("vipstack-agent").
		Watches(&v1alpha1.VIPGroup{}, all).
		Watches(&corev1.Service{}, all, keptChanged).
		Watches(&discoveryv1.EndpointSlice{}, all, keptChanged).
		Watches(&corev1.Node{}, all, keptChanged).
		Watches(&v1alpha1.BGPPeer{}, all).
		Complete(reconcile.Func(a.reconcile))
	if err != nil {
		return nil, fmt.Errorf("agent controller: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(a.run)); err != nil {
		return nil, fmt.Errorf("agent runnable: %w", err)
	}
	if o.PublishNamespace != "" {
		if err := mgr.Add(&publisher{a: a, c: mgr.GetClient(), reader: mgr.GetAPIReader(), namespace: o.PublishNamespace}); err != nil {
			return nil, fmt.Errorf("agent status publisher: %w", err)
		}
	}
	return a, nil
}

// Health serves /healthz (Live) and /readyz (Ready), each also under
// /NAME/engine, as controller-runtime's probe server does.
func (a *Agent) Health() http.Handler {
	mux := http.NewServeMux()
	for path, check := range map[string]healthz.Checker{"/healthz": a.Live, "/readyz": a.Ready} {
		h := http.StripPrefix(path, &healthz.Handler{Checks: map[string]healthz.Checker{"engine": check}})
		mux.Handle(path, h)
		mux.Handle(path+"/", h)
	}
	return mux
}

// reconcile recomputes the plan and reloads the engine when it changed.
func (a *Agent) reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	changed, err := a.refresh(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	a.mu.Lock()
	eng := a.eng
	a.mu.Unlock()
	if changed && eng != nil {
		if err := eng.Reload(); err != nil {
			a.m.reloads.WithLabelValues("error").Inc()
			a.log.Error("engine reload failed; it keeps the previous configuration", "err", err)
			return reconcile.Result{}, err
		}
		a.m.reloads.WithLabelValues("ok").Inc()
	}
	if a.usesPassword(ctx) {
		// Secrets are not watched: a changed password is read again
		// within passwordRecheck (the controller too reads its source
		// again that often).
		return reconcile.Result{RequeueAfter: passwordRecheck}, nil
	}
	return reconcile.Result{}, nil
}

// passwordRecheck is how often an agent whose plan uses a VRRP password
// reads the Secrets again.
const passwordRecheck = time.Minute

// usesPassword reports whether a group names a password Secret (whether
// or not it could be read: one created later is read then too).
func (a *Agent) usesPassword(ctx context.Context) bool {
	var groups v1alpha1.VIPGroupList
	if err := a.reader.List(ctx, &groups); err != nil {
		return true
	}
	for _, g := range groups.Items {
		if g.Spec.AuthPassSecretRef != nil {
			return true
		}
	}
	var peers v1alpha1.BGPPeerList
	if err := a.reader.List(ctx, &peers); err != nil {
		return true
	}
	for _, p := range peers.Items {
		if p.Spec.PasswordSecretRef != nil {
			return true
		}
	}
	return false
}

// refresh computes the plan from the cache; it reports whether the
// configuration changed.
func (a *Agent) refresh(ctx context.Context) (bool, error) {
	views, warns, err := Views(ctx, a.reader, a.opts.Node, a.opts.Interfaces, a.passwords)
	if err != nil {
		return false, err
	}
	plan, pw := PlanNode(a.opts.Node, views)
	warns = append(warns, pw...)
	bplan, bw, err := BGPView(ctx, a.reader, a.opts.Node, a.opts.Namespace, a.passwords)
	if err != nil {
		return false, err
	}
	warns = append(warns, bw...)
	text := plan.Render()
	a.mu.Lock()
	defer a.mu.Unlock()
	if !reflect.DeepEqual(bplan, a.bgpP) {
		a.bgpP = bplan
		if a.bgp != nil { // nil in tests that build an Agent without New
			select {
			case a.bgp.kick <- struct{}{}:
			default:
			}
		}
	}
	// Which Service holds an address can change without the plan: the
	// metrics read it (announcedCollector).
	a.services = servicesOf(views)
	if text == a.text && a.cfg != nil {
		return false, nil
	}
	cfg, err := plan.Config()
	if err != nil {
		return false, err
	}
	for _, w := range warns {
		if !contains(a.warns, w) {
			a.log.Warn(w)
		}
	}
	a.plan, a.text, a.cfg, a.warns = plan, text, cfg, warns
	a.version++
	a.m.instances.Set(float64(len(plan.Instances)))
	a.m.vips.Set(float64(plan.VIPCount()))
	a.m.warnings.Set(float64(len(warns)))
	a.log.Info("plan changed", "instances", len(plan.Instances), "addresses", plan.VIPCount(), "warnings", len(warns))
	return true, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// load hands the engine the current configuration.
func (a *Agent) load() (*keepalived.Config, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cfg == nil {
		return nil, errors.New("agent: no plan yet")
	}
	return a.cfg, nil
}

// First-plan retries: the first after firstPlanRetry, each later one after
// twice the wait before, at most firstPlanRetryMax.
const (
	firstPlanRetry    = 100 * time.Millisecond
	firstPlanRetryMax = 5 * time.Second
)

// firstPlan computes the first plan, trying again (with a growing wait)
// until it succeeds or ctx ends. An API server that just started again
// answers the caches' lists and still fails a discovery call ("failed to
// get server groups") for a moment: the agent exited on that, and its
// supervisor released its addresses and restarted it a second later
// (seen in bench/chaos -k8s: kill -9 of the API server, an agent started
// again meanwhile).
func (a *Agent) firstPlan(ctx context.Context) error {
	a.setStage("computing the first plan")
	wait := firstPlanRetry
	for {
		_, err := a.refresh(ctx)
		if err == nil {
			return nil
		}
		a.log.Warn("first plan failed; trying again", "err", err, "in", wait)
		a.setStage("computing the first plan: " + err.Error())
		t := a.opts.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("agent: first plan: %w", err)
		case <-t.C():
		}
		wait = min(2*wait, firstPlanRetryMax)
	}
}

// run waits for the caches, makes the first plan and runs the engine
// until ctx is done.
func (a *Agent) run(ctx context.Context) error {
	pred, err := a.claim()
	if err != nil {
		return err
	}
	if pred == nil {
		a.setStage("removing the VIPs an earlier run left")
		a.sweep()
	} else {
		defer pred.Close()
	}
	a.setStage("waiting for the API server: VIPGroups, Services, EndpointSlices and Nodes not listed yet")
	if !a.cache.WaitForCacheSync(ctx) {
		return errors.New("agent: caches did not sync")
	}
	if err := a.firstPlan(ctx); err != nil {
		return err
	}
	var adopt []string
	var from string
	if pred != nil {
		h, ok, err := a.takeOver(ctx, pred)
		if err != nil || ctx.Err() != nil {
			return err // stopped before taking over: nothing held
		}
		if ok {
			adopt, from = h.Masters, fmt.Sprintf("agent %d on this node", h.PID)
		}
	}
	// The BGP speaker runs beside the engine, once this agent serves the
	// node (a successor's would open a second session to each router from
	// the same address); on a stop it withdraws its routes before run
	// returns.
	bgpDone := make(chan struct{})
	go func() {
		defer close(bgpDone)
		a.bgp.run(ctx)
	}()
	defer func() { <-bgpDone }()
	// engine.New calls a.load, which takes a.mu: do not hold it here. A
	// plan that changes between New and a.eng being set is caught by the
	// version check and reloaded once the engine runs.
	a.mu.Lock()
	v0 := a.version
	a.mu.Unlock()
	eng, _, err := engine.New(engine.Options{Load: a.load, Clock: a.opts.Clock, Logger: a.log,
		Registry: a.opts.Registry, Ledger: a.opts.Ledger, AnnounceRate: a.opts.AnnounceRate,
		Adopt: adopt, AdoptFrom: from})
	if err != nil {
		return fmt.Errorf("agent: engine: %w", err)
	}
	a.mu.Lock()
	a.eng = eng
	a.stage = ""
	a.takeover = false
	missed := a.version != v0
	a.mu.Unlock()
	if missed {
		go func() {
			if err := eng.Reload(); err != nil {
				a.log.Error("engine reload failed; it keeps the previous configuration", "err", err)
			}
		}()
	}
	a.log.Info("agent serving", "node", a.opts.Node, "adopted", len(adopt))
	// The engine runs on its own context: when ctx ends, stop decides
	// between a hand-off to a successor and a shutdown.
	engCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
			a.stop(eng, cancel)
		case <-ran:
		}
	}()
	err = eng.Run(engCtx)
	close(ran)
	<-stopped
	if err != nil {
		return fmt.Errorf("agent: engine: %w", err)
	}
	return nil
}

// claim takes the hand-off socket, or, when another agent serves the node
// (a rolling update with surge started this one beside it), connects to
// it as its successor and returns the connection.
func (a *Agent) claim() (*handoff.Successor, error) {
	if a.opts.Handoff == "" {
		return nil, nil
	}
	for attempt := 0; ; attempt++ {
		srv, err := handoff.Listen(a.opts.Handoff, a.log)
		if err == nil {
			a.mu.Lock()
			a.srv = srv
			a.mu.Unlock()
			return nil, nil
		}
		if !errors.Is(err, handoff.ErrBusy) {
			return nil, fmt.Errorf("agent: %w", err)
		}
		pred, err := handoff.Dial(a.opts.Handoff, os.Getpid(), a.opts.Version)
		if err == nil {
			a.log.Info("another agent serves this node; this one takes over when that one stops (a rolling update)", "socket", a.opts.Handoff)
			return pred, nil
		}
		if !errors.Is(err, syscall.ECONNREFUSED) || attempt >= 100 {
			// Not a holder that just went away: another user's process,
			// or one that neither listens nor lets go.
			return nil, fmt.Errorf("agent: %w", err)
		}
		time.Sleep(10 * time.Millisecond) // it stopped between the two: take the socket
	}
}

// takeOver tells the predecessor this agent is ready, waits for its
// handover (sent when the kubelet stops it) and takes the socket. ok is
// false when the predecessor stopped without handing over (it released
// what it held, or died): then the engine starts afresh.
func (a *Agent) takeOver(ctx context.Context, pred *handoff.Successor) (h handoff.Handover, ok bool, err error) {
	a.mu.Lock()
	a.stage = "ready to take over: waiting for the agent that serves this node to stop and hand over"
	a.takeover = true
	a.mu.Unlock()
	if err := pred.Ready(); err != nil {
		a.log.Warn("the agent that serves this node went away before this one was ready", "err", err)
	}
	h, err = pred.Wait(ctx)
	switch {
	case err == nil:
		ok = true
	case ctx.Err() != nil:
		return h, false, nil
	default:
		a.log.Info("the agent that served this node stopped without handing over; starting afresh", "why", err)
	}
	a.setStage("taking the hand-off socket from the agent that served this node")
	srv, err := handoff.Acquire(ctx, a.opts.Handoff, a.log)
	if err != nil {
		if ctx.Err() != nil {
			if ok {
				// Its addresses are ours and nobody else will remove them.
				a.sweep()
			}
			return h, false, nil
		}
		return h, false, fmt.Errorf("agent: %w", err)
	}
	a.mu.Lock()
	a.srv = srv
	a.mu.Unlock()
	if ok {
		if err := pred.Ack(); err != nil {
			a.log.Warn("acknowledging the handover failed; taking over anyway", "err", err)
		}
		a.log.Info("taking over from the agent that served this node", "pid", h.PID, "masters", len(h.Masters))
	}
	return h, ok, nil
}

// Bounds of a hand-off at stop, within the supervisor's 10 s and the
// DaemonSet's termination grace period: how long to wait for a successor
// that is still starting, and for the successor to take the socket and
// acknowledge.
const (
	handoffReadyWait = 5 * time.Second
	handoffAckWait   = 3 * time.Second
)

// stop ends the engine: a hand-off when a successor is connected and
// ready (or gets ready soon), else a shutdown that releases everything.
func (a *Agent) stop(eng *engine.Engine, shutdown context.CancelFunc) {
	handedOver := false
	defer func() { a.bgp.stopped(handedOver) }()
	a.mu.Lock()
	srv := a.srv
	a.mu.Unlock()
	if srv == nil || srv.Successor() == handoff.None {
		shutdown()
		return
	}
	wctx, cancel := context.WithTimeout(context.Background(), handoffReadyWait)
	st := srv.WaitReady(wctx)
	cancel()
	if st != handoff.Ready {
		a.log.Warn("the new agent on this node is not ready to take over; releasing the addresses", "successor", st.String())
		shutdown()
		return
	}
	hctx, cancel := context.WithTimeout(context.Background(), handoffAckWait)
	defer cancel()
	frozen, err := srv.HandOver(hctx, func() ([]string, error) { return eng.Handoff(hctx) })
	switch {
	case err == nil:
		handedOver = true
		a.log.Info("handed this node over to the new agent: addresses left in place")
	case frozen:
		// VRRP has stopped and the successor did not take over: let go of
		// everything, as a crash would (peers take over after their
		// master down interval).
		a.log.Error("the hand-off failed after VRRP stopped; removing the addresses", "err", err)
		a.sweep()
	default:
		a.log.Warn("no hand-off; releasing the addresses", "err", err)
		shutdown()
	}
}

func (a *Agent) setStage(s string) {
	a.mu.Lock()
	a.stage = s
	a.mu.Unlock()
}

// pingTimeout bounds how long Live and Ready wait for the engine's loop
// (the kubelet's probe timeout may cut it shorter). The loop handles queued
// events in batches; even under a flood of packets it answers within
// milliseconds, so seconds of silence mean it is wedged.
const pingTimeout = 3 * time.Second

// ping asks the engine's loop to answer, within pingTimeout and the
// request's own deadline.
func ping(req *http.Request, eng *engine.Engine) error {
	ctx, cancel := context.WithTimeout(req.Context(), pingTimeout)
	defer cancel()
	return eng.Ping(ctx)
}

// Live is the liveness check (/healthz): the engine's loop answers, and
// the BGP speaker's GoBGP server, when one runs, is not wedged. Before
// the engine runs the agent counts as live: it waits for the API server,
// and a restart would not bring the API server back (while VIPs an earlier
// run left are removed at once, see sweep). A loop that does not answer is
// wedged, and only a restart helps: the supervisor, or the kubelet without
// one, starts the agent again, and a peer holds its VIPs meanwhile. A
// wedged GoBGP keeps its sessions open and its routes announced whatever
// the Services become; the restart closes them.
func (a *Agent) Live(req *http.Request) error {
	if err := a.bgp.wedged(); err != nil {
		return fmt.Errorf("agent: the BGP speaker: %w", err)
	}
	a.mu.Lock()
	eng := a.eng
	a.mu.Unlock()
	if eng == nil {
		return nil
	}
	if err := ping(req, eng); err != nil {
		return fmt.Errorf("agent: the VRRP engine's loop does not answer (wedged or stopped): %w", err)
	}
	return nil
}

// Ready is the readiness check (/readyz): the caches have synced, the
// first plan is made and the engine's loop runs with it (its instances
// started, the VIPs left over removed). A DaemonSet rolling update waits
// for it before it moves to the next node.
func (a *Agent) Ready(req *http.Request) error {
	a.mu.Lock()
	eng, stage, takeover, srv := a.eng, a.stage, a.takeover, a.srv
	a.mu.Unlock()
	if eng == nil && takeover {
		// A successor with its first plan: it takes over the moment the
		// kubelet stops its predecessor, which the rolling update does
		// once this pod is ready.
		return nil
	}
	if eng == nil {
		if stage == "" {
			stage = "not started"
		}
		return fmt.Errorf("agent: the VRRP engine does not run yet: %s", stage)
	}
	if srv != nil && srv.Successor() == handoff.Starting {
		// The kubelet's probes of the new pod on this node reach this
		// agent too (one port on the node's network): the new pod must not
		// count as ready, and its predecessor deleted, before it can take
		// over.
		return errors.New("agent: a new agent is starting on this node; it is ready once it has its first plan")
	}
	if err := ping(req, eng); err != nil {
		return fmt.Errorf("agent: the VRRP engine does not answer: %w", err)
	}
	return nil
}

// sweep removes the addresses a killed predecessor left (its ledger) at
// once, before the caches: the API server may be out of reach for long,
// and meanwhile another node holds those addresses, so waiting for it
// would leave them on two nodes. The engine sweeps the ledger again when
// it starts, which then finds nothing.
func (a *Agent) sweep() {
	if a.opts.Ledger.Path == "" {
		return
	}
	h, err := netif.Open()
	if err != nil {
		a.log.Warn("cannot open netlink to remove VIPs left by an earlier run", "err", err)
		return
	}
	defer h.Close()
	removed, err := h.Sweep(a.opts.Ledger)
	for _, v := range removed {
		a.log.Info("removed VIP left by an earlier run", "vip", v.Prefix, "dev", v.Dev)
	}
	if err != nil {
		a.log.Warn("removing VIPs left by an earlier run failed", "ledger", a.opts.Ledger.Path, "err", err)
	}
}

// Status is what the agent reports.
type Status struct {
	Node      string                  `json:"node"`
	Plan      []Instance              `json:"plan"`
	Warnings  []string                `json:"warnings,omitempty"`
	Instances []engine.InstanceStatus `json:"instances"`
	Config    string                  `json:"config,omitempty"`
	// BGP is the speaker, while a BGP group's addresses are announced.
	BGP *node.BGPStatus `json:"bgp,omitempty"`
}

// Unhealthy is why the agent is not live as its status tells it: its BGP
// speaker's GoBGP is wedged (the /healthz probe fails then too, see
// Live). The status endpoint answers 503 then, and `vipstack status`
// exits 1.
func (s Status) Unhealthy() string { return s.BGP.Unhealthy() }

// Status returns the plan, its warnings and the engine's view.
func (a *Agent) Status() Status {
	a.mu.Lock()
	s := Status{Node: a.opts.Node, Plan: a.plan.Instances, Warnings: a.warns, Config: a.text}
	eng := a.eng
	a.mu.Unlock()
	if eng != nil {
		s.Instances = eng.Status()
	}
	s.BGP = a.bgp.status()
	return s
}

// bgpPlan is the current BGP plan.
func (a *Agent) bgpPlan() BGPPlan {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bgpP
}

type agentMetrics struct {
	instances, vips, warnings prometheus.Gauge
	reloads                   *prometheus.CounterVec
}

func newAgentMetrics(reg prometheus.Registerer) *agentMetrics {
	m := &agentMetrics{
		instances: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipstack_agent_instances",
			Help: "VRRP instances this node runs."}),
		vips: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipstack_agent_addresses",
			Help: "Virtual addresses in this node's instances."}),
		warnings: prometheus.NewGauge(prometheus.GaugeOpts{Name: "vipstack_agent_plan_warnings",
			Help: "Problems that leave an address or group unserved on this node (see the log)."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_agent_reloads_total",
			Help: "Engine reloads after a plan change, by result."}, []string{"result"}),
	}
	if reg != nil {
		reg.MustRegister(m.instances, m.vips, m.warnings, m.reloads)
	}
	return m
}
