package controller

import (
	"context"
	"errors"
	"fmt"
	"golang.org/x/time/rate"
	"log/slog"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/compat"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// DefaultAnnouncedWrites is Options.AnnouncedWrites' default: status
// writes per second for the AnnouncedBy condition alone.
const DefaultAnnouncedWrites = 20

// Options configure the controller.
type Options struct {
	Logger *slog.Logger
	Clock  clock.Clock // for condition timestamps; default the wall clock
	// ExcludedVRIDs are never given to any group (routers outside the
	// cluster on the same networks).
	ExcludedVRIDs []int
	// Workers is how many Services are reconciled at once (default 4).
	Workers int
	// AnnouncedWrites bounds the status writes per second whose only
	// change is the AnnouncedBy condition (default DefaultAnnouncedWrites;
	// bursts of twice as many), so that the informational condition never
	// doubles the API load while addresses are being given out: a burst
	// of new Services is announced by the agents as fast as before, and
	// the conditions follow at this rate.
	AnnouncedWrites float64
	// Registry receives the controller's metrics; nil: none.
	Registry prometheus.Registerer
	// MetalLBNamespace is where MetalLB's IPAddressPools and
	// L2Advertisements are read (default DefaultMetalLBNamespace).
	MetalLBNamespace string
	// NoForeign turns off reading MetalLB's and kube-vip's configuration.
	NoForeign bool
	// ForeignCRDRecheck is how often the controller asks the API server
	// whether MetalLB's CRDs are served, while they are not (default
	// ForeignCRDRecheck): installed after the controller started, they
	// are read from then on without a restart.
	ForeignCRDRecheck time.Duration
	// NoKeepalivedOperator turns off reading the keepalived-operator's
	// KeepalivedGroups and OpenShift's Network (externalIP CIDRs).
	NoKeepalivedOperator bool
	// Namespace is the release namespace (default k8s.DefaultNamespace),
	// where the controller keeps the copies of the VRRP passwords that the
	// agents read; ManagerOptions.Namespace must name the same one.
	Namespace string
	// PasswordRecheck is how often the source of a VRRP password is read
	// again (default PasswordRecheck).
	PasswordRecheck time.Duration
	// LoadBalancerClass is the spec.loadBalancerClass the controller
	// answers to (default k8s.LoadBalancerClass); Services with another
	// class are left alone.
	LoadBalancerClass string
	// DefaultGroup, when set, makes vipstack the cluster's default
	// load-balancer implementation: a LoadBalancer Service that names no
	// group (with no class, or with LoadBalancerClass) is served by this
	// group from the auto-assigning pools, unless it is served from
	// MetalLB's or kube-vip's pools. Unset: such a Service without a class
	// is left to whatever else serves load balancers.
	DefaultGroup k8s.GroupRef
}

// groupIndex indexes Services by the group they name.
const groupIndex = "vipstack.io/group"

// Controller holds the allocator and the VRID table, both rebuilt from
// the API by the first reconcile after a start.
type Controller struct {
	// lastAnnounced is the addresses each node's agent announced at the
	// last look at its status Lease (under mu).
	lastAnnounced map[string][]netip.Addr
	// leaseTimers fire when an announcing agent's Lease expires unless it
	// is renewed before (under mu): a killed or cut-off agent writes no
	// more, so no watch event would say it went silent.
	leaseTimers map[string]clock.Timer
	// leaseMu guards parsed: each agent Lease's last version as read.
	leaseMu sync.Mutex
	parsed  map[string]parsedLease
	// leaseExpired carries the Leases whose timer fired.
	leaseExpired chan event.GenericEvent
	// lastBy is the nodes (comma-separated) that last announced each
	// address (under mu).
	lastBy map[netip.Addr]string
	// announceRate is Options.AnnouncedWrites, on clk's time;
	// announceDue (under mu) is when each deferred Service's
	// AnnouncedBy write has its turn.
	announceRate *rate.Limiter
	announceDue  map[types.NamespacedName]time.Time
	client       client.Client
	cache        client.Reader // MetalLB's objects (unstructured) and kube-vip's ConfigMap
	// secrets reads the VRRP passwords' source Secrets by name, uncached.
	secrets client.Reader
	events  events.EventRecorder
	log     *slog.Logger
	clk     clock.Clock
	opts    Options

	mu      sync.Mutex
	alloc   *allocator.Allocator
	built   bool
	poolSig string
	// poolState says what is in effect of each pool; lastGood is the
	// last version of each pool the allocator took (in memory only).
	poolState  map[string]poolState
	foreignSig string
	lastGood   map[string]lastValid
	waiting    map[types.NamespacedName]bool    // refused for want of an address
	groups     map[string][]k8s.Instance        // last planned, by group key
	links      map[string]v1alpha1.VIPGroupSpec // each group's interface and link (linkSpec), by group key
	laidOut    map[string]bool                  // groups planned (by us or, per their status, before)
	extKeys    map[string]bool                  // allocator keys of accepted externalIPs
	// foreign is MetalLB's and kube-vip's configuration as last read;
	// metallb: MetalLB's CRDs were served at start; reported: the
	// problems last reported.
	// keepalived: the keepalived-operator's CRD was served at start;
	// openshift: OpenShift's Network was.
	foreign compat.Config
	metallb bool
	// metallbBGP: MetalLB's BGP CRDs (BGPAdvertisement, BGPPeer v1beta2,
	// BFDProfile) were served with its pools' and are read too.
	metallbBGP bool
	keepalived bool
	openshift  bool
	reported   string
	// pwProblems: why each group's password could not be read, as last
	// told.
	pwProblems map[k8s.GroupRef]string

	retry       chan event.GenericEvent
	foreignKick chan event.GenericEvent // starts the foreign reconciler once
	// foreignCtl is the reconciler of foreign objects (nil: none), which
	// gets MetalLB's kinds to watch when they appear (awaitMetalLB).
	foreignCtl controller.Controller
	m          *metrics
}

// Setup registers the controller's three reconcilers (Services, VIPGroups,
// IPPools) and its indexes with mgr. They run once mgr is started and, with
// leader election, only on the leader.
func Setup(mgr manager.Manager, o Options) (*Controller, error) {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Workers <= 0 {
		o.Workers = 4
	}
	if o.AnnouncedWrites <= 0 {
		o.AnnouncedWrites = DefaultAnnouncedWrites
	}
	if o.Namespace == "" {
		o.Namespace = k8s.DefaultNamespace
	}
	if o.ForeignCRDRecheck <= 0 {
		o.ForeignCRDRecheck = ForeignCRDRecheck
	}
	if o.PasswordRecheck <= 0 {
		o.PasswordRecheck = PasswordRecheck
	}
	if o.MetalLBNamespace == "" {
		o.MetalLBNamespace = DefaultMetalLBNamespace
	}
	if o.LoadBalancerClass == "" {
		o.LoadBalancerClass = k8s.LoadBalancerClass
	}
	if errs := validation.IsQualifiedName(o.LoadBalancerClass); len(errs) > 0 || !strings.Contains(o.LoadBalancerClass, "/") {
		return nil, fmt.Errorf("load-balancer class %q: want a prefixed name such as %s (%s)", o.LoadBalancerClass, k8s.LoadBalancerClass, strings.Join(append(errs, "a DNS prefix and a name"), "; "))
	}
	for _, v := range o.ExcludedVRIDs {
		if v < 1 || v > 255 {
			return nil, fmt.Errorf("excluded VRID %d: want 1 to 255", v)
		}
	}
	c := &Controller{
		client:      mgr.GetClient(),
		cache:       mgr.GetCache(),
		secrets:     mgr.GetAPIReader(),
		pwProblems:  map[k8s.GroupRef]string{},
		events:      mgr.GetEventRecorder(k8s.FieldManager),
		log:         o.Logger,
		clk:         o.Clock,
		opts:        o,
		alloc:       allocator.New(),
		poolState:   map[string]poolState{},
		lastGood:    map[string]lastValid{},
		waiting:     map[types.NamespacedName]bool{},
		groups:      map[string][]k8s.Instance{},
		links:       map[string]v1alpha1.VIPGroupSpec{},
		laidOut:     map[string]bool{},
		extKeys:     map[string]bool{},
		retry:       make(chan event.GenericEvent, 1<<14),
		foreignKick: make(chan event.GenericEvent, 1),
		m:           newMetrics(o.Registry),
		// lastAnnounced: what each agent's Lease said last (announced.go).
		lastAnnounced: map[string][]netip.Addr{},
		lastBy:        map[netip.Addr]string{},
		announceDue:   map[types.NamespacedName]time.Time{},
		announceRate:  rate.NewLimiter(rate.Limit(o.AnnouncedWrites), max(1, int(2*o.AnnouncedWrites))),
		leaseTimers:   map[string]clock.Timer{},
		parsed:        map[string]parsedLease{},
		leaseExpired:  make(chan event.GenericEvent, 1<<10),
	}
	c.metallb = !o.NoForeign && hasMetalLB(mgr.GetRESTMapper())
	c.metallbBGP = c.metallb && hasMetalLBBGP(mgr.GetRESTMapper())
	c.keepalived = !o.NoKeepalivedOperator && hasKind(mgr.GetRESTMapper(), keepalivedGroupGVK)
	c.openshift = !o.NoKeepalivedOperator && hasKind(mgr.GetRESTMapper(), networkGVK)
	ctx := context.Background()
	if err := mgr.GetFieldIndexer().IndexField(ctx, &corev1.Service{}, groupIndex, func(o client.Object) []string {
		g, err := serviceGroup(o.(*corev1.Service))
		if err != nil || g.IsZero() {
			return nil
		}
		return []string{g.String()}
	}); err != nil {
		return nil, fmt.Errorf("index Services by group: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &discoveryv1.EndpointSlice{}, sliceIndex, indexSlice); err != nil {
		return nil, fmt.Errorf("index EndpointSlices by Service: %w", err)
	}
	err := ctrl.NewControllerManagedBy(mgr).Named("vipstack-services").
		For(&corev1.Service{}).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(c.serviceOfSlice), builder.WithPredicates(readyNodesChanged)).
		Watches(&v1alpha1.IPPool{}, handler.EnqueueRequestsFromMapFunc(c.waitingServices)).
		Watches(&coordinationv1.Lease{}, handler.EnqueueRequestsFromMapFunc(c.servicesOfLease)).
		Watches(&v1alpha1.VIPGroup{}, handler.EnqueueRequestsFromMapFunc(c.servicesOfGroup)).
		WatchesRawSource(source.Channel(c.retry, &handler.EnqueueRequestForObject{})).
		WatchesRawSource(source.Channel(c.leaseExpired, handler.EnqueueRequestsFromMapFunc(c.servicesOfExpiredLease))).
		WithOptions(controller.Options{MaxConcurrentReconciles: o.Workers}).
		Complete(reconcile.Func(c.reconcileService))
	if err != nil {
		return nil, fmt.Errorf("the Services' controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("vipstack-groups").
		For(&v1alpha1.VIPGroup{}).
		Watches(&v1alpha1.VIPGroup{}, handler.EnqueueRequestsFromMapFunc(c.allGroups)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(c.allGroups), builder.WithPredicates(keptChanged)).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(groupOfService)).
		Complete(reconcile.Func(c.reconcileGroup))
	if err != nil {
		return nil, fmt.Errorf("VIPGroup controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("vipstack-pools").
		For(&v1alpha1.IPPool{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(c.allPools)).
		Watches(&v1alpha1.IPPool{}, handler.EnqueueRequestsFromMapFunc(c.allPools)).
		Complete(reconcile.Func(c.reconcilePool))
	if err != nil {
		return nil, fmt.Errorf("IPPool controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("vipstack-bgppeers").
		For(&v1alpha1.BGPPeer{}).
		Complete(reconcile.Func(c.reconcileBGPPeer))
	if err != nil {
		return nil, fmt.Errorf("BGPPeer controller: %w", err)
	}
	err = ctrl.NewControllerManagedBy(mgr).Named("vipstack-passwords").
		For(&v1alpha1.VIPGroup{}).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(groupOfCopy)).
		Complete(reconcile.Func(c.reconcilePassword))
	if err != nil {
		return nil, fmt.Errorf("controller of the VRRP passwords' copies: %w", err)
	}
	if !o.NoForeign || c.keepalived || c.openshift {
		one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return []reconcile.Request{foreignKey} })
		kubevip := builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetNamespace() == compat.KubeVIPConfigMapNamespace && o.GetName() == compat.KubeVIPConfigMapName
		}))
		b := ctrl.NewControllerManagedBy(mgr).Named("vipstack-foreign").
			WatchesRawSource(source.Channel(c.foreignKick, one)).
			Watches(&corev1.ConfigMap{}, one, kubevip).
			Watches(&v1alpha1.VIPGroup{}, one, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetLabels()[MadeByLabel] != ""
			})))
		var gvks []schema.GroupVersionKind
		if c.metallb {
			gvks = append(gvks, ipAddressPoolGVK, l2AdvertisementGVK)
		}
		if c.metallbBGP {
			gvks = append(gvks, metallbBGPKinds...)
		}
		if c.keepalived {
			gvks = append(gvks, keepalivedGroupGVK)
		}
		if c.openshift {
			gvks = append(gvks, networkGVK)
		}
		for _, gvk := range gvks {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(gvk)
			b = b.Watches(u, one)
		}
		fc, err := b.Build(reconcile.Func(c.reconcileForeign))
		if err != nil {
			return nil, fmt.Errorf("controller of MetalLB's, kube-vip's and keepalived-operator's objects: %w", err)
		}
		c.foreignCtl = fc
		c.foreignKick <- event.GenericEvent{Object: &corev1.ConfigMap{}}
		if !o.NoForeign && !c.metallb {
			if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
				return c.awaitMetalLB(ctx, mgr, one)
			})); err != nil {
				return nil, fmt.Errorf("the check for MetalLB's CRDs: %w", err)
			}
		}
	}
	return c, nil
}

