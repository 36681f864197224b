package compat

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vipstack/vipstack/internal/k8s"
	"github.com/vipstack/vipstack/internal/k8s/v1alpha1"
)

// The keepalived-operator's API group and version
// (redhat-cop/keepalived-operator).
const (
	KeepalivedGroupAPIGroup = "redhatcop.redhat.io"
	KeepalivedGroupVersion  = "v1alpha1"
)

// KeepalivedGroup is the keepalived-operator's KeepalivedGroup as vipstack
// reads it. Every field of the operator's spec is listed, so that none is
// passed over unseen: each either has its effect on the VIPGroup made for
// it or is reported.
type KeepalivedGroup struct {
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              KeepalivedGroupSpec `json:"spec"`
}

// KeepalivedGroupSpec is the operator's spec.
type KeepalivedGroupSpec struct {
	Image                string            `json:"image,omitempty"`
	Interface            string            `json:"interface,omitempty"`
	InterfaceFromIP      string            `json:"interfaceFromIP,omitempty"`
	NodeSelector         map[string]string `json:"nodeSelector,omitempty"`
	UnicastEnabled       bool              `json:"unicastEnabled,omitempty"`
	PasswordAuth         *PasswordAuth     `json:"passwordAuth,omitempty"`
	BlacklistRouterIDs   []int             `json:"blacklistRouterIDs,omitempty"`
	VerbatimConfig       map[string]string `json:"verbatimConfig,omitempty"`
	DaemonsetAnnotations map[string]string `json:"daemonsetAnnotations,omitempty"`
}

// PasswordAuth is the operator's spec.passwordAuth: the VRRP password is
// the value of SecretKey (default "password") of a Secret in the group's
// namespace.
type PasswordAuth struct {
	SecretRef struct {
		Name string `json:"name,omitempty"`
	} `json:"secretRef"`
	SecretKey string `json:"secretKey,omitempty"`
}

// DefaultPasswordKey is the operator's default of spec.passwordAuth.secretKey.
const DefaultPasswordKey = "password"

// KeepalivedGroupRef is the VIPGroup made for a KeepalivedGroup: the same
// namespace and name, so the Services' annotation
// keepalived-operator.redhat-cop.io/keepalivedgroup: NAMESPACE/NAME names
// it as it is (k8s.GroupOf reads that annotation).
func KeepalivedGroupRef(g *KeepalivedGroup) k8s.GroupRef {
	return k8s.GroupRef{Namespace: g.Namespace, Name: g.Name}
}

// Keys of the operator's spec.verbatimConfig (lines of keepalived's
// global_defs) that vipstack implements, and what they set.
var verbatimKeys = map[string]string{
	"vrrp_version": "spec.vrrpVersion",
}

// globalDefsOnly are keepalived global_defs keys that only concern the
// keepalived process the operator ran (its logging, scripts, identity):
// they have no meaning for vipstack's agents.
var globalDefsOnly = map[string]bool{
	"router_id":              true,
	"enable_script_security": true,
	"script_user":            true,
	"max_auto_priority":      true,
}

// KeepalivedConversion is what vipstack makes of one KeepalivedGroup.
type KeepalivedConversion struct {
	// Spec is the VIPGroup's spec; valid only when Err is nil.
	Spec v1alpha1.VIPGroupSpec
	// Notes are fields that have no effect under vipstack (not
	// implemented, or concerning the operator's own pods): the group is
	// served all the same, and each is reported.
	Notes []error
	// Err refuses the group: no VIPGroup is made for it.
	Err error
}

