package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/compat"
	"github.com/vipstack/vipstack/internal/k8s/rewatch"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// Scheme returns a scheme with the built-in types and vipstack.io/v1alpha1.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("scheme: %w", err)
	}
	return s, nil
}

// ManagerOptions configure NewManager.
type ManagerOptions struct {
	Logger *slog.Logger
	// LeaderElection is on in production; tests of a single controller
	// may turn it off.
	LeaderElection bool
	// Namespace is the release namespace (default k8s.DefaultNamespace),
	// where the copies of the VRRP passwords are kept: the only Secrets
	// the manager caches. Options.Namespace must name the same one.
	Namespace string
	// LeaderElectionNamespace holds the Lease (default Namespace).
	LeaderElectionNamespace string
	LeaderElectionID        string // default "vipstack-controller"
	// Lease timings; zero means client-go's defaults (15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// MetricsAddr serves controller-runtime's metrics; "" or "0": off.
	MetricsAddr string
	// HealthAddr serves /healthz (the process answers) and /readyz (the
	// informers have synced; a replica waiting for the Lease has none and
	// is ready); "" or "0": off.
	HealthAddr string
	// PprofAddr serves net/http/pprof under /debug/pprof/; "": off.
	PprofAddr string
}

// NewManager returns a controller-runtime manager for the controller.
func NewManager(cfg *rest.Config, o ManagerOptions) (manager.Manager, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Namespace == "" {
		o.Namespace = k8s.DefaultNamespace
	}
	if o.LeaderElectionNamespace == "" {
		o.LeaderElectionNamespace = o.Namespace
	}
	if o.LeaderElectionID == "" {
		o.LeaderElectionID = "vipstack-controller"
	}
	if o.MetricsAddr == "" {
		o.MetricsAddr = "0"
	}
	if o.HealthAddr == "" {
		o.HealthAddr = "0"
	}
	skip := true
	mo := manager.Options{
		Scheme:                        s,
		Logger:                        logr.FromSlogHandler(o.Logger.Handler()),
		LeaderElection:                o.LeaderElection,
		LeaderElectionNamespace:       o.LeaderElectionNamespace,
		LeaderElectionID:              o.LeaderElectionID,
		LeaderElectionReleaseOnCancel: true,
		Metrics:                       metricsserver.Options{BindAddress: o.MetricsAddr},
		HealthProbeBindAddress:        o.HealthAddr,
		PprofBindAddress:              o.PprofAddr,
		// Informers watch again within a second of an API-server restart
		// instead of after client-go's backoff of up to a minute. No
		// object keeps its managed fields in the cache (k8s.Slim*).
		Cache: cache.Options{NewInformer: rewatch.NewInformer(rewatch.Options{Logger: o.Logger}), DefaultTransform: k8s.StripManagedFields, ByObject: map[client.Object]cache.ByObject{
			// The controller reads of an EndpointSlice only which nodes
			// have a ready endpoint, of a Node its labels: keep no more of
			// the cluster's slices and nodes in memory.
			&discoveryv1.EndpointSlice{}: {Transform: k8s.SlimEndpointSlice},
			&corev1.Node{}:               {Transform: k8s.SlimNode},
			&corev1.Service{}:            {Transform: slimService},
			// Of ConfigMaps only kube-vip's ranges are read.
			&corev1.ConfigMap{}: {
				Namespaces: map[string]cache.Config{compat.KubeVIPConfigMapNamespace: {}},
				Field:      fields.OneTermEqualSelector("metadata.name", compat.KubeVIPConfigMapName),
			},
			// Of Leases only the agents' status Leases (which node
			// announces what), in the release namespace.
			&coordinationv1.Lease{}: {
				Namespaces: map[string]cache.Config{o.Namespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{agent.LeaseLabel: "true"}),
			},
			// Of Secrets only the copies of the VRRP passwords, in the
			// release namespace; the sources are read by name, uncached.
			&corev1.Secret{}: {
				Namespaces: map[string]cache.Config{o.Namespace: {}},
				Label:      labels.SelectorFromSet(labels.Set{k8s.MadeForLabel: k8s.PasswordMadeFor}),
			},
		}},
		// Several controllers may run in one process (tests, a restart).
		Controller: config.Controller{SkipNameValidation: &skip},
	}
	if o.LeaseDuration > 0 {
		mo.LeaseDuration = &o.LeaseDuration
	}
	if o.RenewDeadline > 0 {
		mo.RenewDeadline = &o.RenewDeadline
	}
	if o.RetryPeriod > 0 {
		mo.RetryPeriod = &o.RetryPeriod
	}
	mgr, err := manager.New(cfg, mo)
	if err != nil {
		return nil, fmt.Errorf("controller manager: %w", err)
	}
	// Without a check controller-runtime answers 404 on both paths.
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("controller liveness check: %w", err)
	}
	if err := mgr.AddReadyzCheck("informers", cacheSynced(mgr.GetCache())); err != nil {
		return nil, fmt.Errorf("controller readiness check: %w", err)
	}
	return mgr, nil
}

// cacheSyncTimeout bounds how long the readiness check waits for the
// informers before it fails.
const cacheSyncTimeout = time.Second

// cacheSynced is the readiness check: every informer the controllers
// started has listed its objects.
func cacheSynced(c interface {
	WaitForCacheSync(context.Context) bool
}) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), cacheSyncTimeout)
		defer cancel()
		if !c.WaitForCacheSync(ctx) {
			return errors.New("controller: the informers have not synced with the API server yet")
		}
		return nil
	}
}

// slimService drops of a Service, besides its managed fields, kubectl's
// copy of the last applied manifest (the whole object again), which the
// controller never reads. The controller writes a Service only by a merge
// patch of its status between two copies of the cached object, so what
// the cache lacks is never written.
func slimService(o any) (any, error) {
	if s, ok := o.(*corev1.Service); ok {
		delete(s.Annotations, corev1.LastAppliedConfigAnnotation)
	}
	return k8s.StripManagedFields(o)
}