// prepare rebuilds the allocator from the API on first use and applies
// the current pools. Callers hold no lock.
func (c *Controller) prepare(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.built {
		// Addresses MetalLB or kube-vip gave (a status without our
		// condition) are reserved before anything is handed out, when
		// they lie in a pool of theirs that vipstack now reads: those
		// Services keep them, whatever order they are looked at in.
		foreign, sig, err := c.readForeign(ctx)
		if err != nil {
			return fmt.Errorf("rebuild: %w", err)
		}
		c.foreign, c.foreignSig = foreign, sig
		var list corev1.ServiceList
		if err := c.client.List(ctx, &list); err != nil {
			return fmt.Errorf("rebuild: list Services: %w", err)
		}
		svcs := list.Items
		sort.Slice(svcs, func(i, j int) bool {
			ti, tj := svcs[i].CreationTimestamp, svcs[j].CreationTimestamp
			if !ti.Equal(&tj) {
				return ti.Before(&tj)
			}
			return svcs[i].Namespace+"/"+svcs[i].Name < svcs[j].Namespace+"/"+svcs[j].Name
		})
		n := 0
		for i := range svcs {
			s := &svcs[i]
			key := s.Namespace + "/" + s.Name
			allocCond := findCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated)
			if c.isOurLB(s) && allocCond != nil && allocCond.Reason != v1alpha1.ServiceReasonShared {
				for _, ing := range s.Status.LoadBalancer.Ingress {
					a, err := netip.ParseAddr(ing.IP)
					if err != nil {
						continue
					}
					if err := c.alloc.Reserve(key, a); err != nil {
						c.log.Warn("rebuild: address recorded twice; the older Service keeps it", "service", key, "err", err)
						continue
					}
					n++
				}
			} else {
				n += c.reserveForeignLocked(s, c.foreign)
			}
			if cond := findCondition(s.Status.Conditions, v1alpha1.ServiceConditionExternalIPs); cond != nil && cond.Status == "True" {
				// What the condition allowed (and the agents hold), not
				// spec.externalIPs: an address added to the spec while no
				// controller ran has not been checked, and may be another
				// Service's.
				ek := extKey(key)
				for _, ip := range v1alpha1.AllowedExternalIPs(cond.Message) {
					if a, err := netip.ParseAddr(ip); err == nil && c.alloc.Reserve(ek, a) == nil {
						c.extKeys[ek] = true
						n++
					}
				}
			}
		}
		var groups v1alpha1.VIPGroupList
		if err := c.client.List(ctx, &groups); err != nil {
			return fmt.Errorf("rebuild: list VIPGroups: %w", err)
		}
		for _, g := range groups.Items {
			c.groups[g.Namespace+"/"+g.Name] = instancesOf(g.Status.Instances)
			c.links[g.Namespace+"/"+g.Name] = linkSpec(&g.Spec)
			if hasCondition(g.Status.Conditions, v1alpha1.ConditionReady) {
				c.laidOut[g.Namespace+"/"+g.Name] = true
			}
		}
		c.built = true
		c.log.Info("rebuilt from the API", "services", len(svcs), "addresses", n, "groups", len(groups.Items))
	}
	return c.syncPoolsLocked(ctx)
}