// ConvertKeepalivedGroup turns a KeepalivedGroup into the spec of the
// VIPGroup that serves it: nodeSelector, interface, unicastEnabled,
// passwordAuth (VRRPv2 simple password, as the operator's keepalived
// sends; the agents read the Secret), blacklistRouterIDs (VRIDs the
// group never gets) and the verbatimConfig keys of verbatimKeys. What
// vipstack does not implement, and what concerns the operator's own
// DaemonSet (image, daemonsetAnnotations), is returned as Notes.
func ConvertKeepalivedGroup(g *KeepalivedGroup) KeepalivedConversion {
	var out KeepalivedConversion
	var errs []error
	s := &g.Spec
	spec := v1alpha1.VIPGroupSpec{Interface: s.Interface, Unicast: s.UnicastEnabled}
	if len(s.NodeSelector) > 0 {
		spec.NodeSelector = maps.Clone(s.NodeSelector)
	}
	if s.InterfaceFromIP != "" {
		if _, err := netip.ParseAddr(s.InterfaceFromIP); err != nil {
			errs = append(errs, fmt.Errorf("spec.interfaceFromIP %q: not an IP address", s.InterfaceFromIP))
		} else if s.Interface != "" {
			out.Notes = append(out.Notes, fmt.Errorf("spec.interfaceFromIP %s: not implemented by vipstack (the interface used to reach an address); spec.interface %s is used", s.InterfaceFromIP, s.Interface))
		} else {
			out.Notes = append(out.Notes, fmt.Errorf("spec.interfaceFromIP %s: not implemented by vipstack (the interface used to reach an address); the interface holding each node's InternalIP is used instead; set spec.interface to choose one", s.InterfaceFromIP))
		}
	}
	seen := map[int]bool{}
	for i, id := range s.BlacklistRouterIDs {
		if id < 1 || id > 255 {
			errs = append(errs, fmt.Errorf("spec.blacklistRouterIDs[%d]: %d: want a VRID from 1 to 255", i, id))
			continue
		}
		if !seen[id] {
			seen[id] = true
			spec.ExcludedVRIDs = append(spec.ExcludedVRIDs, int32(id))
		}
	}
	slices.Sort(spec.ExcludedVRIDs)
	if p := s.PasswordAuth; p != nil {
		if p.SecretRef.Name == "" {
			errs = append(errs, errors.New("spec.passwordAuth.secretRef.name: empty: want the name of a Secret in the group's namespace"))
		}
		key := p.SecretKey
		if key == "" {
			key = DefaultPasswordKey
		}
		if p.SecretRef.Name != "" {
			spec.AuthPassSecretRef = &v1alpha1.SecretKeyRef{Name: p.SecretRef.Name, Key: key}
		}
		// VRRP authentication exists in version 2 only; keepalived
		// speaks 2 unless told otherwise, as the operator left it.
		spec.VRRPVersion = 2
	}
	keys := slices.Sorted(maps.Keys(s.VerbatimConfig))
	for _, k := range keys {
		v := strings.TrimSpace(s.VerbatimConfig[k])
		switch {
		case k == "vrrp_version":
			n, err := strconv.Atoi(v)
			switch {
			case err != nil || (n != 2 && n != 3):
				errs = append(errs, fmt.Errorf("spec.verbatimConfig.vrrp_version %q: want 2 or 3", v))
			case n == 3 && s.PasswordAuth != nil:
				errs = append(errs, errors.New("spec.verbatimConfig.vrrp_version 3 with spec.passwordAuth: VRRPv3 has no authentication (keepalived drops it too); remove one"))
			default:
				spec.VRRPVersion = int32(n)
			}
		case globalDefsOnly[k]:
			out.Notes = append(out.Notes, fmt.Errorf("spec.verbatimConfig.%s: concerns the operator's keepalived process only; not applicable to vipstack (ignored)", k))
		default:
			out.Notes = append(out.Notes, fmt.Errorf("spec.verbatimConfig.%s %q: not implemented by vipstack (keys implemented: %s)", k, v, strings.Join(slices.Sorted(maps.Keys(verbatimKeys)), ", ")))
		}
	}
	if s.Image != "" {
		out.Notes = append(out.Notes, fmt.Errorf("spec.image %s: the operator's keepalived image; not applicable to vipstack, whose agents serve the group", s.Image))
	}
	if len(s.DaemonsetAnnotations) > 0 {
		out.Notes = append(out.Notes, fmt.Errorf("spec.daemonsetAnnotations %s: annotations of the operator's DaemonSet; not applicable to vipstack, whose agents serve the group (annotate vipstack's agent DaemonSet instead)",
			strings.Join(slices.Sorted(maps.Keys(s.DaemonsetAnnotations)), ", ")))
	}
	if err := spec.Validate(); err != nil {
		errs = append(errs, err)
	}
	out.Spec = spec
	out.Err = errors.Join(errs...)
	return out
}

// KeepalivedGroups converts the operator's groups (sorted by namespace and
// name). A refused group is left out and reported; a group served with
// notes is reported too.
func KeepalivedGroups(groups []KeepalivedGroup) ([]Group, []Problem) {
	groups = slices.Clone(groups)
	sort.Slice(groups, func(i, j int) bool {
		a, b := KeepalivedGroupRef(&groups[i]), KeepalivedGroupRef(&groups[j])
		return a.String() < b.String()
	})
	var out []Group
	var probs []Problem
	for i := range groups {
		g := &groups[i]
		c := ConvertKeepalivedGroup(g)
		if c.Err != nil {
			probs = append(probs, Problem{Kind: "KeepalivedGroup", Namespace: g.Namespace, Name: g.Name, Err: c.Err, Refused: true})
			continue
		}
		for _, n := range c.Notes {
			probs = append(probs, Problem{Kind: "KeepalivedGroup", Namespace: g.Namespace, Name: g.Name, Err: n})
		}
		out = append(out, Group{Ref: KeepalivedGroupRef(g), Spec: c.Spec,
			Source: "KeepalivedGroup " + g.Namespace + "/" + g.Name, MadeFor: MadeForKeepalived})
	}
	return out, probs
}

// Values of the vipstack.io/made-for label of the VIPGroups made for
// foreign configuration.
const (
	MadeForMetalLB    = "metallb"
	MadeForKubeVIP    = "kube-vip"
	MadeForKeepalived = "keepalived-operator"
)

// The keepalived-operator's Service annotations that vipstack does not
// implement (its keepalivedgroup annotation is k8s.KeepalivedGroupAnnotation).
const (
	SpreadVIPsAnnotation     = "keepalived-operator.redhat-cop.io/spreadvips"
	VerbatimConfigAnnotation = "keepalived-operator.redhat-cop.io/verbatimconfig"
)

// KeepalivedServiceNotes says which of the keepalived-operator's Service
// annotations have no effect under vipstack, each with what it would
// have done; nil when none is present.
func KeepalivedServiceNotes(annotations map[string]string) []string {
	var out []string
	if v, ok := annotations[SpreadVIPsAnnotation]; ok {
		out = append(out, fmt.Sprintf("annotation %s %q: not implemented by vipstack (one VRRP instance per address, spread over the nodes); the group's nodes share the Service's addresses by vipstack's own layout", SpreadVIPsAnnotation, v))
	}
	if v, ok := annotations[VerbatimConfigAnnotation]; ok {
		out = append(out, fmt.Sprintf("annotation %s %q: not implemented by vipstack (keepalived keys for the Service's instance); set the group's VRRP settings on its VIPGroup or KeepalivedGroup", VerbatimConfigAnnotation, v))
	}
	return out
}
