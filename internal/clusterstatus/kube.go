package clusterstatus

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/vipstack/vipstack/internal/k8s/agent"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// FromKubernetes reads what the agents publish (their status Leases in
// namespace, see agent.LeasePrefix) and the LoadBalancer Services'
// addresses, and returns the cluster's view at now. An agent whose Lease
// was not renewed within its duration is silent: a problem, shown in
// every instance it last reported. A Lease whose Node is gone is left
// out. A Service address that no instance of any agent carries shows as
// a VIP with no holder.
func FromKubernetes(ctx context.Context, c client.Reader, namespace string, now time.Time) (View, error) {
	var leases coordinationv1.LeaseList
	if err := c.List(ctx, &leases, client.InNamespace(namespace), client.MatchingLabels{agent.LeaseLabel: "true"}); err != nil {
		return View{}, fmt.Errorf("list the agents' status Leases in %s: %w", namespace, err)
	}
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes); err != nil {
		return View{}, fmt.Errorf("list Nodes: %w", err)
	}
	var svcs corev1.ServiceList
	if err := c.List(ctx, &svcs); err != nil {
		return View{}, fmt.Errorf("list Services: %w", err)
	}
	exists := map[string]bool{}
	for _, n := range nodes.Items {
		exists[n.Name] = true
	}
	var reports []Report
	for _, l := range leases.Items {
		r, ok := leaseReport(l, now)
		if ok && exists[r.Node] {
			reports = append(reports, r)
		}
	}
	return Merge("kubernetes (agents' status Leases in "+namespace+")", kubeExpected(reports, serviceAddrs(svcs.Items)), withoutSilent(reports)), nil
}

// leaseReport is an agent's report from its Lease; ok false for a Lease
// that is not an agent's.
func leaseReport(l coordinationv1.Lease, now time.Time) (Report, bool) {
	name, ok := strings.CutPrefix(l.Name, agent.LeasePrefix)
	if !ok {
		return Report{}, false
	}
	r := Report{Node: name, Address: "lease " + l.Namespace + "/" + l.Name, Role: "agent"}
	var p agent.Published
	if err := json.Unmarshal([]byte(l.Annotations[agent.StatusAnnotation]), &p); err != nil {
		r.Error = fmt.Sprintf("annotation %s: %v", agent.StatusAnnotation, err)
		return r, true
	}
	r.Instances, r.Warnings = p.Instances, p.Warnings
	if b := p.BGP; b != nil {
		if u := b.Unhealthy(); u != "" {
			r.Warnings = append(r.Warnings, "not live (its liveness probe fails): "+u)
		} else if b.Stopped != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("its BGP speaker stopped (%s) and announces nothing; the agent starts it again %s",
				oneLine(b.Stopped), b.Retry))
		}
		r.BGP = &BGPReport{Peers: len(b.Peers)}
		for _, pr := range b.Peers {
			if pr.Session == "established" {
				r.BGP.Established++
			}
		}
		for _, rt := range b.Routes {
			vip, _, _ := strings.Cut(rt.Prefix, "/")
			r.BGP.Routes = append(r.BGP.Routes, BGPRouteReport{VIP: vip, Role: rt.Role, Announced: rt.Announced, Demoted: rt.Demoted, Reason: rt.Reason})
		}
	}
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		r.Error = "the Lease has no renewTime or leaseDurationSeconds"
		return r, true
	}
	renewed := l.Spec.RenewTime.Time
	if age := now.Sub(renewed); age > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
		r.Error = fmt.Sprintf("silent: the agent last renewed its status at %s, %s ago (every %s expected)",
			renewed.UTC().Format(time.RFC3339), age.Round(time.Second), agent.PublishEvery)
	}
	return r, true
}

// serviceAddrs maps each address of a LoadBalancer Service that vipstack
// allocated (condition v1alpha1.ServiceConditionAllocated True) to the
// Services (NAMESPACE/NAME) that have it.
func serviceAddrs(svcs []corev1.Service) map[string][]string {
	out := map[string][]string{}
	for _, s := range svcs {
		if s.Spec.Type != corev1.ServiceTypeLoadBalancer {
			continue
		}
		allocated := false
		for _, c := range s.Status.Conditions {
			allocated = allocated || c.Type == v1alpha1.ServiceConditionAllocated && c.Status == metav1.ConditionTrue
		}
		if !allocated {
			continue
		}
		for _, in := range s.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				out[in.IP] = append(out[in.IP], s.Namespace+"/"+s.Name)
			}
		}
	}
	return out
}

// kubeExpected names each reported instance's Services, keeps a silent
// agent in the instances it last ran, and adds a VIP with no instance for
// every Service address of a vipstack group that no agent carries.
func kubeExpected(reports []Report, addrs map[string][]string) []Expected {
	byName := map[string]*Expected{}
	var order []string
	carried := map[string]bool{}
	for _, r := range reports {
		for _, in := range r.Instances {
			e := byName[in.Name]
			if e == nil {
				e = &Expected{Instance: in.Name, VRID: int(in.VRID), VIPs: in.VIPs}
				var svcs []string
				for _, v := range in.VIPs {
					v, _, _ = strings.Cut(v, "/") // the engine writes prefixes: 198.18.0.200/32
					carried[v] = true
					for _, s := range addrs[v] {
						if !slices.Contains(svcs, s) {
							svcs = append(svcs, s)
						}
					}
				}
				slices.Sort(svcs)
				e.Service = strings.Join(svcs, ",")
				byName[in.Name] = e
				order = append(order, in.Name)
			}
			e.Nodes = append(e.Nodes, r.Node)
		}
		if r.BGP != nil {
			// Announced by BGP: the view's BGP VIPs show them.
			for _, rt := range r.BGP.Routes {
				carried[rt.VIP] = true
			}
		}
	}
	out := make([]Expected, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	for _, a := range sortedKeys(addrs) {
		if !carried[a] {
			out = append(out, Expected{Instance: "(no instance) " + a, VIPs: []string{a}, Service: strings.Join(addrs[a], ",")})
		}
	}
	return out
}

// withoutSilent drops what silent agents last said: only their absence
// counts.
func withoutSilent(reports []Report) []Report {
	out := slices.Clone(reports)
	for i := range out {
		if out[i].Error != "" {
			out[i].Instances, out[i].BGP = nil, nil
		}
	}
	return out
}