// reserveForeignLocked reserves for s, a load balancer of ours that the
// controller never allocated (no condition of ours), the addresses its
// status shows that lie in a pool of foreign's: another load balancer
// gave them, and s keeps them. It returns how many. c.mu is held.
func (c *Controller) reserveForeignLocked(s *corev1.Service, foreign compat.Config) int {
	if !c.isOurLB(s) || findCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated) != nil {
		return 0
	}
	key := s.Namespace + "/" + s.Name
	n := 0
	// (InPool includes OpenShift's pools, whose addresses Services with
	// the keepalived-operator's annotation show.)
	for _, ing := range s.Status.LoadBalancer.Ingress {
		a, err := netip.ParseAddr(ing.IP)
		if err != nil {
			continue
		}
		if _, ok := foreign.InPool(a); !ok {
			continue
		}
		if owner, held := c.alloc.Owner(a); held && owner == key {
			continue
		}
		if err := c.alloc.Reserve(key, a); err != nil {
			c.log.Info("address another load balancer gave is shown twice (shared, or a conflict); the older Service holds it", "service", key, "err", err)
			continue
		}
		n++
	}
	return n
}

// syncPoolsLocked applies the IPPools when they changed. c.mu is held.
//
// A pool whose current spec is refused (it does not convert, or the
// allocator rejects it: ranges that overlap each other or another pool's)
// keeps the last version this controller had in effect, as MetalLB keeps
// its last valid configuration: an edit that went wrong must not stop a
// pool from serving new Services. Its Ready condition says so. That
// version lives in memory only: after a restart with the spec still
// refused, the pool serves nothing new (and says so) until it is fixed.
// Either way no address held is taken or given twice: held addresses
// are the allocator's, whatever the pools.
func (c *Controller) syncPoolsLocked(ctx context.Context) error {
	var list v1alpha1.IPPoolList
	if err := c.client.List(ctx, &list); err != nil {
		return fmt.Errorf("list IPPools: %w", err)
	}
	sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
	foreign, fsig, err := c.readForeign(ctx)
	if err != nil {
		return err
	}
	var sig strings.Builder
	for _, p := range list.Items {
		sig.WriteString(p.Name + "@" + p.ResourceVersion + ",")
	}
	sig.WriteString(fsig)
	if sig.String() == c.poolSig {
		return nil
	}
	c.poolSig = sig.String()
	c.foreign, c.foreignSig = foreign, fsig
	// Try the current versions; each one the allocator refuses falls
	// back to its last valid version, and the set is tried again (a
	// fallback may free a range another pool wanted). Each pool falls
	// back at most once, so this ends.
	why := map[string]error{} // why a pool's current spec is refused, once it falls back
	useLast := map[string]bool{}
	var (
		chosen   []poolVersion
		convErrs map[string]error
		setErrs  map[string]error
	)
	for {
		var pools []allocator.Pool
		pools, chosen, convErrs = poolsInOrder(list.Items, c.lastGood, useLast)
		// MetalLB's and kube-vip's pools come after vipstack's own: one
		// that overlaps an IPPool is the one refused.
		for _, fp := range foreign.Pools {
			pools = append(pools, fp.Pool)
		}
		setErrs = poolErrors(c.alloc.SetPools(pools))
		again := false
		for _, v := range chosen {
			e, bad := setErrs[v.name]
			if !bad || v.fallback {
				continue
			}
			if lv, ok := c.lastGood[v.name]; ok && lv.uid == uidOf(list.Items, v.name) && lv.gen != v.gen {
				why[v.name] = e
				useLast[v.name] = true
				again = true
			}
		}
		if !again {
			break
		}
	}
	for _, fp := range foreign.Pools {
		if e, bad := setErrs[fp.Name]; bad {
			c.log.Warn("pool of another load balancer refused", "source", fp.Source, "err", e)
		}
	}
	c.poolState = map[string]poolState{}
	for name, err := range convErrs {
		c.poolState[name] = poolState{err: err}
	}
	for _, v := range chosen {
		switch {
		case !c.alloc.HasPool(v.name) && v.fallback:
			// Its last valid version is refused too (another pool in use
			// took its range): nothing of it is in effect.
			err := why[v.name]
			if err == nil {
				err = convErrs[v.name]
			}
			c.poolState[v.name] = poolState{err: errors.Join(err, fmt.Errorf("its last valid version (generation %d) is refused too: %w", v.gen, setErrs[v.name]))}
		case !c.alloc.HasPool(v.name):
			c.poolState[v.name] = poolState{err: setErrs[v.name]}
		case v.fallback:
			err := why[v.name]
			if err == nil {
				err = convErrs[v.name]
			}
			c.poolState[v.name] = poolState{err: err, fallback: v.gen, ranges: rangesOf(v.pool)}
		default:
			c.poolState[v.name] = poolState{}
			c.lastGood[v.name] = lastValid{uid: uidOf(list.Items, v.name), gen: v.gen, pool: v.pool}
		}
	}
	for name, lv := range c.lastGood {
		if uidOf(list.Items, name) != lv.uid {
			delete(c.lastGood, name) // deleted (and maybe made again)
		}
	}
	c.kickWaitingLocked()
	return nil
}

