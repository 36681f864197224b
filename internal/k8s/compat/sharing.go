package compat

import (
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
)

// CanShare says whether Service b may use an address Service a holds,
// by MetalLB's rules for allow-shared-ip: both carry the annotation
// (current or legacy) with the same key, no protocol and port is on both,
// and both have externalTrafficPolicy Cluster, or both Local with the same
// selector (so that the nodes announcing a's address have b's endpoints
// too). It returns nil when they may, else why not.
func CanShare(a, b *corev1.Service) error {
	ka, fa := SharingKey(a.Annotations)
	kb, fb := SharingKey(b.Annotations)
	name := a.Namespace + "/" + a.Name
	switch {
	case fb == "":
		return fmt.Errorf("it has no %s annotation", MetalLBSharedAnnotation)
	case fa == "":
		return fmt.Errorf("%s, which holds it, has no %s annotation", name, MetalLBSharedAnnotation)
	case ka != kb:
		return fmt.Errorf("%s, which holds it, has the sharing key %q, not %q", name, ka, kb)
	}
	for _, pa := range a.Spec.Ports {
		for _, pb := range b.Spec.Ports {
			if proto(pa.Protocol) == proto(pb.Protocol) && pa.Port == pb.Port {
				return fmt.Errorf("%s, which holds it, uses port %d/%s too", name, pa.Port, proto(pa.Protocol))
			}
		}
	}
	la := a.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	lb := b.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
	switch {
	case la != lb:
		return fmt.Errorf("%s, which holds it, has externalTrafficPolicy %s, not %s", name, policy(la), policy(lb))
	case la && !maps.Equal(a.Spec.Selector, b.Spec.Selector):
		return fmt.Errorf("%s, which holds it, is Local with another selector (%v, not %v): Local Services share only with the same pods", name, a.Spec.Selector, b.Spec.Selector)
	}
	return nil
}

func proto(p corev1.Protocol) corev1.Protocol {
	if p == "" {
		return corev1.ProtocolTCP
	}
	return p
}

func policy(local bool) string {
	if local {
		return "Local"
	}
	return "Cluster"
}
