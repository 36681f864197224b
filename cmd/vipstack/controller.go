package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/vipstack/vipstack/internal/daemon"
	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/controller"
	"github.com/vipstack/vipstack/internal/metrics"
	"github.com/vipstack/vipstack/internal/version"
)

// runController runs the Kubernetes controller: addresses for LoadBalancer
// Services from IPPools, VRIDs for VIPGroups; leader-elected.
func runController(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, code, ok := parseControllerFlags(args, stderr)
	if !ok {
		return code
	}
	log := f.log
	cfg, err := kubeConfig(f.kubeconfig)
	if err != nil {
		fmt.Fprintf(stderr, "vipstack controller: %v\n", err)
		return 1
	}
	cfg.QPS, cfg.Burst = float32(f.qps), int(2*f.qps)
	// Authenticated metrics are served below, on HTTPS, rather than by
	// controller-runtime's server.
	crMetricsAddr := f.metricsAddr
	if f.auth.auth == "kubernetes" {
		crMetricsAddr = ""
	}
	mgr, err := controller.NewManager(cfg, controller.ManagerOptions{Logger: log, LeaderElection: f.leaderElect, Namespace: f.namespace,
		LeaderElectionNamespace: f.leaseNS, MetricsAddr: crMetricsAddr, HealthAddr: f.healthAddr, PprofAddr: f.mem.pprofAddr,
		LeaseDuration: f.leaseDur, RenewDeadline: f.renewDL, RetryPeriod: f.retryPer})
	if err != nil {
		fmt.Fprintf(stderr, "vipstack controller: %v\n", err)
		return 1
	}
	// controller-runtime's registry has the Go and process collectors.
	if err := crmetrics.Registry.Register(metrics.BuildInfo(version.Get())); err != nil && !errors.As(err, new(prometheus.AlreadyRegisteredError)) {
		fmt.Fprintf(stderr, "vipstack controller: %v\n", err)
		return 1
	}
	if _, err := controller.Setup(mgr, controller.Options{Logger: log, ExcludedVRIDs: f.vrids, Workers: f.workers,
		Registry: crmetrics.Registry, MetalLBNamespace: f.metallbNS, NoForeign: !f.foreign, NoKeepalivedOperator: !f.keepalived, Namespace: f.namespace,
		LoadBalancerClass: f.lbClass, DefaultGroup: f.defGroup, AnnouncedWrites: f.announcedWrites}); err != nil {
		fmt.Fprintf(stderr, "vipstack controller: %v\n", err)
		return 1
	}
	if f.auth.auth == "kubernetes" && f.metricsAddr != "" {
		host, _ := os.Hostname() // the pod's name
		ms, err := serveAuthMetrics(ctx, cfg, f.metricsAddr, crmetrics.Registry, f.auth, []string{host}, log)
		if err != nil {
			fmt.Fprintf(stderr, "vipstack controller: %v\n", err)
			return 1
		}
		defer ms.Close()
	}
	log.Info("vipstack controller starting", "version", version.String(), "api", cfg.Host, "leader_elect", f.leaderElect, "lease_namespace", f.leaseNS)
	daemon.TrimAtRest(ctx, log, synced(ctx, mgr.GetCache().WaitForCacheSync), f.mem.pprofAddr != "")
	f.mem.start(ctx, log, os.Getenv)
	return awaitManager(ctx, mgr.Start, log)
}

// synced is closed once wait (a manager's cache's WaitForCacheSync)
// reports the informers synced: the start-up is over.
func synced(ctx context.Context, wait func(context.Context) bool) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		if wait(ctx) {
			close(c)
		}
	}()
	return c
}

// controllerFlags are vipstack controller's flags, checked.
type controllerFlags struct {
	kubeconfig, namespace, leaseNS, metricsAddr, healthAddr, metallbNS, lbClass string
	leaderElect, foreign, keepalived                                            bool
	leaseDur, renewDL, retryPer                                                 time.Duration
	workers                                                                     int
	qps, announcedWrites                                                        float64
	vrids                                                                       []int
	defGroup                                                                    k8s.GroupRef
	auth                                                                        metricsAuthFlags
	mem                                                                         kubeMemFlags
	log                                                                         *slog.Logger
}