// poolErrors maps the pools SetPools refused to why.
func poolErrors(err error) map[string]error {
	out := map[string]error{}
	if err == nil {
		return out
	}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		for _, e := range joined.Unwrap() {
			var ae *allocator.Error
			if errors.As(e, &ae) {
				out[ae.Pool] = e
			}
		}
	}
	return out
}

func uidOf(items []v1alpha1.IPPool, name string) types.UID {
	for i := range items {
		if items[i].Name == name {
			return items[i].UID
		}
	}
	return ""
}

func rangesOf(p allocator.Pool) string {
	s := make([]string, len(p.Ranges))
	for i, r := range p.Ranges {
		s[i] = r.String()
	}
	return strings.Join(s, ", ")
}

// lastValid is the last version of a pool the allocator took.
type lastValid struct {
	uid  types.UID // of the object: a pool deleted and made again starts afresh
	gen  int64
	pool allocator.Pool
}

// poolState is what the allocator does with a pool, for its status.
type poolState struct {
	err      error  // why its current spec is refused; nil: in effect as it is
	fallback int64  // the generation in effect instead, its last valid one; 0: none
	ranges   string // the ranges of that generation
}

// poolVersion is the version of a pool given to the allocator.
type poolVersion struct {
	name     string
	gen      int64
	fallback bool // the last valid version, not the current one
	pool     allocator.Pool
}

