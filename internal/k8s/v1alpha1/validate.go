package v1alpha1

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/vipstack/vipstack/internal/allocator"
	"github.com/vipstack/vipstack/internal/vrrp"
)

// Defaults of VIPGroupSpec.
const (
	DefaultVRRPVersion    = 3
	DefaultAdvertInterval = time.Second
	// MaxPreemptDelayMilliseconds is the longest preemptDelayMilliseconds
	// (keepalived's preempt_delay takes up to 1000 s).
	MaxPreemptDelayMilliseconds = 1000000
)

// ifName is what Linux accepts as an interface name (IFNAMSIZ 16, no '/',
// no whitespace, not "." or "..").
var ifName = regexp.MustCompile(`^[^/\s:]{1,15}$`)

// linkName is a link name: a letter or digit, then up to 62 letters,
// digits, '.', '_' or '-'.
var linkName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// LinkOf is the link a group's VRIDs are unique on: spec.link, else
// spec.interface; empty for the nodes' InternalIP link.
func (s *VIPGroupSpec) LinkOf() string {
	if s.Link != "" {
		return s.Link
	}
	return s.Interface
}

// SameLink says whether two groups may be on one link of a node, so that
// they must not use the same VRID. They may not only when both name
// their interface, the names differ, and so do their links (LinkOf): a
// group that names none is on the interface of the node's InternalIP,
// which may be any, and two groups on one interface name are on one
// link wherever their nodes overlap.
func SameLink(a, b *VIPGroupSpec) bool {
	return a.Interface == "" || b.Interface == "" || a.Interface == b.Interface || a.LinkOf() == b.LinkOf()
}

// Version returns the VRRP version with the default applied.
func (s *VIPGroupSpec) Version() int {
	if s.VRRPVersion == 0 {
		return DefaultVRRPVersion
	}
	return int(s.VRRPVersion)
}

// Interval returns the advertisement interval with the default applied.
func (s *VIPGroupSpec) Interval() time.Duration {
	if s.AdvertIntervalMilliseconds == 0 {
		return DefaultAdvertInterval
	}
	return time.Duration(s.AdvertIntervalMilliseconds) * time.Millisecond
}

// Validate checks the spec; the CRD's schema checks the same, so this
// matters for objects that reached the controller some other way (an older
// CRD, a test). Each error names the field, the value and what is accepted.
func (s *VIPGroupSpec) Validate() error {
	var errs []error
	bad := func(field string, v any, want string) {
		errs = append(errs, fmt.Errorf("spec.%s: %v: %s", field, v, want))
	}
	if s.Interface != "" && (!ifName.MatchString(s.Interface) || s.Interface == "." || s.Interface == "..") {
		bad("interface", fmt.Sprintf("%q", s.Interface), "want a Linux interface name (1 to 15 characters, no '/', ':' or spaces), or empty for the interface of the node's InternalIP")
	}
	if s.Link != "" && !linkName.MatchString(s.Link) {
		bad("link", fmt.Sprintf("%q", s.Link), "want a name of 1 to 63 letters, digits, '.', '_' or '-', starting with a letter or digit, or empty for the interface's name")
	}
	if s.PreemptDelayMilliseconds < 0 || s.PreemptDelayMilliseconds > MaxPreemptDelayMilliseconds {
		bad("preemptDelayMilliseconds", s.PreemptDelayMilliseconds, fmt.Sprintf("want 0 to %d", MaxPreemptDelayMilliseconds))
	}
	if s.NonRevertive && s.PreemptDelayMilliseconds != 0 {
		bad("preemptDelayMilliseconds", s.PreemptDelayMilliseconds, "has no effect with nonRevertive (a non-revertive group never takes its addresses back): set one or the other")
	}
	v := s.Version()
	if v != 2 && v != 3 {
		bad("vrrpVersion", s.VRRPVersion, "want 2 or 3")
	}
	// The rule is the codec's; the words are in this field's unit.
	switch {
	case v == 2 && vrrp.CheckAdvertInterval(v, s.Interval()) != nil:
		bad("advertIntervalMilliseconds", s.AdvertIntervalMilliseconds, "VRRPv2 wants whole seconds from 1000 to 255000")
	case v == 3 && vrrp.CheckAdvertInterval(v, s.Interval()) != nil:
		bad("advertIntervalMilliseconds", s.AdvertIntervalMilliseconds, "VRRPv3 wants 10 to 40950 in steps of 10 (centiseconds)")
	}
	if r := s.AuthPassSecretRef; r != nil {
		switch {
		case r.Name == "" || r.Key == "":
			bad("authPassSecretRef", fmt.Sprintf("%+v", *r), "want the name of a Secret in the group's namespace and the key holding the password")
		case v != 2:
			bad("authPassSecretRef", r.Name+"/"+r.Key, "VRRP authentication exists in version 2 only: set vrrpVersion 2")
		}
	}
	if s.BGP != nil {
		if err := s.BGP.Validate(); err != nil {
			errs = append(errs, err)
		}
	}
	for i, x := range s.ExcludedVRIDs {
		if x < 1 || x > 255 {
			bad(fmt.Sprintf("excludedVRIDs[%d]", i), x, "want 1 to 255")
		}
	}
	return errors.Join(errs...)
}

// Pool converts the pool to the allocator's form, checking what the
// schema cannot: every address entry parses as a block or a range.
func (p *IPPool) Pool() (allocator.Pool, error) {
	out := allocator.Pool{Name: p.Name, AutoAssign: p.Spec.AutoAssign == nil || *p.Spec.AutoAssign,
		Namespaces: p.Spec.Namespaces}
	var errs []error
	if len(p.Spec.Addresses) == 0 {
		errs = append(errs, errors.New("spec.addresses: empty: want at least one CIDR block or FIRST-LAST range"))
	}
	for i, s := range p.Spec.Addresses {
		r, err := allocator.ParseRange(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.addresses[%d]: %w", i, err))
			continue
		}
		out.Ranges = append(out.Ranges, r)
	}
	if p.Spec.ServiceSelector != nil {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.ServiceSelector)
		if err != nil {
			errs = append(errs, fmt.Errorf("spec.serviceSelector: %w", err))
		} else {
			out.Selector = selector{sel}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return allocator.Pool{}, err
	}
	return out, nil
}

// selector adapts a label selector to the allocator.
type selector struct{ s labels.Selector }

func (s selector) Matches(l map[string]string) bool { return s.s.Matches(labels.Set(l)) }
func (s selector) String() string                   { return s.s.String() }
