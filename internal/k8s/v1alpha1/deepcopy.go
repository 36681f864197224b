package v1alpha1

import (
	"maps"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func copyConditions(c []metav1.Condition) []metav1.Condition {
	if c == nil {
		return nil
	}
	out := make([]metav1.Condition, len(c))
	for i := range c {
		c[i].DeepCopyInto(&out[i])
	}
	return out
}

// DeepCopyInto copies s into out.
func (s *VIPGroupSpec) DeepCopyInto(out *VIPGroupSpec) {
	*out = *s
	out.NodeSelector = maps.Clone(s.NodeSelector)
	out.ExcludedVRIDs = slices.Clone(s.ExcludedVRIDs)
	if s.AuthPassSecretRef != nil {
		r := *s.AuthPassSecretRef
		out.AuthPassSecretRef = &r
	}
	if s.BGP != nil {
		b := *s.BGP
		b.Communities = slices.Clone(s.BGP.Communities)
		b.LargeCommunities = slices.Clone(s.BGP.LargeCommunities)
		if s.BGP.LocalPref != nil {
			lp := *s.BGP.LocalPref
			b.LocalPref = &lp
		}
		out.BGP = &b
	}
}

// DeepCopyInto copies s into out.
func (s *VIPGroupStatus) DeepCopyInto(out *VIPGroupStatus) {
	*out = *s
	out.Instances = slices.Clone(s.Instances)
	out.Conditions = copyConditions(s.Conditions)
}

// DeepCopyInto copies g into out.
func (g *VIPGroup) DeepCopyInto(out *VIPGroup) {
	*out = *g
	out.TypeMeta = g.TypeMeta
	g.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	g.Spec.DeepCopyInto(&out.Spec)
	g.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of g.
func (g *VIPGroup) DeepCopy() *VIPGroup {
	if g == nil {
		return nil
	}
	out := new(VIPGroup)
	g.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (g *VIPGroup) DeepCopyObject() runtime.Object { return g.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *VIPGroupList) DeepCopyInto(out *VIPGroupList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]VIPGroup, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *VIPGroupList) DeepCopy() *VIPGroupList {
	if l == nil {
		return nil
	}
	out := new(VIPGroupList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *VIPGroupList) DeepCopyObject() runtime.Object { return l.DeepCopy() }

// DeepCopyInto copies s into out.
func (s *IPPoolSpec) DeepCopyInto(out *IPPoolSpec) {
	*out = *s
	out.Addresses = slices.Clone(s.Addresses)
	if s.AutoAssign != nil {
		v := *s.AutoAssign
		out.AutoAssign = &v
	}
	out.Namespaces = slices.Clone(s.Namespaces)
	out.ServiceSelector = s.ServiceSelector.DeepCopy()
}

// DeepCopyInto copies s into out.
func (s *IPPoolStatus) DeepCopyInto(out *IPPoolStatus) {
	*out = *s
	out.Conditions = copyConditions(s.Conditions)
}

// DeepCopyInto copies p into out.
func (p *IPPool) DeepCopyInto(out *IPPool) {
	*out = *p
	p.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	p.Spec.DeepCopyInto(&out.Spec)
	p.Status.DeepCopyInto(&out.Status)
}

// DeepCopy returns a copy of p.
func (p *IPPool) DeepCopy() *IPPool {
	if p == nil {
		return nil
	}
	out := new(IPPool)
	p.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (p *IPPool) DeepCopyObject() runtime.Object { return p.DeepCopy() }

// DeepCopyInto copies l into out.
func (l *IPPoolList) DeepCopyInto(out *IPPoolList) {
	*out = *l
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]IPPool, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
}

// DeepCopy returns a copy of l.
func (l *IPPoolList) DeepCopy() *IPPoolList {
	if l == nil {
		return nil
	}
	out := new(IPPoolList)
	l.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (l *IPPoolList) DeepCopyObject() runtime.Object { return l.DeepCopy() }