// poolsInOrder converts the IPPools for the allocator in the order
// SetPools should try them: of two overlapping pools it keeps the first,
// and that must be the one already serving, so that a new pool, or a pool
// edited, that overlaps a pool in use is the one refused, not the pool
// whose Services name it. First come the pools accepted as they are now
// (their status says Ready for the current generation: this survives a
// restart; or this controller took that generation) and those that serve
// their last valid version, then the oldest, then by name (creation times
// have whole seconds). A pool whose current spec does not convert, or
// that useLast names, is given as its last valid version when last has
// one. It returns the pools, the versions chosen, and why the pools left
// out (and the current specs replaced) do not convert.
func poolsInOrder(items []v1alpha1.IPPool, last map[string]lastValid, useLast map[string]bool) ([]allocator.Pool, []poolVersion, map[string]error) {
	type entry struct {
		v        poolVersion
		accepted bool
		created  metav1.Time
	}
	var es []entry
	errs := map[string]error{}
	for i := range items {
		it := &items[i]
		p, err := it.Pool()
		if err != nil {
			errs[it.Name] = err
		}
		lv, hasLast := last[it.Name]
		hasLast = hasLast && lv.uid == it.UID
		var e entry
		switch {
		case hasLast && lv.gen != it.Generation && (err != nil || useLast[it.Name]):
			e = entry{v: poolVersion{name: it.Name, gen: lv.gen, fallback: true, pool: lv.pool}, accepted: true}
		case err != nil:
			continue
		default:
			r := meta.FindStatusCondition(it.Status.Conditions, v1alpha1.ConditionReady)
			accepted := (r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == it.Generation) ||
				(hasLast && lv.gen == it.Generation)
			e = entry{v: poolVersion{name: it.Name, gen: it.Generation, pool: p}, accepted: accepted}
		}
		e.created = it.CreationTimestamp
		es = append(es, e)
	}
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		switch {
		case a.accepted != b.accepted:
			return a.accepted
		case !a.created.Equal(&b.created):
			return a.created.Before(&b.created)
		}
		return a.v.name < b.v.name
	})
	pools := make([]allocator.Pool, len(es))
	vs := make([]poolVersion, len(es))
	for i, e := range es {
		pools[i], vs[i] = e.v.pool, e.v
	}
	return pools, vs, errs
}

