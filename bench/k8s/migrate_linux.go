package main

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/benchdoc"
	"github.com/vipstack/vipstack/internal/clock"
	"github.com/vipstack/vipstack/internal/k8s/k8slab"
	"github.com/vipstack/vipstack/internal/k8s/k8stest"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// What -scenario measures.
const (
	// 1,000 Services annotated for the lab's group, created at once.
	scenarioAnnotated = "annotated"
	// The same with no annotation: the controller's --default-group and
	// the auto-assigning pool serve them.
	scenarioDefaultPool = "default-pool"
	// Services whose status carries the addresses the keepalived-operator
	// (with OpenShift's externalIP auto-assignment) gave, before vipstack
	// starts.
	scenarioFromKeepalived = "from-keepalived"
	// The same with addresses MetalLB (L2) gave.
	scenarioFromMetalLB = "from-metallb"

	scenarioHelp = scenarioAnnotated + " (Services annotated for the lab's group, created at once), " +
		scenarioDefaultPool + " (the same, no annotation: --default-group), " +
		scenarioFromKeepalived + " and " + scenarioFromMetalLB +
		" (Services already holding the addresses the keepalived-operator or MetalLB gave; vipstack starts after)"
)

var scenarios = []string{scenarioAnnotated, scenarioDefaultPool, scenarioFromKeepalived, scenarioFromMetalLB}

// keepalivedMax is how many addresses OpenShift could auto-assign from
// the block (not its network and broadcast addresses).
const keepalivedMax = 1022

// labPool is the lab's own IPPool in the migration scenarios, away from
// the block the other load balancer's addresses come from.
const labPool = "198.18.12.0/30"

func validScenario(s string) bool {
	for _, x := range scenarios {
		if s == x {
			return true
		}
	}
	return false
}

func migrating(s string) bool { return s == scenarioFromKeepalived || s == scenarioFromMetalLB }

// blockName is the scenario's block in docs/benchmarks.md.
func blockName(s string) string {
	if s == scenarioAnnotated {
		return "k8s"
	}
	return "k8s-" + s
}

// leftAddr is the address the other load balancer gave Service i: the
// block's addresses in order, without its network and broadcast
// addresses when skipEnds (OpenShift's auto-assignment never gives them;
// MetalLB does, unless its pool says avoidBuggyIPs).
func leftAddr(i int, skipEnds bool) netip.Addr {
	a := netip.MustParsePrefix(poolBlock).Addr()
	if skipEnds {
		a = a.Next()
	}
	for range i {
		a = a.Next()
	}
	return a
}

// leftBehind returns the lab's Before hook for a migration scenario: the
// other load balancer's CRDs (their own files) and configuration, then
// -services LoadBalancer Services with the status it wrote, made by
// -clients concurrent clients. It records when it returns, which is when
// the lab starts vipstack's controller.
func (b *bench) leftBehind() (func(ctx context.Context, admin client.Client) error, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, err
	}
	read := func(path string) ([]*unstructured.Unstructured, error) {
		body, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("-scenario %s: %w", b.scenario, err)
		}
		var out []*unstructured.Unstructured
		err = b.p.Do(func() { out = k8stest.Parse(b.p, path, body) })
		return out, err
	}
	var crds, objs []*unstructured.Unstructured
	var ann map[string]string
	external := false
	switch b.scenario {
	case scenarioFromKeepalived:
		td := filepath.Join(root, "internal/k8s/compat/testdata")
		for _, f := range []string{"keepalived-operator/redhatcop.redhat.io_keepalivedgroups.yaml", "openshift-api/0000_10_config-operator_01_networks-Default.crd.yaml"} {
			us, err := read(filepath.Join(td, f))
			if err != nil {
				return nil, err
			}
			crds = append(crds, us...)
		}
		// OpenShift auto-assigns the block; the operator's group holds
		// the addresses on every node's eth0 (seed 004's shape).
		objs = []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "config.openshift.io/v1", "kind": "Network", "metadata": map[string]any{"name": "cluster"},
				"spec": map[string]any{"externalIP": map[string]any{"autoAssignCIDRs": []any{poolBlock}}}}},
			{Object: map[string]any{"apiVersion": "redhatcop.redhat.io/v1alpha1", "kind": "KeepalivedGroup",
				"metadata": map[string]any{"namespace": "keepalived-operator", "name": "workers"},
				"spec":     map[string]any{"image": "registry.redhat.io/openshift4/ose-keepalived-ipfailover", "interface": "eth0"}}},
		}
		ann = map[string]string{"keepalived-operator.redhat-cop.io/keepalivedgroup": "keepalived-operator/workers"}
		external = true // OpenShift writes the address to spec.externalIPs too
	case scenarioFromMetalLB:
		dir := b.thirdparty
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(root, dir)
		}
		for _, f := range []string{"metallb/metallb.io_ipaddresspools.yaml", "metallb/metallb.io_l2advertisements.yaml"} {
			us, err := read(filepath.Join(dir, f))
			if err != nil {
				return nil, fmt.Errorf("%w (set -thirdparty to the directory holding MetalLB's CRDs)", err)
			}
			crds = append(crds, us...)
		}
		objs = []*unstructured.Unstructured{
			{Object: map[string]any{"apiVersion": "metallb.io/v1beta1", "kind": "IPAddressPool",
				"metadata": map[string]any{"namespace": "metallb-system", "name": "bench"},
				"spec":     map[string]any{"addresses": []any{poolBlock}}}},
			{Object: map[string]any{"apiVersion": "metallb.io/v1beta1", "kind": "L2Advertisement",
				"metadata": map[string]any{"namespace": "metallb-system", "name": "bench"}}},
		}
	}
	return func(ctx context.Context, admin client.Client) error {
		b.logf("applying what %s left: CRDs, its configuration and %d Services", strings.TrimPrefix(b.scenario, "from-"), b.n)
		if err := b.p.Do(func() { k8stest.ApplyCRDs(b.p, admin, crds) }); err != nil {
			return err
		}
		for _, ns := range []string{"keepalived-operator", "metallb-system"} {
			if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
				return err
			}
		}
		if err := k8stest.Apply(ctx, admin, objs, false); err != nil {
			return err
		}
		b.left = map[string]netip.Addr{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		errs := make(chan error, b.clients)
		for k := range b.clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := k; i < b.n; i += b.clients {
					name, a := fmt.Sprintf("s%04d", i), leftAddr(i, external)
					s := k8slab.NewService(name, netip.Addr{})
					s.Annotations = ann
					if external {
						s.Spec.ExternalIPs = []string{a.String()}
					}
					if err := admin.Create(ctx, s); err != nil {
						errs <- fmt.Errorf("create Service %s: %w", name, err)
						return
					}
					s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: a.String()}}
					if err := admin.Status().Update(ctx, s); err != nil {
						errs <- fmt.Errorf("write status of Service %s: %w", name, err)
						return
					}
					mu.Lock()
					b.left[name] = a
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			return err
		}
		b.installed = time.Now()
		b.logf("starting vipstack")
		return nil
	}, nil
}