func parseControllerFlags(args []string, stderr io.Writer) (f controllerFlags, code int, ok bool) {
	fs := flag.NewFlagSet("vipstack controller", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file; empty: $KUBECONFIG, else the in-cluster ServiceAccount")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "hold the Lease NAMESPACE/vipstack-controller before doing anything (run two replicas)")
	fs.StringVar(&f.namespace, "namespace", envOr("POD_NAMESPACE", k8s.DefaultNamespace), "the release namespace, where the controller keeps the copies of the VRRP passwords for the agents (default $POD_NAMESPACE when set)")
	fs.StringVar(&f.leaseNS, "leader-election-namespace", "", "namespace of the leader-election Lease; empty: --namespace")
	fs.DurationVar(&f.leaseDur, "leader-elect-lease-duration", 15*time.Second, "how long a standby waits after the leader's last renewal before it takes the Lease (a killed leader's failover time)")
	fs.DurationVar(&f.renewDL, "leader-elect-renew-deadline", 10*time.Second, "how long the leader keeps trying to renew the Lease before it gives it up and exits; less than --leader-elect-lease-duration")
	fs.DurationVar(&f.retryPer, "leader-elect-retry-period", 2*time.Second, "how often a replica tries to take or renew the Lease; less than --leader-elect-renew-deadline")
	excluded := fs.String("excluded-vrids", "", "VRIDs no group may use, comma-separated (other routers on the networks)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "127.0.0.1:9652", "Prometheus metrics address (loopback unless told otherwise, e.g. :9652); empty: off")
	fs.StringVar(&f.healthAddr, "health-addr", "", "address for /healthz and /readyz; empty: off")
	fs.IntVar(&f.workers, "workers", 4, "Services reconciled at once")
	fs.Float64Var(&f.qps, "qps", 200, "API requests per second the controller may send")
	fs.Float64Var(&f.announcedWrites, "announced-writes", controller.DefaultAnnouncedWrites, "Service status writes per second that only update the vipstack.io/AnnouncedBy condition (addresses are always written at once)")
	fs.StringVar(&f.metallbNS, "metallb-namespace", controller.DefaultMetalLBNamespace, "namespace of MetalLB's IPAddressPools and L2Advertisements, read when MetalLB's CRDs are installed")
	fs.BoolVar(&f.foreign, "read-metallb-kube-vip", true, "serve Services that name no group from MetalLB's and kube-vip's pools (docs/install.md, Migrating)")
	fs.BoolVar(&f.keepalived, "read-keepalived-operator", true, "serve keepalived-operator's KeepalivedGroups and read OpenShift's Network externalIP CIDRs, when their CRDs are installed (docs/kubernetes.md)")
	fs.StringVar(&f.lbClass, "load-balancer-class", k8s.LoadBalancerClass, "the spec.loadBalancerClass served; Services of another class are left alone")
	defGroup := fs.String("default-group", "", "NAMESPACE/NAME of the VIPGroup serving LoadBalancer Services that name none (with no class or --load-balancer-class): vipstack is then the cluster's default implementation; empty: Services with no class and no group are left alone")
	f.auth.add(fs)
	f.mem.add(fs)
	logLevel := daemon.AddLogFlags(fs, "vipstack controller", "")
	if code, ok := daemon.ParseNoArgs(fs, args, stderr); !ok {
		return f, code, false
	}
	if !f.auth.check("vipstack controller", stderr) || !f.mem.check("vipstack controller", fs, stderr) {
		return f, 2, false
	}
	if f.log, ok = kubeLogger(stderr, logLevel); !ok {
		return f, 2, false
	}
	var err error
	if f.vrids, err = parseVRIDs(*excluded); err != nil {
		fmt.Fprintf(stderr, "vipstack controller: --excluded-vrids: %v\n", err)
		return f, 2, false
	}
	if err := checkNamespace(f.namespace); err != nil {
		fmt.Fprintf(stderr, "vipstack controller: --namespace: %v\n", err)
		return f, 2, false
	}
	if f.defGroup, err = parseDefaultGroup(*defGroup); err != nil {
		fmt.Fprintf(stderr, "vipstack controller: --default-group: %v\n", err)
		return f, 2, false
	}
	if f.leaseNS == "" {
		f.leaseNS = f.namespace
	}
	if f.announcedWrites <= 0 {
		fmt.Fprintf(stderr, "vipstack controller: --announced-writes %v: want a number of writes per second above 0\n", f.announcedWrites)
		return f, 2, false
	}
	if err := checkLeaseTimes(f.leaseDur, f.renewDL, f.retryPer); err != nil {
		fmt.Fprintf(stderr, "vipstack controller: %v\n", err)
		return f, 2, false
	}
	return f, 0, true
}

// awaitManager runs start until it returns or ctx ends, then waits
// stopGrace at most for it to stop.
func awaitManager(ctx context.Context, start func(context.Context) error, log *slog.Logger) int {
	errc := make(chan error, 1)
	go func() { errc <- start(ctx) }()
	var startErr error
	select {
	case startErr = <-errc:
	case <-ctx.Done():
		// controller-runtime's manager does not return from Start once
		// cancelled while its informers have never synced (RBAC missing,
		// seen with v0.24.1: still running minutes later), and the pod
		// would sit out its whole termination grace period. Give it
		// stopGrace, then leave.
		select {
		case startErr = <-errc:
		case <-time.After(stopGrace):
			log.Error("vipstack controller: still stopping after the signal; exiting anyway (informers that never synced? check the RBAC)",
				"waited", stopGrace)
			return 1
		}
	}
	if startErr != nil {
		log.Error("vipstack controller failed", "err", startErr)
		return 1
	}
	log.Info("vipstack controller stopped")
	return 0
}

// stopGrace is how long the controller waits for its manager to stop
// after a signal: within the chart's terminationGracePeriodSeconds (10).
const stopGrace = 8 * time.Second

// kubeConfig loads a kubeconfig file, $KUBECONFIG, or the in-cluster
// ServiceAccount, in that order.
func kubeConfig(path string) (*rest.Config, error) {
	if path == "" {
		path = os.Getenv("KUBECONFIG")
	}
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("no --kubeconfig, no $KUBECONFIG, and not in a pod: %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}

// kubeLogger makes the slog logger and routes controller-runtime's and
// client-go's (klog) logging to it.
func kubeLogger(stderr io.Writer, level *daemon.LogFlags) (*slog.Logger, bool) {
	log, ok := level.Logger(stderr)
	if !ok {
		return nil, false
	}
	lr := logr.FromSlogHandler(log.Handler())
	ctrllog.SetLogger(lr)
	klog.SetLogger(lr)
	return log, true
}

func parseVRIDs(s string) ([]int, error) {
	var out []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' }) {
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 || v > 255 {
			return nil, fmt.Errorf("%q: want VRIDs from 1 to 255, comma-separated", f)
		}
		out = append(out, v)
	}
	return out, nil
}

// checkLeaseTimes refuses leader-election timings client-go would reject
// (or panic on): each must be positive, the renew deadline shorter than
// the lease and longer than 1.2 retry periods (client-go's jitter).
func checkLeaseTimes(lease, renew, retry time.Duration) error {
	switch {
	case lease <= 0 || renew <= 0 || retry <= 0:
		return fmt.Errorf("--leader-elect-lease-duration %v, --leader-elect-renew-deadline %v, --leader-elect-retry-period %v: want each > 0", lease, renew, retry)
	case renew >= lease:
		return fmt.Errorf("--leader-elect-renew-deadline %v: want less than --leader-elect-lease-duration (%v)", renew, lease)
	case renew*10 <= retry*12:
		return fmt.Errorf("--leader-elect-retry-period %v: want less than --leader-elect-renew-deadline / 1.2 (%v)", retry, renew*10/12)
	}
	return nil
}

// checkNamespace refuses a release namespace that cannot be one.
func checkNamespace(ns string) error {
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Errorf("%q: %s; want the release namespace (default $POD_NAMESPACE, else %s)", ns, strings.Join(errs, "; "), k8s.DefaultNamespace)
	}
	return nil
}

func envOr(name, dflt string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return dflt
}

// parseDefaultGroup reads --default-group: empty, or NAMESPACE/NAME.
func parseDefaultGroup(v string) (k8s.GroupRef, error) {
	if v == "" {
		return k8s.GroupRef{}, nil
	}
	if !strings.Contains(v, "/") {
		return k8s.GroupRef{}, fmt.Errorf("%q: want NAMESPACE/NAME of a VIPGroup", v)
	}
	return k8s.ParseGroupRef("", v)
}