// kickWaitingLocked asks for another look at every Service that waits for
// an address. c.mu is held.
func (c *Controller) kickWaitingLocked() {
	for k := range c.waiting {
		s := &corev1.Service{}
		s.Namespace, s.Name = k.Namespace, k.Name
		select {
		case c.retry <- event.GenericEvent{Object: s}:
		default:
			return // the queue is full of retries already; the rest come with the periodic requeue
		}
	}
}

func (c *Controller) waitingServices(ctx context.Context, _ client.Object) []reconcile.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]reconcile.Request, 0, len(c.waiting))
	for k := range c.waiting {
		out = append(out, reconcile.Request{NamespacedName: k})
	}
	return out
}

func (c *Controller) servicesOfGroup(ctx context.Context, o client.Object) []reconcile.Request {
	var list corev1.ServiceList
	if err := c.client.List(ctx, &list, client.MatchingFields{groupIndex: o.GetNamespace() + "/" + o.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		c.log.Error("list Services of a group", "group", o.GetNamespace()+"/"+o.GetName(), "err", err)
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, s := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return out
}

func (c *Controller) allGroups(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.VIPGroupList
	if err := c.client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, g := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}})
	}
	return out
}

// serviceGroup is the group that serves s: the one it names, or the one
// the controller recorded for a Service served from MetalLB's or
// kube-vip's pools.
func serviceGroup(s *corev1.Service) (k8s.GroupRef, error) {
	return k8s.ServiceGroup(s.Namespace, s.Annotations, s.Status.Conditions, v1alpha1.ServiceConditionGroup)
}