// migrated measures a migration scenario once the lab runs: the time from
// vipstack's start until each address answers ARP from the client (the
// client asks once every node is master of its own instance, so an
// address that answered earlier counts at that moment), and whether each
// Service kept its address once the controller has looked at it.
func (b *bench) migrated(pr *prober, wcancel func(), watchDone <-chan struct{}, names []string, pids []int, before map[string]mem) error {
	ctx := b.ctx
	for _, a := range b.left {
		pr.want(a)
	}
	waitErr := b.poll(5*time.Minute, func() error {
		n := 0
		for _, a := range b.left {
			if _, ok := pr.answeredAt(a); ok {
				n++
			}
		}
		if n < len(b.left) {
			return fmt.Errorf("%d of %d addresses answer on the wire", n, len(b.left))
		}
		return nil
	})
	all := time.Since(b.installed)
	b.logf("every address answers %v after vipstack started (or %v)", all.Round(time.Millisecond), waitErr)

	// The controller looked at every Service (its condition), and none
	// has another address.
	var changed []string
	seenErr := b.poll(2*time.Minute, func() error {
		var l corev1.ServiceList
		if err := b.lab.Admin.List(ctx, &l, client.InNamespace(k8slab.ServiceNamespace)); err != nil {
			return err
		}
		changed = changed[:0]
		looked := 0
		for i := range l.Items {
			s := &l.Items[i]
			want, ok := b.left[s.Name]
			if !ok {
				continue
			}
			if len(s.Status.LoadBalancer.Ingress) != 1 || s.Status.LoadBalancer.Ingress[0].IP != want.String() {
				changed = append(changed, fmt.Sprintf("%s: %v, was %s", s.Name, s.Status.LoadBalancer.Ingress, want))
			}
			if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ServiceConditionAllocated); c != nil && c.Status == metav1.ConditionTrue {
				looked++
			}
		}
		if looked < len(b.left) {
			return fmt.Errorf("the controller allocated %d of %d Services", looked, len(b.left))
		}
		return nil
	})
	_ = clock.Sleep(ctx, b.settle)
	after := readAll(names, pids)
	wcancel()
	<-watchDone

	var toWire []time.Duration
	for _, a := range b.left {
		if w, ok := pr.answeredAt(a); ok {
			toWire = append(toWire, max(0, w.Sub(b.installed)))
		}
	}
	from := map[string]string{scenarioFromKeepalived: "the keepalived-operator (OpenShift's autoAssignCIDRs, also in spec.externalIPs)",
		scenarioFromMetalLB: "MetalLB (an IPAddressPool and an L2Advertisement)"}[b.scenario]
	rep := &benchdoc.Report{}
	rep.Para("%d LoadBalancer Services whose status already shows the address %s gave (%s), then vipstack started (controller and 3 agents, advert %d ms); "+
		"every address answering after %v from the controller's start.", len(b.left), from, poolBlock, b.advert, all.Round(time.Millisecond))
	lat := benchdoc.Table{Header: []string{"per Service, from vipstack's start", "n", "p50", "p99", "max", "target", "result"}}
	arp := summarize(toWire, len(b.left))
	result := "PASS"
	if arp.N < arp.Of || len(changed) > 0 || seenErr != nil {
		result = "MISS"
	}
	lat.Add(append(arp.cells("answers ARP from the client"), "every address, none changed", result)...)
	rep.Table(lat)
	rep.Para("Addresses changed: %d of %d.", len(changed), len(b.left))
	if len(changed) > 0 {
		rep.List(changed[:min(len(changed), 10)])
	}
	rep.Table(memTable(names, before, after, nil))
	for _, err := range []error{waitErr, seenErr} {
		if err != nil {
			rep.Para("NOT COMPLETE: %v", err)
		}
	}
	if err := b.report(rep); err != nil {
		return err
	}
	if waitErr != nil {
		return waitErr
	}
	if seenErr != nil {
		return seenErr
	}
	if len(changed) > 0 {
		return fmt.Errorf("%d Services' addresses changed", len(changed))
	}
	return nil
}

// moduleRoot is the directory holding go.mod, from the working directory
// up.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above %s: run the bench from the module", dir)
		}
		dir = parent
	}
}