func groupOfService(_ context.Context, o client.Object) []reconcile.Request {
	g, err := serviceGroup(o.(*corev1.Service))
	if err != nil || g.IsZero() {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: g.Namespace, Name: g.Name}}}
}

func (c *Controller) allPools(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.IPPoolList
	if err := c.client.List(ctx, &list); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, p := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p.Name}})
	}
	return out
}

func instancesOf(in []v1alpha1.GroupInstance) []k8s.Instance {
	out := make([]k8s.Instance, len(in))
	for i, x := range in {
		out[i] = k8s.Instance{Name: x.Name, VRID: int(x.VRID), Node: x.Node, Service: x.Service}
	}
	return out
}

type metrics struct {
	allocations *prometheus.CounterVec
	poolSize    *prometheus.GaugeVec
	poolUsed    *prometheus.GaugeVec
	poolStale   *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		allocations: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vipstack_k8s_allocations_total",
			Help: "Allocation outcomes for Services, by result (the condition reason): an address given or a condition changed, not every look at a Service."}, []string{"result"}),
		poolSize: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipstack_k8s_pool_addresses",
			Help: "Addresses in the pool."}, []string{"pool"}),
		poolUsed: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipstack_k8s_pool_assigned",
			Help: "Addresses of the pool held by Services."}, []string{"pool"}),
		poolStale: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "vipstack_k8s_pool_stale",
			Help: "1 while the pool's current spec is refused and its last valid version serves instead (see its Ready condition)."}, []string{"pool"}),
	}
	if reg != nil {
		m.allocations = register(reg, m.allocations)
		m.poolSize = register(reg, m.poolSize)
		m.poolUsed = register(reg, m.poolUsed)
		m.poolStale = register(reg, m.poolStale)
	}
	return m
}

// register registers c, or returns the collector already registered
// under its name: a controller set up again in the same process (the
// global controller-runtime registry outlives a manager) shares them.
func register[T prometheus.Collector](reg prometheus.Registerer, c T) T {
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if old, ok := are.ExistingCollector.(T); ok {
				return old
			}
		}
		panic(err)
	}
	return c
}
